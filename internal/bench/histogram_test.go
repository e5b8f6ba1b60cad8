package bench

import (
	"math"
	"slices"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// Histograms worked by hand: where the edges fall and what each bin holds.
func TestHistogramOf(t *testing.T) {
	ms := func(v ...float64) []float64 {
		for i := range v {
			v[i] /= 1000
		}
		return v
	}
	nums := func(v ...float64) report.List[report.Number] {
		out := report.List[report.Number]{}
		for _, x := range v {
			out = append(out, report.Number(x))
		}
		return out
	}
	cases := []struct {
		name   string
		values []float64
		want   *Histogram
	}{
		{"none", nil, nil},
		{"NaN only", []float64{math.NaN()}, nil},
		// 50…69 ms: a span of 19 ms over 30 bins is 0.63 ms, so the step
		// is 1 ms; 20 bins of one request each, 50 to 70.
		{"linear", ms(50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69), &Histogram{Scale: "linear",
			Edges:  nums(0.05, 0.051, 0.052, 0.053, 0.054, 0.055, 0.056, 0.057, 0.058, 0.059, 0.06, 0.061, 0.062, 0.063, 0.064, 0.065, 0.066, 0.067, 0.068, 0.069, 0.07),
			Counts: report.List[int]{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}},
		// 0.2 to 3 s: a span of 2.8 s, step 0.1 s (0.093 rounded up to
		// 1, 2 or 5 × 10^k); an edge is the bin's lower bound, so 0.3
		// opens the second bin and 3 the last.
		{"linear, upper edge", []float64{0.2, 0.3, 0.31, 3}, &Histogram{Scale: "linear",
			Edges:  nums(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3, 3.1),
			Counts: report.List[int]{1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}},
		// One value: one bin a round step wide (a tenth of it, 0.005).
		{"one value", []float64{0.05, 0.05, math.NaN()}, &Histogram{Scale: "linear", Edges: nums(0.05, 0.055), Counts: report.List[int]{2}}},
		// 30 ms to 2 s span a factor of 67: ten edges a decade, from
		// 0.025 (the last at or below 0.03) to 2.5 (the first above 2).
		{"log", []float64{0.03, 0.031, 0.05, 0.12, 0.9, 2}, &Histogram{Scale: "log",
			Edges:  nums(0.025, 0.032, 0.04, 0.05, 0.063, 0.08, 0.1, 0.125, 0.16, 0.2, 0.25, 0.32, 0.4, 0.5, 0.63, 0.8, 1, 1.25, 1.6, 2, 2.5),
			Counts: report.List[int]{2, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}}},
		// 1 µs to 100 s are eight decades: one edge a decade.
		{"log, wide", []float64{1e-6, 1e-3, 100}, &Histogram{Scale: "log",
			Edges:  nums(1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100, 1000),
			Counts: report.List[int]{1, 0, 0, 1, 0, 0, 0, 0, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := histogramOf(c.values)
			if (got == nil) != (c.want == nil) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if got == nil {
				return
			}
			if got.Scale != c.want.Scale || !slices.Equal(got.Edges, c.want.Edges) || !slices.Equal(got.Counts, c.want.Counts) {
				t.Errorf("got\n  %s %v\n  %v\nwant\n  %s %v\n  %v", got.Scale, got.Edges, got.Counts, c.want.Scale, c.want.Edges, c.want.Counts)
			}
		})
	}
}
