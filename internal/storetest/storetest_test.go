package storetest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPrometheusConfig(t *testing.T) {
	got := PrometheusConfig([]Target{
		{Addr: "127.0.0.1:1", Labels: map[string]string{"pod": "b", "namespace": "llm"}},
		{Addr: "127.0.0.1:2", Job: "vllm", Path: "/m"},
	}, 500*time.Millisecond)
	want := `global:
  scrape_interval: 500ms
  scrape_timeout: 500ms
scrape_configs:
  - job_name: "inference"
    static_configs:
      - targets: ["127.0.0.1:1"]
        labels:
          namespace: "llm"
          pod: "b"
  - job_name: "vllm"
    metrics_path: "/m"
    static_configs:
      - targets: ["127.0.0.1:2"]
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// VictoriaMetrics imports the text format with millisecond timestamps;
// the fixtures are OpenMetrics with seconds.
func TestOpenMetricsToText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.om")
	om := "# TYPE x counter\nx_total{a=\"1\"} 5 1700000000\nx_total{a=\"1\"} 6 1700000015.5\n# EOF\n"
	if err := os.WriteFile(path, []byte(om), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := OpenMetricsToText(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "x_total{a=\"1\"} 5 1700000000000\nx_total{a=\"1\"} 6 1700000015500\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := os.WriteFile(path, []byte("x 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMetricsToText(path); err == nil {
		t.Error("a sample without a timestamp: no error")
	}
}
