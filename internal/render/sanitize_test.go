package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// hostile strings a server could send as a model name, label or URL.
var hostile = []string{
	"\x1b]0;pwned\x07",
	"\x1b[2J",
	"\r",
	"\u009b31m",
	"\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\",
	"\x1bP+q\x1b\\",
	"\b\b\b\x7f",
	"\u009d0;pwned\u009c",
	"\xc2",
	"\u202erev",
}

func hostileReport() *report.Report {
	h := strings.Join(hostile, "x")
	rows := []report.Row{{Label: h, Value: h, Note: h, Bar: num(0.5), Severity: report.Bad}}
	return &report.Report{
		Source: "http://x/" + h, Dialect: h, Header: []string{h, h},
		Sections: []report.Section{
			{Title: h, Rows: rows},
			{Title: h, Rows: rows},
			{Title: h, Wide: true, Rows: rows, Table: &report.Table{
				Header: []string{h, h}, Rows: []report.TableRow{{Label: h, Cells: []string{h, h}}},
			}},
		},
		Notes: []report.Note{{Severity: report.Warn, Text: h}, {Severity: report.Severity(h), Text: h}},
		// JSON-only strings.
		Scalars: report.Map[report.Number]{h: 1},
		Extra:   report.Map[report.Number]{h: 2},
	}
}

func TestTextHostileReport(t *testing.T) {
	for _, color := range []bool{false, true} {
		for _, w := range []int{40, 80, 160} {
			out := renderText(t, hostileReport(), Options{Width: w, Color: color})
			checkOutput(t, out, w, color)
			if strings.Contains(out, "pwned") || strings.Contains(out, "evil") {
				t.Errorf("an escape sequence's payload reached the output: %q", out)
			}
			// What survives, by hand: the x separators, the hyperlink's
			// text, U+FFFD for the stray lead byte and the text after
			// the bidi override.
			if want := "xxxxlinkxxxx\uFFFDxrev"; w >= 80 && !strings.Contains(out, want) {
				t.Errorf("visible text %q not in output: %q", want, out)
			}
		}
	}
}

func TestTextHostileStringsInEveryField(t *testing.T) {
	// Each hostile string alone, in each field, must come out inert.
	for _, h := range hostile {
		r := &report.Report{
			Source: h, Dialect: h, Header: []string{h},
			Sections: []report.Section{{Title: h, Rows: []report.Row{{Label: h, Value: h, Note: h}},
				Table: &report.Table{Header: []string{h, h}, Rows: []report.TableRow{{Label: h, Cells: []string{h}}}}}},
			Notes: []report.Note{{Text: h}},
		}
		var b bytes.Buffer
		if err := Text(&b, r, Options{Width: 80}); err != nil {
			t.Fatal(err)
		}
		checkOutput(t, b.String(), 80, false)
	}
}
