package rates

import (
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates/ratestest"
)

// BenchmarkHistoryAdd is the history's share: one sample folded and thinned.
func BenchmarkHistoryAdd(b *testing.B) {
	h := NewHistory(24 * time.Hour)
	sn := ratestest.Full(start0, 1)
	b.ReportAllocs()
	for i := range b.N {
		sn.Scalars["requests_total"] = float64(i)
		sn.Histograms["e2e_request_latency_seconds"] = &histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 1, Count: float64(i)}}, Count: float64(i)}
		h.Add(sn, at(float64(i)))
	}
}

// BenchmarkSection is the windows' share of a refresh: every column of a
// full 24 h history at a 1 s interval, figures and cells.
func BenchmarkSection(b *testing.B) {
	ws := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}
	h := NewHistory(24 * time.Hour)
	for sec := range 86400 {
		h.Add(ratestest.Full(start0, sec), at(float64(sec)))
	}
	b.ReportAllocs()
	for b.Loop() {
		h.Section(ws)
	}
}
