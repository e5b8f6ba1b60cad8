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
// as it flows: time to first token at the first content, reasoning or
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope/exporter"
)

// Defaults of [Options].
const (
	// DefaultMaxInspect is how much of a request body is read to find the
	// model and whether it streams; a larger body is forwarded whole all
	// the same, and only --inject-usage cannot apply to it.
	DefaultMaxInspect = 1 << 20
	// DefaultMaxResponse is how much of a non-streamed response is kept to
	// read its usage; beyond it the generation counts, without figures.
	DefaultMaxResponse = 8 << 20
	// maxLine bounds one streamed event or line kept for parsing.
	maxLine = 1 << 20
)

// Options configure [New].
type Options struct {
	// Upstream is the server's base URL (scheme, host, optional path
	// prefix).
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
	// Transport carries requests upstream; nil is a transport like
	// http.DefaultTransport's that never asks for compression itself.
	Transport http.RoundTripper
	// Namespace is the exporter's series prefix; "" is the exporter's.
	Namespace string
	// Now is the clock; nil is time.Now (tests replace it).
	Now func() time.Time
}

// Proxy is the measuring reverse proxy. Serve it with an http.Server; its
// metrics are served by [Proxy.MetricsHandler].
type Proxy struct {
	rp       *httputil.ReverseProxy
	m        *exporter.Metrics
	o        Options
	now      func() time.Time
	inflight atomic.Int64
	outcomes [numAPIs][numOutcomes]prometheus.Counter
	ttfb     [numAPIs]prometheus.Observer
	// upstream is the kind of server the upstream's answers say it is
	// ("" until one does), published as inferscope_proxy_upstream_info.
	upstreamMu   sync.Mutex
	upstream     string
	upstreamInfo *prometheus.GaugeVec
}

// UpstreamKinds are the servers the proxy recognises from their answers,
// by their Server header; the value is the kind it publishes (a dialect's
// name). Only these names are ever published: nothing of a header passes
// through.
var UpstreamKinds = map[string]string{"llama.cpp": "llamacpp"}

// firstByteBuckets are the bounds of the time-to-first-byte histogram:
// the exporter's time-to-first-token bounds, so the two compare bucket by
// bucket.
var firstByteBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

// outcome is how a measured request ended.
type outcome int

const (
	finished outcome = iota // a generation recorded
	aborted                 // the client went away, or the upstream broke off, before the end
	failed                  // the upstream answered an error, or could not be reached
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"finished", "aborted", "error"}

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
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferscope_proxy_requests_total",
		Help: "Requests to the measured endpoints by how they ended: finished (a generation recorded), aborted (the client went away or the upstream broke off), error (an error status, or the upstream unreachable).",
	}, []string{"endpoint", "outcome"})
	for a := range numAPIs {
		for o := range numOutcomes {
			p.outcomes[a][o] = vec.WithLabelValues(apis[a].name, outcomeNames[o])
		}
	}
	ttfb := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "inferscope_proxy_time_to_first_byte_seconds",
		Help:    "Time from a finished request's arrival at the proxy to the upstream's response headers, in seconds. A server that sends its headers with the first token makes it the time to first token; one that sends them at once, the time to accept the request.",
		Buckets: firstByteBuckets,
	}, []string{"endpoint"})
	for a := range numAPIs {
		p.ttfb[a] = ttfb.WithLabelValues(apis[a].name)
	}
	p.upstreamInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inferscope_proxy_upstream_info",
		Help: "The kind of server behind the proxy, as its answers say it (the server label: a dialect name, such as llamacpp); absent until one does.",
	}, []string{"server"})
	for _, c := range []prometheus.Collector{vec, ttfb, p.upstreamInfo} {
		if err := p.m.Registry().Register(c); err != nil {
			return nil, fmt.Errorf("proxy: registering its own series: %w", err)
		}
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// The proxy reads what it measures: a transport that asked for
		// gzip on its own would also change what the client receives.
		t.DisableCompression = true
		t.MaxIdleConnsPerHost = 256
		tr = t
	}
	up := o.Upstream
	p.rp = &httputil.ReverseProxy{
		// SetURL sends the upstream's own Host; no X-Forwarded-* headers
		// are added: the request reaches the upstream as the client sent it.
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport:      tr,
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

// InFlight is the number of measured requests in flight now.
func (p *Proxy) InFlight() int64 { return p.inflight.Load() }

// engine is what the proxy knows of the engine: the requests in flight
// through it.
type engine struct{ p *Proxy }

func (e engine) Live() exporter.Live { return exporter.Live{ActiveJobs: int(e.p.inflight.Load())} }

type exchangeKey struct{}

// ServeHTTP forwards one request, measuring it when it is a generation.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// By default an HTTP/1 server consumes and closes what is left of a
	// request body once the response starts; the transport may still be
	// reading it towards the upstream (its last read, for EOF), and then
	// drops the upstream connection mid-answer (seen in 2% of test runs).
	http.NewResponseController(w).EnableFullDuplex()
	a := classify(r)
	if a == apiNone {
		p.rp.ServeHTTP(w, r)
		return
	}
	x := &exchange{p: p, api: a, start: p.now()}
	x.inspect(r, p.o.MaxInspect, p.o.InjectUsage)
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x))
	// The proxy reads the answer: it must come uncompressed.
	r.Header.Del("Accept-Encoding")
	p.inflight.Add(1)
	defer func() {
		p.inflight.Add(-1)
		if v := recover(); v != nil {
			// ReverseProxy panics with http.ErrAbortHandler when the copy
			// to the client fails: the client went away.
			x.copyFailed = true
			p.finish(x)
			panic(v)
		}
		p.finish(x)
	}()
	p.rp.ServeHTTP(w, r)
}

// modifyResponse puts the meter on a measured response.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	x, _ := resp.Request.Context().Value(exchangeKey{}).(*exchange)
	if x == nil {
		return nil
	}
	x.status = resp.StatusCode
	x.firstByte = p.now()
	p.recognise(resp.Header.Get("Server"))
	ct := resp.Header.Get("Content-Type")
	stream := strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, "application/x-ndjson")
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
	x.overflow = resp.Header.Get("Content-Encoding") != ""
	m := &meter{x: x, body: resp.Body}
	if x.injected && x.sse && !x.overflow {
		// Removing the injected chunk changes the length.
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		resp.Body = &filter{meter: m}
		return nil
	}
	resp.Body = m
	return nil
}

// recognise publishes the kind of server a Server header names, when it
// is one of UpstreamKinds and not already the one published.
func (p *Proxy) recognise(server string) {
	name, _, _ := strings.Cut(server, "/") // "name/version" is the header's usual form
	kind, ok := UpstreamKinds[strings.TrimSpace(name)]
	if !ok {
		return
	}
	p.upstreamMu.Lock()
	defer p.upstreamMu.Unlock()
	if p.upstream != kind {
		p.upstream = kind
		p.upstreamInfo.Reset()
		p.upstreamInfo.WithLabelValues(kind).Set(1)
	}
}

// upstreamError answers 502 when the upstream cannot be reached, in words
// that carry nothing of the request.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if x, _ := r.Context().Value(exchangeKey{}).(*exchange); x != nil {
		x.unreachable = true
	}
	if r.Context().Err() != nil {
		return // the client went away: nobody to answer
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	fmt.Fprintln(w, "inferscope proxy: the upstream server could not be reached")
}

// finish records how a measured request ended.
func (p *Proxy) finish(x *exchange) {
	if x.noGeneration {
		return // not a generation, whichever way it ended
	}
	o := x.outcome()
	p.outcomes[x.api][o].Inc()
	if o == finished {
		p.m.RecordGeneration(x.generation(p.now()))
		p.ttfb[x.api].Observe(x.firstByte.Sub(x.start).Seconds())
	}
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
