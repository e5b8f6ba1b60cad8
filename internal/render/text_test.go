package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
)

// sgrRE matches exactly the sequences Text may emit with colour on.
var sgrRE = regexp.MustCompile("\x1b\\[(?:0|1|2|31|32|33)m")

func renderText(t testing.TB, r *report.Report, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Text(&b, r, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTextGolden(t *testing.T) {
	tests := []struct {
		golden string
		r      *report.Report
		o      Options
	}{
		{"full_w80.golden", fullReport(), Options{Width: 80}},
		{"full_w160.golden", fullReport(), Options{Width: 160}},
		{"full_w120_c2.golden", fullReport(), Options{Width: 120, Columns: 2}},
		{"full_w250.golden", fullReport(), Options{Width: 250}},
		{"full_w80_color.golden", fullReport(), Options{Width: 80, Color: true}},
		{"full_w160_color.golden", fullReport(), Options{Width: 160, Color: true}},
		{"empty_w80.golden", &report.Report{Schema: 1, Source: "scrape.prom", Dialect: "tabbyapi"}, Options{Width: 80}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden.Check(t, tt.golden, renderText(t, tt.r, tt.o))
		})
	}
}

func TestTextDefaultWidth(t *testing.T) {
	// Width 0 and negative widths lay out at DefaultWidth (160).
	want := renderText(t, fullReport(), Options{Width: 160})
	for _, w := range []int{0, -5} {
		if got := renderText(t, fullReport(), Options{Width: w}); got != want {
			t.Errorf("Width %d differs from Width 160", w)
		}
	}
}

// checkOutput fails when a line of out is wider than width cells (escape
// sequences of colour not counted), when colour is off and out holds an
// escape byte, or when anything but Text's own SGR sequences could reach
// the terminal.
func checkOutput(t testing.TB, out string, width int, color bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output is not UTF-8: %q", out)
	}
	if !color && strings.ContainsRune(out, 0x1b) {
		t.Fatalf("escape byte with colour off: %q", out)
	}
	visible := sgrRE.ReplaceAllString(out, "")
	for _, r := range visible {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
			t.Fatalf("control character %U in output: %q", r, out)
		}
	}
	for i, l := range strings.Split(strings.TrimSuffix(visible, "\n"), "\n") {
		if w := cells(l); w > width {
			t.Fatalf("line %d is %d cells, over the width %d: %q", i+1, w, width, l)
		}
	}
}

func TestTextFitsWidth(t *testing.T) {
	for width := 1; width <= 260; width++ {
		for _, cols := range []int{0, 1, 2, 3, 5} {
			for _, color := range []bool{false, true} {
				o := Options{Width: width, Columns: cols, Color: color}
				checkOutput(t, renderText(t, fullReport(), o), width, color)
			}
		}
	}
}

func TestTextColorChangesNoText(t *testing.T) {
	// Colour only wraps spans in SGR: removing it must give the plain
	// output back, so nothing is said by colour alone.
	for _, w := range []int{60, 80, 120, 160, 250} {
		plainOut := renderText(t, fullReport(), Options{Width: w})
		colored := renderText(t, fullReport(), Options{Width: w, Color: true})
		if colored == plainOut {
			t.Fatalf("width %d: colour on changed nothing", w)
		}
		if got := sgrRE.ReplaceAllString(colored, ""); got != plainOut {
			t.Errorf("width %d: colour output without SGR differs from plain output", w)
		}
	}
}

func TestTextSeverityColors(t *testing.T) {
	r := &report.Report{Sections: []report.Section{{Title: "S", Rows: []report.Row{
		{Label: "g", Value: "good-value", Severity: report.Good},
		{Label: "w", Value: "warn-value", Severity: report.Warn},
		{Label: "b", Value: "bad-value", Severity: report.Bad},
		{Label: "d", Value: "dim-value", Severity: report.Dim},
		{Label: "n", Value: "none-value"},
	}}}}
	out := renderText(t, r, Options{Width: 80, Color: true})
	for _, want := range []string{
		"\x1b[32mgood-value\x1b[0m",
		"\x1b[33mwarn-value\x1b[0m",
		"\x1b[31mbad-value\x1b[0m",
		"\x1b[2mdim-value\x1b[0m",
		"\x1b[1mS\x1b[0m",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%q", want, out)
		}
	}
	if strings.Contains(out, "m"+"none-value") {
		t.Errorf("a row without severity is coloured: %q", out)
	}
}

func TestBar(t *testing.T) {
	// Expected strings worked out by hand: 10 cells are 80 eighths.
	tests := []struct {
		v     float64
		want  string
		ascii string
	}{
		{0, "░░░░░░░░░░", ".........."},
		{-1, "░░░░░░░░░░", ".........."},
		{0.001, "▏░░░░░░░░░", "#........."},  // above 0 shows one eighth, one cell in ASCII
		{0.5, "█████░░░░░", "#####....."},    // 40 eighths
		{0.33, "███▎░░░░░░", "###......."},   // 26.4 → 26 = 3 full + 2
		{0.66, "██████▋░░░", "#######..."},   // 52.8 → 53 = 6 full + 5; 6.6 cells → 7
		{0.9999, "█████████▉", "#########."}, // below 1 never reads full
		{1, "██████████", "##########"},
		{7, "██████████", "##########"},
	}
	for _, tt := range tests {
		fill, track := bar(tt.v, 10, spark.ASCII)
		if got := fill + track; got != tt.ascii {
			t.Errorf("ASCII bar(%v) = %q, want %q", tt.v, got, tt.ascii)
		}
		fill, track = bar(tt.v, 10, spark.Blocks)
		if got := fill + track; got != tt.want {
			t.Errorf("bar(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if w := cells(fill + track); w != 10 {
			t.Errorf("bar(%v) is %d cells", tt.v, w)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		heights []int
		n       int
		want    string
	}{
		// Column height = heights + one blank line between sections.
		{[]int{6, 4, 8, 4, 3, 5, 4, 4, 3}, 2, "[[0 1 2 3] [4 5 6 7 8]]"}, // 25 | 23
		{[]int{6, 4, 8, 4, 3, 5, 4, 4, 3}, 3, "[[0 1] [2 3 4] [5 6 7 8]]"},
		{[]int{10, 1}, 2, "[[0] [1]]"},
		{[]int{1, 1, 1, 1}, 2, "[[0 1] [2 3]]"},
		{[]int{1, 1, 1}, 2, "[[0 1] [2]]"}, // ties fill the left column first
		{[]int{5}, 3, "[[0]]"},
		{[]int{2, 2, 9}, 2, "[[0 1] [2]]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(split(tt.heights, tt.n)); got != tt.want {
			t.Errorf("split(%v, %d) = %s, want %s", tt.heights, tt.n, got, tt.want)
		}
	}
}

func TestColumnCount(t *testing.T) {
	nine := make([]report.Section, 9)
	tests := []struct {
		want, width int
		secs        []report.Section
		cols        int
	}{
		{0, 149, nine, 1},
		{0, 150, nine, 2},
		{0, 239, nine, 2},
		{0, 240, nine, 3},
		{2, 120, nine, 2},
		{2, 62, nine, 1},  // (62-3)/2 = 29 < 30
		{2, 63, nine, 2},  // (63-3)/2 = 30
		{5, 160, nine, 5}, // (160-12)/5 = 29 → 4
		{1, 300, nine, 1},
		{0, 160, nine[:1], 1}, // one section never takes half the width
		{0, 160, []report.Section{{}, {Wide: true}, {}}, 1},
		{0, 160, nil, 1},
	}
	tests[7].cols = 4
	for _, tt := range tests {
		if got := columnCount(tt.want, tt.width, tt.secs); got != tt.cols {
			t.Errorf("columnCount(%d, %d, %d sections) = %d, want %d", tt.want, tt.width, len(tt.secs), got, tt.cols)
		}
	}
}

func TestWaited(t *testing.T) {
	tests := []struct {
		sec  float64
		want string
	}{
		{0, ""}, {-1, ""}, {0.0004, "0.4 ms"}, {0.012, "12 ms"}, {0.9996, "1.00 s"},
		{6.8, "6.80 s"}, {90, "1.5 min"},
	}
	for _, tt := range tests {
		if got := waited(tt.sec); got != tt.want {
			t.Errorf("waited(%v) = %q, want %q", tt.sec, got, tt.want)
		}
	}
}

func TestFitAndPad(t *testing.T) {
	tests := []struct {
		s     string
		w     int
		fit   string
		left  string
		right string
	}{
		{"abcdef", 4, "abc…", "abc…", "abc…"},
		{"ab", 4, "ab", "ab  ", "  ab"},
		{"模型名前", 5, "模型…", "模型…", "模型…"}, // 2+2+1
		{"模型名前", 4, "模…", "模… ", " 模…"},  // 2+1: the next glyph would need 5
		{"模型", 4, "模型", "模型", "模型"},
		{"🚀🚀", 3, "🚀…", "🚀…", "🚀…"},
		{"≤ 5 · — x", 9, "≤ 5 · — x", "≤ 5 · — x", "≤ 5 · — x"},
		{"abc", 1, "…", "…", "…"},
		{"abc", 0, "", "", ""},
	}
	for _, tt := range tests {
		if got := fit(tt.s, tt.w); got != tt.fit {
			t.Errorf("fit(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.fit)
		}
		if got := joinSpans(line{}.addLeft(tt.s, tt.w, bold)); got != tt.left {
			t.Errorf("addLeft(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.left)
		}
		if got := joinSpans(line{}.addRight(tt.s, tt.w, bold)); got != tt.right {
			t.Errorf("addRight(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.right)
		}
	}
}

func joinSpans(l line) string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.text)
	}
	return b.String()
}

func TestWrap(t *testing.T) {
	tests := []struct {
		s    string
		w, n int
		want []string
	}{
		{"raise sysmem_kv_cache now", 12, 8, []string{"raise", "sysmem_kv_ca", "che now"}},
		{"a b c d", 3, 8, []string{"a b", "c d"}},
		{"  a   b  ", 1, 8, []string{"a", "b"}},
		{"模型名前です", 5, 8, []string{"模型", "名前", "です"}},
		{"", 5, 8, nil},
		{"🚀", 1, 8, []string{"…"}},
		{"a b c d e f", 3, 2, []string{"a b", "c …"}}, // the last line cut
		{"a b c d", 3, 0, nil},
	}
	for _, tt := range tests {
		if got := wrap(tt.s, tt.w, tt.n); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("wrap(%q, %d, %d) = %q, want %q", tt.s, tt.w, tt.n, got, tt.want)
		}
	}
}

func TestAlignmentCountsCells(t *testing.T) {
	// Every value starts at the same display column and every note at the
	// same display column whatever the labels are made of: 2 indent + 8
	// (the widest label, "模型名前") + 2 gap = 12 for values, 12 + 5
	// ("VALUE") + 2 = 19 for notes.
	labels := []string{"—", "·", "≤ 5", "模型名前", "🚀 x", "ab"}
	var rows []report.Row
	for _, l := range labels {
		rows = append(rows, report.Row{Label: l, Value: "VALUE", Note: "NOTE"})
	}
	out := renderText(t, &report.Report{Sections: []report.Section{{Title: "T", Rows: rows}}}, Options{Width: 80})
	n := 0
	for _, l := range strings.Split(out, "\n") {
		i := strings.Index(l, "VALUE")
		if i < 0 {
			continue
		}
		n++
		if c := cells(l[:i]); c != 12 {
			t.Errorf("value at cell %d, want 12: %q", c, l)
		}
		if c := cells(l[:strings.Index(l, "NOTE")]); c != 19 {
			t.Errorf("note at cell %d, want 19: %q", c, l)
		}
	}
	if n != len(labels) {
		t.Fatalf("found %d rows, want %d:\n%s", n, len(labels), out)
	}
}

func TestTableAlignment(t *testing.T) {
	r := &report.Report{Sections: []report.Section{{Title: "Rates", Wide: true, Table: &report.Table{
		Header: []string{"", "now", "≤30s", "1m"},
		Rows: []report.TableRow{
			{Label: "模型 tok/s", Cells: []string{"1", "<0.01", "12.5"}},
			{Label: "r", Cells: []string{"0"}}, // short row: blank cells
		},
	}}}}
	out := renderText(t, r, Options{Width: 80})
	// Label column 10 cells ("模型 tok/s"), cells 5 wide ("<0.01"),
	// right-aligned after a 2-cell gap: by hand.
	want := "inferscope\n\n" +
		"Rates\n" +
		"                now   ≤30s     1m\n" +
		"  模型 tok/s      1  <0.01   12.5\n" +
		"  r               0\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestTableDropsColumnsThatDoNotFit(t *testing.T) {
	r := &report.Report{Sections: []report.Section{{Title: "Rates", Wide: true, Table: &report.Table{
		Header: []string{"what", "c1", "c2", "c3", "c4"},
		Rows:   []report.TableRow{{Label: "abcdefgh", Cells: []string{"11111", "22222", "33333", "44444"}}},
	}}}}
	// Width 30: 2 indent + 8 label, then (2+5) per cell: two cells (24)
	// and the marker "  …" (27); a third cell would need 31.
	out := renderText(t, r, Options{Width: 30})
	want := "inferscope\n\nRates\n" +
		"  what         c1     c2  …\n" +
		"  abcdefgh  11111  22222\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestTruncatesLongText(t *testing.T) {
	long := strings.Repeat("long label ", 20)
	r := &report.Report{Sections: []report.Section{{Title: strings.Repeat("Title ", 30), Rows: []report.Row{
		{Label: long, Value: strings.Repeat("v", 200), Note: long},
	}}}}
	out := renderText(t, r, Options{Width: 60})
	checkOutput(t, out, 60, false)
	lines := strings.Split(out, "\n")
	// Title, then the row: both cut with an ellipsis at the edge.
	if got := lines[2]; !strings.HasSuffix(got, "…") || cells(got) != 60 {
		t.Errorf("title not cut to 60 cells with …: %q", got)
	}
	if got := lines[3]; !strings.Contains(got, "…") {
		t.Errorf("row not cut with …: %q", got)
	}
}

func TestNoteMarkers(t *testing.T) {
	r := &report.Report{Notes: []report.Note{
		{Severity: report.Bad, Text: "bad one"},
		{Severity: report.Warn, Text: "warn one"},
		{Severity: report.Good, Text: "good one"},
		{Severity: report.Dim, Text: "dim one"},
		{Severity: report.Info, Text: "info one"},
		{Text: "plain one"},
	}}
	out := renderText(t, r, Options{Width: 80})
	want := "inferscope\n\nNotes\n" +
		"  ✗ bad one\n" +
		"  ! warn one\n" +
		"  ✓ good one\n" +
		"  · dim one\n" +
		"  · info one\n" +
		"  · plain one\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestNoteWrapsUnderItself(t *testing.T) {
	r := &report.Report{Notes: []report.Note{{Severity: report.Bad, Text: "raise sysmem_kv_cache so pages are read back"}}}
	out := renderText(t, r, Options{Width: 24})
	// 24 - 4 (indent and marker) = 20 cells of text per line.
	want := "inferscope\n\nNotes\n" +
		"  ✗ raise\n" +
		"    sysmem_kv_cache so\n" +
		"    pages are read back\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestSectionsKeepOrder(t *testing.T) {
	// Reading down the first column and then the second gives the
	// report's order, and the wide section comes after both.
	var secs []report.Section
	titles := []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo"}
	for i, title := range titles {
		rows := make([]report.Row, i+1)
		for j := range rows {
			rows[j] = report.Row{Label: fmt.Sprintf("%s row %d", title, j), Value: "1"}
		}
		secs = append(secs, report.Section{Title: title, Rows: rows})
	}
	secs = append(secs, report.Section{Title: "Wide", Wide: true, Rows: []report.Row{{Label: "w", Value: "2"}}})
	out := renderText(t, &report.Report{Sections: secs}, Options{Width: 160})
	lines := strings.Split(out, "\n")
	var left, right []string
	colStart := (160-gutter)/2 + gutter
	for _, l := range lines {
		if l != "" && l[0] != ' ' {
			left = append(left, strings.Fields(l)[0])
		}
		if len(l) > colStart && l[colStart] != ' ' && l[colStart-1] == ' ' {
			right = append(right, strings.Fields(l[colStart:])[0])
		}
	}
	// Heights 2..6 with blank lines: Alpha+Bravo+Charlie = 2+3+4+2 = 11,
	// Delta+Echo = 5+6+1 = 12, the smallest tallest column.
	if got, want := fmt.Sprint(left), "[inferscope Alpha Bravo Charlie Wide]"; got != want {
		t.Errorf("left column titles %s, want %s\n%s", got, want, out)
	}
	if got, want := fmt.Sprint(right), "[Delta Echo]"; got != want {
		t.Errorf("right column titles %s, want %s\n%s", got, want, out)
	}
}

func TestTitleLines(t *testing.T) {
	r := &report.Report{
		Source: "http://gpu-box:5000/metrics", Dialect: "tabbyapi",
		ScrapedAt: report.Time{Time: time.Date(2025, 6, 1, 12, 0, 5, 0, time.UTC)}, ScrapeSeconds: 6.8,
	}
	one := "inferscope · tabbyapi · http://gpu-box:5000/metrics · scraped 2025-06-01 12:00:05 UTC · waited 6.80 s\n"
	if got := renderText(t, r, Options{Width: 160}); got != one {
		t.Errorf("got %q, want %q", got, one)
	}
	// At 50 cells the time and wait move to a second line and the source
	// is cut to the 29 cells left after "inferscope · tabbyapi".
	two := "inferscope · tabbyapi · http://gpu-box:5000/metri…\n" + "scraped 2025-06-01 12:00:05 UTC · waited 6.80 s\n"
	if got := renderText(t, r, Options{Width: 50}); got != two {
		t.Errorf("got %q, want %q", got, two)
	}
}

// The title says what the time is when it is not a scrape's own.
func TestTitleTimeSource(t *testing.T) {
	at := time.Date(2024, 3, 9, 8, 7, 6, 0, time.UTC)
	for _, tt := range []struct{ source, want string }{
		{"", "inferscope · f.prom · scraped 2024-03-09 08:07:06 UTC\n"},
		{"scrape", "inferscope · f.prom · scraped 2024-03-09 08:07:06 UTC\n"},
		{"saved", "inferscope · f.prom · scraped 2024-03-09 08:07:06 UTC\n"},
		{"given", "inferscope · f.prom · scraped 2024-03-09 08:07:06 UTC\n"},
		{"mtime", "inferscope · f.prom · file modified 2024-03-09 08:07:06 UTC (taken as the scrape time)\n"},
		{"now", "inferscope · f.prom · read 2024-03-09 08:07:06 UTC\n"},
	} {
		r := &report.Report{Source: "f.prom", ScrapedAt: report.Time{Time: at}, TimeSource: tt.source}
		if got := renderText(t, r, Options{Width: 160}); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.source, got, tt.want)
		}
	}
}

func TestFootnoteRow(t *testing.T) {
	r := &report.Report{Sections: []report.Section{{Title: "T", Rows: []report.Row{
		{Label: "a", Value: "1", Note: "n"},
		{Note: "a footnote that is long enough to wrap at this width", Severity: report.Dim},
	}}}}
	// Width 30: the footnote takes the 28 cells after the indent and
	// wraps at the last space that fits.
	want := "inferscope\n\nT\n" +
		"  a  1  n\n" +
		"  a footnote that is long\n" +
		"  enough to wrap at this width\n"
	if got := renderText(t, r, Options{Width: 30}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestValueColumn(t *testing.T) {
	// Width 60, labels of 2 cells: values start at cell 6 (indent 2,
	// label 2, gap 2).
	n40, v20 := strings.Repeat("n", 40), strings.Repeat("v", 20)
	tests := []struct {
		name   string
		rows   []report.Row
		noteAt []int // cell where each row's note starts
	}{
		{
			// A 20-cell value column would cut 8 cells of the 40-cell
			// note; a 1-cell one only pushes the long value's note (3).
			name:   "one long value pushes its own note",
			rows:   []report.Row{{Label: "ab", Value: "x", Note: n40}, {Label: "ab", Value: v20, Note: "m"}},
			noteAt: []int{9, 28},
		},
		{
			// Everything fits either way: the wider column aligns both.
			name:   "tie keeps notes aligned",
			rows:   []report.Row{{Label: "ab", Value: "x", Note: "short"}, {Label: "ab", Value: v20, Note: "m"}},
			noteAt: []int{28, 28},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderText(t, &report.Report{Sections: []report.Section{{Title: "T", Rows: tt.rows}}}, Options{Width: 60})
			lines := strings.Split(out, "\n")[3:]
			for i, r := range tt.rows {
				l := lines[i]
				j := strings.LastIndex(l, r.Note)
				if j < 0 {
					t.Fatalf("note %q not whole in %q", r.Note, l)
				}
				if c := cells(l[:j]); c != tt.noteAt[i] {
					t.Errorf("row %d: note at cell %d, want %d: %q", i, c, tt.noteAt[i], l)
				}
			}
		})
	}
}
