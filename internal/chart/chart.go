// Package chart draws the HTML report's charts as inline SVG: lines,
// points and bars (a histogram) over a linear or log axis of ticks and
// labels, horizontal and vertical rules (an SLO, a percentile), shaded
// ranges (the drain) and marked points (the knee).
//
// A [Chart] is written as one figure ([Chart.HTML]): its title, the SVG
// (role img, named by the title, described by Desc), a caption, and the
// data it draws as a table in a details element, so that every number is
// in the page's text and not only in a picture. The SVG carries no colour
// of its own: every element has a class (the series s0…s5, axis, grid,
// rule, band, mark) that the page's stylesheet colours, so one chart reads
// in a light scheme, a dark one and on paper. Series are told apart by
// their marker's shape and their line's dash as well as by colour.
//
// Every drawn point keeps its values in data-x and data-y attributes, and
// every tick its value in data-value, written in full (the shortest form
// that reads back as the same float64), so a test in a browser can hold
// the page to the JSON it was drawn from. A value that is NaN is absent:
// a line breaks there, and no point is drawn.
package chart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is how a series is drawn.
type Kind int

const (
	// Line joins the points in order, with a marker at each; a NaN Y
	// breaks the line.
	Line Kind = iota
	// Scatter draws a marker at each point.
	Scatter
	// Bars draws a bar from X to X2, Y high, from the axis: a histogram.
	Bars
)

// Point is one datum: X2 is a bar's right edge. FromX, where set, is the
// JSON path of this point's X in place of its series' (a sweep's closed
// loop placed on the rate axis by the rate it completed).
type Point struct {
	X, Y, X2 float64
	FromX    string
	// Index is the point's {i} in its series' paths where the series is
	// Indexed (points drawn in another order than the JSON's: a sweep's
	// steps by load); else its place in Points is.
	Index int
}

// Series is one set of points, named in the legend and the table.
type Series struct {
	Name   string
	Kind   Kind
	Points []Point
	// From names where each point's values are in the JSON of the report
	// the page is drawn from: a dotted path per value in which {i} is the
	// point's index and {i+1} the next ("samples.{i}.seconds"). The
	// series and its table rows carry them (data-from-x, -x2, -y) with
	// each point's index (data-i), so that a test can hold every drawn
	// value to the JSON's.
	From From
	// Ramp places the series at Ramp of RampOf series coloured from the
	// first series' colour to the second's (steps of growing load), where
	// RampOf is above 1; else it takes its own colour.
	Ramp, RampOf int
	// Indexed says each point's Index is its {i}.
	Indexed bool
}

// index is point j's {i}.
func (s Series) index(j int) int {
	if s.Indexed {
		return s.Points[j].Index
	}
	return j
}

// From are the JSON paths of a series' values. Derive says how Y is
// made of the values at Y's path where it is not one of them:
// "cumulative-share", the values up to the point's over all of them (a
// distribution's share at or below each bound).
type From struct{ X, X2, Y, Derive string }

// Axis is one axis: its label (with the unit), its scale, and how its
// values are written.
type Axis struct {
	Label string
	// Log spaces the axis by decades; its values must be above 0 (others
	// are not drawn).
	Log bool
	// Zero takes a linear axis down (or up) to 0.
	Zero bool
	// Min and Max, where Max is above Min, bound the axis whatever the
	// data; else (the zero Axis) the data does.
	Min, Max float64
	// Format writes a value (ticks, the table); nil writes three
	// significant figures.
	Format func(float64) string
}

// Rule is a line across the chart at a value: horizontal at a Y (an
// SLO), or vertical at an X (a percentile).
type Rule struct {
	At    float64
	Label string
	// Target says the rule is a limit to stay within (an SLO), drawn
	// as a warning; else it is a reference (a percentile).
	Target bool
	// From is the JSON path of At, as a series' (data-from).
	From string
}

// Band shades the X range From to To (the drain).
type Band struct {
	From, To float64
	Label    string
}

// Mark rings one point and labels it (the knee).
type Mark struct {
	X, Y  float64
	Label string
	From  From
}

// Chart is one chart.
type Chart struct {
	// ID is the figure's id in the page; its elements' ids start with it.
	ID    string
	Title string
	// Desc says what the chart shows in a sentence: the SVG's
	// description and the figure's caption.
	Desc   string
	X, Y   Axis
	Series []Series
	HRules []Rule
	VRules []Rule
	Bands  []Band
	Marks  []Mark
	// Empty says why there is nothing to draw, where no series has a
	// point; the figure says it in place of a chart.
	Empty string
}

// The drawing's size in SVG units (it scales to its box) and margins.
const (
	width, height = 520, 320
	left, right   = 72, 16 // left: at least; wider where the Y ticks' labels need it
	top, bottom   = 16, 48
)

// num writes v in full: the shortest form that reads back as v.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// px writes a coordinate to a tenth of a unit.
func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (a Axis) format(v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// fixed says whether Min and Max bound the axis.
func (a Axis) fixed() bool { return a.usable(a.Min) && a.usable(a.Max) && a.Max > a.Min }

// usable says whether v can be placed on the axis.
func (a Axis) usable(v float64) bool { return finite(v) && (!a.Log || v > 0) }

// scale maps values of an axis onto pixels.
type scale struct {
	axis       Axis
	lo, hi     float64 // the axis's bounds (log10 of them on a log axis)
	from, to   float64 // pixels
	ticks      []float64
	minorTicks []float64
}

func (s scale) at(v float64) float64 {
	if s.axis.Log {
		v = math.Log10(v)
	}
	if s.hi == s.lo {
		return (s.from + s.to) / 2
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from)
}

// newScale fits an axis to the values it must show.
func newScale(a Axis, values []float64, from, to float64) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if a.usable(v) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	fixed := a.fixed()
	if fixed {
		lo, hi = a.Min, a.Max
	}
	s := scale{axis: a, from: from, to: to}
	if a.Log {
		if math.IsInf(lo, 0) {
			lo, hi = 1, 10
		}
		s.lo, s.hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if s.hi == s.lo {
			s.hi++
		}
		s.ticks, s.minorTicks = logTicks(s.lo, s.hi)
		return s
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	if a.Zero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if lo == hi {
		if lo == 0 {
			hi = 1
		} else {
			d := math.Abs(lo) / 2
			lo, hi = lo-d, hi+d
		}
	}
	step := niceStep((hi - lo) / 5)
	if !fixed {
		lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	}
	s.lo, s.hi = lo, hi
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		s.ticks = append(s.ticks, roundTo(k*step, step))
	}
	return s
}

// niceStep is the least of 1, 2 or 5 times a power of ten at or above raw.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// roundTo drops the float noise of k×step (0.30000000000000004 → 0.3).
func roundTo(v, step float64) float64 {
	digits := max(0, -int(math.Floor(math.Log10(step)))+1)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	if r == 0 {
		return 0 // never -0
	}
	return r
}

// logTicks are the decades from 10^lo to 10^hi, and between them 2 and 5
// times each where few decades are shown (each labelled), or none.
func logTicks(lo, hi float64) (major, minor []float64) {
	for d := lo; d <= hi; d++ {
		major = append(major, pow10(int(d)))
		if d < hi {
			for _, m := range []float64{2, 5} {
				if hi-lo <= 2 {
					major = append(major, m*pow10(int(d)))
				} else {
					minor = append(minor, m*pow10(int(d)))
				}
			}
		}
	}
	return major, minor
}

// pow10 is 10^e as the float nearest that decimal.
func pow10(e int) float64 {
	v, _ := strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
	return v
}

// HTML writes the chart as a figure: the SVG, a caption and the data.
func (c *Chart) HTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart" id="%s">`, esc(c.ID))
	fmt.Fprintf(&b, `<h3 id="%s-title">%s</h3>`, esc(c.ID), esc(c.Title))
	if !c.hasPoints() {
		why := c.Empty
		if why == "" {
			why = "nothing to draw"
		}
		fmt.Fprintf(&b, `<p class="empty">%s</p></figure>`, esc(why))
		return b.String()
	}
	c.legend(&b)
	c.svg(&b)
	if c.Desc != "" {
		fmt.Fprintf(&b, `<figcaption>%s</figcaption>`, esc(c.Desc))
	}
	c.table(&b)
	b.WriteString(`</figure>`)
	return b.String()
}

func (c *Chart) hasPoints() bool {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if c.X.usable(p.X) && c.Y.usable(p.Y) {
				return true
			}
		}
	}
	return false
}

// extents are every value each axis must show.
func (c *Chart) extents() (xs, ys []float64) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !c.X.usable(p.X) || !c.Y.usable(p.Y) {
				continue
			}
			xs, ys = append(xs, p.X), append(ys, p.Y)
			if s.Kind == Bars {
				xs = append(xs, p.X2)
			}
		}
	}
	for _, r := range c.HRules {
		ys = append(ys, r.At)
	}
	for _, r := range c.VRules {
		xs = append(xs, r.At)
	}
	for _, m := range c.Marks {
		xs, ys = append(xs, m.X), append(ys, m.Y)
	}
	return xs, ys
}

func (c *Chart) svg(b *strings.Builder) {
	xs, ys := c.extents()
	hasBars := false
	for _, s := range c.Series {
		hasBars = hasBars || s.Kind == Bars
	}
	ya := c.Y
	if hasBars && !ya.Log {
		ya.Zero = true
	}
	y := newScale(ya, ys, height-bottom, top)
	l := c.leftOf(y)
	x := newScale(c.X, xs, float64(l), width-right)
	id := esc(c.ID)
	fmt.Fprintf(b, `<svg class="plot" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" data-chart="%s">`, width, height, id, id, id)
	fmt.Fprintf(b, `<desc id="%s-desc">%s</desc>`, id, esc(c.Desc))
	// Shaded ranges under everything.
	for _, band := range c.Bands {
		if !c.X.usable(band.From) || !c.X.usable(band.To) {
			continue
		}
		x0, x1 := clamp(x.at(band.From), float64(l), width-right), clamp(x.at(band.To), float64(l), width-right)
		fmt.Fprintf(b, `<g class="band"><rect x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`, px(x0), top, px(max(x1-x0, 0)), height-top-bottom, esc(band.Label))
		fmt.Fprintf(b, `<text x="%s" y="%d">%s</text></g>`, px(x0+4), top+12, esc(band.Label))
	}
	c.axes(b, x, y)
	// The series within the plot (and a marker's width around it): an
	// axis bounded short of the data cuts them at its ends.
	fmt.Fprintf(b, `<clipPath id="%s-plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath><g clip-path="url(#%s-plot)">`,
		id, l-6, top-6, width-l-right+12, height-top-bottom+12, id)
	for i, s := range c.Series {
		c.series(b, i, s, x, y)
	}
	b.WriteString(`</g>`)
	for _, r := range c.HRules {
		if !c.Y.usable(r.At) {
			continue
		}
		yy := y.at(r.At)
		fmt.Fprintf(b, `<g class="%s" data-value="%s"%s><line x1="%d" x2="%d" y1="%s" y2="%s"/><text x="%d" y="%s" text-anchor="end">%s</text></g>`,
			ruleClass("h", r), num(r.At), fromAttr(r.From), l, width-right, px(yy), px(yy), width-right-4, px(yy-5), esc(r.Label))
	}
	for _, r := range c.VRules {
		if !c.X.usable(r.At) {
			continue
		}
		xx := x.at(r.At)
		fmt.Fprintf(b, `<g class="%s" data-value="%s"%s><line x1="%s" x2="%s" y1="%d" y2="%d"/><text x="%s" y="%d" text-anchor="end" transform="rotate(-90 %s %d)">%s</text></g>`,
			ruleClass("v", r), num(r.At), fromAttr(r.From), px(xx), px(xx), top, height-bottom, px(xx-5), top+4, px(xx-5), top+4, esc(r.Label))
	}
	for _, m := range c.Marks {
		if !c.X.usable(m.X) || !c.Y.usable(m.Y) {
			continue
		}
		mx, my := x.at(m.X), y.at(m.Y)
		anchor, dx := "start", 10.0
		if mx > width*0.7 {
			anchor, dx = "end", -10
		}
		fmt.Fprintf(b, `<g class="mark" data-x="%s" data-y="%s"%s><circle cx="%s" cy="%s" r="9"/><text x="%s" y="%s" text-anchor="%s">%s</text></g>`,
			num(m.X), num(m.Y), m.From.attrs(), px(mx), px(my), px(mx+dx), px(my-10), anchor, esc(m.Label))
	}
	b.WriteString(`</svg>`)
}

// attrs writes the paths as the series' attributes.
func (f From) attrs() string {
	var b strings.Builder
	for _, a := range []struct{ name, path string }{{"from-x", f.X}, {"from-x2", f.X2}, {"from-y", f.Y}, {"derive", f.Derive}} {
		if a.path != "" {
			fmt.Fprintf(&b, ` data-%s="%s"`, a.name, esc(a.path))
		}
	}
	return b.String()
}

// pointFrom writes a point's own X path, where it has one.
func pointFrom(p Point) string {
	if p.FromX == "" {
		return ""
	}
	return ` data-point-from-x="` + esc(p.FromX) + `"`
}

// ramp writes a ramped series' colour: a mix of the first two series'
// colours by its place, so that it follows the page's scheme.
func (s Series) ramp() string {
	if s.RampOf < 2 {
		return ""
	}
	share := 100 * float64(s.Ramp) / float64(s.RampOf-1)
	return fmt.Sprintf(` style="--c: color-mix(in srgb, var(--s1) %s%%, var(--s0))"`, px(share))
}

// marker is the series' marker shape: its own, or the first for a ramp
// (its colour and the legend's order tell the series apart).
func (s Series) marker(i int) int {
	if s.RampOf >= 2 {
		return 0
	}
	return i
}

func fromAttr(path string) string {
	if path == "" {
		return ""
	}
	return ` data-from="` + esc(path) + `"`
}

func ruleClass(dir string, r Rule) string {
	if r.Target {
		return "rule target " + dir
	}
	return "rule " + dir
}

func clamp(v, lo, hi float64) float64 { return max(lo, min(v, hi)) }

// leftOf is the plot's left edge: room for the Y ticks' longest label,
// right-aligned 8 units short of the axis, and the axis's own label, drawn
// upright at x 14 (to about 21), 4 units apart; each character of the
// 12-unit font taken as 7.2 units wide, a digit's width or more.
func (c *Chart) leftOf(y scale) int {
	n := 0
	for _, t := range y.ticks {
		n = max(n, utf8.RuneCountInString(c.Y.format(t)))
	}
	return max(left, int(math.Ceil(21+4+7.2*float64(n)+8)))
}

func (c *Chart) axes(b *strings.Builder, x, y scale) {
	l := int(x.from)
	// Grid and ticks of the X axis.
	b.WriteString(`<g class="axis x">`)
	for _, t := range x.minorTicks {
		xx := x.at(t)
		fmt.Fprintf(b, `<line class="grid minor" x1="%s" x2="%s" y1="%d" y2="%d"/>`, px(xx), px(xx), top, height-bottom)
	}
	for _, t := range x.ticks {
		xx := x.at(t)
		fmt.Fprintf(b, `<g class="tick" data-value="%s"><line class="grid" x1="%s" x2="%s" y1="%d" y2="%d"/><line x1="%s" x2="%s" y1="%d" y2="%d"/><text x="%s" y="%d" text-anchor="middle">%s</text></g>`,
			num(t), px(xx), px(xx), top, height-bottom, px(xx), px(xx), height-bottom, height-bottom+5, px(xx), height-bottom+18, esc(c.X.format(t)))
	}
	fmt.Fprintf(b, `<line class="domain" x1="%d" x2="%d" y1="%d" y2="%d"/>`, l, width-right, height-bottom, height-bottom)
	fmt.Fprintf(b, `<text class="axis-label" x="%d" y="%d" text-anchor="middle">%s</text></g>`, (l+width-right)/2, height-10, esc(c.X.Label))
	// And of the Y axis.
	b.WriteString(`<g class="axis y">`)
	for _, t := range y.minorTicks {
		yy := y.at(t)
		fmt.Fprintf(b, `<line class="grid minor" x1="%d" x2="%d" y1="%s" y2="%s"/>`, l, width-right, px(yy), px(yy))
	}
	for _, t := range y.ticks {
		yy := y.at(t)
		fmt.Fprintf(b, `<g class="tick" data-value="%s"><line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/><line x1="%d" x2="%d" y1="%s" y2="%s"/><text x="%d" y="%s" text-anchor="end">%s</text></g>`,
			num(t), l, width-right, px(yy), px(yy), l-5, l, px(yy), px(yy), l-8, px(yy+4), esc(c.Y.format(t)))
	}
	fmt.Fprintf(b, `<line class="domain" x1="%d" x2="%d" y1="%d" y2="%d"/>`, l, l, top, height-bottom)
	cy := (top + height - bottom) / 2
	fmt.Fprintf(b, `<text class="axis-label" x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text></g>`, cy, cy, esc(c.Y.Label))
}

// marker draws series i's marker shape at (x, y): a circle, a square, a
// triangle, a diamond, a cross and a triangle pointing down, in turn.
func marker(i int, x, y float64) string {
	const r = 3.5
	switch i % 6 {
	case 1:
		return fmt.Sprintf(`<rect x="%s" y="%s" width="%s" height="%s"/>`, px(x-r), px(y-r), px(2*r), px(2*r))
	case 2:
		return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sZ"`, px(x), px(y-r-1), px(x+r+1), px(y+r), px(x-r-1), px(y+r)) + "/>"
	case 3:
		return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sL%s %sZ"`, px(x), px(y-r-1), px(x+r+1), px(y), px(x), px(y+r+1), px(x-r-1), px(y)) + "/>"
	case 4:
		return fmt.Sprintf(`<path d="M%s %sL%s %sM%s %sL%s %s"`, px(x-r), px(y-r), px(x+r), px(y+r), px(x-r), px(y+r), px(x+r), px(y-r)) + "/>"
	case 5:
		return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sZ"`, px(x), px(y+r+1), px(x+r+1), px(y-r), px(x-r-1), px(y-r)) + "/>"
	}
	return fmt.Sprintf(`<circle cx="%s" cy="%s" r="%s"/>`, px(x), px(y), px(r))
}

func (c *Chart) series(b *strings.Builder, i int, s Series, x, y scale) {
	fmt.Fprintf(b, `<g class="series s%d" data-series="%s" data-count="%d"%s%s>`, i%6, esc(s.Name), len(s.Points), s.From.attrs(), s.ramp())
	ok := func(p Point) bool { return c.X.usable(p.X) && c.Y.usable(p.Y) }
	tip := func(p Point) string {
		t := c.X.format(p.X)
		if s.Kind == Bars {
			t += " to " + c.X.format(p.X2)
		}
		t += ": " + c.Y.format(p.Y)
		if s.Name != "" {
			t = s.Name + ", " + t
		}
		return esc(t)
	}
	switch s.Kind {
	case Bars:
		base := y.at(max(y.lo, 0))
		if c.Y.Log {
			base = height - bottom
		}
		for j, p := range s.Points {
			if !ok(p) || !c.X.usable(p.X2) {
				continue
			}
			x0, x1, yy := x.at(p.X), x.at(p.X2), y.at(p.Y)
			fmt.Fprintf(b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s" data-i="%d" data-x="%s" data-x2="%s" data-y="%s"><title>%s</title></rect>`,
				px(x0+0.5), px(min(yy, base)), px(max(x1-x0-1, 0.5)), px(math.Abs(base-yy)), s.index(j), num(p.X), num(p.X2), num(p.Y), tip(p))
		}
	default:
		if s.Kind == Line {
			var d strings.Builder
			pen := false
			for _, p := range s.Points {
				if !ok(p) {
					pen = false // absent: the line breaks
					continue
				}
				cmd := "L"
				if !pen {
					cmd = "M"
				}
				d.WriteString(cmd + px(x.at(p.X)) + " " + px(y.at(p.Y)))
				pen = true
			}
			fmt.Fprintf(b, `<path class="line" d="%s"/>`, d.String())
		}
		for j, p := range s.Points {
			if !ok(p) {
				continue
			}
			fmt.Fprintf(b, `<g class="point" data-i="%d" data-x="%s" data-y="%s"%s>%s<title>%s</title></g>`, s.index(j), num(p.X), num(p.Y), pointFrom(p), marker(s.marker(i), x.at(p.X), y.at(p.Y)), tip(p))
		}
	}
	b.WriteString(`</g>`)
}

// legend names the series above the chart, each with its marker and
// line, as a list the page wraps to its width.
func (c *Chart) legend(b *strings.Builder) {
	named := 0
	for _, s := range c.Series {
		if s.Name != "" {
			named++
		}
	}
	if named == 0 {
		return
	}
	b.WriteString(`<ul class="legend">`)
	for i, s := range c.Series {
		if s.Name == "" {
			continue
		}
		fmt.Fprintf(b, `<li class="series s%d"%s><svg viewBox="0 0 22 12" width="22" height="12" aria-hidden="true">`, i%6, s.ramp())
		if s.Kind == Bars {
			b.WriteString(`<rect class="bar" x="5" y="1" width="12" height="10"/>`)
		} else {
			if s.Kind == Line {
				b.WriteString(`<path class="line" d="M1 6L21 6"/>`)
			}
			b.WriteString(marker(s.marker(i), 11, 6))
		}
		fmt.Fprintf(b, `</svg>%s</li>`, esc(s.Name))
	}
	b.WriteString(`</ul>`)
}

// table writes the data drawn: every series' points, then the rules,
// ranges and marks, each value written by its axis and kept in full in
// data-value.
func (c *Chart) table(b *strings.Builder) {
	hasBars := false
	for _, s := range c.Series {
		hasBars = hasBars || s.Kind == Bars
	}
	fmt.Fprintf(b, `<details class="data"><summary>The data: %s</summary><table data-chart="%s"><thead><tr><th scope="col">series</th><th scope="col">%s</th>`, esc(c.Title), esc(c.ID), esc(c.X.Label))
	if hasBars {
		b.WriteString(`<th scope="col">to</th>`)
	}
	fmt.Fprintf(b, `<th scope="col">%s</th></tr></thead><tbody>`, esc(c.Y.Label))
	cell := func(a Axis, v float64) string {
		if !finite(v) {
			return `<td data-value="">—</td>`
		}
		return fmt.Sprintf(`<td data-value="%s">%s</td>`, num(v), esc(a.format(v)))
	}
	for _, s := range c.Series {
		for j, p := range s.Points {
			fmt.Fprintf(b, `<tr class="datum" data-series="%s" data-i="%d"%s%s><th scope="row">%s</th>%s`, esc(s.Name), s.index(j), s.From.attrs(), pointFrom(p), esc(s.Name), cell(c.X, p.X))
			if hasBars {
				if s.Kind == Bars {
					b.WriteString(cell(c.X, p.X2))
				} else {
					b.WriteString(`<td></td>`)
				}
			}
			b.WriteString(cell(c.Y, p.Y) + `</tr>`)
		}
	}
	extra := func(label string, xv, yv float64, haveX, haveY bool) {
		fmt.Fprintf(b, `<tr class="annotation"><th scope="row">%s</th>`, esc(label))
		if haveX {
			b.WriteString(cell(c.X, xv))
		} else {
			b.WriteString(`<td></td>`)
		}
		if hasBars {
			b.WriteString(`<td></td>`)
		}
		if haveY {
			b.WriteString(cell(c.Y, yv))
		} else {
			b.WriteString(`<td></td>`)
		}
		b.WriteString(`</tr>`)
	}
	for _, r := range c.HRules {
		extra(r.Label, 0, r.At, false, true)
	}
	for _, r := range c.VRules {
		extra(r.Label, r.At, 0, true, false)
	}
	for _, band := range c.Bands {
		fmt.Fprintf(b, `<tr class="annotation"><th scope="row">%s</th><td data-value="%s">%s to %s</td>`, esc(band.Label), num(band.From), esc(c.X.format(band.From)), esc(c.X.format(band.To)))
		if hasBars {
			b.WriteString(`<td></td>`)
		}
		b.WriteString(`<td></td></tr>`)
	}
	for _, m := range c.Marks {
		extra(m.Label, m.X, m.Y, true, true)
	}
	b.WriteString(`</tbody></table></details>`)
}
