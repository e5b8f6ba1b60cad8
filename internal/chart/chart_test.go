package chart

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// element is one element of a drawn figure, with its attributes and the
// text directly inside it.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parse reads a figure as XML (it must be well formed: the SVG inline in
// HTML is read by the same rules) into its elements, in order.
func parse(t *testing.T, s string) []*element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var out, stack []*element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well formed: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	return out
}

// ticks are the values of an axis's ticks, as drawn.
func ticks(t *testing.T, els []*element, axis string) []float64 {
	t.Helper()
	var out []float64
	in := false
	for _, e := range els {
		if e.name == "g" && strings.HasPrefix(e.attrs["class"], "axis") {
			in = e.attrs["class"] == "axis "+axis
		}
		if in && e.attrs["class"] == "tick" {
			v, err := strconv.ParseFloat(e.attrs["data-value"], 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

func withClass(els []*element, class string) []*element {
	var out []*element
	for _, e := range els {
		if slices.Contains(strings.Fields(e.attrs["class"]), class) {
			out = append(out, e)
		}
	}
	return out
}

// The axes by hand: a linear axis from 0 to round steps above the data, a
// log axis by decades (with 2 and 5 between them where it spans two or
// fewer), and each point where its value puts it.
func TestAxes(t *testing.T) {
	cases := []struct {
		name   string
		x, y   Axis
		points []Point
		xTicks []float64
		yTicks []float64
	}{
		// 0.94 over five steps is 0.188: a step of 0.2, the axis to 1.
		{"linear", Axis{Label: "x", Zero: true}, Axis{Label: "y", Zero: true},
			[]Point{{X: 0.03, Y: 12}, {X: 0.94, Y: 48}},
			[]float64{0, 0.2, 0.4, 0.6, 0.8, 1}, []float64{0, 10, 20, 30, 40, 50}},
		// 3 ms to 2.5 s: the decades 1 ms to 10 s, four of them; Y from
		// 1 to 3 (not from zero): a step of 0.5.
		{"log, four decades", Axis{Log: true}, Axis{Min: math.NaN(), Max: math.NaN()},
			[]Point{{X: 0.003, Y: 1}, {X: 2.5, Y: 3}},
			[]float64{0.001, 0.01, 0.1, 1, 10}, []float64{1, 1.5, 2, 2.5, 3}},
		{"log, two decades", Axis{Log: true}, Axis{Min: 0, Max: 1},
			[]Point{{X: 0.02, Y: 0.5}, {X: 0.9, Y: 0.7}},
			[]float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := &Chart{ID: "c", Title: "T", X: c.x, Y: c.y, Series: []Series{{Name: "a", Kind: Scatter, Points: c.points}}}
			els := parse(t, ch.HTML())
			if got := ticks(t, els, "x"); !slices.Equal(got, c.xTicks) {
				t.Errorf("x ticks %v, want %v", got, c.xTicks)
			}
			if got := ticks(t, els, "y"); !slices.Equal(got, c.yTicks) {
				t.Errorf("y ticks %v, want %v", got, c.yTicks)
			}
			// The first point is at the data's end of each axis's
			// range: its pixel by hand from the margins.
			pts := withClass(els, "point")
			if len(pts) != 2 {
				t.Fatalf("%d points", len(pts))
			}
			first := els[slices.Index(els, pts[0])+1]
			if first.name != "circle" {
				t.Fatalf("series 0's marker is a %s", first.name)
			}
			cx, _ := strconv.ParseFloat(first.attrs["cx"], 64)
			lo, hi := c.xTicks[0], c.xTicks[len(c.xTicks)-1]
			want := left + (c.points[0].X-lo)/(hi-lo)*(width-left-right)
			if c.x.Log {
				want = left + (math.Log10(c.points[0].X)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(width-left-right)
			}
			if math.Abs(cx-want) > 0.05 {
				t.Errorf("the first point at x=%v px, want %v", cx, want)
			}
		})
	}
}

// Long Y tick labels widen the left margin, so that the longest ends
// clear of the axis's own upright label: "12,500 tok/s" is 12 characters,
// 86.4 units at 7.2 each, right-aligned 8 short of the axis, the label's
// 21 and a gap of 4: the plot starts at 120 (119.4 rounded up).
func TestLeftMarginFitsTickLabels(t *testing.T) {
	long := Axis{Label: "tokens a second", Format: func(v float64) string {
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "00 tok/s" // 12.500 → "12.500 tok/s"
	}}
	for _, c := range []struct {
		name string
		y    Axis
		top  float64
		want float64
	}{
		// "10.5": four characters, 61.8 units: the least, 72.
		{"short labels keep the least margin", Axis{Label: "y"}, 12.5, left},
		// Three significant figures: "1.05e+04", eight: 90.6, so 91.
		{"the default format's long labels", Axis{Label: "y"}, 12500, 91},
		{"long labels widen it", long, 12500, 120},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := &Chart{ID: "c", Title: "T", X: Axis{Label: "x"}, Y: c.y,
				Series: []Series{{Name: "a", Kind: Scatter, Points: []Point{{X: 1, Y: c.top * 0.8}, {X: 2, Y: c.top}}}}}
			els := parse(t, ch.HTML())
			var domain float64 = -1
			for _, e := range withClass(els, "domain") {
				if e.attrs["x1"] == e.attrs["x2"] { // the Y axis's line
					domain, _ = strconv.ParseFloat(e.attrs["x1"], 64)
				}
			}
			if domain != c.want {
				t.Errorf("the Y axis at x=%v, want %v", domain, c.want)
			}
		})
	}
}

// A line breaks where a value is absent (NaN), and the absent point is
// neither drawn nor given a value in the table; bars keep both edges; the
// rules, the range and the mark are drawn and listed.
func TestSeriesAndTable(t *testing.T) {
	nan := math.NaN()
	ch := &Chart{ID: "q", Title: "Queue <over> the run & more", Desc: "d",
		X: Axis{Label: "seconds"}, Y: Axis{Label: "requests", Zero: true},
		Series: []Series{
			{Name: "waiting", Kind: Line, Points: []Point{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: nan}, {X: 3, Y: 4}}},
			{Name: "hist", Kind: Bars, Points: []Point{{X: 0, X2: 1, Y: 3}, {X: 1, X2: 2, Y: 0}}},
		},
		HRules: []Rule{{At: 3.5, Label: "SLO"}},
		VRules: []Rule{{At: 2.5, Label: "p99"}},
		Bands:  []Band{{From: 2, To: 3, Label: "drain"}},
		Marks:  []Mark{{X: 1, Y: 2, Label: "knee"}},
	}
	s := ch.HTML()
	els := parse(t, s)
	if !strings.Contains(s, "Queue &lt;over&gt; the run &amp; more") {
		t.Error("the title is not escaped")
	}
	var paths []string
	for _, e := range withClass(els, "line") {
		if e.attrs["d"] != "M1 6L21 6" { // the legend's swatch
			paths = append(paths, e.attrs["d"])
		}
	}
	if len(paths) != 1 || strings.Count(paths[0], "M") != 2 || strings.Count(paths[0], "L") != 1 {
		t.Errorf("line paths %q: want two pieces, the NaN a gap", paths)
	}
	if n := len(withClass(els, "point")); n != 3 {
		t.Errorf("%d points drawn, want 3", n)
	}
	var bars []string
	for _, e := range withClass(els, "bar") {
		if e.attrs["data-x"] != "" {
			bars = append(bars, e.attrs["data-x"]+"-"+e.attrs["data-x2"]+":"+e.attrs["data-y"])
		}
	}
	if !slices.Equal(bars, []string{"0-1:3", "1-2:0"}) {
		t.Errorf("bars %v", bars)
	}
	for _, class := range []string{"rule", "band", "mark", "legend", "domain", "axis-label"} {
		if len(withClass(els, class)) == 0 {
			t.Errorf("no %s drawn", class)
		}
	}
	// The table: one row a point, the absent value empty, then the
	// rule, the range and the mark.
	var rows [][]string
	var row []string
	for _, e := range els {
		switch {
		case e.name == "tr":
			if row != nil {
				rows = append(rows, row)
			}
			row = []string{}
		case row != nil && (e.name == "td" || e.name == "th"):
			row = append(row, e.text+"="+e.attrs["data-value"])
		}
	}
	rows = append(rows, row)
	want := [][]string{
		{"series=", "seconds=", "to=", "requests="},
		{"waiting=", "0=0", "=", "1=1"}, {"waiting=", "1=1", "=", "2=2"}, {"waiting=", "2=2", "=", "—="}, {"waiting=", "3=3", "=", "4=4"},
		{"hist=", "0=0", "1=1", "3=3"}, {"hist=", "1=1", "2=2", "0=0"},
		{"SLO=", "=", "=", "3.5=3.5"}, {"p99=", "2.5=2.5", "=", "="}, {"drain=", "2 to 3=2", "=", "="}, {"knee=", "1=1", "=", "2=2"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("table\n%q\nwant\n%q", rows, want)
	}
}

// With nothing to draw the figure says why, and draws no axes.
func TestEmpty(t *testing.T) {
	ch := &Chart{ID: "e", Title: "KV", Empty: "the server publishes no KV usage", X: Axis{Log: true},
		Series: []Series{{Points: []Point{{X: 0, Y: 1}, {X: 1, Y: math.NaN()}}}}}
	s := ch.HTML()
	parse(t, s)
	if !strings.Contains(s, "the server publishes no KV usage") || strings.Contains(s, "<svg") {
		t.Errorf("%s", s)
	}
}
