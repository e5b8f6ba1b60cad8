package rates

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/report"
)

// grid is a rates table by row ID, for comparing.
type grid struct {
	header []string
	rows   map[string][]string
}

func gridOf(t *testing.T, sec report.Section) grid {
	t.Helper()
	if sec.ID != "rates" || !sec.Wide || sec.Table == nil {
		t.Fatalf("section %+v is not a rates table", sec)
	}
	g := grid{rows: map[string][]string{}}
	for _, h := range sec.Table.Header[1:] {
		// The JSON holds the label: whoever draws the table pads it.
		if h != strings.TrimSpace(h) {
			t.Errorf("header %q is padded", h)
		}
		g.header = append(g.header, h)
	}
	for _, r := range sec.Table.Rows {
		if len(r.Cells) != len(g.header) {
			t.Errorf("row %s has %d cells for %d columns", r.ID, len(r.Cells), len(g.header))
		}
		g.rows[r.ID] = r.Cells
	}
	return g
}

// TestRatesFillIn walks a session at a 10 s interval with windows 30s, 1m
// and 5m. requests_total = t²/100, so the rate between a baseline b and the
// newest sample n is (n+b)/100: each figure names its baseline.
func TestRatesFillIn(t *testing.T) {
	ws := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}
	steps := []struct {
		t      float64
		header []string
		cells  []string
	}{
		{0, []string{"now", "30s", "1m", "5m"}, []string{"", "", "", ""}},
		// Span 10 s < 1.25 × the 10 s interval: no ~span column yet.
		{10, []string{"now 10s", "30s", "1m", "5m"}, []string{"0.1", "", "", ""}},
		{20, []string{"now 10s", "~20s", "1m", "5m"}, []string{"0.3", "0.2", "", ""}},
		// 30 s fills in; a 30 s span is not 1.25 × 30 s, so 1m stays blank.
		{30, []string{"now 10s", "30s", "1m", "5m"}, []string{"0.5", "0.3", "", ""}},
		{40, []string{"now 10s", "30s", "~40s", "5m"}, []string{"0.7", "0.5", "0.4", ""}},
		{60, []string{"now 10s", "30s", "1m", "5m"}, []string{"1.1", "0.9", "0.6", ""}},
		{70, []string{"now 10s", "30s", "1m", "5m"}, []string{"1.3", "1.1", "0.8", ""}},
		// Only the first window longer than the session may stand in.
		{80, []string{"now 10s", "30s", "1m", "~1m20s"}, []string{"1.5", "1.3", "1", "0.8"}},
		{300, []string{"now 10s", "30s", "1m", "5m"}, []string{"5.9", "5.7", "5.4", "3"}},
	}
	h := NewHistory(5 * time.Minute)
	i := 0
	for sec := 0.0; sec <= 300; sec += 10 {
		h.Add(snap(start0, "requests_total", sec*sec/100), at(sec))
		if i >= len(steps) || steps[i].t != sec {
			continue
		}
		st := steps[i]
		i++
		sec, _ := h.Section(ws)
		g := gridOf(t, sec)
		if !slices.Equal(g.header, st.header) || !slices.Equal(g.rows["requests"], st.cells) {
			t.Errorf("at %v s:\n got %q %q\nwant %q %q", st.t, g.header, g.rows["requests"], st.header, st.cells)
		}
	}
}

// TestRatesStale: after a 140 s pause, a baseline more than twice its
// window old is left blank instead of shown under the window's name.
func TestRatesStale(t *testing.T) {
	ws := []time.Duration{30 * time.Second, time.Minute}
	h := NewHistory(time.Minute)
	add := func(sec float64) (grid, map[string]map[string]*float64) {
		h.Add(snap(start0, "requests_total", 2*sec), at(sec))
		s, rates := h.Section(ws)
		return gridOf(t, s), rates
	}
	for sec := 0.0; sec < 60; sec += 10 {
		add(sec)
	}
	// 60 s: the 30 s baseline is 30 s old, the 1 m one 60 s: both fine.
	if g, _ := add(60); !slices.Equal(g.rows["requests"], []string{"2", "2", "2"}) {
		t.Errorf("at 60 s: %q", g.rows["requests"])
	}
	// 200 s: both baselines are the 60 s sample, 140 s old.
	g, rates := add(200)
	if want := []string{"now 2m20s", "30s", "1m"}; !slices.Equal(g.header, want) {
		t.Errorf("header %q, want %q", g.header, want)
	}
	if want := []string{"2", "", ""}; !slices.Equal(g.rows["requests"], want) {
		t.Errorf("at 200 s: %q, want %q", g.rows["requests"], want)
	}
	if rates["30s"]["requests"] != nil || rates["30s"][KeyElapsed] != nil || *rates[KeyNow][KeyElapsed] != 140 {
		t.Errorf("rates %v", rates)
	}
	// 230 s: the 30 s window has a fresh baseline; 1 m still reaches 60 s.
	add(210)
	add(220)
	if g, _ := add(230); !slices.Equal(g.rows["requests"], []string{"2", "2", ""}) {
		t.Errorf("at 230 s: %q", g.rows["requests"])
	}
	// Exactly twice the window is still accepted.
	h2 := NewHistory(time.Minute)
	h2.Add(snap(start0, "requests_total", 0), at(0))
	h2.Add(snap(start0, "requests_total", 120), at(60))
	s2, _ := h2.Section([]time.Duration{30 * time.Second})
	if g := gridOf(t, s2); !slices.Equal(g.rows["requests"], []string{"2", "2"}) {
		t.Errorf("at 2×: %q", g.rows["requests"])
	}
}

// TestRatesResetMidWindow: the generator restarts (counters fall, the
// process does not): the window counts the increase since, as rate() does.
func TestRatesResetMidWindow(t *testing.T) {
	vals := []float64{1000, 1100, 1200, 50, 150, 250, 350}
	h := NewHistory(time.Minute)
	for i, v := range vals {
		h.Add(snap(start0, "tokens_predicted_total", v), at(float64(10*i)))
	}
	s, rates := h.Section([]time.Duration{30 * time.Second, time.Minute})
	g := gridOf(t, s)
	// now: 100/10. 30 s from 30 s: 300/30. 1 m from 0 s: 100+100+50+300 =
	// 550 over 60 s.
	if want := []string{"10", "10", "9.2"}; !slices.Equal(g.rows["generation"], want) {
		t.Errorf("cells %q, want %q", g.rows["generation"], want)
	}
	if !approx(*rates["1m"]["generation"], 550.0/60) {
		t.Errorf("1m = %v", *rates["1m"]["generation"])
	}
	// The reset straddles the 30 s window from 20 s at 50 s: 50 + 200.
	h2 := NewHistory(time.Minute)
	for i, v := range vals[:6] {
		h2.Add(snap(start0, "tokens_predicted_total", v), at(float64(10*i)))
	}
	_, rates = h2.Section([]time.Duration{30 * time.Second})
	if !approx(*rates["30s"]["generation"], 250.0/30) {
		t.Errorf("30s across the reset = %v, want %v", *rates["30s"]["generation"], 250.0/30)
	}
}

// TestRatesRestart: after a restart no window reaches back before it; the
// columns fill in again from the left.
func TestRatesRestart(t *testing.T) {
	ws := []time.Duration{30 * time.Second}
	h := NewHistory(30 * time.Second)
	for sec := 0.0; sec <= 40; sec += 10 {
		h.Add(snap(start0, "requests_total", 1000+sec), at(sec))
	}
	restart := float64(at(45).Unix())
	wantCells := map[float64][]string{
		50: {"", ""},       // only the restart sample
		60: {"0.5", ""},    // 5 more requests in 10 s; span 10 s < 12.5 s
		70: {"0.5", "0.5"}, // ~20s
		80: {"0.5", "0.5"}, // 30 s from the restart sample
	}
	for sec := 50.0; sec <= 80; sec += 10 {
		h.Add(snap(restart, "requests_total", (sec-50)/2), at(sec))
		s, _ := h.Section(ws)
		g := gridOf(t, s)
		if !slices.Equal(g.rows["requests"], wantCells[sec]) {
			t.Errorf("at %v s: %q %q, want cells %q", sec, g.header, g.rows["requests"], wantCells[sec])
		}
	}
}

// TestRatesRatiosAndPercentiles checks the windowed ratios, percentiles
// from bucket deltas, idle, and the rows that depend on the server.
func TestRatesRatiosAndPercentiles(t *testing.T) {
	ttft := []float64{0.1, 0.5, 1}
	e2e := []float64{1, 5, 10}
	base := snap(start0,
		"prompt_tokens_total", 1000, "cached_tokens_total", 500,
		"prefix_cache_hits", 500, "prefix_cache_queries", 1500,
		"spec_decode_num_accepted_tokens_total", 70, "spec_decode_num_draft_tokens_total", 100,
		"spec_decode_requests_total", 4,
		"prompt_seconds_total", 2.0, "tokens_predicted_seconds_total", 8.0,
		"kv_offload_max_tokens", 4096, "kv_offload_restored_tokens_total", 0,
		"kv_offload_read_bytes_total", 0, "kv_offload_written_bytes_total", 1e6,
		"time_to_first_token_seconds", mkHist(ttft, []float64{10, 20, 20, 20}),
		"e2e_request_latency_seconds", mkHist(e2e, []float64{0, 0, 0, 0}),
	)
	next := snap(start0,
		"prompt_tokens_total", 4000, "cached_tokens_total", 6500,
		"prefix_cache_hits", 6500, "prefix_cache_queries", 10500,
		"spec_decode_num_accepted_tokens_total", 70, "spec_decode_num_draft_tokens_total", 100,
		"spec_decode_requests_total", 4,
		"prompt_seconds_total", 5.0, "tokens_predicted_seconds_total", 17.0,
		"kv_offload_max_tokens", 4096, "kv_offload_restored_tokens_total", 2048,
		"kv_offload_read_bytes_total", 5e6, "kv_offload_written_bytes_total", 1e6,
		"time_to_first_token_seconds", mkHist(ttft, []float64{10, 50, 100, 100}),
		"e2e_request_latency_seconds", mkHist(e2e, []float64{0, 0, 10, 10}),
	)
	h := NewHistory(time.Minute)
	h.Add(base, at(0))
	h.Add(next, at(10))
	s, rates := h.Section(nil)
	g := gridOf(t, s)
	// Worked by hand over the 10 s between the two scrapes:
	want := map[string]string{
		"prompt_computed":   "300",     // 3000 tokens
		"prompt_cache_hits": "600",     // 6000 tokens
		"offload_restored":  "204.8",   // 2048 tokens
		"offload_read":      "488 KiB", // 5 MB: 500,000 / 1024 = 488.3 KiB a second
		"offload_written":   "0 B",     // nothing written: a true zero
		"prefix_hit_ratio":  "66.7%",   // 6000 / 9000
		"draft_acceptance":  "idle",    // nothing drafted in the window
		"prefill_share":     "25.0%",   // 3 s of 3 + 9 s
		"in_flight":         "1.20",    // 3 + 9 request-seconds in 10 s
		"ttft_p50":          "600 ms",  // Δ buckets 0,30,80: rank 40 is 10/50 into (0.5, 1]
		"ttft_p99":          "992 ms",  // rank 79.2: 39.2/50 into (0.5, 1]
		// Δ 0,0,10, summing 75 s: all ten in (5, 10], so interpolation
		// (7.5 s) would be the bucket's middle. The 5th and the 5 above it
		// are ≥ v, the 4 below ≥ 5: 20 + 6·v ≤ 75, v ≤ 9.17 s.
		"e2e_p50": "≤9.17 s",
		"e2e_p99": "≤10.0 s",
	}
	for id, w := range want {
		if c := g.rows[id]; len(c) != 1 || c[0] != w {
			t.Errorf("%s = %q, want %q", id, c, w)
		}
	}
	if len(g.rows) != len(want) {
		t.Errorf("rows %v, want only %d (no generation or requests series)", g.rows, len(want))
	}
	now := rates[KeyNow]
	if !approx(*now["offload_read"], 5e5) || !approx(*now["ttft_p50"], 0.6) || now["draft_acceptance"] != nil {
		t.Errorf("now figures: read %v, ttft p50 %v, draft %v", *now["offload_read"], *now["ttft_p50"], now["draft_acceptance"])
	}
	if v := now["offload_written"]; v == nil || *v != 0 {
		t.Errorf("a true zero is 0, not null: %v", v)
	}

	// Without offload capacity or a drafter those rows go.
	plain := snap(start0, "requests_total", 1, "spec_decode_num_accepted_tokens_total", 0, "spec_decode_num_draft_tokens_total", 0)
	h = NewHistory(time.Minute)
	h.Add(plain, at(0))
	s, rates = h.Section(nil)
	if g := gridOf(t, s); len(g.rows) != 1 || g.rows["requests"] == nil {
		t.Errorf("rows %v, want only requests", g.rows)
	}
	if _, ok := rates[KeyNow]["draft_acceptance"]; ok {
		t.Error("a row not shown has a figure")
	}

	// An idle histogram is idle; one that restarted within the window,
	// even if it has since grown past the baseline, is blank.
	h = NewHistory(time.Minute)
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(ttft, []float64{1, 2, 3, 4})), at(0))
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(ttft, []float64{1, 2, 3, 4})), at(10))
	s, _ = h.Section(nil)
	if c := gridOf(t, s).rows["ttft_p50"]; c[0] != "idle" {
		t.Errorf("idle histogram: %q", c)
	}
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(ttft, []float64{0, 0, 0, 1})), at(20))
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(ttft, []float64{5, 5, 5, 9})), at(30))
	s, rates = h.Section([]time.Duration{30 * time.Second})
	// now: Δ buckets 5,5,5,8: rank 4 is 4/5 into (0, 0.1].
	if c := gridOf(t, s).rows["ttft_p50"]; !slices.Equal(c, []string{"80 ms", ""}) {
		t.Errorf("across a histogram reset: %q, want the now column only", c)
	}
	if rates["30s"]["ttft_p50"] != nil || rates["30s"][KeyElapsed] == nil {
		t.Errorf("30s figures %v", rates["30s"])
	}
}

// TestRatesKeys: the JSON figures carry every window, the ~span column
// under "session", and the seconds each column divides by.
func TestRatesKeys(t *testing.T) {
	ws := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}
	h := NewHistory(5 * time.Minute)
	for sec := 0.0; sec <= 45; sec += 5 {
		h.Add(snap(start0, "requests_total", sec), at(sec))
	}
	_, rates := h.Section(ws)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range rates {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"1m", "30s", "5m", "now", "session"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	check := func(col string, elapsed *float64, req *float64) {
		t.Helper()
		got := rates[col]
		if (elapsed == nil) != (got[KeyElapsed] == nil) || (elapsed != nil && *got[KeyElapsed] != *elapsed) {
			t.Errorf("%s elapsed %v", col, got[KeyElapsed])
		}
		if (req == nil) != (got["requests"] == nil) || (req != nil && !approx(*got["requests"], *req)) {
			t.Errorf("%s requests %v", col, got["requests"])
		}
	}
	check("now", ptr(5), ptr(1))
	check("30s", ptr(30), ptr(1))
	check("session", ptr(45), ptr(1))
	check("1m", nil, nil)
	check("5m", nil, nil)
}
