package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
)

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

// snap is a snapshot holding generated tokens, requests and (when ttft is
// given) the TTFT histogram's cumulative counts at 0.5 s, 1 s and +Inf.
func snap(tokens, requests float64, ttft ...float64) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scalars: map[string]float64{
		snapshot.TokensPredictedTotal: tokens, snapshot.RequestsTotal: requests,
	}, Histograms: map[string]*histogram.Histogram{}}
	if len(ttft) == 3 {
		s.Histograms[snapshot.TimeToFirstTokenSeconds] = &histogram.Histogram{
			Buckets: []histogram.Bucket{{UpperBound: 0.5, Count: ttft[0]}, {UpperBound: 1, Count: ttft[1]}, {UpperBound: math.Inf(1), Count: ttft[2]}},
			Count:   ttft[2], Sum: ttft[2] * 0.4,
		}
	}
	return s
}

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func TestDeltaOver(t *testing.T) {
	withStart := func(s *snapshot.Snapshot, start float64) *snapshot.Snapshot {
		s.Scalars[snapshot.ProcessStartTimeSeconds] = start
		return s
	}
	for _, tc := range []struct {
		name     string
		bs       []boundary
		fromZero bool
		start    time.Time
		tokens   float64 // want; NaN: no entry
		requests float64
		seconds  float64
		resets   int
		ttft     []float64 // want the increase's cumulative counts; nil: no entry
	}{
		{
			name:   "steady: the difference of the two ends",
			bs:     []boundary{{at: at(0), snap: snap(1000, 10, 1, 2, 3)}, {at: at(60), snap: snap(1600, 16, 4, 7, 9)}},
			tokens: 600, requests: 6, seconds: 60, ttft: []float64{3, 5, 6},
		},
		{
			// 1000 → 1500 before the restart, then 0 → 300 after it.
			name: "a restart marked from raw samples: each segment, from zero after it",
			bs: []boundary{{at: at(0), snap: snap(1000, 10, 1, 2, 3)}, {at: at(30), snap: snap(1500, 15, 2, 4, 6)},
				{at: at(45), snap: snap(100, 1, 1, 1, 1), reset: true}, {at: at(60), snap: snap(300, 3, 2, 3, 3)}},
			tokens: 500 + 300, requests: 5 + 3, seconds: 60, resets: 1, ttft: []float64{1 + 2, 2 + 3, 3 + 3},
		},
		{
			// llama.cpp: a restarted server's token counter passes the
			// old value before the next reading; the raw samples said it
			// restarted, so it counts from zero: 1300, not 300.
			name:   "a restart whose counters grew past the old values",
			bs:     []boundary{{at: at(0), snap: snap(1000, 10)}, {at: at(60), snap: snap(1300, 12), reset: true}},
			tokens: 1300, requests: 12, seconds: 60, resets: 1,
		},
		{
			name:   "a fall the ends show counts from zero too",
			bs:     []boundary{{at: at(0), snap: snap(1000, 10)}, {at: at(60), snap: snap(400, 4)}},
			tokens: 400, requests: 4, seconds: 60, resets: 1,
		},
		{
			name: "a changed start time is a restart",
			bs: []boundary{{at: at(0), snap: withStart(snap(1000, 10), 1.7e9)},
				{at: at(60), snap: withStart(snap(1200, 12), 1.7e9+50)}},
			tokens: 1200, requests: 12, seconds: 60, resets: 1,
		},
		{
			// Started 20 s before its first reading, inside the window:
			// everything it counted is the window's.
			name:     "born inside the window: from zero at its start",
			bs:       []boundary{{at: at(40), snap: snap(200, 2, 1, 2, 2)}, {at: at(100), snap: snap(800, 8, 3, 6, 8)}},
			fromZero: true, start: at(20),
			tokens: 800, requests: 8, seconds: 80, ttft: []float64{3, 6, 8},
		},
		{
			name: "a counter one reading in the middle lacks is carried over it",
			bs: []boundary{{at: at(0), snap: snap(1000, 10)},
				{at: at(30), snap: &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsTotal: 12}}},
				{at: at(60), snap: snap(1600, 16)}},
			tokens: 600, requests: 6, seconds: 60,
		},
		{
			// vLLM creates its counters and histograms at the first
			// request, after the store's first sample of the instance.
			name: "counters the first reading lacks count from zero",
			bs: []boundary{{at: at(0), snap: &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsProcessing: 0}}},
				{at: at(60), snap: snap(1600, 16, 4, 7, 9)}},
			tokens: 1600, requests: 16, seconds: 60, ttft: []float64{4, 7, 9},
		},
		{
			name: "a counter the last reading lacks has no increase",
			bs: []boundary{{at: at(0), snap: snap(1000, 10, 1, 2, 3)},
				{at: at(60), snap: &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsTotal: 16}}}},
			tokens: math.NaN(), requests: 6, seconds: 60,
		},
		{
			name:   "a histogram whose layout changed has no increase",
			bs:     []boundary{{at: at(0), snap: snap(0, 0, 1, 2, 3)}, {at: at(60), snap: relayout(snap(60, 6, 4, 7, 9))}},
			tokens: 60, requests: 6, seconds: 60,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deltaOver(tc.bs, tc.fromZero, tc.start)
			check := func(what, name string, want float64) {
				got, ok := d.Counters[name]
				switch {
				case math.IsNaN(want) && ok:
					t.Errorf("%s = %v, want no entry", what, got)
				case !math.IsNaN(want) && (!ok || got != want):
					t.Errorf("%s = %v (present %v), want %v", what, got, ok, want)
				}
			}
			check("tokens", snapshot.TokensPredictedTotal, tc.tokens)
			check("requests", snapshot.RequestsTotal, tc.requests)
			if d.Seconds != tc.seconds {
				t.Errorf("seconds = %v, want %v", d.Seconds, tc.seconds)
			}
			if len(d.resets) != tc.resets || d.Reset != (tc.resets > 0) {
				t.Errorf("resets = %v, want %d", d.resets, tc.resets)
			}
			h, ok := d.Hists[snapshot.TimeToFirstTokenSeconds]
			switch {
			case tc.ttft == nil && ok:
				t.Errorf("ttft = %+v, want no entry", h)
			case tc.ttft != nil && !ok:
				t.Errorf("no ttft, want %v", tc.ttft)
			case tc.ttft != nil:
				for i, w := range tc.ttft {
					if h.Buckets[i].Count != w {
						t.Errorf("ttft bucket %d = %v, want %v", i, h.Buckets[i].Count, w)
					}
				}
			}
		})
	}
}

func relayout(s *snapshot.Snapshot) *snapshot.Snapshot {
	h := s.Histograms[snapshot.TimeToFirstTokenSeconds]
	h.Buckets[0].UpperBound = 0.25
	return s
}

func TestRateHists(t *testing.T) {
	for name, d := range map[string]bool{
		snapshot.TimeToFirstTokenSeconds: true, snapshot.E2ERequestLatencySeconds: true,
		snapshot.RequestQueueTimeSeconds: false, snapshot.InterTokenLatencySeconds: false, snapshot.RequestPromptTokens: false,
		snapshot.RequestPrefillTimeSeconds: false, snapshot.RequestDecodeTimeSeconds: false, snapshot.RequestGenerationTokens: false,
		snapshot.RequestTimePerOutputTokenSeconds: false, snapshot.SpecDecodeAcceptanceRate: false,
	} {
		s := &snapshot.Snapshot{Histograms: map[string]*histogram.Histogram{name: {}}}
		listed := false
		for _, h := range rateHists {
			listed = listed || h == name
		}
		if has := len(rates.RowsFor(s)) > 0; has != listed || listed != d {
			t.Errorf("%s: rows %v, listed %v", name, has, listed)
		}
	}
}
