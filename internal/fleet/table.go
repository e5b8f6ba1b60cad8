package fleet

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// tableRates are the windowed figures the table shows, by the rates
// row that holds each.
var tableRates = []struct{ id, header string }{
	{"requests", "req/s"},
	{"prompt_computed", "prompt tok/s"},
	{"generation", "gen tok/s"},
	{"ttft_p50", "TTFT p50"},
	{"ttft_p99", "TTFT p99"},
	{"prefix_hit_ratio", "prefix hit"},
	{"prefill_share", "prefill"},
}

// column is one column of the fleet table.
type column struct {
	id, header string
	right      bool
	// drop orders the columns a narrow layout leaves out: the highest
	// first; 0 is never left out.
	drop int
	cell func(in *Instance) string
	// sortKey orders instances by this column (nil: not sortable).
	sortKey func(in *Instance) float64
}

// SortKeys lists what --sort takes.
func SortKeys() []string {
	out := []string{"instance"}
	for _, c := range columns(false, spark.Blocks) {
		if c.sortKey != nil {
			out = append(out, c.id)
		}
	}
	return out
}

func columns(past bool, glyphs spark.Glyphs) []column {
	kv := "KV"
	if past {
		kv = "KV max"
	}
	cols := []column{
		{id: "instance", header: "instance", drop: 0, cell: func(in *Instance) string { return in.ID }},
		{id: "dialect", header: "dialect", drop: 6, cell: func(in *Instance) string { return in.Dialect }},
		{id: "model", header: "model", drop: 8, cell: modelCell},
		{id: "state", header: "state", drop: 0, cell: func(in *Instance) string { return string(in.State) }},
		{id: "kv", header: kv, right: true, drop: 3, cell: func(in *Instance) string { return pct(in.Figures.KV) },
			sortKey: func(in *Instance) float64 { return orNaN(in.Figures.KV) }},
	}
	drops := map[string]int{"requests": 0, "prompt_computed": 3, "generation": 1, "ttft_p50": 7, "ttft_p99": 0, "prefix_hit_ratio": 4, "prefill_share": 5}
	for _, tr := range tableRates {
		id := tr.id
		cols = append(cols, column{id: id, header: tr.header, right: true, drop: drops[id],
			cell: func(in *Instance) string {
				row, fig, ok := in.Figures.Rate(id)
				if !ok {
					return units.Missing
				}
				if c := row.Cell(fig); c != "" {
					return c
				}
				return units.Missing
			},
			sortKey: func(in *Instance) float64 { return orNaN(in.Figures.value(id)) },
		})
	}
	// The GPUs' figures, where some instance joined GPUs (absent
	// otherwise: a column no row fills is left out).
	gpuDrops := map[string]int{GPUWatts: 5, GPUJoulesPerToken: 4, GPUUtilization: 6}
	for _, gc := range gpuColumns {
		id := gc.id
		cols = append(cols, column{id: id, header: gc.header, right: true, drop: gpuDrops[id],
			cell:    func(in *Instance) string { return gpuCell(id, gpuValue(in.Figures, id)) },
			sortKey: func(in *Instance) float64 { return orNaN(gpuValue(in.Figures, id)) }})
	}
	// The trends, where the fleet has them (a past range, a watch): the
	// figure over the window, its scale after it.
	cols = append(cols,
		column{id: "requests_trend", header: "req/s over the window", drop: 5, cell: trendCell(TrendRequests, glyphs)},
		column{id: "kv_trend", header: "KV over the window", drop: 7, cell: trendCell(TrendKV, glyphs)})
	// Never left out: the column that says what is wrong (a narrow
	// layout shortens it to the ids that fit, "+N" for the rest).
	cols = append(cols, column{id: "notes", header: "notes", drop: 0, cell: noteIDs})
	return cols
}

// trendCell draws an instance's trend id: its sparkline over the window,
// scaled from 0, and the scale ("0–4.8", "25.0%–40.0%"); a gap is blank.
func trendCell(id string, glyphs spark.Glyphs) func(in *Instance) string {
	return func(in *Instance) string {
		t := in.Trends[id]
		if t == nil {
			return ""
		}
		l := render.DrawTrend(t, glyphs, TrendCells)
		if scale := render.TrendRange(l, t); scale != "" {
			return l.String() + " " + scale
		}
		return l.String()
	}
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func pct(p *float64) string {
	if p == nil {
		return units.Missing
	}
	return units.Percent(*p)
}

func modelCell(in *Instance) string {
	if in.snap == nil || len(in.snap.Models) == 0 {
		return ""
	}
	if len(in.snap.Models) == 1 {
		return in.snap.Models[0]
	}
	return fmt.Sprintf("%s +%d", in.snap.Models[0], len(in.snap.Models)-1)
}

// noteIDs lists the ids of an instance's notes that ask for action
// (warn, bad), worst first; info notes stay in its report.
func noteIDs(in *Instance) string {
	if in.Report == nil {
		return ""
	}
	var bad, warn []string
	for _, n := range in.Report.Notes {
		switch n.Severity {
		case report.Bad:
			bad = append(bad, n.ID)
		case report.Warn:
			warn = append(warn, n.ID)
		}
	}
	return strings.Join(append(bad, warn...), " ")
}

// Sort orders the instances by a column of SortKeys: the instance id
// ascending, any figure descending (the busiest, slowest, fullest first),
// instances without the figure last.
func (f *Fleet) Sort(key string) error {
	if key == "" || key == "instance" {
		sort.SliceStable(f.Instances, func(i, j int) bool { return f.Instances[i].ID < f.Instances[j].ID })
		return nil
	}
	for _, c := range columns(f.Range, spark.Blocks) {
		if c.id != key || c.sortKey == nil {
			continue
		}
		sort.SliceStable(f.Instances, func(i, j int) bool {
			a, b := c.sortKey(f.Instances[i]), c.sortKey(f.Instances[j])
			switch {
			case math.IsNaN(b):
				return !math.IsNaN(a)
			case math.IsNaN(a):
				return false
			}
			return a > b
		})
		return nil
	}
	return fmt.Errorf("--sort %q: not a column (sort by %s)", key, strings.Join(SortKeys(), ", "))
}

// cond measures display cells as the report renderer does.
var cond = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// TextOptions lay the table out.
type TextOptions struct {
	Width int // cells; 0 is 160
	// Glyphs draw the trends: block eighths, or ASCII (--ascii, a locale
	// that is not UTF-8).
	Glyphs spark.Glyphs
}

// Text writes the fleet for a person: a title, what every row's instance
// shares, the table (a row per instance, then the totals), and the
// fleet's notes.
func (f *Fleet) Text(w io.Writer, o TextOptions) error {
	width := o.Width
	if width <= 0 {
		width = 160
	}
	var b strings.Builder
	for _, l := range f.head(width) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	for _, l := range f.tableLines(width, o.Glyphs) {
		b.WriteString(strings.TrimRight(l, " "))
		b.WriteByte('\n')
	}
	if len(f.Notes) > 0 {
		b.WriteByte('\n')
		for _, n := range f.Notes {
			for _, l := range noteLines(n, width) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// HeaderLines is how many lines the text at width starts with before the
// table's rows: the title, what every row's instance shares, a blank
// line, the table's header.
func (f *Fleet) HeaderLines(width int) int { return len(f.head(width)) + 2 }

// head is the text's lines before the table at width: the title, each
// line cut to it, and what every row's instance shares, wrapped (an id
// is never cut).
func (f *Fleet) head(width int) []string {
	var out []string
	for _, l := range f.title() {
		out = append(out, fit(termsafe.Text(l), width))
	}
	if n := instanceNames(f.Instances, f.grouping()); n.shared != "" {
		out = append(out, wrap(termsafe.Text("instances "+n.shared+" ("+strings.Join(idLabels(f.grouping()), "/")+"; each row names the …)"), width, "")...)
	}
	return out
}

// grouping is the fleet's --by.
func (f *Fleet) grouping() []string {
	if len(f.By) == 0 {
		return DefaultBy()
	}
	return f.By
}

// idLabels are the grouping labels in the order an id joins their values
// (groupID).
func idLabels(by []string) []string {
	out := slices.Clone(by)
	slices.Sort(out)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// title says what was read, from where, over what.
func (f *Fleet) title() []string {
	when := "now: rates over the last " + windowLabel(f.Window()) + " to " + f.To.UTC().Format("2006-01-02 15:04:05 MST")
	if f.Range {
		when = fmt.Sprintf("from %s to %s (%s)", f.From.UTC().Format("2006-01-02 15:04:05"), f.To.UTC().Format("2006-01-02 15:04:05 MST"), windowLabel(f.Window()))
	}
	inst := units.Plural(float64(len(f.Instances)), "instance")
	return []string{
		"inferscope fleet · " + f.Backend.String() + " · " + f.Store + " · " + inst,
		when,
	}
}

// tableLines lays the table out within width: columns the width cannot
// hold are left out (the least needed first, said under the table), and
// the instance, model and notes columns are cut with ….
func (f *Fleet) tableLines(width int, glyphs spark.Glyphs) []string {
	g := newGrid(columns(f.Range, glyphs), f)
	left := g.fit(width)
	hdr := make([]string, len(g.cols))
	for i, c := range g.cols {
		hdr[i] = c.header
	}
	out := []string{g.line(hdr)}
	for _, r := range g.rows {
		out = append(out, g.line(r))
	}
	if g.totals != nil {
		out = append(out, strings.Repeat("─", min(width, g.width())), g.line(g.totals))
	}
	if len(left) > 0 {
		out = append(out, wrap("(left out for the width: "+strings.Join(left, ", ")+")", width, "")...)
	}
	return out
}

// grid is the table's cells and the layout chosen for them.
type grid struct {
	cols   []column
	rows   [][]string
	totals []string
	widths []int
	shown  []bool
	// names are the instance column's cells, cut to its width as it is
	// laid out; floors are the widths the instance and notes columns are
	// narrowed to before more columns are left out (the rows told apart,
	// an id whole).
	names  names
	floors map[string]int
}

// cellLimit caps the free-text columns: longer text is cut (the
// instances where rows differ; notes keep whole ids).
var cellLimit = map[string]int{"instance": 28, "model": 24, "notes": 30}

func newGrid(cols []column, f *Fleet) *grid {
	g := &grid{cols: cols, widths: make([]int, len(cols)), shown: make([]bool, len(cols)), names: instanceNames(f.Instances, f.grouping())}
	for i, in := range f.Instances {
		r := cellsOf(cols, in)
		r[0] = g.names.parts[i]
		g.rows = append(g.rows, r)
	}
	if f.Totals != nil {
		t := cellsOf(cols, f.Totals)
		t[0], t[1], t[2], t[3], t[len(t)-1] = "totals", "", "", "", ""
		if len(f.Instances) > 0 {
			t[3] = fmt.Sprintf("%d up", countUp(f.Instances))
		}
		g.totals = t
	}
	g.floors = map[string]int{"instance": g.names.fitting(max(cells("instance"), cells("totals"))), "notes": cells("notes")}
	for _, r := range g.rows {
		ids := strings.Fields(r[len(r)-1])
		if len(ids) > 0 {
			g.floors["notes"] = max(g.floors["notes"], cells(fitIDs(r[len(r)-1], cells(ids[0])+cells(moreIDs(len(ids)-1)))))
		}
	}
	for i, c := range cols {
		g.widths[i] = cells(c.header)
		for _, r := range append(g.rows, g.totals) {
			if i < len(r) {
				g.widths[i] = max(g.widths[i], cells(r[i]))
			}
		}
		if l, ok := cellLimit[c.id]; ok && g.widths[i] > l {
			g.widths[i] = max(l, cells(c.header), g.floors[c.id])
		}
		// A column no instance has anything in (no model labels, no
		// notes) is left out without a word.
		g.shown[i] = c.drop == 0 && c.id != "notes" || slices.ContainsFunc(g.rows, func(r []string) bool { return r[i] != "" && r[i] != units.Missing })
	}
	return g
}

// width is the shown columns' width with the gaps between them.
func (g *grid) width() int {
	t := 0
	for i := range g.cols {
		if g.shown[i] {
			t += g.widths[i] + 2
		}
	}
	return t - 2
}

// fit lays the table out within width and returns the headers of the
// columns it left out: first the least needed columns are left out (the
// model, TTFT p50, the dialect, the prefill share, the prefix hit), then
// the instance and notes columns narrowed to their floors (the rows told
// apart; each row's first note id whole), then the other columns that
// can be left out, then the two narrowed to their headers (the rows
// numbered where they cannot be told apart; a count of notes where no id
// fits). The notes column is never left out: it says what is wrong.
func (g *grid) fit(width int) []string {
	var dropped []int
	drop := func(least int) {
		for g.width() > width {
			worst := -1
			for i, c := range g.cols {
				if g.shown[i] && c.drop >= least && (worst < 0 || c.drop > g.cols[worst].drop) {
					worst = i
				}
			}
			if worst < 0 {
				return
			}
			g.shown[worst] = false
			dropped = append(dropped, worst)
		}
	}
	narrow := func(floor func(id string) int) {
		for _, id := range []string{"instance", "notes"} {
			for i, c := range g.cols {
				if over := g.width() - width; over > 0 && c.id == id && g.shown[i] {
					g.widths[i] = max(g.widths[i]-over, min(floor(id), g.widths[i]), cells(c.header))
				}
			}
		}
	}
	drop(4)
	narrow(func(id string) int { return g.floors[id] })
	drop(1)
	narrow(func(id string) int {
		if id == "instance" {
			return cells("totals")
		}
		return 0
	})
	// Room the narrowing made: the columns left out last (the most
	// needed) come back where they fit.
	for k := len(dropped) - 1; k >= 0; k-- {
		if i := dropped[k]; g.width()+2+g.widths[i] <= width {
			g.shown[i] = true
			dropped = slices.Delete(dropped, k, k+1)
		}
	}
	var left []string
	for _, i := range dropped {
		left = append(left, g.cols[i].header)
	}
	for i, c := range g.cols {
		if c.id == "instance" {
			for k, cell := range g.names.at(g.widths[i]) {
				g.rows[k][i] = cell
			}
		}
	}
	return left
}

// line writes one row's shown cells, each padded to its column.
func (g *grid) line(cs []string) string {
	var b strings.Builder
	for i, c := range g.cols {
		if !g.shown[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		s := fit(termsafe.Text(cs[i]), g.widths[i])
		switch c.id {
		case "instance":
			s = termsafe.Text(cs[i]) // cut apart by names.at
		case "notes":
			s = fitIDs(termsafe.Text(cs[i]), g.widths[i])
		}
		pad := strings.Repeat(" ", g.widths[i]-cells(s))
		if c.right {
			b.WriteString(pad + s)
		} else {
			b.WriteString(s + pad)
		}
	}
	return b.String()
}

func countUp(ins []*Instance) int {
	n := 0
	for _, in := range ins {
		if in.State != Down && in.State != Gone && in.State != Unreadable {
			n++
		}
	}
	return n
}

func cellsOf(cols []column, in *Instance) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.cell(in)
	}
	return out
}

func cells(s string) int { return cond.StringWidth(s) }

func fit(s string, w int) string {
	if cells(s) <= w {
		return s
	}
	if w <= 1 {
		return "…"
	}
	return cond.Truncate(s, w, "…")
}

// fitIDs shortens a list of note ids to w cells: the ids that fit whole,
// worst first, and "+N" for the rest; "+N" alone (N notes) where not one
// fits. An id is never cut: cut in two it names no note in
// docs/notes.md.
func fitIDs(s string, w int) string {
	if cells(s) <= w {
		return s
	}
	ids := strings.Fields(s)
	for n := len(ids) - 1; n >= 1; n-- {
		out := strings.Join(ids[:n], " ") + moreIDs(len(ids)-n)
		if cells(out) <= w {
			return out
		}
	}
	return "+" + strconv.Itoa(len(ids))
}

// moreIDs says n more ids: " +2".
func moreIDs(n int) string {
	if n == 0 {
		return ""
	}
	return " +" + strconv.Itoa(n)
}

// noteLines writes a fleet note as the report writes its notes: a marker
// that reads without colour, the text wrapped under it.
func noteLines(n report.Note, width int) []string {
	marker := map[report.Severity]string{report.Bad: "✗", report.Warn: "!", report.Good: "✓"}[n.Severity]
	if marker == "" {
		marker = "·"
	}
	return wrap(termsafe.Text(n.Text), width, marker)
}

// wrap writes text's words within width, after marker on the first line
// (none where it is ""), the lines after it indented under the text. A
// word is never cut: one longer than a line is broken across lines (an
// instance's id, named in full).
func wrap(text string, width int, marker string) []string {
	indent := ""
	if marker != "" {
		indent = "  "
	}
	var out []string
	cur := marker
	for _, wd := range words(text, width-cells(indent)) {
		switch {
		case cur == "":
			cur = wd
		case cells(cur)+1+cells(wd) > width && cur != marker && cur != indent:
			out = append(out, cur)
			cur = indent + wd
		case cur == indent:
			cur += wd
		default:
			cur += " " + wd
		}
	}
	return append(out, cur)
}

// words are text's words, each longer than w cells broken into pieces of
// w.
func words(text string, w int) []string {
	var out []string
	for _, wd := range strings.Fields(text) {
		for w > 0 && cells(wd) > w {
			piece := cond.Truncate(wd, w, "")
			if piece == "" {
				break // one character wider than a line
			}
			out = append(out, piece)
			wd = wd[len(piece):]
		}
		out = append(out, wd)
	}
	return out
}
