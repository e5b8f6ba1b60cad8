package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// FuzzRender renders reports built from fuzzed strings and numbers: the
// text must fit the width and hold no escape byte with colour off, and the
// JSON must encode (whatever the floats) and decode.
func FuzzRender(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, "value", "note", "Title", 0.5, 1.0, 80, 0)
	}
	f.Add("模型 🚀", "≤ 1.0K", "—·—", "Size · p50", 0.0, -1.0, 160, 2)
	f.Add("label", "1% off decode pays for 6.5% onto prefill", "86.7% vs 13.3%", "Where", 1.0, 2.0, 120, 2)
	f.Add("a\tb\nc", "v", "n", "", 0.999, 0.001, 1, 5)
	f.Add("x", "y", "z", "w", 0.25, 0.75, 250, 0)
	f.Fuzz(func(t *testing.T, label, value, note, title string, barV, v float64, width, columns int) {
		width = 1 + abs(width)%400
		columns = abs(columns) % 6
		row := report.Row{Label: label, Value: value, Note: note, Bar: num(barV), Severity: report.Severity(note)}
		r := &report.Report{
			Source: label, Dialect: value, Header: []string{note}, ScrapeSeconds: report.Number(v),
			Scalars: report.Map[report.Number]{label: report.Number(v)},
			Sections: []report.Section{
				{ID: title, Title: title, Rows: []report.Row{row, {Label: value, Value: label, Note: title}}},
				{Title: note, Rows: []report.Row{row}},
				{Title: value, Rows: []report.Row{row, row}},
				{Title: label, Wide: true, Rows: []report.Row{row}, Table: &report.Table{
					Header: []string{label, value, note},
					Rows:   []report.TableRow{{Label: title, Cells: []string{value, note, label}}, {Label: note}},
				}},
			},
			Figures: report.Figures{ExchangeRate: num(v), BreakEven: []report.BreakEven{{Factor: report.Number(v), Floor: report.Number(barV)}}},
			Notes:   []report.Note{{ID: label, Severity: report.Severity(title), Text: note + " " + value}},
		}
		var b bytes.Buffer
		if err := Text(&b, r, Options{Width: width, Columns: columns}); err != nil {
			t.Fatal(err)
		}
		checkOutput(t, b.String(), width, false)

		b.Reset()
		if err := JSON(&b, r); err != nil {
			t.Fatalf("JSON: %v", err)
		}
		if !json.Valid(b.Bytes()) {
			t.Fatalf("invalid JSON:\n%s", b.Bytes())
		}
		for _, c := range b.String() {
			if (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) {
				t.Fatalf("control %U in JSON", c)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if -n < 0 { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
