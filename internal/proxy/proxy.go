// Package proxy is `inferscope proxy`: a reverse proxy in front of an
// inference server that publishes no metrics (Ollama, LM Studio, a hosted
// OpenAI-compatible API), which measures every generation passing through
// it and publishes the inferscope metric set through package exporter.
//
// # Faithful first
//
// Every request and response passes through net/http/httputil's
// ReverseProxy unchanged: method, path, headers (hop-by-hop ones handled
// by ReverseProxy), status, body. Streams (text/event-stream, Ollama's
// application/x-ndjson) are flushed as each read from the upstream
// arrives, never buffered or compressed; they get Cache-Control
// no-transform and X-Accel-Buffering: no so that proxies in between do not
// buffer them either. On the four endpoints it measures, the proxy asks the
// upstream for an uncompressed answer (it must read it), which any client
// accepts. A client that goes away cancels the upstream request, and the
// generation counts as aborted, never as finished.
//
// Nothing the proxy logs or publishes carries a prompt, a completion, a
// header or a URL: only counts, times and model names.
//
// # What it measures
//
// OpenAI chat/completions and completions (streaming and not), and
// Ollama's /api/chat and /api/generate, by reading a copy of the response
// as it flows (with package stream's reader, the one `inferscope bench`
// reads its own answers with): time to first token at the first content, reasoning or
// tool-call delta (not a role-only chunk or a keep-alive comment), the
// whole request time, and what the upstream reports: `usage` (the last one
// the stream carries, with prompt_tokens_details.cached_tokens where
// given), llama.cpp's `timings` (exact prefill and decode times, cached
// prompt tokens), Ollama's counts and durations. What an API does not say
// is recorded as unknown and left out of the exposition (see
// exporter.Quantity), never published as 0. docs/proxy.md lists, API by
// API, what is measured and what cannot be.
//
// With InjectUsage, a streaming OpenAI request that did not ask for usage
// gets stream_options.include_usage upstream, and the usage-only chunk this
// adds is removed before it reaches the client.
//
// What an upstream reports is checked like any other input: a count that
// is negative, fractional, over [MaxTokens] or over the model's context
// (as the upstream's model list reported it) makes that generation's
// reported figures unknown, and is counted; nothing is clamped.
//
// # No error the upstream did not cause
//
// A request whose reused upstream connection fails before any byte of an
// answer, with its body in memory, is sent once more on a connection of
// its own (an upstream closes idle connections as it likes; llama.cpp's
// server closes one after every stream); once an upstream is seen to close
// after streams, streamed requests ask it to close their connection. A
// client whose body does not arrive in time gets 408; an upstream silent
// past Options.UpstreamHeaderTimeout, 504. [Server] serves a proxy with the
// timeouts a server needs, /healthz and /readyz, and a drain.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/stream"
)

// Defaults of [Options].
const (
	// DefaultMaxInspect is how much of a request body is read to find the
	// model and whether it streams; a larger body is forwarded whole all
	// the same, and only --inject-usage cannot apply to it (nor can it be
	// sent again after a closed connection).
	DefaultMaxInspect = 1 << 20
	// DefaultMaxResponse is how much of a non-streamed response is kept to
	// read its usage; beyond it the generation counts, without figures.
	DefaultMaxResponse = 8 << 20
	// DefaultBodyTimeout is how long a client has to send a request body,
	// from the first read of it to its end.
	DefaultBodyTimeout = 60 * time.Second
	// maxLine bounds one streamed line or event kept for parsing.
	maxLine = stream.MaxLine
)

// Options configure [New].
type Options struct {
	// Upstream is the server's base URL (scheme, host, optional path
	// prefix, optional credentials sent as basic auth).
	Upstream *url.URL
	// InjectUsage asks the upstream for usage on streaming OpenAI requests
	// that did not, and removes the extra chunk before the client sees it.
	InjectUsage bool
	// MaxInspect bounds the request body read for inspection; 0 means
	// DefaultMaxInspect.
	MaxInspect int
	// MaxResponse bounds a non-streamed response kept for parsing; 0
	// means DefaultMaxResponse.
	MaxResponse int
	// BodyTimeout bounds the time a client takes to send a request body;
	// past it the request ends with 408. 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// UpstreamHeaderTimeout bounds the wait for the upstream's answer
	// once a request is sent (then 504); 0 waits as long as it takes (a
	// long prefill is legitimate).
	UpstreamHeaderTimeout time.Duration
	// Notice receives, once each, what the proxy learns of the upstream
	// that an operator should know (a line without a newline); nil
	// discards them.
	Notice func(string)
	// Namespace is the exporter's series prefix; "" is the exporter's.
	Namespace string
	// Now is the clock; nil is time.Now (tests replace it).
	Now func() time.Time
}

// Proxy is the measuring reverse proxy. Serve it with an http.Server, or
// with [Server]; its metrics are served by [Proxy.MetricsHandler].
type Proxy struct {
	rp       *httputil.ReverseProxy
	up       *upstream
	m        *exporter.Metrics
	o        Options
	now      func() time.Time
	inflight atomic.Int64
	ctx      contexts
	own      ownSeries
}

// New builds a proxy to o.Upstream.
func New(o Options) (*Proxy, error) {
	if o.Upstream == nil || o.Upstream.Host == "" || (o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https") {
		return nil, errors.New("proxy: the upstream must be an http:// or https:// URL with a host")
	}
	if o.MaxInspect <= 0 {
		o.MaxInspect = DefaultMaxInspect
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = DefaultMaxResponse
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	p := &Proxy{o: o, now: o.Now}
	if p.now == nil {
		p.now = time.Now
	}
	p.m = exporter.New(exporter.Options{
		Namespace: o.Namespace,
		PerModel:  true,
		Engine:    engine{p},
		// A proxy sees requests, not the engine: only the requests in
		// flight through it. No API says whether a drafter served a
		// request.
		Unknown: exporter.UnknownWaiting | exporter.UnknownKVCache | exporter.UnknownOffload |
			exporter.UnknownRecurrent | exporter.UnknownDraft,
	})
	if err := p.own.register(p.m.Registry()); err != nil {
		return nil, err
	}
	p.up = newUpstream(o.UpstreamHeaderTimeout, p.own.retries, o.Notice)
	up := o.Upstream
	p.rp = &httputil.ReverseProxy{
		// SetURL sends the upstream's own Host; no X-Forwarded-* headers
		// are added: the request reaches the upstream as the client sent
		// it, but for credentials in the upstream's URL, which are the
		// upstream's and replace any the client sent.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			if up.User != nil {
				pw, _ := up.User.Password()
				pr.Out.SetBasicAuth(up.User.Username(), pw)
			}
		},
		Transport:      p.up,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       quietLog,
		BufferPool:     copyBuffers{},
	}
	return p, nil
}

// Metrics is the exporter the proxy records into.
func (p *Proxy) Metrics() *exporter.Metrics { return p.m }

// MetricsHandler serves GET /metrics.
func (p *Proxy) MetricsHandler() http.Handler { return p.m.Handler() }

// CloseIdleConnections closes the connections to the upstream that are
// idle.
func (p *Proxy) CloseIdleConnections() { p.up.pool.CloseIdleConnections() }

// InFlight is the number of measured requests in flight now.
func (p *Proxy) InFlight() int64 { return p.inflight.Load() }

// engine is what the proxy knows of the engine: the requests in flight
// through it.
type engine struct{ p *Proxy }

func (e engine) Live() exporter.Live { return exporter.Live{ActiveJobs: int(e.p.inflight.Load())} }

// ServeHTTP forwards one request, measuring it when it is a generation.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// By default an HTTP/1 server consumes and closes what is left of a
	// request body once the response starts; the transport may still be
	// reading it towards the upstream (its last read, for EOF), and then
	// drops the upstream connection mid-answer (seen in 2% of test runs).
	rc := http.NewResponseController(w)
	rc.EnableFullDuplex()
	f := &flow{}
	a := classify(r)
	if a != apiNone {
		x := &exchange{p: p, api: a, start: p.now()}
		f.x = x
		p.inflight.Add(1)
		defer func() {
			p.inflight.Add(-1)
			if v := recover(); v != nil {
				// ReverseProxy panics with http.ErrAbortHandler when the
				// copy to the client fails: the client went away.
				x.copyFailed = true
				p.finish(x)
				panic(v)
			}
			p.finish(x)
		}()
	}
	head, whole, err := p.readBody(rc, r, f)
	if err != nil {
		if f.x != nil {
			f.x.bodyLate = true
		}
		p.bodyLate(w)
		return
	}
	if whole {
		body := head
		if f.x != nil {
			body = f.x.inspect(head, p.o.InjectUsage)
		}
		f.stream = asksStream(a, head)
		setBody(r, body)
	}
	f.models = listsModels(r)
	if f.x != nil || f.models {
		// The proxy reads the answer: it must come uncompressed.
		r.Header.Del("Accept-Encoding")
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), flowKey{}, f)))
}

// modifyResponse puts the meter on a measured response, and reads a
// model list for the models' context lengths.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	f := flowOf(resp.Request)
	switch {
	case f == nil:
		return nil
	case f.models:
		p.ctx.watch(resp)
		return nil
	case f.x == nil:
		return nil
	}
	x := f.x
	x.status = resp.StatusCode
	x.firstByte = p.now()
	p.own.recognise(resp.Header.Get("Server"))
	ct := resp.Header.Get("Content-Type")
	stream := streams(ct)
	if stream {
		// Proxies between here and the client must not hold the stream.
		cc := resp.Header.Get("Cache-Control")
		if !strings.Contains(cc, "no-transform") {
			if cc == "" {
				resp.Header.Set("Cache-Control", "no-cache, no-transform")
			} else {
				resp.Header.Set("Cache-Control", cc+", no-transform")
			}
		}
		if resp.Header.Get("X-Accel-Buffering") == "" {
			resp.Header.Set("X-Accel-Buffering", "no")
		}
	}
	if resp.StatusCode != http.StatusOK {
		return nil // an error: nothing to measure
	}
	x.stream = stream
	x.sse = strings.HasPrefix(ct, "text/event-stream")
	// An encoded body (the upstream compressed it unasked) is passed on and
	// timed, not read: its figures are unknown.
	x.encoded = resp.Header.Get("Content-Encoding") != ""
	m := &meter{x: x, body: resp.Body}
	if x.injected && x.sse && !x.encoded {
		// Removing the injected chunk changes the length.
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		resp.Body = &filter{meter: m}
		return nil
	}
	resp.Body = m
	return nil
}

// upstreamError answers a request the upstream did not: 502 when it
// cannot be reached, 504 when it took the request and sent nothing within
// the header timeout, 408 when the client's body did not arrive in time;
// in words that carry nothing of the request.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	f := flowOf(r)
	late := f != nil && f.bodyLate.Load()
	if f != nil && f.x != nil {
		f.x.unreachable, f.x.bodyLate = !late, late
	}
	if r.Context().Err() != nil {
		return // the client went away: nobody to answer
	}
	switch {
	case late:
		p.bodyLate(w)
	case errors.Is(err, errNoAnswer):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusGatewayTimeout)
		fmt.Fprintf(w, "inferscope proxy: the upstream server sent no answer within %s\n", p.o.UpstreamHeaderTimeout)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintln(w, "inferscope proxy: the upstream server could not be reached")
	}
}

// finish records how a measured request ended.
func (p *Proxy) finish(x *exchange) {
	if x.noGeneration {
		return // not a generation, whichever way it ended
	}
	o := x.outcome()
	p.own.outcomes[x.api][o].Inc()
	if x.oversized {
		p.own.oversized[x.api].Inc()
	}
	if o != finished {
		return
	}
	g, valid := x.generation(p.now(), p.ctx.of(x.modelName()))
	if !valid {
		p.own.invalid[x.api].Inc()
	}
	p.m.RecordGeneration(g)
	p.own.ttfb[x.api].Observe(x.firstByte.Sub(x.start).Seconds())
}

// copyBuffers lends ReverseProxy the buffers it copies answers through.
// Without a pool it allocates 32 KB per answer and holds it while a stream
// is open; a streamed event is a few hundred bytes, so 8 KB buffers cost a
// non-streamed answer a few more reads and every open stream 24 KB less.
type copyBuffers struct{}

const copyBufferSize = 8 << 10

var copyPool = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (copyBuffers) Get() []byte { return copyPool.Get().(*[copyBufferSize]byte)[:] }
func (copyBuffers) Put(b []byte) {
	if cap(b) == copyBufferSize {
		copyPool.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}

// quietLog swallows ReverseProxy's own log lines, which name URLs.
var quietLog = log.New(io.Discard, "", 0)
