package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/internal/termsafe"
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
	// Options.Timeout, through the request's context, bounds the dial and
	// the TLS handshake: timeouts of their own (30 s and 10 s by default)
	// would fire regardless of --timeout and be reported as if it had.
	tr.TLSHandshakeTimeout = 0
	tr.DialContext = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	return tr
})

// phase is how far a request got, for saying where it stopped.
type phase int32

const (
	phaseConnect phase = iota // dialling
	phaseTLS                  // in the TLS handshake
	phaseWait                 // connected, request sent or being sent: no answer yet
	phaseHeaders              // the answer has begun: reading its status line and headers
	phaseBody                 // headers read: reading the body
)

// tracePhases follows a request through its phases.
func tracePhases(ctx context.Context, p *atomic.Int32) context.Context {
	set := func(ph phase) { p.Store(int32(ph)) }
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:           func(string) { set(phaseConnect) },
		TLSHandshakeStart: func() { set(phaseTLS) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				set(phaseConnect)
			}
		},
		GotConn:              func(httptrace.GotConnInfo) { set(phaseWait) },
		GotFirstResponseByte: func() { set(phaseHeaders) },
	})
}

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

// newRequest builds the GET for t with the headers o asks for (a Host
// header sets the request's host) and the ones inferscope sends unless o
// gives its own.
func newRequest(ctx context.Context, t Target, o Options) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL.String(), nil)
	if err != nil {
		return nil, newError(BadTarget, err, "cannot build a request for "+sourceOf(t)+": "+clean(err.Error(), 120),
			"write the target as http://host:port/metrics")
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
	return req, nil
}

func fetchHTTP(parent context.Context, t Target, o Options) (*Result, error) {
	src := sourceOf(t)
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()

	var at atomic.Int32
	req, err := newRequest(tracePhases(ctx, &at), t, o)
	if err != nil {
		return nil, err
	}

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
		return nil, requestError(parent, ctx, t, o, err, waited(), phase(at.Load()))
	}
	defer resp.Body.Close()
	scrapedAt := o.Now()
	at.Store(int32(phaseBody))

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
		return nil, bodyError(parent, ctx, t, o, err, waited(), int64(len(wire)), resp.ContentLength)
	}
	body, err := decode(wire, resp.Header.Get("Content-Encoding"), o.MaxBytes)
	if err != nil {
		e := decodeError("the answer from "+src, o.MaxBytes, err,
			"scrape again, and compare: curl -s --compressed "+termsafe.ShellQuote(src)+" | head")
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
