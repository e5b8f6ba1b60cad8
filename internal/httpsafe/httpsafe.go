// Package httpsafe is inferscope's one policy for talking HTTP to servers it
// does not control: an inference server's /metrics (internal/scrape), a
// Prometheus-compatible store (internal/promapi), a proxy's upstream, and
// any reader to come (llama.cpp's /slots). Whatever such a server answers,
// the policy holds:
//
//   - Credentials stay with their server. The headers given ([Options.Headers]:
//     --header, a bearer token, X-Scope-OrgID) and basic auth (the user
//     info of [Options.Origin]) are added by the client's transport to
//     requests for the origin only, and a redirect to another host is
//     refused while there are any: a [*RedirectError] names both hosts. Go's
//     own client drops only Authorization and Cookie across hosts; a
//     transport that adds headers to every request sends them wherever a
//     redirect points.
//   - At most [MaxRedirects] redirects are followed.
//   - Every answer is capped: reading past [Options.MaxBytes] fails with a
//     [*TooLargeError] naming the endpoint and the cap, on the wire and,
//     with [Options.Gzip], after decompression, so that a small compressed
//     bomb stops at the cap. A Content-Length over the cap fails at once.
//   - The transport ([Transport], [NewTransport]) never decompresses on its
//     own (it would do so past the cap), bounds an answer's headers, and has
//     no timer of its own: the request's context bounds the dial and the
//     TLS handshake too, so one deadline says when to give up.
//
// Text from the server that these errors quote (a redirect's Location) is
// cleaned and cut to one line ([termsafe.Line]).
package httpsafe

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// MaxRedirects bounds the redirects followed: a server needs at most a
// scheme upgrade and a trailing slash.
const MaxRedirects = 5

// MaxHeaderBytes bounds an answer's status line and headers.
const MaxHeaderBytes = 1 << 20

// urlRunes is how much of a URL an error quotes.
const urlRunes = 200

// Options say whom a client talks to and what it accepts.
type Options struct {
	// Origin is the server the credentials belong to: its scheme, host and
	// port decide which requests carry Headers, and its user info, if any,
	// is sent as basic auth (unless Headers give an Authorization).
	Origin *url.URL
	// Headers are added to every request for the origin, over the
	// request's own; a "Host" entry sets the request's host. Any header
	// given, like user info in Origin, makes a redirect to another host
	// refused.
	Headers http.Header
	// MaxBytes caps each answer's body, on the wire and after
	// decompression; it must be positive.
	MaxBytes int64
	// Gzip asks for gzip and decompresses it within the cap; without it
	// the body arrives as the server sent it (the caller decodes it) and
	// the cap counts the wire.
	Gzip bool
	// Transport carries the requests; nil is [Transport].
	Transport http.RoundTripper
}

// secrets says whether a request may carry something another host must
// not see.
func (o Options) secrets() bool { return len(o.Headers) > 0 || o.Origin.User != nil }

// NewClient returns a client that holds the policy for o.Origin. It keeps
// no state but its transport's connections: one per server is enough.
func NewClient(o Options) *http.Client {
	if o.Origin == nil || o.MaxBytes <= 0 {
		panic("httpsafe: NewClient needs an origin and a positive MaxBytes")
	}
	base := o.Transport
	if base == nil {
		base = Transport()
	}
	origin := *o.Origin
	t := &transport{base: base, origin: &origin, max: o.MaxBytes, gzip: o.Gzip, headers: http.Header{}}
	for k, vs := range o.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			if len(vs) > 0 {
				t.host = vs[0]
			}
			continue
		}
		t.headers[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	return &http.Client{Transport: t, CheckRedirect: checkRedirect(&origin, o.secrets())}
}

// sharedTransport is reused by every client that does not bring its own,
// so that a watch loop keeps its connection alive instead of dialling at
// every refresh.
var sharedTransport = sync.OnceValue(NewTransport)

// Transport returns the transport clients share.
func Transport() *http.Transport { return sharedTransport() }

// NewTransport returns a transport of its own with the policy's settings,
// for a caller that tunes its pool (a proxy keeps many connections to one
// upstream).
func NewTransport() *http.Transport {
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	// Compression is asked for by hand (Options.Gzip), so that the
	// transport never decompresses behind the cap's back.
	tr.DisableCompression = true
	tr.MaxResponseHeaderBytes = MaxHeaderBytes
	// The request's context bounds the dial and the TLS handshake: timers
	// of their own (30 s and 10 s by default) would fire whatever the
	// caller's deadline says, and be reported as if it had.
	tr.TLSHandshakeTimeout = 0
	tr.DialContext = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	return tr
}

// RedirectError is a redirect the policy does not follow: to another host
// while the request carries credentials, or one too many.
type RedirectError struct {
	From, To *url.URL // the request redirected, and where to
	TooMany  bool
}

func (e *RedirectError) Error() string {
	if e.TooMany {
		return fmt.Sprintf("%s redirected more than %d times (last to %s)", Redact(e.From), MaxRedirects, Redact(e.To))
	}
	return fmt.Sprintf("%s redirected to another host, %s: not following it with the credentials given", Redact(e.From), Redact(e.To))
}

// checkRedirect follows redirects to the origin's host (an http→https
// upgrade included), and to any host while there is nothing secret to
// send, up to MaxRedirects.
func checkRedirect(origin *url.URL, secrets bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[len(via)-1].URL
		if len(via) > MaxRedirects {
			return &RedirectError{From: from, To: req.URL, TooMany: true}
		}
		if secrets && !SameHost(origin, req.URL) {
			return &RedirectError{From: from, To: req.URL}
		}
		return nil
	}
}

// SameHost reports whether b is the same server as a: the same host name
// and port, or the standard upgrade from http on 80 to https on 443. A
// downgrade from https to http is another server as far as credentials go.
func SameHost(a, b *url.URL) bool {
	if !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	switch {
	case a.Scheme == b.Scheme:
		return Port(a) == Port(b)
	case a.Scheme == "http" && b.Scheme == "https":
		return Port(a) == Port(b) || (Port(a) == "80" && Port(b) == "443")
	}
	return false
}

// Port is u's port, or its scheme's default.
func Port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// Redact writes u for a message: without a password or query, cleaned, on
// one line, cut to 200 runes.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.RawQuery, c.ForceQuery = "", false
	return termsafe.Line(c.Redacted(), urlRunes)
}

// ErrTooLarge is what every [*TooLargeError] wraps: a body over its cap.
var ErrTooLarge = errors.New("over the byte cap")

// TooLargeError is an answer whose body is over the cap.
type TooLargeError struct {
	URL string // the endpoint, as Redact writes it
	Max int64
	// Decompressed: the body was within the cap on the wire, and gzip
	// made it larger.
	Decompressed bool
	// Size is the body's size where the answer said it (an unencoded
	// Content-Length), else 0: what a cap must be to hold it.
	Size int64
}

func (e *TooLargeError) Error() string {
	what := "is larger than"
	if e.Decompressed {
		what = "decompresses to more than"
	}
	return fmt.Sprintf("the answer from %s %s the %s cap", e.URL, what, units.Bytes(float64(e.Max)))
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadAll reads r to the end, failing with ErrTooLarge as soon as it holds
// more than limit bytes. sizeHint (a Content-Length, a file's size) presizes
// the buffer when it is within the cap; else, or past it, the buffer
// doubles from 64 KiB but never past limit+1 bytes, so that reading to the
// cap allocates at most three times the cap, twice for a cap that is a
// power of two (io.ReadAll and bytes.Buffer grow past the cap: 128 MB
// allocated to meet a cap of 32 MiB). On another error it returns what it
// read before it.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	return ReadAllInto(nil, r, limit, sizeHint)
}

// ReadAllInto is ReadAll reading into buf's room (its length ignored),
// growing it as ReadAll grows its own: a caller that reads many answers
// in turn hands back the last one's buffer instead of allocating anew.
func ReadAllInto(buf []byte, r io.Reader, limit, sizeHint int64) ([]byte, error) {
	b := buf[:0]
	switch {
	case sizeHint > 0 && sizeHint <= limit:
		if int64(cap(b)) <= sizeHint { // the extra byte meets EOF without growing
			b = make([]byte, 0, sizeHint+1)
		}
	case cap(b) == 0:
		b = make([]byte, 0, min(64<<10, limit+1))
	}
	for {
		if len(b) == cap(b) { // below limit+1: that many is an error
			c := max(2*int64(cap(b)), 64<<10)
			if c >= limit {
				c = limit + 1 // room for the byte that says the body is over
			}
			nb := make([]byte, len(b), c)
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, ErrTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// GzipError is an answer whose gzip data is corrupt.
type GzipError struct {
	URL string
	Err error
}

func (e *GzipError) Error() string {
	return "the answer from " + e.URL + " holds gzip data that is corrupt: " + termsafe.Line(e.Err.Error(), 80)
}

func (e *GzipError) Unwrap() error { return e.Err }

// transport adds the origin's headers and caps the answers.
type transport struct {
	base    http.RoundTripper
	origin  *url.URL
	headers http.Header
	host    string
	max     int64
	gzip    bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if SameHost(t.origin, r.URL) {
		for k, vs := range t.headers {
			r.Header[k] = append([]string(nil), vs...)
		}
		if t.host != "" {
			r.Host = t.host
		}
		if u := t.origin.User; u != nil && r.Header.Get("Authorization") == "" {
			pw, _ := u.Password()
			r.SetBasicAuth(u.Username(), pw)
		}
	}
	if t.gzip {
		r.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	where := Redact(r.URL)
	if resp.ContentLength > t.max {
		resp.Body.Close()
		e := &TooLargeError{URL: where, Max: t.max, Size: resp.ContentLength}
		if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
			e.Size = 0 // the wire's size: the body is larger
		}
		return nil, e
	}
	resp.Body = &capped{rc: resp.Body, left: t.max, err: &TooLargeError{URL: where, Max: t.max}}
	if t.gzip && isGzip(resp.Header.Get("Content-Encoding")) {
		resp.Body = &gunzip{wire: resp.Body, url: where, out: capped{left: t.max, err: &TooLargeError{URL: where, Max: t.max, Decompressed: true}}}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	return resp, nil
}

func isGzip(enc string) bool {
	enc = strings.ToLower(strings.TrimSpace(enc))
	return enc == "gzip" || enc == "x-gzip"
}

// capped reads rc and fails with err past left bytes.
type capped struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.err
	}
	// One byte past the cap is read to tell a body of exactly the cap
	// from a longer one.
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - 1, c.err
	}
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

// gunzip decompresses wire within out's cap, starting at the first Read
// (gzip.NewReader reads the header).
type gunzip struct {
	wire io.ReadCloser
	url  string
	zr   *gzip.Reader
	out  capped
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.wire)
		if err != nil {
			return 0, g.fail(err)
		}
		g.zr, g.out.rc = zr, zr
	}
	n, err := g.out.Read(p)
	if err != nil && err != io.EOF {
		err = g.fail(err)
	}
	return n, err
}

// fail says what a gzip error is: corrupt data is a GzipError; the
// wire's own errors (a cap, a cut connection, the deadline) pass as they
// are.
func (g *gunzip) fail(err error) error {
	var ce flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &ce) {
		return &GzipError{URL: g.url, Err: err}
	}
	return err
}

func (g *gunzip) Close() error { return g.wire.Close() }
