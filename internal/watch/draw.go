package watch

import (
	"strings"

	"github.com/inferscope/inferscope/internal/report"
)

// CellWidth is the width a table's header labels are padded to when a
// frame is drawn, so that columns keep their width from one frame to the
// next whatever their figures: the rates' cells are at most this wide but
// for a bounded latency of ten minutes or more ("≥12.5 min"), which widens
// the columns of that frame by a cell rather than being cut.
const CellWidth = 8

// ForText returns r as a text frame draws it: every table's header labels
// right-aligned in [CellWidth] cells. The labels themselves, as JSON has
// them, are left alone; r is not changed.
func ForText(r *report.Report) *report.Report {
	cp := *r
	cp.Sections = make([]report.Section, len(r.Sections))
	for i, sec := range r.Sections {
		if sec.Table != nil {
			t := *sec.Table
			t.Header = make([]string, len(sec.Table.Header))
			for j, h := range sec.Table.Header {
				if j > 0 {
					h = pad(h)
				}
				t.Header[j] = h
			}
			sec.Table = &t
		}
		cp.Sections[i] = sec
	}
	return &cp
}

// pad right-aligns a header label in CellWidth cells.
func pad(s string) string {
	if n := len([]rune(s)); n < CellWidth {
		return strings.Repeat(" ", CellWidth-n) + s
	}
	return s
}
