package rates

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// TestSeries: a Sample holds every series the rows read, and only those;
// a rowSet holds every row.
func TestSeries(t *testing.T) {
	if len(rows) > 64 {
		t.Fatalf("%d rows do not fit a rowSet", len(rows))
	}
	if len(counterNames) != nCounters || len(histNames) != nHists {
		t.Fatalf("%d counters and %d histograms read; a Sample holds %d and %d", len(counterNames), len(histNames), nCounters, nHists)
	}
}

// TestComputeDelta feeds Compute a Delta as a PromQL source would fill it
// (increase() of each counter and _bucket series over a 60 s window, and
// resets() > 0) and checks each figure against one worked out by hand.
func TestComputeDelta(t *testing.T) {
	bucket := func(le, n float64) histogram.Bucket { return histogram.Bucket{UpperBound: le, Count: n} }
	inf := math.Inf(1)
	d := Delta{
		Seconds: 60,
		Counters: map[string]float64{
			"prompt_tokens_total": 6000, "cached_tokens_total": 0, "requests_total": 30,
			"kv_offload_read_bytes_total": 3 << 20 * 60,
			"prefix_cache_hits":           300, "prefix_cache_queries": 1200,
			"prompt_seconds_total": 12, "tokens_predicted_seconds_total": 36,
			"spec_decode_num_accepted_tokens_total": 0, "spec_decode_num_draft_tokens_total": 0,
			"admission_rejections_total": 12,
			"engine_step_tokens_total":   13020, "engine_steps_total": 200,
			// SGLang's: engine time by phase, hits by tier, retractions'
			// waste, verify passes.
			"engine_prefill_seconds_total": 15, "engine_decode_seconds_total": 39,
			"prefix_cache_host_hits": 60, "prefix_cache_storage_hits": 0,
			"retracted_prompt_tokens_total": 240, "retracted_generated_tokens_total": 60,
			"tokens_predicted_total": 960, "spec_decode_verify_calls_total": 300,
		},
		Hists: map[string]histogram.Histogram{
			// 50 first tokens in (0, 0.5 s], 50 in (0.5 s, 1 s].
			"time_to_first_token_seconds": {Buckets: []histogram.Bucket{bucket(0.5, 50), bucket(1, 100), bucket(inf, 100)}, Count: 100, Sum: 50},
			// 4 requests, all above the last bound, 40 s together.
			"e2e_request_latency_seconds": {Buckets: []histogram.Bucket{bucket(1, 0), bucket(5, 0), bucket(inf, 4)}, Count: 4, Sum: 40},
		},
		Reset:   true, // counted from zero by the source: the figures are as given
		Sampled: Sampling{Busy: 3, Scrapes: 12},
	}
	want := map[string]struct {
		v    float64 // NaN: no figure
		cell string
	}{
		"prompt_computed": {100, "100"}, // 6000 / 60
		// (1200 queried − 300 hit) / 60: the estimate where computed
		// tokens are not published (RowsFor shows one or the other).
		"prompt_computed_est": {15, "15"},
		"prompt_all":          {math.NaN(), ""},     // no increase given
		"in_flight":           {0.8, "0.80"},        // (12 + 36) request-seconds / 60 s
		"engine_busy":         {math.NaN(), ""},     // no increase given
		"busy_sampled":        {0.25, "25.0%"},      // 3 of 12 scrapes found a request running
		"prompt_cache_hits":   {0, "0"},             // a true zero
		"generation":          {16, "16"},           // 960 / 60
		"requests":            {0.5, "0.5"},         // 30 / 60
		"refused":             {0.2, "0.2"},         // 12 refused / 60 s
		"step_tokens":         {65.1, "65.1"},       // 13,020 tokens over 200 steps
		"offload_restored":    {math.NaN(), ""},     // no increase given
		"offload_read":        {3 << 20, "3.0 MiB"}, // 3 MiB a second
		"offload_written":     {math.NaN(), ""},     // no increase given
		"prefix_hit_ratio":    {0.25, "25.0%"},      // 300 / 1200
		"draft_acceptance":    {math.NaN(), "idle"}, // nothing drafted
		"prefill_share":       {0.25, "25.0%"},      // 12 / (12 + 36)
		"retracted":           {5, "5"},             // (240 prompt + 60 generated) / 60
		"engine_prefill":      {0.25, "25.0%"},      // 15 s of 60
		"engine_decode":       {0.65, "65.0%"},      // 39 s of 60
		"prefix_hit_host":     {0.05, "5.0%"},       // 60 of 1200 queried
		"prefix_hit_storage":  {0, "0.0%"},          // none of 1200
		"tokens_per_verify":   {3.2, "3.20"},        // 960 generated / 300 passes
		"ttft_p50":            {0.5, "500 ms"},      // rank 50 tops the first bucket
		"ttft_p99":            {0.99, "990 ms"},     // rank 99: 49/50 into (0.5, 1]
		"e2e_p50":             {5, "≥5.00 s"},       // rank 2 in the open top: above 5 s is all that is known
		"e2e_p99":             {10, "≥10.0 s"},      // the largest of 4 summing 40 s is at least 10 s
	}
	figs := Compute(d, rows)
	for i, r := range rows {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("row %s not worked out", r.ID)
			continue
		}
		f := figs[i]
		switch {
		case math.IsNaN(w.v) && f.Value != nil:
			t.Errorf("%s = %v, want no figure", r.ID, *f.Value)
		case !math.IsNaN(w.v) && (f.Value == nil || !approx(*f.Value, w.v)):
			t.Errorf("%s = %v, want %v", r.ID, f.Value, w.v)
		}
		if got := r.Cell(f); got != w.cell {
			t.Errorf("%s cell %q, want %q", r.ID, got, w.cell)
		}
	}
	// Fewer than MinSampled scrapes say too little for a sampled share;
	// a rate of seconds per second is a share.
	few := Delta{Seconds: 60, Counters: map[string]float64{snapshot.EngineBusySecondsTotal: 45}, Sampled: Sampling{Busy: 3, Scrapes: MinSampled - 1}}
	for i, f := range Compute(few, rows) {
		switch rows[i].ID {
		case "busy_sampled":
			if f.Value != nil {
				t.Errorf("busy sampled over %d scrapes: %v", MinSampled-1, *f.Value)
			}
		case "engine_busy":
			if f.Value == nil || *f.Value != 0.75 || rows[i].Cell(f) != "75.0%" {
				t.Errorf("engine busy 45 s of 60: %+v %q", f, rows[i].Cell(f))
			}
		}
	}
	// A window of no length has no figures.
	for i, f := range Compute(Delta{Counters: d.Counters}, rows) {
		if f.Value != nil || f.Idle {
			t.Errorf("%s over no time: %+v", rows[i].ID, f)
		}
	}
}

// TestRowsFor: a row shows when the server publishes its series; offload
// rows only with offload capacity, draft acceptance only once a drafter
// served requests.
func TestRowsFor(t *testing.T) {
	ids := func(s *snapshot.Snapshot) (out []string) {
		for _, r := range RowsFor(s) {
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		want []string
	}{
		{"nothing", snap(start0), nil},
		{"a negative counter is not one", snap(start0, "requests_total", -1), nil},
		{"requests", snap(start0, "requests_total", 1), []string{"requests"}},
		{"ratio needs both", snap(start0, "prefix_cache_hits", 1), nil},
		// Capacity published as 0 is offload off (tabbyAPI publishes every
		// series); none published at all, the transfers alone (vLLM's
		// connector publishes them only while offloading).
		{"offload off", snap(start0, "kv_offload_read_bytes_total", 1, "kv_offload_max_bytes", 0), nil},
		{"offload connector, no capacity", snap(start0, "kv_offload_read_bytes_total", 1), []string{"offload_read"}},
		{"refused at admission", snap(start0, "admission_rejections_total", 3), []string{"refused"}},
		{"tokens per step", snap(start0, "engine_step_tokens_total", 300, "engine_steps_total", 3), []string{"step_tokens"}},
		{"offload", snap(start0, "kv_offload_read_bytes_total", 1, "kv_offload_max_bytes", 1<<30), []string{"offload_read"}},
		{"no drafter yet", snap(start0, "spec_decode_num_accepted_tokens_total", 0, "spec_decode_num_draft_tokens_total", 0), nil},
		{"drafter", snap(start0, "spec_decode_num_accepted_tokens_total", 0, "spec_decode_num_draft_tokens_total", 0, "spec_decode_requests_total", 1), []string{"draft_acceptance"}},
		{"histogram", snap(start0, "e2e_request_latency_seconds", mkHist([]float64{1}, []float64{1, 1})), []string{"e2e_p50", "e2e_p99"}},
		// vLLM before 0.16: every prompt token, cached ones too, and the
		// computed ones estimated from the prefix cache.
		{"prompt tokens, cached included", snap(start0, "prompt_tokens_all_total", 10, "prefix_cache_hits", 4, "prefix_cache_queries", 10),
			[]string{"prompt_computed_est", "prompt_all", "prefix_hit_ratio"}},
		{"computed published: no estimate", snap(start0, "prompt_tokens_total", 6, "prefix_cache_hits", 4, "prefix_cache_queries", 10),
			[]string{"prompt_computed", "prefix_hit_ratio"}},
		{"request time", snap(start0, "prompt_seconds_total", 1.0, "tokens_predicted_seconds_total", 2.0),
			[]string{"in_flight", "prefill_share"}},
		{"engine time", snap(start0, "engine_busy_seconds_total", 1.0), []string{"engine_busy"}},
		// A running gauge samples a busy share only over a session.
		{"running gauge", snap(start0, "requests_processing", 1), nil},
	}
	for _, tt := range tests {
		if got := ids(tt.s); !slices.Equal(got, tt.want) {
			t.Errorf("%s: rows %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSpan: a measured window's header label, rounded to what a header
// needs, in the windows' spelling.
func TestSpan(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{50 * time.Millisecond, "50ms"},
		{100 * time.Millisecond, "100ms"},
		{2 * time.Second, "2s"},
		{2030 * time.Millisecond, "2s"},
		{6650 * time.Millisecond, "6.7s"},
		{9960 * time.Millisecond, "10s"},
		{45 * time.Second, "45s"},
		{59600 * time.Millisecond, "1m"},
		{4*time.Minute + 12*time.Second, "4m12s"},
		{2*time.Hour + 5*time.Minute + 10*time.Second, "2h5m"},
		{26 * time.Hour, "26h"},
		{-time.Second, "0s"},
	}
	for _, tt := range tests {
		if got := span(tt.d); got != tt.want {
			t.Errorf("span(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestSampledBusy: over a session, the share of scrapes that found a
// request running, once a window holds MinSampled of them; the row shows
// from that many scrapes on, and a restart starts the count again.
func TestSampledBusy(t *testing.T) {
	h := NewHistory(time.Minute)
	running := []float64{1, 0, 0, 2, 1, 0, 0, 0, 3, 1, 0, 1, 0}
	for i, r := range running {
		h.Add(snap(start0, "requests_processing", r), at(float64(i)))
		shown := slices.ContainsFunc(h.rows.rows(), func(r Row) bool { return r.ID == "busy_sampled" })
		if want := i+1 >= MinSampled; shown != want {
			t.Fatalf("after %d scrapes: row shown %v, want %v", i+1, shown, want)
		}
	}
	// The 12 scrapes after the first read 0 0 2 1 0 0 0 3 1 0 1 0: five
	// found a request running.
	_, figs := h.Section(nil)
	if v := figs[KeyNow]["busy_sampled"]; v != nil {
		t.Errorf("one scrape's window: %v", *v)
	}
	d := h.delta(h.At(0), h.At(h.Len()-1))
	if d.Sampled != (Sampling{Busy: 5, Scrapes: 12}) {
		t.Errorf("session sampled %+v, want 5 busy of 12", d.Sampled)
	}
	if f := Compute(d, rows)[slices.IndexFunc(rows, func(r Row) bool { return r.ID == "busy_sampled" })]; f.Value == nil || !approx(*f.Value, 5.0/12) {
		t.Errorf("busy sampled %+v, want 5/12", f)
	}
	h.Add(snap(start0+10, "requests_processing", 1), at(20))
	if h.Newest().sampled != (Sampling{Busy: 1, Scrapes: 1}) {
		t.Errorf("after a restart: %+v", h.Newest().sampled)
	}
}
