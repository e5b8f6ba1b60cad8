package exposition

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func find(fams []*dto.MetricFamily, name string) *dto.MetricFamily {
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		ct, body string
		want     Format
		err      bool
	}{
		{"text/plain; version=0.0.4; charset=utf-8", "", Text, false},
		// expfmt.ResponseFormat calls this unknown; Python servers send it now.
		{"text/plain; version=1.0.0; charset=utf-8", "", Text, false},
		{"application/openmetrics-text; version=1.0.0; charset=utf-8", "", OpenMetrics, false},
		{"", "a 1\n# EOF\n", OpenMetrics, false},
		{"", "a 1\n", Text, false},
		{"application/octet-stream", "a 1\n", Text, false},
		{"text/html; charset=utf-8", "<html>", "", true},
		{"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", "", "", true},
	}
	for _, tt := range tests {
		got, err := DetectFormat(tt.ct, []byte(tt.body))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("DetectFormat(%q) = %q, %v", tt.ct, got, err)
		}
	}
}

func TestParseTolerates(t *testing.T) {
	body := `# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds -nan
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds -NaN 1700000000000
# TYPE vllm:num_requests_running gauge
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 12.0 1700000000000
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e9
# TYPE tabbyapi:x histogram
tabbyapi:x_bucket{le="1"} 1
tabbyapi:x_bucket{le="+Inf"} 2
tabbyapi:x_sum 3.5
tabbyapi:x_count 2
`
	fams, err := Parse([]byte(body), Text)
	if err != nil {
		t.Fatal(err)
	}
	if v := find(fams, "llamacpp:prompt_tokens_seconds").GetMetric()[0].GetGauge().GetValue(); !math.IsNaN(v) {
		t.Errorf("-nan read as %v", v)
	}
	if v := find(fams, "llamacpp:predicted_tokens_seconds").GetMetric()[0].GetGauge().GetValue(); !math.IsNaN(v) {
		t.Errorf("-NaN with timestamp read as %v", v)
	}
	if find(fams, "vllm:prompt_tokens_created") != nil {
		t.Error("_created family kept")
	}
	if f := find(fams, "vllm:num_requests_running"); f != nil && len(f.GetMetric()) != 0 {
		t.Error("TYPE with no samples grew samples")
	}
	if v := find(fams, "vllm:prompt_tokens_total").GetMetric()[0].GetCounter().GetValue(); v != 12 {
		t.Errorf("counter = %v", v)
	}
	if h := find(fams, "tabbyapi:x").GetMetric()[0].GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 3.5 {
		t.Errorf("histogram = %v", h)
	}
	for i := 1; i < len(fams); i++ {
		if fams[i-1].GetName() > fams[i].GetName() {
			t.Fatal("families not sorted")
		}
	}
}

func TestParseOpenMetrics(t *testing.T) {
	body := `# TYPE vllm:generation_tokens counter
# HELP vllm:generation_tokens Number of generation tokens processed.
vllm:generation_tokens_total{model_name="m"} 42.0
vllm:generation_tokens_created{model_name="m"} 1.7e9
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_count{model_name="m"} 2.0
vllm:e2e_request_latency_seconds_sum{model_name="m"} 3.0
# EOF
`
	f, err := DetectFormat("", []byte(body))
	if err != nil || f != OpenMetrics {
		t.Fatalf("format %q, %v", f, err)
	}
	fams, err := Parse([]byte(body), f)
	if err != nil {
		t.Fatal(err)
	}
	var gen *dto.MetricFamily
	for _, mf := range fams {
		if strings.HasPrefix(mf.GetName(), "vllm:generation_tokens") {
			gen = mf
		}
	}
	if gen == nil || gen.GetMetric()[0].GetCounter().GetValue() != 42 {
		t.Fatalf("counter not read: %v", fams)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, body string
		line       int
	}{
		{"html", "<!DOCTYPE html>\n<html><body>login</body></html>\n", 1},
		{"bad value on line 3", "# TYPE a gauge\na 1\na{x=\"1\"} one\n", 3},
		{"nul on line 2", "a 1\nb 1\x00\n", 2},
		{"not utf8 on line 1", "a{x=\"\xff\"} 1\n", 1},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.body), Text)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want *Error", tt.name, err)
			continue
		}
		if pe.Line != tt.line {
			t.Errorf("%s: line %d, want %d (%v)", tt.name, pe.Line, tt.line, err)
		}
		if strings.ContainsAny(pe.Error(), "\n\x00\x1b") {
			t.Errorf("%s: message not one clean line: %q", tt.name, pe.Error())
		}
	}
}

// FuzzParse: no input may panic, an error is always an *Error on one line,
// and what is accepted holds no series twice and none over the label limit.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a 1\n", "# TYPE a counter\na_total 1\n", "a -nan\n", "a{b=\"c\"} NaN 123\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"a 1\n# EOF\n", "\x1b]0;x\x07 1\n",
		// Label bombs and limits.
		labelBomb(8000), labelBomb(30000), labelBomb(100000), series("a", 65),
		"a{v=\"" + strings.Repeat("x", 1<<20) + "\"} 1\n", "a{" + strings.Repeat("x", 300) + "=\"1\"} 1\n",
		// Duplicates.
		"tabbyapi:requests_total 180\ntabbyapi:requests_total 999\ntabbyapi:requests_total 1\n",
		"a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1.0\"} 1\nh_sum 1\nh_count 1\n",
		"# HELP a A.\na 1\n# HELP a A.\na 2\n", "# TYPE a gauge\n# TYPE a gauge\n", "a 1\n# TYPE a gauge\n",
		"# TYPE a counter\na_total 1\na_total 2\n# EOF\n",
		// Windows files, encodings, no final newline, other documents.
		"# TYPE a gauge\r\na 1\r\n", "\ufeffa 1\n", "\ufeff# TYPE a gauge\r\na 1\r\n# EOF\r\n",
		"a{x=\"caf\xe9\"} 1\n", "\xff\xfea\x00 \x001\x00", "a{x=\"a\\qb\"} 1\n", "# HELP a C:\\temp\na 1\n",
		"a 1", "# TYPE a gauge\na 1\n# EOF", "a{x=\"1\"} 1\r", `{"object":"list"}`, "[1]", "{\"my.metric\"} 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		format, err := DetectFormat("", b)
		if err != nil {
			return
		}
		fams, err := Parse(b, format)
		var pe *Error
		if err != nil && (!errors.As(err, &pe) || strings.ContainsAny(pe.Error(), "\n\r\x1b")) {
			t.Fatalf("error %q", err)
		}
		if err == nil {
			checkAccepted(t, fams)
		}
	})
}

// A real-size tabbyAPI scrape (~19 KB).
func BenchmarkParse(b *testing.B) {
	body, err := os.ReadFile("../../testdata/tabbyapi/offload-healthy.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body, Text); err != nil {
			b.Fatal(err)
		}
	}
}
