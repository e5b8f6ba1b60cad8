package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// UpstreamError is an upstream the proxy cannot stand in front of, with
// what to write instead.
type UpstreamError struct{ Msg, Hint string }

func (e *UpstreamError) Error() string { return e.Msg }

// ParseUpstream reads an upstream as every other target is read: a URL
// with http:// or https://, or host:port (or a host, or host:port/prefix),
// which gets http://. Credentials in it (user:password@) are kept: the
// proxy sends them to the upstream as basic auth.
func ParseUpstream(s string) (*url.URL, error) {
	const example = "such as --upstream http://127.0.0.1:11434 or --upstream 127.0.0.1:11434"
	raw := s
	if !strings.Contains(s, "://") {
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	switch {
	case s == "":
		return nil, &UpstreamError{"--upstream is empty", "give the server's base URL, " + example}
	case err != nil:
		return nil, &UpstreamError{fmt.Sprintf("--upstream %s is not a URL or host:port", termsafe.Quote(s)), "give the server's base URL, " + example}
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, &UpstreamError{fmt.Sprintf("--upstream %s is not an http:// or https:// URL", termsafe.Quote(s)), "give the server's base URL, " + example}
	case u.Hostname() == "":
		return nil, &UpstreamError{fmt.Sprintf("--upstream %s has no host", termsafe.Quote(s)), "give the server's base URL, " + example}
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, &UpstreamError{"--upstream has a query or fragment; clients' paths and queries are added to it", "give the base URL only, " + example}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, &UpstreamError{fmt.Sprintf("--upstream %s has an invalid port", termsafe.Quote(s)), "a port is a number from 1 to 65535"}
		}
	}
	return u, nil
}

// Defaults of the upstream's transport.
const (
	// maxUpstreamIdle bounds the idle connections kept to the upstream.
	maxUpstreamIdle = 256
	dialTimeout     = 30 * time.Second
)

// upstream carries requests to the upstream server over a pool of
// keep-alive connections.
//
// A request whose reused connection fails before any byte of an answer
// has come back never reached a server that answered it: an upstream
// closes an idle connection as the proxy sends on it (llama.cpp's server
// does after every streamed answer, while offering to keep it). Such a
// request is sent once more, on a connection of its own, when its body is
// in memory; never after a byte of an answer, and never with a body only
// partly read (it cannot be sent again). Go's transport does this by itself
// only for GET-like requests.
//
// Once the upstream has shown that it closes a connection after a
// streamed answer, a request that asks for a stream tells the upstream to
// close its connection after the answer (so no one reuses it), and a
// request whose body cannot be sent again takes a new connection.
type upstream struct {
	pool  *http.Transport // keep-alive
	fresh *http.Transport // a connection per request: for a retry
	// closesAfterStreams: the upstream closed a connection after a
	// streamed answer on it, as the next request was sent or before.
	closesAfterStreams atomic.Bool
	headerTimeout      time.Duration
	retries            prometheus.Counter
	notice             func(string)
}

func newUpstream(headerTimeout time.Duration, retries prometheus.Counter, notice func(string)) *upstream {
	u := &upstream{headerTimeout: headerTimeout, retries: retries, notice: notice}
	// The one HTTP policy's transport: it never asks for gzip on its own
	// (the proxy reads what it measures, and a transport that did would
	// also change what the client receives) and bounds response headers.
	// Redirects and body caps are not the proxy's: it passes a 3xx and a
	// stream through as the upstream sent them.
	t := httpsafe.NewTransport()
	// A client's request may wait as long as it likes for an answer, but
	// not for a handshake that never completes.
	t.TLSHandshakeTimeout = 10 * time.Second
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxUpstreamIdle, maxUpstreamIdle
	t.ResponseHeaderTimeout = headerTimeout
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &conn{Conn: c, u: u}, nil
	}
	u.pool = t
	u.fresh = t.Clone()
	u.fresh.DisableKeepAlives = true
	return u
}

// RoundTrip sends a request upstream, once more on a connection of its
// own when its reused connection failed before any answer.
func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	var a attempt
	tr, out := u.route(req.WithContext(httptrace.WithClientTrace(req.Context(), a.trace())))
	resp, err := tr.RoundTrip(out)
	if n := a.conns.Load(); n > 1 {
		u.retries.Add(float64(n - 1)) // the transport's own, on a connection that took nothing
	}
	switch {
	case err == nil:
		a.answer(resp)
		return resp, nil
	case u.headerTimeout > 0 && a.wrote.Load() && isTimeout(err) && req.Context().Err() == nil:
		return nil, fmt.Errorf("%w: %w", errNoAnswer, err)
	case !u.unanswered(req, &a, err):
		return nil, err
	}
	if c := a.conn.Load(); c != nil && c.streamed.Load() {
		u.learn()
	}
	again := req.WithContext(req.Context())
	if req.GetBody != nil {
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		again.Body = body
	}
	u.retries.Inc()
	return u.fresh.RoundTrip(again)
}

// route picks the transport for a request (out, which it may change):
// once the upstream is known to close after streams, a stream asks it to
// close its connection after the answer, and a body that could not be
// sent again takes a new connection.
func (u *upstream) route(out *http.Request) (*http.Transport, *http.Request) {
	f := flowOf(out)
	if !u.closesAfterStreams.Load() || f == nil {
		return u.pool, out
	}
	switch {
	case out.GetBody == nil && hasBody(out): // not in memory: cannot be sent again
		return u.fresh, out
	case f.stream:
		out.Close = true // the upstream closes it after the answer anyway
	}
	return u.pool, out
}

// unanswered reports a request the upstream never answered and that can
// be sent again: its reused connection failed before any byte of an
// answer, not for a timeout, the client is still there, and its body is in
// memory.
func (u *upstream) unanswered(req *http.Request, a *attempt, err error) bool {
	return a.reused.Load() && !a.firstByte.Load() && req.Context().Err() == nil && !isTimeout(err) &&
		(!hasBody(req) || req.GetBody != nil)
}

func hasBody(r *http.Request) bool { return r.Body != nil && r.Body != http.NoBody }

// errNoAnswer is an upstream that took a whole request and sent no
// answer within the header timeout.
var errNoAnswer = errors.New("no answer within the header timeout")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// learn notes that the upstream closes connections after streamed
// answers.
func (u *upstream) learn() {
	if u.closesAfterStreams.CompareAndSwap(false, true) && u.notice != nil {
		u.notice("the upstream closes its connection after each streamed answer although it offers to keep it; " +
			"streamed requests now each take a connection of their own")
	}
}

// attempt is what one round trip saw of its connections (its trace's
// callbacks run on the transport's goroutines).
type attempt struct {
	conns     atomic.Int32 // connections it was given (more than one: the transport retried)
	reused    atomic.Bool  // the last was an idle one, used before
	wrote     atomic.Bool  // the whole request was written
	firstByte atomic.Bool  // a byte of an answer came back
	conn      atomic.Pointer[conn]
}

func (a *attempt) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			a.conns.Add(1)
			a.reused.Store(info.Reused)
			a.wrote.Store(false)
			a.conn.Store(tracked(info.Conn))
		},
		WroteRequest:         func(w httptrace.WroteRequestInfo) { a.wrote.Store(w.Err == nil) },
		GotFirstResponseByte: func() { a.firstByte.Store(true) },
	}
}

// answer notes on the connection whether its answer streams, and when a
// stream has been read to its end.
func (a *attempt) answer(resp *http.Response) {
	c := a.conn.Load()
	if c == nil || resp.ProtoMajor != 1 {
		return // HTTP/2 multiplexes: nothing to learn from a connection
	}
	s := streams(resp.Header.Get("Content-Type"))
	c.streamed.Store(s)
	if s {
		resp.Body = &streamEnd{ReadCloser: resp.Body, c: c}
	}
}

func streams(contentType string) bool {
	return strings.HasPrefix(contentType, "text/event-stream") || strings.HasPrefix(contentType, "application/x-ndjson")
}

// streamEnd is a streamed answer's body, which notes its end on its
// connection.
type streamEnd struct {
	io.ReadCloser
	c *conn
}

func (s *streamEnd) Read(b []byte) (int, error) {
	n, err := s.ReadCloser.Read(b)
	if err == io.EOF {
		s.c.streamEnded.Store(true)
	}
	return n, err
}

// conn is a connection to the upstream, watched for the upstream closing
// it after a streamed answer.
type conn struct {
	net.Conn
	u *upstream
	// streamed: the last answer on it streams.
	streamed atomic.Bool
	// streamEnded: a streamed answer on it was read to its end, and
	// nothing has been written on it since.
	streamEnded atomic.Bool
}

func (c *conn) Write(b []byte) (int, error) {
	c.streamEnded.Store(false)
	return c.Conn.Write(b)
}

// Read sees the upstream close the connection: right after a streamed
// answer, when no request was sent, the upstream closes after streams.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == io.EOF && c.streamEnded.Load() {
		c.u.learn()
	}
	return n, err
}

// tracked is the proxy's own connection under what the transport gives a
// trace (TLS over it, for https).
func tracked(c net.Conn) *conn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*conn)
	return t
}
