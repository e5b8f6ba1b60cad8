package proxy

import (
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// outcome is how a measured request ended.
type outcome int

const (
	finished outcome = iota // a generation recorded
	aborted                 // the client went away, or the upstream broke off, before the end
	failed                  // the upstream answered an error, or could not be reached
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"finished", "aborted", "error"}

func (o outcome) String() string { return outcomeNames[o] }

// firstByteBuckets are the bounds of the time-to-first-byte histogram:
// the exporter's time-to-first-token bounds, so the two compare bucket by
// bucket.
var firstByteBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

// ownSeries are the proxy's own families, under its own prefix so that no
// reader takes them for the server's. Every series exists from the start
// (at 0), one per endpoint.
type ownSeries struct {
	outcomes  [numAPIs][numOutcomes]prometheus.Counter
	ttfb      [numAPIs]prometheus.Observer
	invalid   [numAPIs]prometheus.Counter
	oversized [numAPIs]prometheus.Counter
	retries   prometheus.Counter
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

// recognise publishes the kind of server a Server header names, when it
// is one of UpstreamKinds and not already the one published.
func (s *ownSeries) recognise(server string) {
	name, _, _ := strings.Cut(server, "/") // "name/version" is the header's usual form
	kind, ok := UpstreamKinds[strings.TrimSpace(name)]
	if !ok {
		return
	}
	s.upstreamMu.Lock()
	defer s.upstreamMu.Unlock()
	if s.upstream != kind {
		s.upstream = kind
		s.upstreamInfo.Reset()
		s.upstreamInfo.WithLabelValues(kind).Set(1)
	}
}

// register creates the series on reg.
func (s *ownSeries) register(reg *prometheus.Registry) error {
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferscope_proxy_requests_total",
		Help: "Requests to the measured endpoints by how they ended: finished (a generation recorded), aborted (the client went away or the upstream broke off), error (an error status, or the upstream unreachable or silent).",
	}, []string{"endpoint", "outcome"})
	ttfb := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "inferscope_proxy_time_to_first_byte_seconds",
		Help:    "Time from a finished request's arrival at the proxy to the upstream's response headers, in seconds. A server that sends its headers with the first token makes it the time to first token; one that sends them at once, the time to accept the request.",
		Buckets: firstByteBuckets,
	}, []string{"endpoint"})
	invalid := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferscope_proxy_invalid_usage_total",
		Help: "Finished generations whose reported usage could not be true (a count negative, fractional, not a number, over 10 million tokens, over the model's reported context, or cached tokens over the prompt; a time negative or over a day): recorded with their token counts and phase times unknown.",
	}, []string{"endpoint"})
	oversized := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferscope_proxy_oversized_total",
		Help: "Measured requests with a streamed line or event over 1 MiB, or an answer over the proxy's bound: passed through unread, so what that part said (a first token, usage) is unknown.",
	}, []string{"endpoint"})
	s.retries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "inferscope_proxy_upstream_retries_total",
		Help: "Requests sent to the upstream again because the connection they went out on was closed before any byte of an answer came back.",
	})
	s.upstreamInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inferscope_proxy_upstream_info",
		Help: "The kind of server behind the proxy, as its answers say it (the server label: a dialect name, such as llamacpp); absent until one does.",
	}, []string{"server"})
	for a := range numAPIs {
		name := apis[a].name
		for o := range numOutcomes {
			s.outcomes[a][o] = outcomes.WithLabelValues(name, outcomeNames[o])
		}
		s.ttfb[a] = ttfb.WithLabelValues(name)
		s.invalid[a] = invalid.WithLabelValues(name)
		s.oversized[a] = oversized.WithLabelValues(name)
	}
	for _, c := range []prometheus.Collector{outcomes, ttfb, invalid, oversized, s.retries, s.upstreamInfo} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("proxy: registering its own series: %w", err)
		}
	}
	return nil
}
