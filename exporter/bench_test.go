package exporter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferscope/inferscope/internal/golden"
)

var benchGen = Generation{
	PromptTokens: 12000, CachedTokens: 8000, GeneratedTokens: 600,
	Queue: 40 * time.Millisecond, Prefill: 900 * time.Millisecond, Decode: 12 * time.Second,
	Draft: &DraftTally{Accepted: 300, Rejected: 120},
}

// BenchmarkRecordGeneration is the cost a server pays per finished request.
func BenchmarkRecordGeneration(b *testing.B) {
	m := New(Options{MaxSeqLen: 262144})
	b.ReportAllocs()
	for b.Loop() {
		m.RecordGeneration(benchGen)
	}
}

// BenchmarkRecordGenerationParallel records from every processor at once.
func BenchmarkRecordGenerationParallel(b *testing.B) {
	m := New(Options{MaxSeqLen: 262144})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.RecordGeneration(benchGen)
		}
	})
}

// busyMetrics is the "bench" case of testdata/reference/cases.json: 1000
// generations like benchGen on busyLive, a 262144-token ladder. It is the
// state BenchmarkReferenceRender times the reference on, and
// TestBenchCase checks it is the state built here.
func busyMetrics(b testing.TB) *Metrics {
	for _, c := range loadCases(b) {
		if c.Name == "bench" {
			return metricsFor(c)
		}
	}
	b.Fatal("no bench case in cases.json")
	return nil
}

// TestBenchCase: the benchmarks' state is busyLive with 1000 benchGen
// generations on a 262144-token ladder, as their comments say.
func TestBenchCase(t *testing.T) {
	want := New(Options{MaxSeqLen: 262144, Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient, StartTime: time.Unix(1767225603, 0)})
	for range 1000 {
		want.RecordGeneration(benchGen)
	}
	got := busyMetrics(t)
	if g, w := scrape(t, got).text, scrape(t, want).text; g != w {
		t.Errorf("the bench case differs from busyLive and benchGen:\n%s", golden.Diff(w, g))
	}
}

// BenchmarkWriteText is one full scrape: engine reading, shard sum, text
// encoding.
func BenchmarkWriteText(b *testing.B) {
	m := busyMetrics(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandler is a full scrape through the handler, as each client
// asks for it: text as a client that names no format gets it, plain and
// gzip-compressed, and OpenMetrics as Prometheus 3 asks for it by default
// (gzip, as it always asks unless told not to) and uncompressed. The
// response writer keeps the headers and drops the body, so the figure is
// the handler's own work.
func BenchmarkHandler(b *testing.B) {
	benchHandler(b, func(m *Metrics) http.Handler { return m.Handler() })
}

// BenchmarkHandlerGeneral is the same through the general path, promhttp
// over the prepared families: what the handler did for every scrape
// before it wrote text and OpenMetrics itself.
func BenchmarkHandlerGeneral(b *testing.B) {
	benchHandler(b, func(m *Metrics) http.Handler { return m.general })
}

func benchHandler(b *testing.B, handler func(*Metrics) http.Handler) {
	for _, c := range []struct{ name, accept, encoding string }{
		{"text", "", ""},
		{"text-gzip", "", "gzip"},
		{"prometheus", acceptOf("Prometheus 3"), "gzip"},
		{"openmetrics", acceptOf("Prometheus 3"), ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := handler(busyMetrics(b))
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			if c.encoding != "" {
				req.Header.Set("Accept-Encoding", c.encoding)
			}
			w := &discardResponse{}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkCallerRegistry is a scrape of *Metrics registered on a caller's
// registry: the registry's Gather and promhttp's handler, uncompressed.
func BenchmarkCallerRegistry(b *testing.B) {
	m := busyMetrics(b)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}

// BenchmarkScrapeUnderLoad measures scrape latency (a full WriteText)
// while 8 goroutines record, and reports its p50, p99 and maximum, and the
// generations recorded per second meanwhile:
//   - spin: recorders in a tight loop, scrapes back to back (so the scrapes'
//     own allocation keeps the GC running, and its assists wait on mark
//     workers starved by the spinners);
//   - paced: recorders in bursts of 100 with a 1 ms sleep (still ~700k
//     generations/s, far beyond any server);
//   - spin-spaced: recorders in a tight loop, a scrape every 10 ms (100 times
//     a fast Prometheus interval): the scraping goroutine must win a CPU
//     back from the spinners for each scrape.
func BenchmarkScrapeUnderLoad(b *testing.B) {
	for _, c := range []struct {
		name          string
		paced, spaced bool
	}{{"spin", false, false}, {"paced", true, false}, {"spin-spaced", false, true}} {
		b.Run(c.name, func(b *testing.B) { scrapeUnderLoad(b, c.paced, c.spaced) })
	}
}

func scrapeUnderLoad(b *testing.B, paced, spaced bool) {
	m := busyMetrics(b)
	var (
		stop     atomic.Bool
		recorded atomic.Int64
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for !stop.Load() {
				m.RecordGeneration(benchGen)
				n++
				if paced && n%100 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			recorded.Add(n)
		}()
	}
	lat := make([]time.Duration, 0, b.N)
	start := time.Now()
	for b.Loop() {
		if spaced {
			b.StopTimer()
			time.Sleep(10 * time.Millisecond)
			b.StartTimer()
		}
		t0 := time.Now()
		if err := m.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	b.ReportMetric(float64(recorded.Load())/elapsed.Seconds(), "records/s")
}
