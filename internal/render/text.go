// Package render draws a [report.Report] for a person ([Text]) or a program
// ([JSON]). Both read the same report, so they cannot disagree.
//
// # Layout
//
// [Text] writes a title line (inferscope · dialect, or "proxy → dialect"
// for the server behind the measuring proxy · source · scrape time ·
// how long the scrape waited; the time goes to a second line when the
// width is short; a file's modification time or the moment stdin was read
// is said as such, not as a scrape time), the report's header lines, the sections and finally the
// action notes.
//
// Sections are packed side by side in equal columns when the width allows:
// [Options.Columns] 0 picks one column below 150 cells, two from 150 and
// three from 240; a forced count is lowered until every column is at least
// 30 cells wide, and no count exceeds the longest run of sections that
// could share the columns. Sections keep the report's order and flow down
// the first column, then the next, newspaper style: each run of sections
// between two wide ones is split where the tallest column is as short as
// possible, and among equally short splits the one that fills the earlier
// columns first. A wide section (distributions, the watch view's rates
// table) spans the full width and ends the run before it.
//
// A row is its label, a bar (when the row has one), its value and its note.
// Labels share a column per section; bars are 10 cells of eighth blocks
// over a ░ track (so an empty bar is still visible); notes line up after a
// value column whose width is chosen to cut the fewest cells of notes, so
// one long value pushes only its own note along. A row with nothing but a
// note is a footnote across the column. A section's table follows its rows:
// a label column, then right-aligned cells of one width under a header;
// columns that do not fit are left out from the right and a … ends the
// header. Anything that does not fit is cut with …, never spilled into the
// next column; action notes and footnotes wrap instead. Widths count
// display cells (go-runewidth, East Asian ambiguous characters narrow),
// not bytes.
//
// # Trends and heat strips
//
// A row or table row with a trend (the watch view's) draws it as a
// sparkline ([spark]): in a table after its first cell, in a section's
// rows at the notes column, right-aligned so the newest interval keeps its
// place, its scale after it ("0–14.1K"; a percentile's from its floor),
// each cell in its band's colour, a gap blank. The windows of a table
// leave room for at least eight cells of trend, dropped from the right. A
// section's heat strips are rows of buckets (merged to at most eight) and
// a column per interval shaded by its share of the interval's
// observations, over an axis marking the intervals read. [Options.Glyphs]
// draws these pictures, and the bars, in ASCII.
//
// # Colour and safety
//
// Colour is ANSI SGR only, and only with [Options.Color]: good green, warn
// yellow, bad red, dim faint, titles bold. Colour never carries meaning on
// its own: the words say the same, and each action note starts with a
// marker visible without colour: ✗ bad, ! warn, ✓ good, · for info and
// the rest. Every string of the report is passed through termsafe.Text before
// it is measured or written, so a hostile server cannot drive the
// terminal; without colour the output holds no escape byte at all.
package render

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// Options control the text layout.
type Options struct {
	// Width is the layout width in cells; 0 or less means DefaultWidth.
	Width int
	// Columns is the number of section columns; 0 or less picks it from
	// the width (see the package documentation).
	Columns int
	// Color enables ANSI SGR colour.
	Color bool
	// Glyphs draws the pictures (bars, trends, heat strips): the block
	// characters, or ASCII (--ascii, a locale that is not UTF-8).
	Glyphs spark.Glyphs
}

// Layout constants, in cells.
const (
	// DefaultWidth is the width used when Options.Width is unset, the
	// width of a piped report.
	DefaultWidth = 160
	// TwoColumnsFrom and ThreeColumnsFrom are the widths from which the
	// automatic layout uses two and three columns.
	TwoColumnsFrom   = 150
	ThreeColumnsFrom = 240
	// MinColumnWidth is the narrowest column a forced column count may
	// produce.
	MinColumnWidth = 30
	// BarWidth is the width of every bar.
	BarWidth = 10

	gutter = 3 // between columns
	indent = 2 // rows under their section title
	gap    = 2 // between fields of a row
)

// Text writes r for a person: see the package documentation for the
// layout.
func Text(w io.Writer, r *report.Report, o Options) error {
	if r == nil {
		return errors.New("render: nil report")
	}
	if err := writeLines(w, layout(r, o), o.Color); err != nil {
		return fmt.Errorf("render: writing report: %w", err)
	}
	return nil
}

// layout builds every output line, each at most the layout width.
func layout(r *report.Report, o Options) []line {
	width := o.Width
	if width <= 0 {
		width = DefaultWidth
	}
	var out []line
	out = append(out, titleLines(r, width)...)
	for _, h := range r.Header {
		out = append(out, line{}.add(fit(termsafe.Text(h), width), plain))
	}

	n := columnCount(o.Columns, width, r.Sections)
	colW := columnWidth(width, n)
	var run [][]line
	flush := func() {
		if len(run) > 0 {
			out = append(out, line{})
			out = append(out, pack(run, n, colW)...)
			run = run[:0]
		}
	}
	for _, sec := range r.Sections {
		if sec.Wide {
			flush()
			if ls := renderSection(sec, width, o.Glyphs); len(ls) > 0 {
				out = append(out, line{})
				out = append(out, ls...)
			}
			continue
		}
		if ls := renderSection(sec, colW, o.Glyphs); len(ls) > 0 {
			run = append(run, ls)
		}
	}
	flush()

	if len(r.Notes) > 0 {
		out = append(out, line{}, line{}.add(fit("Notes", width), bold))
		for _, n := range r.Notes {
			out = append(out, noteLines(n, width)...)
		}
	}
	for i := range out {
		out[i] = out[i].clamp(width)
	}
	return out
}

// columnCount resolves Options.Columns against the width and the sections:
// never more columns than the longest run of sections that share them.
func columnCount(want, width int, secs []report.Section) int {
	n := want
	if n <= 0 {
		n = 1
		if width >= TwoColumnsFrom {
			n = 2
		}
		if width >= ThreeColumnsFrom {
			n = 3
		}
	}
	for n > 1 && columnWidth(width, n) < MinColumnWidth {
		n--
	}
	longest, cur := 0, 0
	for _, s := range secs {
		if s.Wide {
			cur = 0
			continue
		}
		cur++
		longest = max(longest, cur)
	}
	return max(1, min(n, longest))
}

// columnWidth is the width of each of n equal columns.
func columnWidth(width, n int) int {
	if n <= 1 {
		return width
	}
	return (width - gutter*(n-1)) / n
}

// pack lays a run of rendered sections out in n columns of colW cells.
func pack(secs [][]line, n, colW int) []line {
	if n == 1 {
		var out []line
		for i, s := range secs {
			if i > 0 {
				out = append(out, line{})
			}
			out = append(out, s...)
		}
		return out
	}
	heights := make([]int, len(secs))
	for i, s := range secs {
		heights[i] = len(s)
	}
	groups := split(heights, n)
	cols := make([][]line, len(groups))
	rows := 0
	for c, g := range groups {
		for k, i := range g {
			if k > 0 {
				cols[c] = append(cols[c], line{})
			}
			cols[c] = append(cols[c], secs[i]...)
		}
		rows = max(rows, len(cols[c]))
	}
	out := make([]line, rows)
	for r := range out {
		var l line
		for c, col := range cols {
			if c > 0 {
				l = l.pad(c*(colW+gutter)-gutter).add(strings.Repeat(" ", gutter), plain)
			}
			if r < len(col) {
				l = append(l, col[r].clamp(colW)...)
			}
		}
		out[r] = l
	}
	return out
}

// split divides sections of the given heights, in order, into at most n
// consecutive groups so that the tallest group (heights plus one blank line
// between sections) is as short as possible; among such splits it fills
// the earlier groups first. It returns the section indices of each group.
func split(heights []int, n int) [][]int {
	lo, hi := 0, 0
	for i, h := range heights {
		lo = max(lo, h)
		hi += h
		if i > 0 {
			hi++
		}
	}
	// Greedy filling up to a cap needs the fewest groups for that cap,
	// so the smallest cap it fits in n groups is the optimum.
	for lo < hi {
		mid := (lo + hi) / 2
		if len(greedy(heights, mid)) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return greedy(heights, lo)
}

// greedy fills groups in order, starting a new one when the next section
// would make the current one taller than limit.
func greedy(heights []int, limit int) [][]int {
	var groups [][]int
	cur := -1
	for i, h := range heights {
		if len(groups) > 0 && cur+1+h <= limit {
			groups[len(groups)-1] = append(groups[len(groups)-1], i)
			cur += 1 + h
			continue
		}
		groups = append(groups, []int{i})
		cur = h
	}
	return groups
}

// titleLines are "inferscope · dialect · source · scraped … · waited …"
// ("proxy → llamacpp" for the dialect behind the proxy),
// on one line when it fits, else the scrape's time and wait go to a second
// line and the source is cut to fit the first.
func titleLines(r *report.Report, width int) []line {
	const sep = " · "
	l := line{}.add("inferscope", bold)
	if d := termsafe.Text(sourceWord(r)); d != "" {
		l = l.add(sep+d, plain)
	}
	src := termsafe.Text(r.Source)
	if src != "" {
		src = sep + src
	}
	var tail []string
	if !r.ScrapedAt.IsZero() {
		tail = append(tail, timeSaid(r.TimeSource, termsafe.Text(r.ScrapedAt.Format("2006-01-02 15:04:05 MST"))))
	}
	if wt := waited(float64(r.ScrapeSeconds)); wt != "" {
		tail = append(tail, "waited "+wt)
	}
	rest := strings.Join(tail, sep)
	if rest == "" || l.width()+cells(src)+cells(sep+rest) <= width {
		if rest != "" {
			rest = sep + rest
		}
		return []line{l.add(src, plain).add(rest, plain)}
	}
	return []line{
		l.add(fit(src, width-l.width()), plain),
		line{}.add(rest, plain),
	}
}

// sourceWord names what published the figures: the server's dialect, or
// "proxy" with the server behind it where known ("proxy → llamacpp"), not
// the metric set the proxy publishes.
func sourceWord(r *report.Report) string {
	if r.SourceKind != "proxy" {
		return r.Dialect
	}
	if r.Upstream != "" {
		return "proxy → " + r.Upstream
	}
	return "proxy"
}

// timeSaid says what the report's time is: a scrape's own time ("scrape",
// "saved", "given" by --at, or not said) reads "scraped"; a file's
// modification time and the moment stdin was read are not scrape times, and
// the title says so.
func timeSaid(source, at string) string {
	switch source {
	case "mtime":
		return "file modified " + at + " (taken as the scrape time)"
	case "now":
		return "read " + at
	}
	return "scraped " + at
}

// waited is how long the scrape waited, spelled as every time is
// ([units.Seconds]); nothing when unknown (a file).
func waited(sec float64) string {
	if !(sec > 0) || math.IsInf(sec, 1) {
		return ""
	}
	return units.Seconds(sec)
}

// severityStyle maps a severity to its colour.
func severityStyle(s report.Severity) style {
	switch s {
	case report.Good:
		return good
	case report.Warn:
		return warn
	case report.Bad:
		return bad
	case report.Dim:
		return dim
	}
	return plain
}

// noteMarkers tell a note's severity without colour.
var noteMarkers = map[report.Severity]string{
	report.Bad:  "✗",
	report.Warn: "!",
	report.Good: "✓",
}

// maxNoteLines bounds a note's wrapped text; a note longer than that at
// the current width is cut with ….
const maxNoteLines = 8

// noteLines draws one action note: marker, then the text wrapped under
// itself (an action cut short would lose its point).
func noteLines(n report.Note, width int) []line {
	marker, ok := noteMarkers[n.Severity]
	if !ok {
		marker = "·"
	}
	st := severityStyle(n.Severity)
	textSt := plain
	if n.Severity == report.Dim {
		textSt = dim
	}
	const hang = indent + 2 // marker and its space
	parts := wrap(termsafe.Text(n.Text), width-hang, maxNoteLines)
	if len(parts) == 0 {
		parts = []string{""}
	}
	out := make([]line, len(parts))
	for i, p := range parts {
		l := line{}.add(strings.Repeat(" ", indent), plain)
		if i == 0 {
			l = l.add(marker, st).add(" ", plain)
		} else {
			l = l.add("  ", plain)
		}
		out[i] = l.add(p, textSt)
	}
	return out
}
