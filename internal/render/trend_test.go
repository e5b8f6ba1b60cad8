package render

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
)

// TestTrendColumn: the rates table draws each row's trend after its now
// cell, right-aligned (a young session's cells blank before its first),
// its range after it, every cell coloured by its own band, and a gap
// blank and uncoloured; ASCII where asked.
func TestTrendColumn(t *testing.T) {
	nan := report.Number(math.NaN())
	hit := &report.Trend{StepSeconds: 2, Values: []report.Number{0.2, nan, 0.8},
		Colours: []report.Severity{report.None, report.None, report.Good}, Say: func(v float64) string { return strconv.FormatFloat(v*100, 'f', -1, 64) + "%" }}
	r := &report.Report{Sections: []report.Section{{ID: "rates", Title: "Rates", Wide: true, Table: &report.Table{
		Header: []string{"", "now 2s", "1m"},
		Rows:   []report.TableRow{{ID: "prefix_hit_ratio", Label: "prefix hit ratio", Cells: []string{"80.0%", "60.0%"}, Trend: hit}},
	}}}}
	var b bytes.Buffer
	if err := Text(&b, r, Options{Width: 60, Color: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// 0.2 of 0..0.8 is 1 + round(7 × 0.25) = 3; 0.8 the top, green.
	if !strings.Contains(out, "▃ \x1b[32m█\x1b[0m 0–80%") {
		t.Errorf("trend cells and colours:\n%q", out)
	}
	if !strings.Contains(out, "trend, every 2s") {
		t.Errorf("no trend header:\n%s", out)
	}
	b.Reset()
	if err := Text(&b, r, Options{Width: 60, Glyphs: spark.ASCII}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "- # 0–80%") || strings.ContainsAny(b.String(), "▁▂▃▄▅▆▇█") {
		t.Errorf("ASCII trend:\n%s", b.String())
	}
}
