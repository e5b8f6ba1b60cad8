package render

import (
	"math"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// partials are the left eighth blocks, index = eighths filled.
var partials = [8]string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bar draws v (0..1) as w cells: full blocks, one partial block, then the
// ░ track (in ASCII, # cells over a . track). NaN draws empty. A value
// above 0 shows at least one eighth (one cell in ASCII) and a value below
// 1 never fills the bar, so neither reads as its extreme.
func bar(v float64, w int, g spark.Glyphs) (fill, track string) {
	switch {
	case math.IsNaN(v) || v < 0:
		v = 0
	case v > 1:
		v = 1
	}
	if g == spark.ASCII {
		return asciiBar(v, w)
	}
	total := w * 8
	e := int(math.Round(v * float64(total)))
	if e == 0 && v > 0 {
		e = 1
	}
	if e == total && v < 1 {
		e = total - 1
	}
	full, part := e/8, e%8
	fill = strings.Repeat("█", full) + partials[part]
	used := full
	if part > 0 {
		used++
	}
	return fill, strings.Repeat("░", w-used)
}

// asciiBar is bar in whole cells of #.
func asciiBar(v float64, w int) (fill, track string) {
	n := int(math.Round(v * float64(w)))
	if n == 0 && v > 0 {
		n = 1
	}
	if n == w && v < 1 {
		n = w - 1
	}
	return strings.Repeat("#", n), strings.Repeat(".", w-n)
}

// row is a report row with its strings sanitized.
type row struct {
	label, value, note string
	bar                *float64
	sev                report.Severity
	trend              *report.Trend
}

// renderSection draws a section in width cells: its title, its rows and
// its table. Every line is at most width cells.
func renderSection(sec report.Section, width int, g spark.Glyphs) []line {
	var out []line
	if t := termsafe.Text(sec.Title); t != "" {
		out = append(out, line{}.add(fit(t, width), bold))
	}
	out = append(out, renderRows(sec.Rows, width, g)...)
	if sec.Table != nil {
		out = append(out, renderTable(sec.Table, width, g)...)
	}
	for _, h := range sec.Heat {
		out = append(out, renderHeat(h, width, g)...)
	}
	return out
}

// renderRows lays rows out: label column, bar, value, note. See the package
// documentation. A row with only a note is a footnote: it takes the whole
// width, wrapped.
func renderRows(in []report.Row, width int, g spark.Glyphs) []line {
	if len(in) == 0 {
		return nil
	}
	rows := make([]row, len(in))
	for i, r := range in {
		rows[i] = row{termsafe.Text(r.Label), termsafe.Text(r.Value), termsafe.Text(r.Note), (*float64)(r.Bar), r.Severity, r.Trend}
	}
	lay := layoutRows(rows, width)
	lay.g = g
	lay.trend = rowTrendColumn(rows, lay, g)
	out := make([]line, 0, len(rows))
	for _, r := range rows {
		out = append(out, lay.render(r)...)
	}
	return out
}

// rowLayout is the columns one section's rows share, in cells: the label
// column's width, the bar's with the space after it (0: no bar drawn), and
// where the value column starts and how wide it is.
type rowLayout struct {
	width, labelW, barW, valueStart, valueW int
	// trend is the trends' column after the values; zero: none drawn.
	trend trendColumn
	g     spark.Glyphs
}

func layoutRows(rows []row, width int) rowLayout {
	avail := width - indent
	maxLabel, hasBar := 0, false
	for _, r := range rows {
		maxLabel = max(maxLabel, cells(r.label))
		hasBar = hasBar || r.bar != nil
	}
	lay := rowLayout{width: width, labelW: min(maxLabel, max(10, avail*2/5))}
	if hasBar && avail >= lay.labelW+gap+BarWidth+1+6 {
		lay.barW = BarWidth + 1
	}
	lay.valueStart = indent + lay.labelW + gap
	lay.valueW = valueColumn(rows, lay.valueCells, lay.valueStart, width)
	return lay
}

// valueCells is the cells a row's value takes, its bar included.
func (lay rowLayout) valueCells(r row) int {
	w := min(cells(r.value), lay.width-lay.valueStart)
	if r.bar != nil {
		w += lay.barW
	}
	return w
}

// render draws one row: a footnote wrapped across the width, or the label,
// bar and value, then the note.
func (lay rowLayout) render(r row) []line {
	st := severityStyle(r.sev)
	labelSt, noteSt := plain, plain
	switch r.sev {
	case report.Dim:
		labelSt, noteSt = dim, dim
	case report.Warn, report.Bad:
		noteSt = st
	}
	if isFootnote(r) {
		var out []line
		for _, t := range wrap(r.note, lay.width-indent, maxFootnoteLines) {
			out = append(out, line{}.add(strings.Repeat(" ", indent), plain).add(t, noteSt))
		}
		return out
	}
	l := line{}.add(strings.Repeat(" ", indent), plain)
	l = l.addLeft(r.label, lay.labelW, labelSt).add(strings.Repeat(" ", gap), plain)
	if r.bar != nil && lay.barW > 0 {
		fill, track := bar(*r.bar, BarWidth, lay.g)
		l = l.add(fill, st).add(track, dim).add(" ", plain)
	}
	l = l.add(fit(r.value, lay.width-l.width()), st)
	if r.trend != nil && lay.trend.w > 0 {
		l = lay.trend.draw(l.pad(lay.valueStart+lay.valueW+gap), r.trend)
	}
	if r.note == "" {
		return []line{l}
	}
	return lay.withNote(l, r.note, noteSt)
}

// withNote puts a note after the value on line l, in the notes column
// where the value leaves room for it. A note too long for its line wraps
// under the notes column rather than losing its last words: the first
// piece stays on the row when it fits there.
func (lay rowLayout) withNote(l line, note string, noteSt style) []line {
	start := max(lay.valueStart+lay.valueW+gap, l.width()+gap)
	if room := lay.width - start; cells(note) <= room {
		return []line{l.pad(start).add(note, noteSt)}
	}
	col := lay.valueStart + lay.valueW + gap
	if lay.width-col < minNoteWidth {
		col = lay.valueStart
	}
	pieces := wrap(note, lay.width-col, maxRowNoteLines)
	if len(pieces) > 0 && cells(pieces[0]) <= lay.width-start {
		l = l.pad(start).add(pieces[0], noteSt)
		pieces = pieces[1:]
	}
	out := []line{l}
	for _, p := range pieces {
		out = append(out, line{}.pad(col).add(p, noteSt))
	}
	return out
}

// maxFootnoteLines bounds a footnote row's wrapped text.
const maxFootnoteLines = 3

// maxRowNoteLines bounds a row note wrapped under the notes column, and
// minNoteWidth is the narrowest notes column worth wrapping into (below it
// the note wraps under the values instead).
const (
	maxRowNoteLines = 3
	minNoteWidth    = 16
)

// isFootnote reports whether a row has nothing but a note.
func isFootnote(r row) bool { return r.label == "" && r.value == "" && r.bar == nil && r.note != "" }

// spillCost is what valueColumn counts for a note pushed out of line by a
// value wider than the column, in cells of note lost to truncation.
const spillCost = 3

// valueColumn picks the width of the value column (bar included), at most
// 2/5 of the width: the candidate that loses the fewest cells of notes to
// truncation, counting spillCost for each note pushed out of line; on a
// tie the wider. A single long value (the exchange rate) then pushes only
// its own note instead of squeezing every note of the section.
func valueColumn(rows []row, valueCells func(row) int, valueStart, width int) int {
	capW := max(16, (width-indent)*2/5)
	best, bestCost := 0, -1
	for _, c := range rows {
		if isFootnote(c) {
			continue
		}
		cand := min(valueCells(c), capW)
		cost := 0
		for _, r := range rows {
			if r.note == "" || isFootnote(r) {
				continue
			}
			vw := valueCells(r)
			if vw > cand {
				cost += spillCost
			}
			room := width - (valueStart + max(vw, cand) + gap)
			cost += max(0, cells(r.note)-max(room, 0))
		}
		if bestCost < 0 || cost < bestCost || (cost == bestCost && cand > best) {
			best, bestCost = cand, cost
		}
	}
	return best
}

// renderTable draws a table: a label column, then right-aligned cells of
// one fixed width under the header, with the rows' trends after the first
// cell where they have any. Columns that do not fit are left out from the
// right and a … ends the header to say so; the trends keep at least
// minTrend cells before a window is left out for them.
func renderTable(t *report.Table, width int, g spark.Glyphs) []line {
	lay := measureTable(t)
	avail := width - indent
	// The label column keeps up to a third of the width (a rate without
	// its name is unreadable); when the cells do not all fit beside it,
	// the rightmost (longest) windows are left out first.
	lay.labelW = min(lay.labelW, max(8, avail*2/5))
	if need := lay.labelW + lay.ncols*(gap+lay.cellW); need > avail {
		lay.labelW = max(min(lay.labelW, max(8, avail/3)), avail-lay.ncols*(gap+lay.cellW))
	}
	lay.shown = lay.ncols
	if lay.labelW+lay.ncols*(gap+lay.cellW) > avail {
		// Room for the marker "  …" after the cells that fit.
		lay.shown = max(0, (avail-lay.labelW-gap-1)/(gap+lay.cellW))
	}
	lay.trend = tableTrendColumn(t, g, avail-lay.labelW, lay.cellW, &lay.shown, lay.ncols)
	var out []line
	if len(lay.header) > 0 {
		l := lay.line(lay.header[0], lay.header[1:], bold, func(l line) line {
			return l.addLeft(lay.trend.header(), lay.trend.width(), bold)
		})
		if lay.shown < lay.ncols {
			l = l.add(strings.Repeat(" ", gap)+ellipsis, plain)
		}
		out = append(out, l)
	}
	for i, r := range t.Rows {
		out = append(out, lay.line(lay.labels[i], lay.cells[i], plain, func(l line) line { return lay.trend.draw(l, r.Trend) }))
	}
	return out
}

// tableLayout is a table's text, sanitized, and the widths it is drawn in.
type tableLayout struct {
	header, labels []string
	cells          [][]string
	labelW, cellW  int
	ncols, shown   int // the cell columns, and those drawn
	trend          trendColumn
}

// measureTable sanitizes t's text and measures its widest label and cell.
func measureTable(t *report.Table) tableLayout {
	lay := tableLayout{header: make([]string, len(t.Header)), labels: make([]string, len(t.Rows)), cells: make([][]string, len(t.Rows)), cellW: 1}
	for i, h := range t.Header {
		lay.header[i] = termsafe.Text(h)
	}
	lay.ncols = max(len(lay.header)-1, 0)
	if len(lay.header) > 0 {
		lay.labelW = cells(lay.header[0])
	}
	for i := 1; i < len(lay.header); i++ {
		lay.cellW = max(lay.cellW, cells(lay.header[i]))
	}
	for i, r := range t.Rows {
		lay.labels[i] = termsafe.Text(r.Label)
		lay.labelW = max(lay.labelW, cells(lay.labels[i]))
		lay.cells[i] = make([]string, len(r.Cells))
		for j, c := range r.Cells {
			lay.cells[i][j] = termsafe.Text(c)
			lay.cellW = max(lay.cellW, cells(lay.cells[i][j]))
		}
		lay.ncols = max(lay.ncols, len(r.Cells))
	}
	return lay
}

// line draws one line of the table: the label, then the cells shown, the
// trend column (drawn by trend) after the first where there is one.
func (lay tableLayout) line(label string, cs []string, st style, trend func(line) line) line {
	l := line{}.add(strings.Repeat(" ", indent), plain).addLeft(label, lay.labelW, st)
	for j := 0; j < lay.shown; j++ {
		c := ""
		if j < len(cs) {
			c = cs[j]
		}
		l = l.add(strings.Repeat(" ", gap), plain).addRight(c, lay.cellW, st)
		if j == 0 && lay.trend.w > 0 {
			l = trend(l.add(strings.Repeat(" ", gap), plain))
		}
	}
	return l
}
