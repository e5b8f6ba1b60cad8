package rates_test

import (
	"fmt"
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// A session scraped every 10 s for 40 s, whose generator restarted (its
// counters fell from 800 to 100) at the fourth scrape.
func ExampleHistory_Section() {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h := rates.NewHistory(time.Minute)
	for i, tokens := range []float64{0, 400, 800, 100, 500} {
		s := &snapshot.Snapshot{Scalars: map[string]float64{"tokens_predicted_total": tokens}}
		h.Add(s, t0.Add(time.Duration(i)*10*time.Second))
	}
	sec, figs := h.Section([]time.Duration{30 * time.Second, time.Minute})
	fmt.Println(sec.Title)
	for _, c := range sec.Table.Header[1:] {
		fmt.Printf("%8s", c)
	}
	fmt.Println()
	for _, c := range sec.Table.Rows[0].Cells {
		fmt.Printf("%8s", c)
	}
	fmt.Println()
	// 30s: 400 + 100 + 400 tokens from 10 s to 40 s; ~40s: 1300 in 40 s.
	fmt.Println(*figs["30s"]["generation"], *figs["session"]["generation"], figs["1m"]["generation"])
	// Output:
	// Rates over staggered windows
	//  now 10s     30s    ~40s
	//       40      30    32.5
	// 30 32.5 <nil>
}

// The increases over a 5-minute window, as PromQL's increase() gives them
// for a server's counters and its TTFT buckets, become the window's figures.
func ExampleCompute() {
	d := rates.Delta{
		Seconds: 300,
		Counters: map[string]float64{
			"tokens_predicted_total": 120000, "requests_total": 150,
			"prefix_cache_hits": 9000, "prefix_cache_queries": 12000,
		},
		Hists: map[string]histogram.Histogram{"time_to_first_token_seconds": {
			Buckets: []histogram.Bucket{{UpperBound: 0.25, Count: 100}, {UpperBound: 1, Count: 150}, {UpperBound: math.Inf(1), Count: 150}},
			Count:   150, Sum: 60,
		}},
	}
	s := &snapshot.Snapshot{Scalars: map[string]float64{"tokens_predicted_total": 0, "requests_total": 0, "prefix_cache_hits": 0, "prefix_cache_queries": 0},
		Histograms: map[string]*histogram.Histogram{"time_to_first_token_seconds": {}}}
	rows := rates.RowsFor(s)
	// With no computed-prompt counter, prefix-cache lookups less hits
	// estimate it: (12000 − 9000) / 300 = 10 tok/s. p50: rank 75 is 3/4
	// into (0, 0.25 s]; p99: rank 148.5 is 48.5/50 into (0.25 s, 1 s].
	// Both lie within what the 60 s sum allows.
	for i, f := range rates.Compute(d, rows) {
		fmt.Printf("%-17s %s\n", rows[i].Label, rows[i].Cell(f))
	}
	// Output:
	// prompt computed ≈ tok/s 10
	// generation tok/s  400
	// requests /s       0.5
	// prefix hit ratio  75.0%
	// TTFT p50          188 ms
	// TTFT p99          978 ms
}
