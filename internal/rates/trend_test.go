package rates

import (
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/rates/ratestest"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// values reads a trend's values, NaN as NaN.
func values(t *report.Trend) []float64 {
	out := make([]float64, len(t.Values))
	for i, v := range t.Values {
		out[i] = float64(v)
	}
	return out
}

func sameSeries(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) || (!math.IsNaN(a[i]) && !approx(a[i], b[i])) {
			return false
		}
	}
	return true
}

// TestTrendsHandWorked runs a session at a 2 s step through a failed
// scrape and a restart, and checks each trend against values worked out by
// hand: a rate over each interval, a gap for the failure and for the
// interval after it (its increase spans two), a gap where the server
// restarted; the gauges as read, a gap only where the scrape failed.
func TestTrendsHandWorked(t *testing.T) {
	nan := math.NaN()
	restart := start0 + 3600 + 11
	steps := []struct {
		sec    float64
		failed bool
		start  float64
		req    int
		kv     float64
		run    int
		wait   int
	}{
		{sec: 0, start: start0, req: 0, kv: 0.10, run: 1, wait: 0},
		{sec: 2, start: start0, req: 10, kv: 0.20, run: 2, wait: 0},
		{sec: 4, start: start0, req: 30, kv: 0.95, run: 2, wait: 9},
		{sec: 6, failed: true},
		{sec: 8, start: start0, req: 50, kv: 0.50, run: 4, wait: 2},
		{sec: 10, start: start0, req: 54, kv: 0.40, run: 0, wait: 3},
		{sec: 12, start: restart, req: 3, kv: 0.05, run: 1, wait: 0},
		{sec: 14, start: restart, req: 7, kv: 0.06, run: 1, wait: 0},
	}
	h := NewHistory(time.Minute)
	h.SetTrendStep(2 * time.Second)
	for _, st := range steps {
		if st.failed {
			h.Missed()
			continue
		}
		h.Add(snap(st.start, snapshot.RequestsTotal, st.req, snapshot.KVCacheUsageRatio, st.kv,
			snapshot.RequestsProcessing, st.run, snapshot.RequestsDeferred, st.wait), at(st.sec))
	}
	tr := h.Trends()
	want := map[string][]float64{
		"requests": {nan, 5, 10, nan, nan, 2, nan, 2},
		TrendKV:    {0.10, 0.20, 0.95, nan, 0.50, 0.40, 0.05, 0.06},
		TrendQueue: {0, 0, 9, nan, 2, 3, 0, 0},
	}
	for id, w := range want {
		got, ok := tr[id]
		if !ok {
			t.Fatalf("no %s trend among %v", id, keys(tr))
		}
		if !sameSeries(values(got), w) {
			t.Errorf("%s = %v, want %v", id, values(got), w)
		}
		if got.StepSeconds != 2 {
			t.Errorf("%s step %v, want 2", id, got.StepSeconds)
		}
	}
	// Colours by the report's own bands: KV pressure from 90%, queue
	// pressure from 8 waiting and twice what runs, a stall where none runs.
	if c := tr[TrendKV].Colours; c[2] != report.Warn || c[1] != report.Good || c[3] != report.None {
		t.Errorf("KV colours %v", c)
	}
	if c := tr[TrendQueue].Colours; c[2] != report.Warn || c[4] != report.None || c[5] != report.None {
		t.Errorf("queue colours %v", c)
	}
	if tr["requests"].Colours != nil {
		t.Errorf("a rate no band judges has colours %v", tr["requests"].Colours)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTrendNewestIsNow: the newest value of every trend is the figure of
// the table's now column, through one definition.
func TestTrendNewestIsNow(t *testing.T) {
	h := NewHistory(time.Minute)
	h.SetTrendStep(time.Second)
	for sec := 0; sec <= 5; sec++ {
		h.Add(ratestest.Full(start0, sec), at(float64(sec)))
	}
	_, figs := h.Section([]time.Duration{30 * time.Second})
	tr := h.Trends()
	n := 0
	for id, v := range figs[KeyNow] {
		if id == KeyElapsed {
			continue
		}
		got, ok := tr[id]
		if v == nil {
			continue
		}
		if !ok {
			t.Errorf("row %s has a now figure and no trend", id)
			continue
		}
		last := float64(got.Values[len(got.Values)-1])
		if !approx(last, *v) {
			t.Errorf("%s: trend ends at %v, now column %v", id, last, *v)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d rows compared", n)
	}
}

// TestTrendBounded: a trend keeps TrendLength intervals, the newest.
func TestTrendBounded(t *testing.T) {
	h := NewHistory(time.Minute)
	h.SetTrendStep(time.Second)
	for sec := 0; sec < 3*TrendLength; sec++ {
		h.Add(snap(start0, snapshot.RequestsTotal, sec*sec), at(float64(sec)))
	}
	v := values(h.Trends()["requests"])
	if len(v) != TrendLength {
		t.Fatalf("%d values kept", len(v))
	}
	// The interval ending at second s: s² - (s-1)² = 2s-1 requests.
	if last := 3*TrendLength - 1; v[len(v)-1] != float64(2*last-1) || v[0] != float64(2*(last-TrendLength+1)-1) {
		t.Errorf("kept %v … %v", v[0], v[len(v)-1])
	}
}

// TestTrendStartsOver: the r key and a new step start the trends over.
func TestTrendStartsOver(t *testing.T) {
	h := NewHistory(time.Minute)
	h.SetTrendStep(time.Second)
	for sec := range 5 {
		h.Add(snap(start0, snapshot.RequestsTotal, sec), at(float64(sec)))
	}
	h.Reset()
	if tr := h.Trends(); tr != nil {
		t.Errorf("after a reset: %v", tr)
	}
	h.Add(snap(start0, snapshot.RequestsTotal, 9), at(5))
	if v := values(h.Trends()["requests"]); !sameSeries(v, []float64{5}) {
		t.Errorf("after a reset, the next interval from the kept sample: %v", v)
	}
	h.SetTrendStep(2 * time.Second)
	if tr := h.Trends(); tr != nil {
		t.Errorf("after a new step: %v", tr)
	}
	h.SetTrendStep(0)
	h.Add(snap(start0, snapshot.RequestsTotal, 10), at(6))
	if tr := h.Trends(); tr != nil {
		t.Errorf("with no step: %v", tr)
	}
}

// TestHeatHandWorked: each interval's TTFT observations per bucket, not
// cumulative, a gap where the scrape failed and after it.
func TestHeatHandWorked(t *testing.T) {
	bounds := []float64{0.1, 1}
	cum := [][]float64{{0, 0, 0}, {4, 4, 4}, {4, 10, 10}, nil, {5, 12, 15}, {5, 12, 15}}
	h := NewHistory(time.Minute)
	h.SetTrendStep(time.Second)
	for sec, c := range cum {
		if c == nil {
			h.Missed()
			continue
		}
		h.Add(snap(start0, snapshot.TimeToFirstTokenSeconds, mkHist(bounds, c)), at(float64(sec)))
	}
	hm := h.Heat()[snapshot.TimeToFirstTokenSeconds]
	if hm == nil {
		t.Fatal("no TTFT heat")
	}
	if got := []string(hm.LE); len(got) != 3 || got[0] != "0.1" || got[2] != "+Inf" {
		t.Errorf("le %v", got)
	}
	want := [][]float64{nil, {4, 0, 0}, {0, 6, 0}, nil, nil, {0, 0, 0}}
	if len(hm.Counts) != len(want) {
		t.Fatalf("%d intervals, want %d", len(hm.Counts), len(want))
	}
	for i, w := range want {
		got := hm.Counts[i]
		if (got == nil) != (w == nil) {
			t.Errorf("interval %d: %v, want %v", i, got, w)
			continue
		}
		for j := range w {
			if float64(got[j]) != w[j] {
				t.Errorf("interval %d: %v, want %v", i, got, w)
				break
			}
		}
	}
	if _, ok := h.Heat()[snapshot.E2ERequestLatencySeconds]; ok {
		t.Error("a heat strip for a histogram the server does not publish")
	}
}
