package analysis

import (
	"math"
	"slices"
	"testing"
)

// Each of a probe's notes fires on a point made to show it, at its
// threshold, and not just short of it.
func TestJudgeProbe(t *testing.T) {
	nan := math.NaN()
	quiet := ProbePoint{What: "decode at batch 4", Min: 100, Median: 110, Max: 124, Cold: 100, Cached: nan, Overlap: 0.8}
	tests := []struct {
		name string
		in   ProbeRun
		want []string
	}{
		{"quiet", ProbeRun{Points: []ProbePoint{quiet}}, nil},
		{"overlap", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Overlap = 0.79 })}}, []string{"probe_overlap_low"}},
		{"spread", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Max = 125 })}}, []string{"probe_spread_wide"}},
		{"cold", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Cold = 88 })}}, []string{"probe_cold_slow"}},
		{"cached", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Cached = 0.5 })}}, []string{"probe_cached"}},
		{"early stops", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Short = 1 })}}, []string{"probe_early_stops"}},
		{"errors", ProbeRun{Points: []ProbePoint{with(quiet, func(p *ProbePoint) { p.Failed = 2 })}}, []string{"probe_errors"}},
		{"busy", ProbeRun{Points: []ProbePoint{quiet}, Busy: 1}, []string{"probe_server_busy"}},
		{"partial", ProbeRun{Partial: true}, []string{"probe_partial"}},
		// Unknown figures judge nothing: a prefill point has no overlap,
		// a point with no measured request no spread.
		{"unknown", ProbeRun{Points: []ProbePoint{{What: "prefill at 128 tokens", Min: nan, Median: nan, Max: nan, Cold: nan, Cached: nan, Overlap: nan}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, n := range JudgeProbe(tt.in) {
				got = append(got, n.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("notes %v, want %v", got, tt.want)
			}
		})
	}
}

func with(p ProbePoint, f func(*ProbePoint)) ProbePoint {
	f(&p)
	return p
}
