package rates

import (
	"math"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
)

// Merged ladders: exact at shared bounds, each histogram counting what it
// has at its next lower bound elsewhere.
func TestAddHists(t *testing.T) {
	a := histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 0.5, Count: 2}, {UpperBound: 1, Count: 5}, {UpperBound: math.Inf(1), Count: 6}}, Count: 6, Sum: 3}
	b := histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 0.25, Count: 1}, {UpperBound: 1, Count: 3}, {UpperBound: math.Inf(1), Count: 4}}, Count: 4, Sum: 2}
	m := AddHists([]histogram.Histogram{a, b})
	// 0.25: a has nothing at or below (0) + b 1; 0.5: a 2 + b 1 (its 0.25
	// count); 1: 5 + 3; +Inf: 6 + 4.
	want := []histogram.Bucket{{UpperBound: 0.25, Count: 1}, {UpperBound: 0.5, Count: 3}, {UpperBound: 1, Count: 8}, {UpperBound: math.Inf(1), Count: 10}}
	if len(m.Buckets) != len(want) {
		t.Fatalf("buckets %v", m.Buckets)
	}
	for i, w := range want {
		if m.Buckets[i] != w {
			t.Errorf("bucket %d = %v, want %v", i, m.Buckets[i], w)
		}
	}
	if m.Count != 10 || m.Sum != 5 {
		t.Errorf("count %v sum %v", m.Count, m.Sum)
	}
}

// rateHists are exactly the histograms the rates table reads: a snapshot
// holding one canonical histogram has a percentile row iff it is listed.

// A total is its rows' arithmetic, worked by hand: a rate adds the rates
// each part shows (one born 30 s into a 60 s window divides by its 30 s);
// a ratio divides the summed increases of the parts that have both
// counters; a column one part cannot give is made of the others, and says
// so.
func TestTotals(t *testing.T) {
	lat := []float64{0.1, 1}
	full := snap(0, "requests_total", 1, "tokens_predicted_total", 1, "prompt_tokens_total", 1, "cached_tokens_total", 1,
		"prefix_cache_hits", 1, "prefix_cache_queries", 1, "time_to_first_token_seconds", mkHist(lat, []float64{1, 1, 1}))
	// llama.cpp: computed prompt tokens, no cached tokens, no requests.
	llama := snap(0, "tokens_predicted_total", 1, "prompt_tokens_total", 1)
	parts := []Part{
		{Rows: RowsFor(full), Delta: Delta{Seconds: 60, Counters: map[string]float64{
			"requests_total": 60, "tokens_predicted_total": 600, "prompt_tokens_total": 1200, "cached_tokens_total": 600,
			"prefix_cache_hits": 600, "prefix_cache_queries": 1800},
			Hists: map[string]histogram.Histogram{"time_to_first_token_seconds": *mkHist(lat, []float64{10, 20, 20})}}},
		{Rows: RowsFor(full), Delta: Delta{Seconds: 30, Counters: map[string]float64{
			"requests_total": 60, "tokens_predicted_total": 300, "prompt_tokens_total": 300, "cached_tokens_total": 0,
			"prefix_cache_hits": 0, "prefix_cache_queries": 300},
			Hists: map[string]histogram.Histogram{"time_to_first_token_seconds": *mkHist(lat, []float64{0, 20, 20})}}},
		{Rows: RowsFor(llama), Delta: Delta{Seconds: 60, Counters: map[string]float64{"tokens_predicted_total": 120, "prompt_tokens_total": 6000}}},
	}
	rows, totals := Totals(parts)
	want := map[string]struct {
		v        float64
		over, of int
	}{
		"requests":          {1 + 2, 2, 3},
		"generation":        {10 + 10 + 2, 3, 3},
		"prompt_computed":   {20 + 10 + 100, 3, 3}, // the llama.cpp row is in it
		"prompt_cache_hits": {10 + 0, 2, 3},
		"prefix_hit_ratio":  {600.0 / 2100, 2, 3},
	}
	got := map[string]Total{}
	for i, r := range rows {
		got[r.ID] = totals[i]
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok || g.Value == nil || !approx(*g.Value, w.v) || g.Over != w.over || g.Of != w.of {
			t.Errorf("%s: %+v (value %v), want %v over %d of %d", id, g, deref(g.Value), w.v, w.over, w.of)
		}
	}
	// The pooled TTFT p50 is the rows' estimate of the summed buckets:
	// between the rows' own (one ≤ 0.1 s, the other in (0.1, 1]).
	p50 := got["ttft_p50"]
	var rowsP50 []float64
	for _, p := range parts[:2] {
		for i, r := range p.Rows {
			if r.ID == "ttft_p50" {
				rowsP50 = append(rowsP50, *Compute(p.Delta, p.Rows)[i].Value)
			}
		}
	}
	if p50.Value == nil || *p50.Value < min(rowsP50[0], rowsP50[1]) || *p50.Value > max(rowsP50[0], rowsP50[1]) || p50.Over != 2 {
		t.Errorf("pooled p50 %v over %d, rows %v", deref(p50.Value), p50.Over, rowsP50)
	}
}

// Engine busy is a share of each engine's own time: two engines busy 30 s
// and 45 s of a 60 s window are busy 62.5% on average, not 125%; the
// sampled share belongs to one watch session and has no fleet total.
func TestTotalsEngineBusy(t *testing.T) {
	s := snap(0, "engine_busy_seconds_total", 1)
	parts := []Part{
		{Rows: RowsFor(s), Delta: Delta{Seconds: 60, Counters: map[string]float64{"engine_busy_seconds_total": 30}}},
		{Rows: RowsFor(s), Delta: Delta{Seconds: 60, Counters: map[string]float64{"engine_busy_seconds_total": 45}}},
	}
	rows, totals := Totals(parts)
	for i, r := range rows {
		if r.ID != "engine_busy" {
			continue
		}
		if v := totals[i].Value; v == nil || math.Abs(*v-0.625) > 1e-12 || totals[i].Over != 2 {
			t.Fatalf("engine busy total %+v, want 0.625 over 2", totals[i])
		}
		return
	}
	t.Fatal("no engine_busy row")
}
