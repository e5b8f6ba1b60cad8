package rates

import (
	"time"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// Column keys of Report.Rates besides the window labels.
const (
	KeyNow     = "now"     // since the previous good scrape
	KeySession = "session" // the ~span column: all of a young session
	KeySince   = "since"   // --since: between the two scrapes
	// KeyElapsed is the row of every Rates column that holds the seconds its
	// figures divide by (null when the column is blank).
	KeyElapsed = "elapsed_seconds"
)

// Column is one column of a rates table.
type Column struct {
	Key    string // its key in Report.Rates
	Header string // its label in the table's header
	// Delta is the window's increases; nil leaves the column blank
	// unless Figures holds its figures, one per row, computed already
	// (a fleet's [Totals]), and Seconds what KeyElapsed says of them.
	Delta   *Delta
	Figures []Figure
	Seconds float64
	// StandsFor is the key of a window this column stands in for (the
	// ~span column of a young session): that key is in Report.Rates too,
	// with every figure null.
	StandsFor string
}

// Table lays rows out over cols: the grid the text shows, and the figures
// for Report.Rates, one map per column key holding every row's figure in
// base units (nil where there is none) and [KeyElapsed].
func Table(rows []Row, cols []Column) (*report.Table, map[string]map[string]*float64) {
	blank := func() map[string]*float64 {
		m := make(map[string]*float64, len(rows)+1)
		m[KeyElapsed] = nil
		for _, r := range rows {
			m[r.ID] = nil
		}
		return m
	}
	t := &report.Table{Header: make([]string, 1, len(cols)+1)}
	figs := make(map[string]map[string]*float64, len(cols)+1)
	grid := make([][]Figure, len(cols))
	for j, c := range cols {
		t.Header = append(t.Header, c.Header)
		m := blank()
		if c.Delta != nil {
			grid[j] = Compute(*c.Delta, rows)
			c.Seconds = c.Delta.Seconds
		} else if c.Figures != nil {
			grid[j] = c.Figures
		}
		if grid[j] != nil {
			if c.Seconds > 0 {
				m[KeyElapsed] = ptr(c.Seconds)
			}
			for i, r := range rows {
				m[r.ID] = grid[j][i].Value
			}
		}
		figs[c.Key] = m
		if c.StandsFor != "" {
			figs[c.StandsFor] = blank()
		}
	}
	for i, r := range rows {
		tr := report.TableRow{ID: r.ID, Label: r.Label, Cells: make([]string, len(cols))}
		for j := range cols {
			if grid[j] != nil {
				tr.Cells[j] = r.Cell(grid[j][i])
			}
		}
		t.Rows = append(t.Rows, tr)
	}
	return t, figs
}

// Section is the rates table of the watch view over the now column and
// the given windows, and its figures for Report.Rates: one column per
// window, keyed by its label ([units.Duration]); [KeyNow] from the
// previous sample; and [KeySession] while a ~span column stands in for the
// first window longer than a young session.
func (h *History) Section(windows []time.Duration) (report.Section, map[string]map[string]*float64) {
	sec := report.Section{ID: "rates", Title: "Rates over staggered windows", Wide: true}
	if h.Len() == 0 {
		return sec, nil
	}
	t, figs := Table(h.rows.rows(), h.columns(windows))
	sec.Table = t
	return sec, figs
}

// columns lays out the now column and one column per window over h.
func (h *History) columns(windows []time.Duration) []Column {
	n := h.Len()
	newest := h.At(n - 1)
	over := func(base int) *Delta {
		d := h.delta(h.At(base), newest)
		return &d
	}
	cols := make([]Column, 0, len(windows)+1)
	now := Column{Key: KeyNow, Header: "now"}
	var interval time.Duration
	if n >= 2 {
		interval = newest.At.Sub(h.At(n - 2).At)
		now.Header, now.Delta = "now "+span(interval), over(n-2)
	}
	cols = append(cols, now)
	overflow := false // the ~span column has been considered
	for i, w := range windows {
		col := Column{Key: units.Duration(w), Header: units.Duration(w)}
		if base := h.baseline(w); base >= 0 {
			// A baseline far older than the window (a pause, a long run of
			// failed scrapes) would be mislabelled: leave it blank.
			if newest.At.Sub(h.At(base).At) <= 2*w {
				col.Delta = over(base)
			}
			cols = append(cols, col)
			continue
		}
		if !overflow && n >= 2 {
			// The first window longer than the session covers all of it,
			// if that is enough longer than the column before to say more.
			overflow = true
			whole := newest.At.Sub(h.At(0).At)
			prev := interval
			if i > 0 {
				prev = windows[i-1]
			}
			if float64(whole) >= 1.25*float64(prev) {
				cols = append(cols, Column{Key: KeySession, Header: "~" + span(whole), Delta: over(0), StandsFor: col.Key})
				continue
			}
		}
		cols = append(cols, col)
	}
	return cols
}

// span labels a measured window for a header: its length in the windows'
// spelling ([units.Duration]), rounded to what a header needs to say
// (milliseconds under a tenth of a second, tenths under ten seconds, then
// seconds, and minutes from an hour).
func span(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < 100*time.Millisecond:
		d = d.Round(time.Millisecond)
	case d < 9950*time.Millisecond:
		d = d.Round(100 * time.Millisecond)
	default:
		if d = d.Round(time.Second); d >= time.Hour {
			d = d.Round(time.Minute)
		}
	}
	return units.Duration(d)
}
