package render

import (
	"math"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/units"
)

// Trend and heat strip layout, in cells.
const (
	// MaxTrendWidth is the most intervals a trend or heat strip draws:
	// the most a watch session keeps (rates.TrendLength).
	MaxTrendWidth = 60
	// minTrend is the fewest cells a trend is drawn in: fewer say nothing.
	minTrend = 8
	// maxRange is the widest a trend's range is written.
	maxRange = 14
	// maxHeatRows is the most rows a heat strip has: more buckets than
	// that are merged, neighbours together.
	maxHeatRows = 8
)

// trendColumn is where a table's or a section's trends are drawn: w cells
// of sparkline, then a space and the range in rangeW cells. A zero w draws
// none.
type trendColumn struct {
	w, rangeW int
	g         spark.Glyphs
	step      float64 // seconds per cell
}

func (tc trendColumn) width() int { return tc.w + 1 + tc.rangeW }

// header says what a cell is: "trend, every 2s".
func (tc trendColumn) header() string {
	if !(tc.step > 0) {
		return "trend"
	}
	return "trend, every " + units.Duration(time.Duration(tc.step*float64(time.Second)))
}

// draw appends t's sparkline, right-aligned (the newest interval at the
// column's right edge, a young session's blank before its first), a
// space and its range, padded to the column's width; blanks for nil.
func (tc trendColumn) draw(l line, t *report.Trend) line {
	start := l.width()
	if t != nil {
		sl := DrawTrend(t, tc.g, tc.w)
		l = l.pad(start + tc.w - len(sl.Cells))
		for _, run := range spark.Runs(sl, func(c spark.Cell) report.Severity {
			if c.Gap() || c.Index >= len(t.Colours) {
				return report.None
			}
			return t.Colours[c.Index]
		}) {
			l = l.add(run.Text, severityStyle(run.Class))
		}
		l = l.pad(start+tc.w).add(" ", plain).add(fit(TrendRange(sl, t), tc.rangeW), plain)
	}
	return l.pad(start + tc.width())
}

// DrawTrend draws a trend w cells wide: from 0, or from its floor where it
// says so (FromFloor).
func DrawTrend(t *report.Trend, g spark.Glyphs, w int) spark.Line {
	vs := make([]float64, len(t.Values))
	for i, v := range t.Values {
		vs[i] = float64(v)
	}
	axis := spark.FromZero
	if t.FromFloor {
		axis = spark.FromFloor
	}
	return spark.Draw(vs, spark.Options{Axis: axis, Glyphs: g, Width: w})
}

// TrendRange says a trend's scale as its row writes values: "0–14.1K"
// from 0 (a zero written "0" whatever the unit), "58 ms–194 ms" from a
// floor, one value where the line is flat; then what the values are of,
// where the row's label does not say it ("0–4 queued").
func TrendRange(sl spark.Line, t *report.Trend) string {
	if math.IsNaN(sl.Lo) {
		return ""
	}
	say := t.Say
	if say == nil {
		say = units.Count
	}
	s := sl.Scale(say)
	if t.Of != "" {
		s += " " + t.Of
	}
	return s
}

// rangeWidth is the widest range of the trends drawn in w cells, at most
// maxRange.
func rangeWidth(trends []*report.Trend, g spark.Glyphs, w int) int {
	n := 0
	for _, t := range trends {
		n = max(n, cells(TrendRange(DrawTrend(t, g, w), t)))
	}
	return min(n, maxRange)
}

// tableTrendColumn lays out the trends of t after its first column, in
// room cells beside the labels: every window shown where the trends keep
// at least minTrend cells, else windows left out from the right for them
// (shown, the columns drawn, is lowered). None where no row has a trend.
func tableTrendColumn(t *report.Table, g spark.Glyphs, room, cellW int, shown *int, ncols int) trendColumn {
	var trends []*report.Trend
	for _, r := range t.Rows {
		if r.Trend != nil {
			trends = append(trends, r.Trend)
		}
	}
	if len(trends) == 0 || ncols == 0 {
		return trendColumn{}
	}
	tc := trendColumn{g: g, step: float64(trends[0].StepSeconds), rangeW: rangeWidth(trends, g, MaxTrendWidth)}
	fixed := (gap + cellW) + gap + 1 + tc.rangeW
	windows := ncols - 1
	for k := windows; k >= 0; k-- {
		used := fixed + k*(gap+cellW)
		if k < windows {
			used += gap + 1 // the … that says columns were left out
		}
		if w := room - used; w >= minTrend {
			tc.w = min(w, MaxTrendWidth)
			*shown = 1 + k
			return tc
		}
	}
	return trendColumn{}
}

// rowTrendColumn lays out the trends of a section's rows at the notes
// column, leaving their notes room after them where the width allows.
func rowTrendColumn(rows []row, lay rowLayout, g spark.Glyphs) trendColumn {
	var trends []*report.Trend
	noteRoom := 0
	for _, r := range rows {
		if r.trend != nil {
			trends = append(trends, r.trend)
			noteRoom = max(noteRoom, min(cells(r.note), 2*minNoteWidth))
		}
	}
	if len(trends) == 0 {
		return trendColumn{}
	}
	tc := trendColumn{g: g, step: float64(trends[0].StepSeconds), rangeW: rangeWidth(trends, g, MaxTrendWidth)}
	room := lay.width - (lay.valueStart + lay.valueW + gap) - 1 - tc.rangeW
	w := room - gap - noteRoom
	if w < minTrend {
		w = min(room, minTrend)
	}
	if w < minTrend {
		return trendColumn{}
	}
	tc.w = min(w, MaxTrendWidth)
	return tc
}

// heatRow is one row of a heat strip: buckets lo..hi of the layout merged.
type heatRow struct {
	label  string
	lo, hi int
}

// renderHeat draws a histogram over intervals: a title with the key, one
// row per bucket (merged to at most maxHeatRows, the highest latency at
// the top) whose cells shade the share of each interval's observations in
// it, and under them an axis marking each interval that has a reading (a
// blank there is a failed scrape or a restart, not an idle interval).
func renderHeat(h *report.Heat, width int, g spark.Glyphs) []line {
	avail := width - indent
	title := line{}.add(strings.Repeat(" ", indent), plain).add(h.Title, bold)
	key := ", per " + units.Duration(time.Duration(float64(h.StepSeconds)*float64(time.Second))) + ": " +
		g.Shade(1) + " ≤25% " + g.Shade(2) + " ≤50% " + g.Shade(3) + " ≤75% " + g.Shade(4) + " more of its requests"
	out := []line{title.add(fit(key, width-title.width()), plain)}
	// The labels are at most 9 cells ("≤12.5 min"); the strip is as
	// wide as the trends.
	w := min(MaxTrendWidth, avail-9-gap)
	if w < minTrend {
		return out
	}
	counts := h.Counts
	if len(counts) > w {
		counts = counts[len(counts)-w:]
	}
	rows := heatRows(h.Bounds, counts)
	labelW := 0
	for _, r := range rows {
		labelW = max(labelW, cells(r.label))
	}
	if len(rows) == 0 {
		return append(out, line{}.add(strings.Repeat(" ", indent), plain).add(fit("no observations in these intervals", avail), dim))
	}
	lead := w - len(counts) // a young session's blank columns
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		l := line{}.add(strings.Repeat(" ", indent), plain).addRight(r.label, labelW, plain).add(strings.Repeat(" ", gap+lead), plain)
		var b strings.Builder
		for _, c := range counts {
			b.WriteString(g.Shade(spark.ShadeLevel(share(c, r.lo, r.hi))))
		}
		out = append(out, l.add(b.String(), plain))
	}
	axis, tick := "─", "-"
	if g == spark.ASCII {
		axis = tick
	}
	var b strings.Builder
	for _, c := range counts {
		if c == nil {
			b.WriteString(spark.Gap)
		} else {
			b.WriteString(axis)
		}
	}
	return append(out, line{}.pad(indent+labelW+gap+lead).add(b.String(), dim))
}

// share is the part of an interval's observations in buckets lo..hi; NaN
// for an interval with none, or none known.
func share(c []report.Number, lo, hi int) float64 {
	var in, total float64
	for i, v := range c {
		total += float64(v)
		if i >= lo && i <= hi {
			in += float64(v)
		}
	}
	if total <= 0 {
		return math.NaN()
	}
	return in / total
}

// heatRows are the buckets from the lowest to the highest that holds an
// observation in the intervals drawn, merged into at most maxHeatRows
// groups of neighbours, each labelled by its upper bound (the top, open
// one by the bound under it).
func heatRows(bounds []float64, counts [][]report.Number) []heatRow {
	lo, hi := -1, -1
	for _, c := range counts {
		for i, v := range c {
			if v > 0 {
				if lo < 0 || i < lo {
					lo = i
				}
				hi = max(hi, i)
			}
		}
	}
	if lo < 0 || hi >= len(bounds) {
		return nil
	}
	n := hi - lo + 1
	per := (n + maxHeatRows - 1) / maxHeatRows
	var out []heatRow
	for a := lo; a <= hi; a += per {
		b := min(a+per-1, hi)
		label := "≤" + units.Seconds(bounds[b])
		if math.IsInf(bounds[b], 1) {
			label = ">" + units.Seconds(0)
			if a > 0 {
				label = ">" + units.Seconds(bounds[a-1])
			}
		}
		out = append(out, heatRow{label: label, lo: a, hi: b})
	}
	return out
}
