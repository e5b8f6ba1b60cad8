package analysis

import (
	"math"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// TestTimeFigures: request time over the uptime is requests in flight,
// with a busy bound only at a mean of at most 1 and never behind the
// proxy; utilization comes only from an engine's own busy time. Figures
// worked by hand from an hour of uptime.
func TestTimeFigures(t *testing.T) {
	hour := float64(scrapedAt.Unix() - 3600)
	num := func(n *report.Number) float64 {
		if n == nil {
			return math.NaN()
		}
		return float64(*n)
	}
	tests := []struct {
		name                       string
		scalars                    map[string]float64
		via                        string
		inFlight, busyAtMost, util float64 // NaN: null
		rowID, note                string
	}{
		{
			// 1,800 s of request time in 3,600 s: 0.5 in flight on average,
			// so the engine was busy at most half the time.
			name:     "at most one in flight",
			scalars:  map[string]float64{"prompt_seconds_total": 300, "tokens_predicted_seconds_total": 1500, "process_start_time_seconds": hour},
			inFlight: 0.5, busyAtMost: 0.5, util: math.NaN(),
			rowID: "request_time", note: "mean 0.50 in flight: busy at most 50.0%",
		},
		{
			// 9,000 s in 3,600 s: 2.5 at once; no bound on busy time.
			name:     "overlapping requests",
			scalars:  map[string]float64{"prompt_seconds_total": 1000, "tokens_predicted_seconds_total": 8000, "process_start_time_seconds": hour},
			inFlight: 2.5, busyAtMost: math.NaN(), util: math.NaN(),
			rowID: "request_time", note: "mean 2.50 in flight: requests overlap, so no busy share",
		},
		{
			// The proxy's uptime is its own: a mean through it, no bound.
			name:     "behind the proxy",
			scalars:  map[string]float64{"prompt_seconds_total": 300, "tokens_predicted_seconds_total": 1500, "process_start_time_seconds": hour},
			via:      "inferscope proxy",
			inFlight: 0.5, busyAtMost: math.NaN(), util: math.NaN(),
			rowID: "request_time", note: "mean 0.50 in flight through the proxy, over the proxy's uptime",
		},
		{
			// SGLang's GPU execution time: 2,700 s of 3,600 is 75%.
			name:     "an engine's own busy time",
			scalars:  map[string]float64{"engine_busy_seconds_total": 2700, "process_start_time_seconds": hour},
			inFlight: math.NaN(), busyAtMost: math.NaN(), util: 0.75,
			rowID: "engine_busy", note: "75.0% utilization (GPU execution time)",
		},
		{
			// More busy time than the wall clock cannot be: no figure.
			name:     "busy time beyond the uptime",
			scalars:  map[string]float64{"engine_busy_seconds_total": 4000, "process_start_time_seconds": hour},
			inFlight: math.NaN(), busyAtMost: math.NaN(), util: math.NaN(),
			rowID: "engine_busy", note: "more than the uptime: counters out of step, no utilization",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snap(tt.scalars)
			s.Via = tt.via
			r := Analyze(s, Options{})
			f := r.Figures
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"mean_in_flight", num(f.MeanInFlight), tt.inFlight}, {"busy_at_most", num(f.BusyAtMost), tt.busyAtMost}, {"utilization", num(f.Utilization), tt.util}} {
				if !(math.IsNaN(c.got) && math.IsNaN(c.want)) && math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			if got := row(t, r, "phases", tt.rowID).Note; got != tt.note {
				t.Errorf("%s note %q, want %q", tt.rowID, got, tt.note)
			}
		})
	}
}
