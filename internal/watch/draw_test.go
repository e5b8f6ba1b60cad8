package watch

import (
	"slices"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// TestForText: a text frame pads the header labels to CellWidth; the
// report the JSON is written from keeps them as they are.
func TestForText(t *testing.T) {
	r := &report.Report{Sections: []report.Section{
		{ID: "live"},
		{ID: "rates", Table: &report.Table{Header: []string{"", "now 2s", "30s", "~12m30s", "now 600ms"}}},
	}}
	got := ForText(r)
	if want := []string{"", "  now 2s", "     30s", " ~12m30s", "now 600ms"}; !slices.Equal(got.Sections[1].Table.Header, want) {
		t.Errorf("drawn header %q, want %q", got.Sections[1].Table.Header, want)
	}
	if want := []string{"", "now 2s", "30s", "~12m30s", "now 600ms"}; !slices.Equal(r.Sections[1].Table.Header, want) {
		t.Errorf("the report's header became %q", r.Sections[1].Table.Header)
	}
	if got.Sections[0].ID != "live" || got.Sections[0].Table != nil {
		t.Errorf("a section without a table changed: %+v", got.Sections[0])
	}
}
