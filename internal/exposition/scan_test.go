package exposition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// labelBomb is one series with n labels, on line 3 (about 11 bytes a label:
// 30,000 labels make the 338 KB body of the report).
func labelBomb(n int) string {
	var b strings.Builder
	b.WriteString("# HELP bomb A series with too many labels.\n# TYPE bomb gauge\nbomb{")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "l%d=\"%d\"", i, i)
	}
	b.WriteString("} 1\n")
	return b.String()
}

// series is one sample line with n labels.
func series(name string, n int) string {
	var b strings.Builder
	b.WriteString(name + "{")
	for i := range n {
		fmt.Fprintf(&b, "l%d=\"v\",", i)
	}
	b.WriteString("} 1\n")
	return b.String()
}

// parseError parses body and returns its *Error, failing the test when
// there is none or it is not fit for a terminal line.
func parseError(t *testing.T, body string, f Format) *Error {
	t.Helper()
	_, err := Parse([]byte(body), f)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if msg := e.Error(); strings.ContainsAny(msg, "\n\r\x00\x1b") || len(msg) > 600 {
		t.Errorf("message not one short clean line: %q", msg)
	}
	for _, h := range e.Hints {
		if h == "" || strings.ContainsAny(h, "\n\r\x1b") || strings.HasSuffix(h, ".") {
			t.Errorf("bad hint %q", h)
		}
	}
	return e
}

func TestLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name string
		body string
		line int
		msg  string // "" = accepted
	}{
		{"8,000 labels", labelBomb(8000), 3, "line 3: series has 8000 labels; inferscope reads at most 64 per series"},
		{"30,000 labels", labelBomb(30000), 3, "line 3: series has 30000 labels; inferscope reads at most 64 per series"},
		{"100,000 labels", labelBomb(100000), 3, "line 3: series has 100000 labels; inferscope reads at most 64 per series"},
		{"64 labels", series("a", 64), 0, ""},
		{"65 labels", series("a", 65), 1, "series has 65 labels"},
		{"65 labels in the braced form", strings.Replace(series("", 65), "{", `{"a",`, 1), 1, "series has 65 labels"},
		{"65 labels after a good line", "a 1\n" + series("b", 65), 2, "series has 65 labels"},
		{"label name at the limit", `a{` + long(256) + `="1"} 1` + "\n", 0, ""},
		{"label name over it", `a{` + long(257) + `="1"} 1` + "\n", 1, "label name of 257 bytes (\"xxxx"},
		{"quoted label name over it", `a{"` + long(257) + `"="1"} 1` + "\n", 1, "label name of 257 bytes"},
		{"label value at the limit", `a{v="` + long(4096) + `"} 1` + "\n", 0, ""},
		{"label value at the limit in escapes", `a{v="` + strings.Repeat(`\n`, 4096) + `"} 1` + "\n", 0, ""},
		{"long-value bomb", "a 1\n" + `a{v="` + long(1<<20) + `"} 1` + "\n", 2,
			`line 2: label "v" has a value of 1048576 bytes; inferscope reads label values of at most 4096 bytes`},
		{"label value over it", `a{v="` + long(4097) + `"} 1` + "\n", 1, "value of 4097 bytes"},
		{"metric name at the limit", long(4096) + " 1\n", 0, ""},
		{"metric name over it", long(4097) + " 1\n", 1, "metric name of 4097 bytes"},
		{"metric name over it in a HELP line", "# HELP " + long(4097) + " text\n", 1, "metric name of 4097 bytes"},
		// A bomb after a syntax error: the earlier line is not reached by
		// expfmt, so the bomb is what is reported, and quickly.
		{"bomb after garbage", "this is not { metrics\n" + labelBomb(30000), 4, "series has 30000 labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.msg == "" {
				if _, err := Parse([]byte(tt.body), Text); err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			e := parseError(t, tt.body, Text)
			if e.Kind != OverLimit || e.Line != tt.line || !strings.Contains(e.Error(), tt.msg) {
				t.Errorf("got %v (kind %d), want line %d with %q", e, e.Kind, tt.line, tt.msg)
			}
			if !strings.HasPrefix(e.Error(), "cannot read the exposition: ") || len(e.Hints) == 0 {
				t.Errorf("message %q hints %q", e.Error(), e.Hints)
			}
		})
	}
}

// An OpenMetrics body is held to the same limits, on its own line numbers.
func TestLimitsOpenMetrics(t *testing.T) {
	body := "# TYPE bomb gauge\n" + strings.Replace(labelBomb(1000), "# HELP bomb A series with too many labels.\n# TYPE bomb gauge\n", "", 1) + "# EOF\n"
	e := parseError(t, body, OpenMetrics)
	if e.Kind != OverLimit || e.Line != 2 {
		t.Errorf("got %v", e)
	}
}

func TestDuplicateSeries(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		f         Format
		line      int    // 0 = accepted
		msg       string // part of the message
		wantCount int    // for accepted bodies: series in the family "a" or "h"
	}{
		{name: "the report's three counters", body: "# HELP tabbyapi:requests_total Requests.\n# TYPE tabbyapi:requests_total counter\n" +
			"tabbyapi:requests_total 180\n# comment\ntabbyapi:requests_total 999\ntabbyapi:requests_total 1\n",
			line: 5, msg: "line 5: duplicate series tabbyapi:requests_total (first at line 3)"},
		{name: "same labels in another order", body: "a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2\n", line: 2,
			msg: `duplicate series a{y="2",x="1"} (first at line 1)`},
		{name: "quoted and plain names are one name", body: "a{x=\"1\"} 1\n{\"a\",\"x\"=\"1\"} 2\n", line: 2, msg: "first at line 1"},
		{name: "with timestamps", body: "a 1 1000\na 2 2000\n", line: 2},
		{name: "different values are different series", body: "a{x=\"1\"} 1\na{x=\"2\"} 1\na 1\n", wantCount: 3},
		{name: "escaped values compare as written", body: "a{x=\"\\\"\"} 1\na{x=\"\\\\\"} 1\n", wantCount: 2},
		{name: "a histogram's lines are one series", wantCount: 2, body: "# TYPE h histogram\n" +
			"h_bucket{le=\"1\",m=\"a\"} 1\nh_bucket{le=\"+Inf\",m=\"a\"} 2\nh_sum{m=\"a\"} 3\nh_count{m=\"a\"} 2\n" +
			"h_bucket{le=\"1\",m=\"b\"} 1\nh_bucket{le=\"+Inf\",m=\"b\"} 2\nh_sum{m=\"b\"} 3\nh_count{m=\"b\"} 2\n"},
		{name: "the same le twice", line: 3, msg: `duplicate series h_bucket{le="1"} (first at line 2)`,
			body: "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"},
		{name: "le 1 and 1.0 are one bucket", line: 3, msg: "first at line 2",
			body: "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1.0\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"},
		{name: "a histogram's sum twice", line: 5, msg: "duplicate series h_sum",
			body: "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\nh_sum 3\n"},
		{name: "a summary's quantiles", wantCount: 1,
			body: "# TYPE h summary\nh{quantile=\"0.5\"} 1\nh{quantile=\"0.9\"} 2\nh_sum 3\nh_count 2\n"},
		{name: "a summary's quantile twice", line: 3, msg: "first at line 2",
			body: "# TYPE h summary\nh{quantile=\"0.5\"} 1\nh{quantile=\"5e-1\"} 2\nh_sum 3\nh_count 2\n"},
		{name: "an untyped le is a plain label", wantCount: 2, body: "a{le=\"1\"} 1\na{le=\"1.0\"} 1\n"},
		{name: "OpenMetrics", f: OpenMetrics, line: 4, msg: "duplicate series a_total (first at line 3)",
			body: "# TYPE a counter\n# HELP a Requests.\na_total 1\na_total 2\n# EOF\n"},
		{name: "OpenMetrics _created is not a duplicate", f: OpenMetrics, wantCount: 1,
			body: "# TYPE a counter\na_total 1\na_created 1.7e9\n# EOF\n"},
		// The first fault wins: a syntax error before the duplicate is
		// reported as expfmt words it, a duplicate before a syntax error
		// as a duplicate.
		{name: "syntax error first", body: "a 1\nb one\na 2\n", line: 2, msg: "expected float"},
		{name: "duplicate first", body: "a 1\na 2\nb one\n", line: 2, msg: "duplicate series a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			if f == "" {
				f = Text
			}
			if tt.line == 0 {
				fams, err := Parse([]byte(tt.body), f)
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				fam := find(fams, "a")
				if fam == nil {
					fam = find(fams, "h")
				}
				if fam == nil {
					fam = find(fams, "a_total")
				}
				if fam == nil || len(fam.GetMetric()) != tt.wantCount {
					t.Fatalf("families %v, want %d series", fams, tt.wantCount)
				}
				return
			}
			e := parseError(t, tt.body, f)
			if e.Line != tt.line || !strings.Contains(e.Error(), tt.msg) {
				t.Errorf("got %v, want line %d with %q", e, tt.line, tt.msg)
			}
			if strings.Contains(tt.msg, "duplicate") && (e.Kind != Invalid || len(e.Hints) == 0) {
				t.Errorf("kind %d hints %q", e.Kind, e.Hints)
			}
		})
	}
}

func TestRepeatedFamily(t *testing.T) {
	tests := []struct {
		name string
		body string
		f    Format
		line int
		msg  string
	}{
		// Repeated blocks that agree are read (below); what they repeat
		// of a series is the error.
		{"the same series in two blocks", "# HELP a Requests.\n# TYPE a counter\na 1\n# HELP a Requests.\n# TYPE a counter\na 2\n", Text, 6,
			"line 6: duplicate series a (first at line 3)"},
		{"TYPE twice, differently", "# TYPE a counter\na 1\n\n# TYPE a gauge\n", Text, 4, "second # TYPE for a (first at line 1) says gauge where the first said counter"},
		{"TYPE after samples", "a 1\n# TYPE a counter\n", Text, 2, "# TYPE for a comes after its samples (line 1)"},
		{"OpenMetrics TYPE twice, differently", "# TYPE a gauge\n# HELP a A.\na 1\n# TYPE a summary\n# EOF\n", OpenMetrics, 4, "second # TYPE for a (first at line 1)"},
		// A histogram's _count names its family for expfmt: its message,
		// reworded.
		{"HELP through a histogram's _count", "# TYPE h histogram\n# HELP h H.\n# HELP h_count H.\n", Text, 3,
			"line 3: second # HELP for h: the exposition repeats the family"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := parseError(t, tt.body, tt.f)
			if e.Kind != Invalid || e.Line != tt.line || !strings.Contains(e.Error(), tt.msg) {
				t.Errorf("got %v (kind %d), want line %d with %q", e, e.Kind, tt.line, tt.msg)
			}
			if len(e.Hints) == 0 || !strings.Contains(e.Hints[0], "processes") && !strings.Contains(e.Hints[0], "joined") {
				t.Errorf("hints %q", e.Hints)
			}
		})
	}
	// Two outputs joined, each family's blocks agreeing (Ray Serve's
	// exporter, vendors' fixtures): read as one exposition, as Prometheus
	// reads it.
	joined := "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 1\n# HELP b B.\n# TYPE b gauge\nb 2\n# HELP a A, again.\n# TYPE a gauge\na{x=\"2\"} 3\n"
	for _, f := range []Format{Text, OpenMetrics} {
		body := joined
		if f == OpenMetrics {
			body += "# EOF\n"
		}
		fams, err := Parse([]byte(body), f)
		if err != nil {
			t.Fatalf("%s: joined blocks: %v", f, err)
		}
		if len(fams) != 2 || fams[0].GetName() != "a" || len(fams[0].GetMetric()) != 2 || fams[0].GetHelp() != "A." {
			t.Errorf("%s: joined blocks read as %v", f, fams)
		}
	}
	// A HELP with no text is ignored by the format, so it repeats nothing.
	if _, err := Parse([]byte("# HELP a Requests.\n# HELP a\n# HELP a \na 1\n"), Text); err != nil {
		t.Errorf("empty HELP: %v", err)
	}
}

// Files saved on Windows, cut short, or in another encoding.
func TestSavedFileShapes(t *testing.T) {
	const unix = "# HELP a Requests served.\n# TYPE a counter\na{m=\"x\"} 3\n# TYPE b gauge\nb -nan\n"
	crlf := strings.ReplaceAll(unix, "\n", "\r\n")
	om := "# TYPE a counter\n# HELP a Requests served.\na_total{m=\"x\"} 3\n# TYPE b gauge\nb NaN\n# EOF\n"
	accepted := []struct {
		name string
		body string
		f    Format
	}{
		{"unix", unix, Text},
		{"crlf", crlf, Text},
		{"bom", "\ufeff" + unix, Text},
		{"bom and crlf", "\ufeff" + crlf, Text},
		{"no final newline", strings.TrimSuffix(unix, "\n"), Text},
		{"crlf, no final newline", strings.TrimSuffix(crlf, "\r\n"), Text},
		{"last line a comment without newline", unix + "# the end", Text},
		{"openmetrics crlf", strings.ReplaceAll(om, "\n", "\r\n"), OpenMetrics},
		{"openmetrics bom", "\ufeff" + om, OpenMetrics},
		{"openmetrics without final newline", strings.TrimSuffix(om, "\n"), OpenMetrics},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := DetectFormat("", []byte(tt.body)); err != nil || f != tt.f {
				t.Fatalf("DetectFormat = %q, %v; want %q", f, err, tt.f)
			}
			fams, err := Parse([]byte(tt.body), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			a := find(fams, "a")
			if a == nil {
				a = find(fams, "a_total")
			}
			if a == nil || a.GetHelp() != "Requests served." || a.GetMetric()[0].GetCounter().GetValue() != 3 ||
				a.GetMetric()[0].GetLabel()[0].GetValue() != "x" {
				t.Errorf("a = %v", a)
			}
			if b := find(fams, "b"); b == nil || !math.IsNaN(b.GetMetric()[0].GetGauge().GetValue()) {
				t.Errorf("b = %v", b)
			}
		})
	}

	rejected := []struct {
		name string
		body string
		line int
		msg  string
		hint string
	}{
		{"invalid UTF-8 on line 4", "a 1\nb 2\n# HELP c C.\nc{x=\"caf\xe9\"} 1\n", 4, "line 4: byte 0xe9 is not UTF-8", "iconv"},
		{"UTF-16 with BOM", "\xff\xfe#\x00 \x00H\x00", 0, "UTF-16", "PowerShell"},
		{"UTF-16 big-endian", "\x00a\x00 \x001", 0, "UTF-16", "iconv -f UTF-16"},
		{"NUL", "a 1\nb 2\x00\n", 2, "NUL", ""},
		{"bad escape", "a 1\nb 2\n\nc{x=\"a\\qb\"} 1\n", 4, `line 4: invalid escape \q in label value "a\qb"`, `\\`},
		{"bad escape, hostile", "c{x=\"\x1b]0;pwned\x07\\\x1b[2J\"} 1\n", 1, `invalid escape \ followed by byte 0x1b in label value "\"`, ""},
		{"bad escape in a quoted name", "{\"a\\q\"} 1\n", 1, `invalid escape \q in quoted name "a\q"`, ""},
		{"bad escape in HELP", "# HELP a Path C:\\temp.\na 1\n", 1, `invalid escape \t in the # HELP text of a`, ""},
	}
	for _, tt := range rejected {
		t.Run(tt.name, func(t *testing.T) {
			e := parseError(t, tt.body, Text)
			if e.Line != tt.line || !strings.Contains(e.Error(), tt.msg) {
				t.Errorf("got %v, want line %d with %q", e, tt.line, tt.msg)
			}
			if tt.hint != "" && (len(e.Hints) == 0 || !strings.Contains(e.Hints[0], tt.hint)) {
				t.Errorf("hints %q, want %q", e.Hints, tt.hint)
			}
		})
	}
}

func TestNotMetrics(t *testing.T) {
	tests := []struct {
		name, ct, body string
		want           string // "" = read as text
	}{
		{"json by type", "application/json", `{"object":"list","data":[]}`, "the body is JSON"},
		{"json by type, charset", "application/problem+json; charset=utf-8", `{"detail":"x"}`, "the body is JSON"},
		{"json object", "", "\ufeff  {\n  \"models\": []\n}", "the body is JSON"},
		{"json array", "text/plain", `[{"id":1}]`, "the body is JSON"},
		{"empty object", "", "{}", "the body is JSON"},
		{"json object with escapes in the key", "", `{"a\"b" : 1}`, "the body is JSON"},
		{"utf-8 metric name is not json", "", "{\"my.metric\"} 1\n", ""},
		{"utf-8 metric name with labels", "", "{\"my.metric\", a=\"b\"} 1\n", ""},
		{"html by type", "text/html; charset=utf-8", "<html>", "HTML page"},
		{"html by body", "", "\n\n<!DOCTYPE html>", "HTML page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := DetectFormat(tt.ct, []byte(tt.body))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Parse([]byte(tt.body), f); err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != NotMetrics || !strings.Contains(e.Error(), tt.want) || len(e.Hints) == 0 {
				t.Fatalf("DetectFormat: %v", err)
			}
			if tt.ct == "" {
				// Parse on its own says the same.
				if e := parseError(t, tt.body, Text); e.Kind != NotMetrics || !strings.Contains(e.Error(), tt.want) {
					t.Errorf("Parse: %v", e)
				}
			}
		})
	}
	_, err := DetectFormat("application/json", []byte(`{"a":1}`))
	var e *Error
	if errors.As(err, &e); e == nil || !strings.Contains(e.Hints[0], "/metrics") {
		t.Errorf("JSON hint: %v", err)
	}
}

// An error from expfmt that is not reworded keeps its line, one clean line.
func TestExpfmtErrorsCleaned(t *testing.T) {
	e := parseError(t, "a 1\nb{x=\"\x1b[2Jy\"} one\n", Text)
	if e.Kind != Malformed || e.Line != 2 || !strings.Contains(e.Reason, `expected float as value, got "one"`) {
		t.Errorf("got %v", e)
	}
	e = parseError(t, "a{x=\"1\",x=\"2\"} 1\n", Text)
	if e.Kind != Invalid || !strings.Contains(e.Reason, `label "x" appears twice`) {
		t.Errorf("got %v", e)
	}
}

func TestParseContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A small body (the parser's reader sees the cancellation) and a large
	// one (the pre-scan does).
	for _, body := range []string{"a 1\n", labelBombFree(50000)} {
		_, err := ParseContext(ctx, []byte(body), Text)
		var e *Error
		if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
			t.Errorf("%d bytes: err = %v, want context.Canceled and no *Error", len(body), err)
		}
	}
	if _, err := ParseContext(context.Background(), []byte("a 1\n"), Text); err != nil {
		t.Error(err)
	}
}

// labelBombFree is n distinct small series: a body that passes the
// pre-scan and takes the parser a while.
func labelBombFree(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s{i=\"%d\"} 1\n", i)
	}
	return b.String()
}

// What Parse accepts never holds one series twice, nor a series with more
// labels than the limit: checked on the families, independently of the
// pre-scan.
func checkAccepted(t *testing.T, fams []*dto.MetricFamily) {
	t.Helper()
	for _, mf := range fams {
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			if n := len(m.GetLabel()); n > MaxLabelsPerSeries {
				t.Fatalf("%s: a series with %d labels accepted", mf.GetName(), n)
			}
			pairs := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+"\x00"+l.GetValue())
			}
			sortStrings(pairs)
			k := strings.Join(pairs, "\x01")
			if seen[k] {
				t.Fatalf("%s: series %v accepted twice", mf.GetName(), m.GetLabel())
			}
			seen[k] = true
			if h := m.GetHistogram(); h != nil {
				bounds := map[float64]bool{}
				for _, b := range h.GetBucket() {
					if bounds[b.GetUpperBound()] {
						t.Fatalf("%s: bucket le=%v accepted twice", mf.GetName(), b.GetUpperBound())
					}
					bounds[b.GetUpperBound()] = true
				}
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
