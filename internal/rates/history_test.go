package rates

import (
	"testing"
	"time"
)

// TestHistoryBounded feeds a virtual clock through two days at a 1 s
// interval with windows up to 24 h (the watch view's default) and checks
// the history's length against counts worked out by hand.
func TestHistoryBounded(t *testing.T) {
	h := NewHistory(24 * time.Hour)
	// The bound: every sample of the last 90 s (91 at a 1 s interval, both
	// ends included), one per 30 s back to 1.1 × 24 h (95040 s / 30 s =
	// 3168, plus one for the end), plus the baseline kept past the cut.
	const bound = 91 + 3168 + 1 + 1
	peak := 0
	for sec := 0; sec <= 2*86400; sec++ {
		h.Add(snap(start0, "requests_total", sec), at(float64(sec)))
		peak = max(peak, h.Len())
		switch sec {
		case 86400:
			// Nothing is old enough to drop yet: 91 samples from 86310 s
			// on, and the multiples of 30 s in [0, 86310): 2877.
			if got, want := h.Len(), 91+2877; got != want {
				t.Errorf("after 24 h: %d samples, want %d", got, want)
			}
		case 2 * 86400:
			// Kept: 91 recent, and multiples of 30 s from 172800-95040 =
			// 77760 to 172680: 3165.
			if got, want := h.Len(), 91+3165; got != want {
				t.Errorf("after 48 h: %d samples, want %d", got, want)
			}
		}
	}
	if peak > bound {
		t.Errorf("history peaked at %d samples, bound %d", peak, bound)
	}
	// The thinned part is 30 s apart and the recent part is complete.
	for i := 1; i < h.Len(); i++ {
		gap := h.At(i).At.Sub(h.At(i - 1).At)
		old := h.At(h.Len()-1).At.Sub(h.At(i).At) > FullResolution
		if (old && gap != Thinned) || (!old && gap != time.Second && gap != Thinned) {
			t.Fatalf("sample %d: gap %v", i, gap)
		}
	}
	// The 24 h window still finds an exact baseline.
	b := h.baseline(24 * time.Hour)
	if b < 0 || h.Newest().At.Sub(h.At(b).At) != 24*time.Hour {
		t.Errorf("24 h baseline at %d", b)
	}
}

// TestHistoryKeepsLongestBaseline: at a coarse, jittery interval the newest
// sample at least the longest window old can sit just past 1.1× that
// window; it is kept so the window has a baseline.
func TestHistoryKeepsLongestBaseline(t *testing.T) {
	h := NewHistory(30 * time.Second) // retention 33 s
	for _, sec := range []float64{0, 17, 34.5, 51} {
		h.Add(snap(start0, "requests_total", int(sec)), at(sec))
	}
	// At 51 s: 17 s is exactly 34 s old, beyond 33 s, but it is the
	// newest sample at least 30 s old; 0 s is dropped.
	if h.Len() != 3 || !h.At(0).At.Equal(at(17)) {
		t.Fatalf("kept %d samples from %v", h.Len(), h.At(0).At)
	}
	if b := h.baseline(30 * time.Second); b != 0 {
		t.Errorf("baseline %d, want 0", b)
	}
}

func TestHistoryResetFolding(t *testing.T) {
	// A counter at 10/s that restarts from zero at 100 s, read every
	// second; the samples around the reset are thinned away long before
	// the window is read at 300 s.
	h := NewHistory(5 * time.Minute)
	for sec := 0; sec <= 300; sec++ {
		v := 10 * sec
		if sec >= 100 {
			v = 10 * (sec - 100)
		}
		ev := h.Add(snap(start0, "tokens_predicted_total", v), at(float64(sec)))
		if want := Appended; sec == 100 {
			if ev != Reset {
				t.Errorf("at 100 s: event %v, want Reset", ev)
			}
		} else if ev != want {
			t.Errorf("at %d s: event %v", sec, ev)
		}
	}
	if h.ResetAt != at(100) {
		t.Errorf("ResetAt = %v", h.ResetAt)
	}
	b := h.baseline(5 * time.Minute)
	if b != 0 {
		t.Fatalf("baseline %d", b)
	}
	// 0..99 s adds 990; the fall to 0 adds 0; 100..300 s adds 2000.
	got := h.delta(h.At(b), h.Newest()).Counters["tokens_predicted_total"]
	if got != 2990 {
		t.Errorf("increase over 5 m = %v, want 2990", got)
	}
}

// When one counter falls, every counter of the server counts from zero,
// even those whose new value is above the old one: the new process passed
// the old totals, it did not add to them. Histograms are left blank across
// the reset, and a falling histogram resets the counters too.
func TestHistoryResetAllCounters(t *testing.T) {
	h := NewHistory(time.Minute)
	h.Add(snap(0, "tokens_predicted_total", 10644, "tokens_predicted_seconds_total", 200, "requests_total", 40), at(0))
	// The seconds counter fell; the tokens rose past the old total.
	if ev := h.Add(snap(0, "tokens_predicted_total", 13500, "tokens_predicted_seconds_total", 60, "requests_total", 41), at(60)); ev != Reset {
		t.Fatalf("event %v, want Reset", ev)
	}
	d := h.delta(h.At(0), h.At(1))
	for name, want := range map[string]float64{"tokens_predicted_total": 13500, "tokens_predicted_seconds_total": 60, "requests_total": 41} {
		if got := d.Counters[name]; got != want {
			t.Errorf("%s: increase %v, want the new value %v", name, got, want)
		}
	}
	// A histogram whose buckets fall while every counter rose.
	h2 := NewHistory(time.Minute)
	h2.Add(snap(0, "requests_total", 40, "time_to_first_token_seconds", mkHist([]float64{1}, []float64{30, 40})), at(0))
	if ev := h2.Add(snap(0, "requests_total", 45, "time_to_first_token_seconds", mkHist([]float64{1}, []float64{3, 5})), at(10)); ev != Reset {
		t.Fatalf("histogram fall: event %v, want Reset", ev)
	}
	d2 := h2.delta(h2.At(0), h2.At(1))
	if got := d2.Counters["requests_total"]; got != 45 {
		t.Errorf("requests after a histogram reset: %v, want 45", got)
	}
	if _, ok := d2.Hists["time_to_first_token_seconds"]; ok {
		t.Error("a window across the reset would subtract histograms")
	}
}

func TestHistoryRestart(t *testing.T) {
	h := NewHistory(time.Minute)
	h.Add(snap(start0, "requests_total", 50), at(0))
	h.Add(snap(start0, "requests_total", 60), at(10))
	// The server came back 5 s before the scrape at 20 s.
	newStart := float64(at(15).Unix())
	if ev := h.Add(snap(newStart, "requests_total", 3), at(20)); ev != Restarted {
		t.Fatalf("event %v, want Restarted", ev)
	}
	if h.Len() != 1 || !h.RestartedAt.Equal(at(15)) {
		t.Fatalf("after restart: %d samples, RestartedAt %v", h.Len(), h.RestartedAt)
	}
	if !h.ResetAt.IsZero() {
		t.Error("a restart is not also a reset")
	}
	// Start times that differ by float noise are one process.
	if ev := h.Add(snap(newStart+0.3, "requests_total", 4), at(30)); ev != Appended {
		t.Errorf("event %v, want Appended", ev)
	}
	// An unknown start time says nothing.
	if ev := h.Add(snap(0, "requests_total", 5), at(40)); ev != Appended {
		t.Errorf("event %v, want Appended", ev)
	}
	// A sample not after the newest is not kept.
	if ev := h.Add(snap(newStart, "requests_total", 6), at(40)); ev != Skipped || h.Len() != 3 {
		t.Errorf("event %v with %d samples, want Skipped and 3", ev, h.Len())
	}
	h.Reset()
	if h.Len() != 1 || !h.RestartedAt.IsZero() || !h.Newest().At.Equal(at(40)) {
		t.Errorf("after Reset: %d samples, newest %v", h.Len(), h.Newest().At)
	}
}

func TestHistorySharesIdleHistograms(t *testing.T) {
	h := NewHistory(time.Minute)
	bounds := []float64{0.1, 1}
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(bounds, []float64{1, 2})), at(0))
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(bounds, []float64{1, 2})), at(1))
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(bounds, []float64{1, 3})), at(2))
	hTTFT := hist("time_to_first_token_seconds")
	if h.At(0).hists[hTTFT] != h.At(1).hists[hTTFT] {
		t.Error("an unchanged histogram is stored twice")
	}
	if h.At(1).hists[hTTFT] == h.At(2).hists[hTTFT] || h.At(2).resets != 0 {
		t.Error("a grown histogram is not stored as a new reading of the same series")
	}
	// A fall is a reset of the histogram: a new epoch.
	h.Add(snap(start0, "time_to_first_token_seconds", mkHist(bounds, []float64{0, 1})), at(3))
	if h.At(3).resets != 1 {
		t.Errorf("%d resets after a fall, want 1", h.At(3).resets)
	}
}

// With no real start time (llama.cpp), a changed start-header token is a
// restart; an unchanged or absent one is not.
func TestHistoryStartToken(t *testing.T) {
	tests := []struct {
		name       string
		tokA, tokB string
		want       Event
	}{
		{"same token", "123456789", "123456789", Appended},
		{"new token", "123456789", "987", Restarted},
		{"token appears", "", "987", Appended},
		{"token vanishes", "123", "", Appended},
	}
	for _, tt := range tests {
		h := NewHistory(time.Hour)
		a := snap(0, "requests_total", 10)
		a.StartToken = tt.tokA
		b := snap(0, "requests_total", 12)
		b.StartToken = tt.tokB
		h.Add(a, at(0))
		if got := h.Add(b, at(2)); got != tt.want {
			t.Errorf("%s: event %v, want %v", tt.name, got, tt.want)
		}
		if tt.want == Restarted && !h.RestartedAt.Equal(at(2)) {
			t.Errorf("%s: restarted at %v, want the scrape that saw it", tt.name, h.RestartedAt)
		}
	}
	// A real start time wins over the token: same start, new token → no restart.
	h := NewHistory(time.Hour)
	a, b := snap(1.7e9, "requests_total", 10), snap(1.7e9, "requests_total", 12)
	a.StartToken, b.StartToken = "1", "2"
	h.Add(a, at(0))
	if got := h.Add(b, at(2)); got != Appended {
		t.Errorf("start time known: event %v, want Appended", got)
	}
}

// A counter a server creates at its first request (vLLM, llm-d, the
// proxy) is absent from a scrape before it: a window from that scrape
// counts it from zero. A histogram likewise. One present before and absent
// at the window's end has no increase.
func TestHistoryCountsBornCountersFromZero(t *testing.T) {
	lat := []float64{0.1, 1}
	h := NewHistory(time.Hour)
	// Before the first request: gauges only (here a start time and a
	// counter that will vanish).
	h.Add(snap(start0, "kv_cache_usage_ratio", 0.0, "cached_tokens_total", 7), at(0))
	h.Add(snap(start0, "requests_total", 3, "tokens_predicted_total", 300,
		"time_to_first_token_seconds", mkHist(lat, []float64{1, 3, 3})), at(10))
	h.Add(snap(start0, "requests_total", 5, "tokens_predicted_total", 500,
		"time_to_first_token_seconds", mkHist(lat, []float64{2, 5, 5})), at(20))
	d := h.delta(h.At(0), h.At(2))
	for name, want := range map[string]float64{"requests_total": 5, "tokens_predicted_total": 500} {
		if got, ok := d.Counters[name]; !ok || got != want {
			t.Errorf("%s: increase %v (%v), want %v counted from zero", name, got, ok, want)
		}
	}
	if _, ok := d.Counters["cached_tokens_total"]; ok {
		t.Error("a counter absent at the window's end has an increase")
	}
	if got := d.Hists["time_to_first_token_seconds"]; got.Count != 5 {
		t.Errorf("TTFT increase counts %v observations, want all 5 from zero", got.Count)
	}
	// Between the two later samples, the plain difference.
	if got := h.delta(h.At(1), h.At(2)).Counters["requests_total"]; got != 2 {
		t.Errorf("requests between 10 s and 20 s: %v, want 2", got)
	}
	// The rates table has the rows from the newest scrape, with figures.
	sec, figs := h.Section([]time.Duration{20 * time.Second})
	if sec.Table == nil {
		t.Fatal("no table")
	}
	if v := figs["20s"]["requests"]; v == nil || *v != 0.25 {
		t.Errorf("requests /s over 20 s = %v, want 5/20", deref(v))
	}
}

// A counter that vanishes and comes back continues from its last value:
// only one never seen counts from zero.
func TestHistoryCarriesAVanishedCounter(t *testing.T) {
	h := NewHistory(time.Hour)
	h.Add(snap(start0, "requests_total", 100), at(0))
	h.Add(snap(start0), at(10))
	if ev := h.Add(snap(start0, "requests_total", 104), at(20)); ev != Appended {
		t.Fatalf("event %v", ev)
	}
	if got := h.delta(h.At(0), h.At(2)).Counters["requests_total"]; got != 4 {
		t.Errorf("increase %v, want 4", got)
	}
	if got := h.delta(h.At(1), h.At(2)).Counters["requests_total"]; got != 4 {
		t.Errorf("increase from the scrape that lacked it: %v, want 4 (it was seen before)", got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
