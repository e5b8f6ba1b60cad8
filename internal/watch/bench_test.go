package watch

import (
	"io"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// fullSnap is a scrape with every series the rates table reads, its
// counters advanced to second sec.
func fullSnap(sec int) *snapshot.Snapshot {
	f := float64(sec)
	lat := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	counts := func(n float64) []float64 {
		c := make([]float64, len(lat))
		for i := range c {
			c[i] = n * float64(i+1) / float64(len(lat))
		}
		return c
	}
	return snap(start0,
		"prompt_tokens_total", 900*f, "cached_tokens_total", 300*f,
		"prefix_cache_hits", 300*f, "prefix_cache_queries", 1200*f,
		"tokens_predicted_total", 80*f, "requests_total", f/2,
		"spec_decode_requests_total", f/2, "spec_decode_num_accepted_tokens_total", 50*f, "spec_decode_num_draft_tokens_total", 70*f,
		"prompt_seconds_total", 0.2*f, "tokens_predicted_seconds_total", 0.7*f,
		"kv_offload_max_tokens", 1e6, "kv_offload_restored_tokens_total", 64*f,
		"kv_offload_read_bytes_total", 1e6*f, "kv_offload_written_bytes_total", 2e6*f,
		"time_to_first_token_seconds", mkHist(lat, counts(f/2)),
		"e2e_request_latency_seconds", mkHist(lat, counts(f/2)),
	)
}

// BenchmarkRefresh is one refresh of a 24 h session at a 1 s interval:
// fold a scrape into a full history, compute every window and draw the
// frame. At one refresh a second, ns/op × 60 is the CPU a minute costs
// (Fetch and Build, the scrape and the one-shot analysis, come on top).
func BenchmarkRefresh(b *testing.B) {
	ws, _ := ParseWindows(DefaultWindows)
	c := Config{Interval: time.Second, Windows: ws, Build: fakeBuild}
	s := newSession(c)
	const day = 86400
	for sec := range day {
		s.h.Add(fullSnap(sec), at(float64(sec)))
	}
	o := render.Options{Width: 160}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		sec := day + i
		b.StopTimer()
		sn := fullSnap(sec) // the scrape itself is not the watch's cost
		b.StartTimer()
		s.observe(sn, at(float64(sec)), 5*time.Millisecond)
		if err := render.Text(io.Discard, s.report(at(float64(sec))), o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistoryAdd is the history's share: one sample folded and thinned.
func BenchmarkHistoryAdd(b *testing.B) {
	h := NewHistory(24 * time.Hour)
	sn := fullSnap(1)
	b.ReportAllocs()
	for i := range b.N {
		sn.Scalars["requests_total"] = float64(i)
		sn.Histograms["e2e_request_latency_seconds"] = &histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 1, Count: float64(i)}}, Count: float64(i)}
		h.Add(sn, at(float64(i)))
	}
}
