package render

import (
	"fmt"
	"io"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// bigReport is a full-size report: ten sections of six rows (bars on
// half of them), a wide table, a wide distribution and five notes.
func bigReport() *report.Report {
	r := fullReport()
	r.Sections = r.Sections[:0]
	for s := range 10 {
		sec := report.Section{ID: fmt.Sprint("s", s), Title: fmt.Sprintf("Section %d · detail", s)}
		for i := range 6 {
			row := report.Row{Label: fmt.Sprintf("row %d label", i), Value: fmt.Sprintf("%d.%d%%", 10*i, s), Note: "12.3K / 45.6K tokens", Severity: report.Good}
			if i%2 == 0 {
				row.Bar = num(float64(i) / 6)
			}
			sec.Rows = append(sec.Rows, row)
		}
		r.Sections = append(r.Sections, sec)
	}
	full := fullReport()
	r.Sections = append(r.Sections, full.Sections[len(full.Sections)-2:]...)
	return r
}

func BenchmarkText(b *testing.B) {
	r := bigReport()
	for _, o := range []Options{{Width: 160}, {Width: 80}, {Width: 160, Color: true}} {
		b.Run(fmt.Sprintf("w%d_color=%v", o.Width, o.Color), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Text(io.Discard, r, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSON(b *testing.B) {
	r := bigReport()
	b.ReportAllocs()
	for b.Loop() {
		if err := JSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
