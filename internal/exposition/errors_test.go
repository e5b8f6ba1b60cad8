package exposition

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/golden"
)

// TestErrorCatalogue renders every kind of error Parse and DetectFormat
// give into testdata/errors.golden, for review in one place. The
// assertions on each live in the other tests; this one guards the text.
func TestErrorCatalogue(t *testing.T) {
	cases := []struct {
		name, ct, body string
		f              Format
	}{
		{"label bomb", "", labelBomb(30000), Text},
		{"label name too long", "", "a{" + strings.Repeat("n", 300) + "=\"1\"} 1\n", Text},
		{"label value too long", "", "a 1\na{model=\"" + strings.Repeat("v", 5000) + "\"} 1\n", Text},
		{"metric name too long", "", strings.Repeat("m", 5000) + " 1\n", Text},
		{"line with many = that cannot be followed", "", "a\"b\"{" + strings.Repeat("x=\"\",", 100) + "} 1\n", Text},
		{"duplicate series", "", "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 180\n\n\ntabbyapi:requests_total 999\ntabbyapi:requests_total 1\n", Text},
		{"duplicate bucket", "", "# TYPE h histogram\nh_bucket{le=\"0.5\",model_name=\"m\"} 1\nh_bucket{model_name=\"m\",le=\"0.50\"} 1\n", Text},
		{"label twice", "", "a{x=\"1\",x=\"2\"} 1\n", Text},
		{"HELP twice", "", "# HELP a A.\n# TYPE a gauge\na 1\n# HELP a A.\n# TYPE a gauge\na 1\n", Text},
		{"TYPE twice, differently", "", "# TYPE a gauge\n# TYPE a counter\n", Text},
		{"TYPE after samples", "", "a 1\n# TYPE a gauge\n", Text},
		{"HELP twice through a histogram's _count", "", "# TYPE h histogram\n# HELP h H.\n# HELP h_count H.\n", Text},
		{"OpenMetrics TYPE twice, differently", "", "# TYPE a gauge\n# HELP a A.\na 1\n# TYPE a summary\n# EOF\n", OpenMetrics},
		{"OpenMetrics cut short", "", "# TYPE a gauge\na 1\n", OpenMetrics},
		{"OpenMetrics content after EOF", "", "a 1\n# EOF\nb 2\n", OpenMetrics},
		{"bad escape in a label value", "", "a 1\nb 2\n\nc{x=\"a\\qb\"} 1\n", Text},
		{"bad escape with an escape sequence", "", "c{x=\"\x1b]0;pwned\x07\\\x1b[2J\"} 1\n", Text},
		{"bad escape in HELP", "", "# HELP a Path C:\\temp.\n", Text},
		{"invalid UTF-8", "", "a 1\nb 2\n# HELP c C.\nc{x=\"caf\xe9\"} 1\n", Text},
		{"UTF-16", "", "\xff\xfe#\x00 \x00H\x00", Text},
		{"NUL", "", "a 1\nb\x00 2\n", Text},
		{"JSON answer", "application/json", `{"object":"list","data":[]}`, Text},
		{"JSON body", "", `{"models": []}`, Text},
		{"HTML answer", "text/html", "<html>", Text},
		{"HTML body", "", "<!DOCTYPE html>\n<html>", Text},
		{"protobuf answer", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", "", Text},
		{"syntax error", "", "# TYPE a gauge\na 1\nthis is { not metrics\n", Text},
		{"bad value", "", "a one\n", Text},
		{"unknown type", "", "# TYPE a thing\n", Text},
	}
	var b strings.Builder
	for _, c := range cases {
		_, err := DetectFormat(c.ct, []byte(c.body))
		if err == nil {
			_, err = Parse([]byte(c.body), c.f)
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v is not an *Error", c.name, err)
			continue
		}
		fmt.Fprintf(&b, "== %s\n[%s] %s\n", c.name, e.Kind, e.Error())
		for _, h := range e.Hints {
			fmt.Fprintf(&b, "hint: %s\n", h)
		}
		b.WriteString("\n")
	}
	got := b.String()
	golden.Check(t, "errors.golden", got)
}
