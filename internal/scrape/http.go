package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxRedirects bounds the redirects followed; a metrics endpoint needs at
// most a scheme upgrade and a trailing slash.
const maxRedirects = 5

// snippetBytes is how much of an error page is read to quote from it.
const snippetBytes = 4 << 10

// sharedTransport is reused across fetches so a watch loop keeps its
// connection alive instead of dialling every second.
var sharedTransport = sync.OnceValue(func() http.RoundTripper {
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}
	}
	// Accept-Encoding is set by hand, so the transport never decompresses
	// behind our back (and past our cap).
	tr.DisableCompression = true
	tr.MaxResponseHeaderBytes = 1 << 20
	return tr
})

// redirectError is returned by the redirect policy.
type redirectError struct {
	to      *url.URL
	tooMany bool
}

func (e *redirectError) Error() string {
	if e.tooMany {
		return "too many redirects"
	}
	return "redirect to another host refused"
}

// redirectPolicy follows same-host redirects (an http→https upgrade
// included) and refuses any other while the request carries credentials:
// Go's client drops Authorization and Cookie across hosts but forwards every
// other header, and an API key may travel as X-Api-Key.
func redirectPolicy(origin *url.URL, secrets bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return &redirectError{to: req.URL, tooMany: true}
		}
		if secrets && !sameHost(origin, req.URL) {
			return &redirectError{to: req.URL}
		}
		return nil
	}
}

// sameHost reports whether b is the same server as a: same host name and
// port, or the standard upgrade from http on 80 to https on 443. A downgrade
// from https to http is another server as far as credentials go.
func sameHost(a, b *url.URL) bool {
	if !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	switch {
	case a.Scheme == b.Scheme:
		return effectivePort(a) == effectivePort(b)
	case a.Scheme == "http" && b.Scheme == "https":
		return effectivePort(a) == effectivePort(b) || (effectivePort(a) == "80" && effectivePort(b) == "443")
	}
	return false
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

func fetchHTTP(parent context.Context, t Target, o Options) (*Result, error) {
	src := sourceOf(t)
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL.String(), nil)
	if err != nil {
		return nil, newError(BadTarget, err, "cannot build a request for "+src+": "+clean(err.Error(), 120))
	}
	for name, vals := range o.Headers {
		if http.CanonicalHeaderKey(name) == "Host" {
			if len(vals) > 0 {
				req.Host = vals[0]
			}
			continue
		}
		req.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), vals...)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", Accept)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	// Only gzip and identity are decoded, so nothing else is offered.
	req.Header.Set("Accept-Encoding", "gzip")

	client := &http.Client{Transport: sharedTransport()}
	if o.Client != nil {
		c := *o.Client
		client = &c
	}
	secrets := len(o.Headers) > 0 || t.URL.User != nil
	client.CheckRedirect = redirectPolicy(t.URL, secrets)

	start := o.Now()
	waited := func() time.Duration { return o.Now().Sub(start) }
	resp, err := client.Do(req)
	if err != nil {
		return nil, requestError(parent, ctx, t, o, err, waited())
	}
	defer resp.Body.Close()
	scrapedAt := o.Now()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := statusError(t, o, resp)
		e.Waited = waited()
		return nil, e
	}
	if resp.ContentLength > o.MaxBytes {
		e := tooLarge("the answer from "+src, o.MaxBytes, false)
		e.Waited = waited()
		return nil, e
	}
	wire, err := readCapped(resp.Body, o.MaxBytes, resp.ContentLength)
	if err != nil {
		if errors.Is(err, errCap) {
			e := tooLarge("the answer from "+src, o.MaxBytes, false)
			e.Waited = waited()
			return nil, e
		}
		return nil, bodyError(parent, ctx, t, o, err, waited())
	}
	body, err := decode(wire, resp.Header.Get("Content-Encoding"), o.MaxBytes)
	if err != nil {
		e := decodeError("the answer from "+src, o.MaxBytes, err)
		e.Waited = waited()
		return nil, e
	}
	r := &Result{
		Source:      src,
		Body:        body,
		ContentType: resp.Header.Get("Content-Type"),
		Header:      resp.Header,
		ScrapedAt:   scrapedAt,
		TimeSource:  TimeScrape,
		Waited:      waited(),
	}
	if raw := resp.Header.Get("Process-Start-Time-Unix"); raw != "" {
		r.StartToken = clean(raw, 64)
		r.HeaderStart = ParseStartHeader(raw, scrapedAt)
	}
	return r, nil
}

// requestError explains a request that got no response.
func requestError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration) *Error {
	src := sourceOf(t)
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return canceledError(t, parent.Err(), waited)
	}
	if ctx.Err() != nil || isTimeout(err) {
		return timeoutError(parent, ctx, t, o, err, waited, false)
	}
	var re *redirectError
	if errors.As(err, &re) {
		to := clean(re.to.Redacted(), 200)
		var e *Error
		if re.tooMany {
			e = newError(Redirect, err, fmt.Sprintf("%s redirected more than %d times (last to %s)", src, maxRedirects, to),
				"scrape the final address directly")
		} else {
			e = newError(Redirect, err, fmt.Sprintf("%s redirected to another host, %s; not following it with your credentials", src, to),
				"if you trust that host, scrape "+to+" directly")
		}
		e.Waited = waited
		return e
	}
	e := newError(Unreachable, err, fmt.Sprintf("cannot reach %s: %s", src, netReason(err)))
	e.Waited = waited
	e.Hints = unreachableHints(t, err)
	return e
}

// timeoutError explains a scrape that ran out of time. It names the
// --timeout value when that is what fired, else (the caller's deadline, a
// TLS handshake timeout) how long it actually waited.
func timeoutError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration, body bool) *Error {
	src := sourceOf(t)
	limit := waited
	if ctx.Err() != nil && parent.Err() == nil {
		limit = o.Timeout
	}
	what := "waiting for"
	if body {
		what = "reading the answer from"
	}
	e := newError(Timeout, err, fmt.Sprintf("timed out after %s %s %s", fmtDuration(limit), what, src),
		"a busy server can hold a scrape for seconds; wait longer with --timeout "+fmtDuration(2*o.Timeout))
	e.Waited = waited
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// netReason names why a connection failed, in a few words, from Go's own
// errors (which may quote server bytes, so the text is cleaned).
func netReason(err error) string {
	var dnsErr *net.DNSError
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	var certErr x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "no such host " + clean(dnsErr.Name, 100)
		}
		return "cannot look up " + clean(dnsErr.Name, 100) + ": " + clean(dnsErr.Err, 100)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &hostErr):
		return "TLS certificate is not valid for this host name"
	case errors.As(err, &authErr):
		return "TLS certificate is signed by an unknown authority"
	case errors.As(err, &certErr):
		return "TLS certificate is not valid (" + clean(certErr.Error(), 100) + ")"
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the server did not answer TLS (is it plain http?)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection without answering"
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	return clean(inner.Error(), 160)
}

func unreachableHints(t Target, err error) []string {
	var hints []string
	var dnsErr *net.DNSError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		u := *t.URL
		u.Scheme = "http"
		hints = append(hints, "try "+clean(u.Redacted(), 200))
	case strings.Contains(err.Error(), "malformed HTTP response"):
		if t.URL.Scheme == "http" {
			u := *t.URL
			u.Scheme = "https"
			hints = append(hints, "the port may speak HTTPS or another protocol: try "+clean(u.Redacted(), 200))
		}
	case errors.As(err, &dnsErr) && t.Why != "":
		hints = append(hints, fmt.Sprintf("%q was taken for a host because %s; give a path such as ./%s for a file",
			clean(t.Input, 60), t.Why, clean(t.Input, 60)))
	}
	if t.Default {
		hints = append(hints, "with no target inferscope scrapes tabbyAPI's default address; give host:port, a URL or a file otherwise")
	}
	if t.NoPort && !t.Default {
		hints = append(hints, "no port was given, so "+effectivePort(t.URL)+" was used; tabbyAPI listens on 5000 by default")
	}
	hints = append(hints, "is the server running and listening there? try: curl -s "+shellQuote(clean(t.URL.Redacted(), 200))+" | head")
	return hints
}

// statusError explains an answer outside 2xx, quoting a little of the page
// when it is text.
func statusError(t Target, o Options, resp *http.Response) *Error {
	src := sourceOf(t)
	code := resp.StatusCode
	status := fmt.Sprintf("%d %s", code, strings.ToLower(http.StatusText(code)))
	if http.StatusText(code) == "" {
		status = fmt.Sprintf("%d", code)
	}
	msg := fmt.Sprintf("the server at %s answered %s", src, status)
	var e *Error
	switch code {
	case http.StatusNotFound:
		e = newError(NotFound, nil, msg)
		if p := t.URL.Path; p != "/metrics" {
			e.Hints = append(e.Hints, fmt.Sprintf("the path is %s; inference servers publish metrics at /metrics", clean(p, 80)))
		}
		e.Hints = append(e.Hints,
			"tabbyAPI serves /metrics only when network.enable_metrics is true in config.yml",
			"llama.cpp's server needs --metrics and SGLang --enable-metrics; vLLM always serves /metrics")
	case http.StatusUnauthorized, http.StatusForbidden:
		e = newError(Unauthorized, nil, msg)
		if len(o.Headers) > 0 || t.URL.User != nil {
			e.Hints = append(e.Hints, "the credentials sent were refused; check the key and the header name the server expects")
		}
		e.Hints = append(e.Hints,
			"send a key with --header 'Authorization: Bearer <key>' or set INFERSCOPE_BEARER_TOKEN",
			"a server that wants another header takes it the same way, e.g. --header 'X-Api-Key: <key>'")
	default:
		s := strings.TrimRight(snippet(resp), ". ")
		if s != "" {
			msg += ": " + s
		}
		e = newError(HTTPStatus, nil, msg)
		switch {
		case code == http.StatusBadRequest && t.URL.Scheme == "http" && strings.Contains(strings.ToLower(s), "https"):
			u := *t.URL
			u.Scheme = "https"
			e.Hints = append(e.Hints, "the server speaks HTTPS: try "+clean(u.Redacted(), 200))
		case code == http.StatusNotImplemented:
			e.Hints = append(e.Hints, "llama.cpp's server answers 501 when started without --metrics")
		case code == http.StatusServiceUnavailable:
			e.Hints = append(e.Hints, "a server still loading its model may answer 503; try again shortly")
		case code >= 500:
			e.Hints = append(e.Hints, "the server failed to produce its metrics; its log should say why")
		case code >= 300 && code < 400:
			e.Hints = append(e.Hints, "a redirect without a usable Location; scrape the final address directly")
		}
	}
	e.Status = code
	return e
}

// snippet returns a short, cleaned quote from an error page: the message of
// a JSON error ({"detail"}, {"message"}, {"error":{"message"}}), the <title>
// of an HTML page, or the first words of plain text.
func snippet(resp *http.Response) string {
	if enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc != "" && enc != "identity" {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" || b[0] == '{' {
		if s := jsonMessage(b); s != "" {
			return clean(s, 120)
		}
	}
	if mt == "text/html" || bytes.HasPrefix(bytes.ToLower(b), []byte("<!doctype")) || bytes.HasPrefix(bytes.ToLower(b), []byte("<html")) {
		lower := bytes.ToLower(b)
		i := bytes.Index(lower, []byte("<title>"))
		j := bytes.Index(lower, []byte("</title>"))
		if i >= 0 && j > i {
			return clean(string(b[i+len("<title>"):j]), 120)
		}
		return ""
	}
	return clean(string(b), 120)
}

func jsonMessage(b []byte) string {
	var v struct {
		Detail  any    `json:"detail"`
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	if s, ok := v.Detail.(string); ok && s != "" {
		return s
	}
	if v.Message != "" {
		return v.Message
	}
	switch e := v.Error.(type) {
	case string:
		return e
	case map[string]any:
		if s, ok := e["message"].(string); ok {
			return s
		}
	}
	return ""
}

// bodyError explains a failure while reading a 2xx body.
func bodyError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration) *Error {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return canceledError(t, parent.Err(), waited)
	}
	if ctx.Err() != nil || isTimeout(err) {
		return timeoutError(parent, ctx, t, o, err, waited, true)
	}
	e := newError(Read, err, fmt.Sprintf("reading the answer from %s: %s", sourceOf(t), netReason(err)),
		"the server cut the answer short; try again, and check its log if it keeps happening")
	e.Waited = waited
	return e
}
