package scrape

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// requestError explains a request that got no complete answer header;
// ph says how far it got.
func requestError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration, ph phase) *Error {
	src := sourceOf(t)
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return canceledError(t, parent.Err(), waited)
	}
	if ctx.Err() != nil || isTimeout(err) {
		return timeoutError(parent, ctx, t, o, err, waited, ph)
	}
	var re *httpsafe.RedirectError
	var e *Error
	switch {
	case errors.Is(err, errCap):
		var size int64
		if te := (*httpsafe.TooLargeError)(nil); errors.As(err, &te) {
			size = te.Size
		}
		e = tooLarge("the answer from "+src, o.MaxBytes, size, false)
	case errors.As(err, &re):
		to := httpsafe.Redact(re.To)
		if re.TooMany {
			e = newError(Redirect, err, fmt.Sprintf("%s redirected more than %d times (last to %s)", src, httpsafe.MaxRedirects, to),
				"scrape the final address directly")
		} else {
			e = newError(Redirect, err, fmt.Sprintf("%s redirected to another host, %s; not following it with your credentials", src, to),
				"if you trust that host, scrape "+to+" directly")
		}
	case ph == phaseHeaders:
		e = badAnswerError(t, err)
	case ph == phaseTLS && isClosed(err):
		e = newError(Unreachable, err, fmt.Sprintf("the TLS handshake with %s failed: the server closed the connection", src),
			notHTTPSHint(t), curlHint(t))
	case ph == phaseWait && isClosed(err):
		e = newError(Unreachable, err, fmt.Sprintf("the server at %s closed the connection without answering", src),
			"the port may serve another protocol, or the server may be failing: check its log", curlHint(t))
		if t.URL.Scheme == "http" {
			e.Hints = append([]string{"if the port speaks HTTPS, try " + withScheme(t, "https")}, e.Hints...)
		}
	default:
		e = newError(Unreachable, err, fmt.Sprintf("cannot reach %s: %s", src, netReason(err)))
		e.Hints = unreachableHints(t, err)
	}
	e.Waited = waited
	return e
}

// badAnswerError explains an answer whose status line or headers could not
// be read: the server was reached, and answered something else than HTTP.
func badAnswerError(t Target, err error) *Error {
	src := sourceOf(t)
	reason := innerReason(err)
	var e *Error
	switch {
	case strings.Contains(reason, "malformed HTTP"):
		e = newError(BadResponse, err, fmt.Sprintf("the server at %s did not answer in HTTP: %s", src, reason))
		if t.URL.Scheme == "http" {
			e.Hints = append(e.Hints, "the port may speak HTTPS or another protocol: try "+withScheme(t, "https"))
		}
	case strings.Contains(reason, "malformed MIME header"):
		e = newError(BadResponse, err, fmt.Sprintf("the server at %s sent a malformed HTTP header: %s", src, reason))
		e.Hints = append(e.Hints, "the server or a proxy in front of it is broken; its log may say why")
	case isClosed(err):
		e = newError(BadResponse, err, fmt.Sprintf("the server at %s closed the connection in the middle of its answer's headers", src),
			"try again; if it keeps happening, the server may be crashing: check its log")
	default:
		e = newError(BadResponse, err, fmt.Sprintf("the server at %s sent an answer inferscope cannot read: %s", src, reason))
	}
	e.Hints = append(e.Hints, "see the raw answer: curl -sv "+termsafe.ShellQuote(sourceOf(t))+" | head")
	return e
}

// timeoutError explains a scrape that ran out of time at phase ph. It names
// the --timeout value when that is what fired, else (the caller's
// deadline, a client's own TLS timeout) how long it actually waited.
func timeoutError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration, ph phase) *Error {
	src := sourceOf(t)
	// The limit given is a setting, in the flag's spelling; a wait is a
	// measured time.
	after := "timed out after " + units.Seconds(waited.Seconds())
	if ctx.Err() != nil && parent.Err() == nil {
		after = "timed out after " + units.Duration(o.Timeout)
	}
	waitLonger := "a busy server can hold a scrape for seconds; wait longer with --timeout " + units.Duration(2*o.Timeout)
	var e *Error
	switch ph {
	case phaseConnect:
		e = newError(Timeout, err, fmt.Sprintf("%s connecting to %s", after, src),
			"nothing accepted the connection: is the host up, and does a firewall let the port through?", curlHint(t))
	case phaseTLS:
		e = newError(Timeout, err, fmt.Sprintf("%s: the TLS handshake with %s did not complete", after, src),
			notHTTPSHint(t))
	case phaseHeaders:
		e = newError(Timeout, err, fmt.Sprintf("%s reading the headers of the answer from %s", after, src), waitLonger)
	case phaseBody:
		e = newError(Timeout, err, fmt.Sprintf("%s reading the answer from %s", after, src), waitLonger)
	default:
		e = newError(Timeout, err, fmt.Sprintf("%s waiting for %s", after, src), waitLonger)
	}
	e.Waited = waited
	return e
}

func notHTTPSHint(t Target) string {
	return "is the port serving HTTPS? if it speaks plain HTTP, try " + withScheme(t, "http")
}

// withScheme is the target's URL with another scheme, for a hint.
func withScheme(t Target, scheme string) string {
	u := *t.URL
	u.Scheme = scheme
	return clean(u.Redacted(), 200)
}

// curlHint shows how to look at the endpoint by hand.
func curlHint(t Target) string {
	return "is the server running and listening there? try: curl -s " + termsafe.ShellQuote(sourceOf(t)) + " | head"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// isClosed reports a connection the other side closed or reset.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// innerReason is Go's error text without the url.Error wrapping and
// net/http's preamble, cleaned.
func innerReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clean(strings.TrimPrefix(err.Error(), "net/http: HTTP/1.x transport connection broken: "), 160)
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
	return innerReason(err)
}

func unreachableHints(t Target, err error) []string {
	var hints []string
	var dnsErr *net.DNSError
	var recErr tls.RecordHeaderError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		hints = append(hints, "try "+withScheme(t, "http"))
	case errors.As(err, &authErr):
		hints = append(hints, "a self-signed or private CA certificate: add the CA to the system's trust store (SSL_CERT_FILE names a bundle)")
	case errors.As(err, &hostErr):
		hints = append(hints, "scrape the host name the certificate was issued for")
	case errors.As(err, &dnsErr) && t.Why != "":
		hints = append(hints, fmt.Sprintf("%q was taken for a host because %s; give a path such as ./%s for a file",
			clean(t.Input, 60), t.Why, clean(t.Input, 60)))
	}
	if t.Default {
		hints = append(hints, "with no target inferscope scrapes tabbyAPI's default address; give host:port, a URL or a file otherwise")
	}
	if t.NoPort && !t.Default {
		hints = append(hints, "no port was given, so "+httpsafe.Port(t.URL)+" was used; tabbyAPI listens on 5000 by default")
	}
	return append(hints, curlHint(t))
}

// statusError explains an answer outside 2xx, quoting a little of the page
// when it is text, and says what to try for the status.
func statusError(t Target, o Options, resp *http.Response) *Error {
	code := resp.StatusCode
	status := fmt.Sprintf("%d %s", code, strings.ToLower(http.StatusText(code)))
	if http.StatusText(code) == "" {
		status = fmt.Sprintf("%d", code)
	}
	msg := fmt.Sprintf("the server at %s answered %s", sourceOf(t), status)
	var e *Error
	switch code {
	case http.StatusNotFound:
		e = newError(NotFound, nil, msg, pathHints(t)...)
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
		e.Said = s
		if code == http.StatusMethodNotAllowed || code == http.StatusGone {
			e.Hints = append(e.Hints, pathHints(t)...)
		}
		e.Hints = append(e.Hints, statusHint(t, code, s),
			"see the whole answer: curl -si "+termsafe.ShellQuote(sourceOf(t))+" | head")
	}
	e.Status = code
	return e
}

// pathHints points out a path other than /metrics.
func pathHints(t Target) []string {
	if p := t.URL.Path; p != "/metrics" {
		return []string{fmt.Sprintf("the path is %s; inference servers publish metrics at /metrics", clean(p, 80))}
	}
	return nil
}

// statusHints says what to try for a status that has advice of its own;
// any other takes its class's (statusHint).
var statusHints = map[int]string{
	http.StatusBadRequest:         "the server refused the request; check the URL and any --header sent",
	http.StatusMethodNotAllowed:   "this URL does not serve metrics; check it against the server's documentation",
	http.StatusGone:               "this URL does not serve metrics; check it against the server's documentation",
	http.StatusProxyAuthRequired:  "a proxy on the way wants credentials: put them in HTTP_PROXY or HTTPS_PROXY (http://user:password@proxy:port), or bypass it with NO_PROXY",
	http.StatusTooManyRequests:    "the server or a proxy limits the request rate; scrape less often",
	http.StatusNotImplemented:     "llama.cpp's server answers 501 when started without --metrics",
	http.StatusBadGateway:         "a proxy in front of the server got no valid answer from it: is the inference server running behind the proxy?",
	http.StatusServiceUnavailable: "a server still loading its model may answer 503 (or a proxy with no server behind it); try again shortly",
	http.StatusGatewayTimeout:     "a proxy in front of the server timed out waiting for it; the server may be overloaded: try again, or scrape it directly",
}

// statusHint says what to try for a status, given the start of the page
// that came with it (snip): a plain-http request a TLS server refused says
// so there.
func statusHint(t Target, code int, snip string) string {
	if code == http.StatusBadRequest && t.URL.Scheme == "http" && strings.Contains(strings.ToLower(snip), "https") {
		return "the server speaks HTTPS: try " + withScheme(t, "https")
	}
	if h, ok := statusHints[code]; ok {
		return h
	}
	switch {
	case code >= 500 && code < 600:
		return "the server failed to produce its metrics; its log should say why"
	case code >= 300 && code < 400:
		return "a redirect without a usable Location; scrape the final address directly"
	case code >= 400 && code < 500:
		return "the server refused the request; check the URL and any --header sent"
	}
	return "that is no standard HTTP status: something other than an inference server may be answering on that port"
}

// bodyError explains a failure while reading a 2xx body, after got bytes
// of the want announced (want < 0: not announced).
func bodyError(parent, ctx context.Context, t Target, o Options, err error, waited time.Duration, got, want int64) *Error {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return canceledError(t, parent.Err(), waited)
	}
	if ctx.Err() != nil || isTimeout(err) {
		return timeoutError(parent, ctx, t, o, err, waited, phaseBody)
	}
	src := sourceOf(t)
	const again = "try again; if it keeps happening, the server or a proxy in front of it is dropping the connection mid-answer: check its log"
	var e *Error
	reason := innerReason(err)
	switch {
	case isClosed(err):
		how := "closed"
		if errors.Is(err, syscall.ECONNRESET) {
			how = "was reset"
		}
		if want > 0 {
			e = newError(Read, err, fmt.Sprintf("the answer from %s was cut short: %s of the %s announced arrived before the connection %s",
				src, units.Bytes(float64(got)), units.Bytes(float64(want)), how), again)
		} else {
			e = newError(Read, err, fmt.Sprintf("the answer from %s was cut short: the connection %s after %s", src, how, units.Bytes(float64(got))), again)
		}
	case strings.Contains(reason, "chunk"):
		e = newError(BadResponse, err, fmt.Sprintf("the answer from %s has a malformed chunked body: %s", src, reason),
			"the server or a proxy in front of it is broken; see the raw answer: curl -sv "+termsafe.ShellQuote(src)+" | head")
	default:
		e = newError(Read, err, fmt.Sprintf("reading the answer from %s: %s", src, netReason(err)), again)
	}
	e.Waited = waited
	return e
}
