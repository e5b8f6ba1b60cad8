package promtool

import (
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func slicesOf(mf *dto.MetricFamily) []*dto.MetricFamily { return []*dto.MetricFamily{mf} }

func parse(t *testing.T, text string) []Point {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Point
	for _, n := range names {
		out = append(out, Points(slicesOf(fams[n]), Labels{"job": "j"})...)
	}
	return out
}

// Families are flattened as a store keeps them: a histogram as _bucket by
// le (with the +Inf bucket its count where the exposition left it out),
// _count and _sum; counters marked as rising; the target's labels added.
func TestPoints(t *testing.T) {
	pts := parse(t, `# TYPE h histogram
h_bucket{a="x",le="0.5"} 1
h_bucket{a="x",le="2"} 3
h_count{a="x"} 4
h_sum{a="x"} 6.5
# TYPE c counter
c_total 7
# TYPE g gauge
g{b="q\"uote"} 0.25
`)
	var got []string
	for _, p := range pts {
		got = append(got, p.Labels.Selector()+" "+Value(p.Value)+map[bool]string{true: " counter", false: ""}[p.Counter])
	}
	want := []string{
		`c_total{job="j"} 7 counter`,
		`g{b="q\"uote", job="j"} 0.25`,
		`h_bucket{a="x", job="j", le="0.5"} 1 counter`,
		`h_bucket{a="x", job="j", le="2"} 3 counter`,
		`h_bucket{a="x", job="j", le="+Inf"} 4 counter`,
		`h_count{a="x", job="j"} 4 counter`,
		`h_sum{a="x", job="j"} 6.5 counter`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A series missing from a scrape is a missing sample there, before its
// first appearance and after it goes.
func TestRecorder(t *testing.T) {
	a := Point{Labels: Labels{"__name__": "a"}, Value: 1}
	b := Point{Labels: Labels{"__name__": "b"}, Value: 2}
	var r Recorder
	r.Add([]Point{a})
	r.Add([]Point{a, b})
	r.Add([]Point{b})
	got := r.Inputs()
	want := []Input{{Series: "a{}", Values: "1 1 _"}, {Series: "b{}", Values: "_ 2 2"}}
	if !slices.Equal(got, want) || r.Len() != 3 {
		t.Errorf("got %v (%d), want %v", got, r.Len(), want)
	}
}

// A ramp raises counters from 0 over one interval and holds gauges.
func TestRamp(t *testing.T) {
	pts := []Point{{Labels: Labels{"__name__": "c"}, Value: 5, Counter: true}, {Labels: Labels{"__name__": "g"}, Value: 3}}
	got := Ramp(pts, func(p Point) bool { return p.Counter })
	want := []Input{{Series: "c{}", Values: "0 5"}, {Series: "g{}", Values: "3 3"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFormats(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{Value(math.NaN()), "NaN"}, {Value(math.Inf(1)), "+Inf"}, {Value(math.Inf(-1)), "-Inf"},
		{Value(1.7414750208e+10), "1.7414750208e+10"}, {Value(0.1), "0.1"},
		{Duration(300), "5m"}, {Duration(90), "90s"}, {Duration(7200), "2h"}, {Duration(0), "0s"},
		{LE(math.Inf(1)), "+Inf"}, {LE(0.25), "0.25"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
