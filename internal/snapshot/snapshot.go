// Package snapshot defines one scrape of an inference server translated into
// canonical quantities: scalars and histograms keyed by their tabbyAPI names
// without the "tabbyapi:" prefix, whatever server produced them.
package snapshot

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	dto "github.com/prometheus/client_model/go"
)

// Snapshot is one scrape in canonical form.
type Snapshot struct {
	Source        string    // URL, file path or "-" for stdin
	Dialect       string    // "tabbyapi", "vllm", "llamacpp", "sglang", "tgi"
	ScrapedAt     time.Time // when the scrape completed (or the time saved with a file)
	ScrapeSeconds float64   // how long the scrape waited; 0 for files
	HeaderStart   float64   // Process-Start-Time-Unix header, Unix seconds; 0 when absent
	// StartToken is that header's raw value: llama.cpp's is a monotonic
	// clock, no time at all, but it still changes when the server restarts.
	StartToken string
	Scalars    map[string]float64
	Histograms map[string]*histogram.Histogram
	// Extra holds dialect-only figures with no canonical counterpart
	// (e.g. vLLM preemptions), keyed by their own names.
	Extra map[string]float64
	// Missing lists canonical quantities a person would expect that this
	// server does not publish, each with why (rendered as dim lines).
	Missing []string
	// Models lists the models the scrape serves when a dialect labels them.
	Models []string
	// Model names the model the report covers ("" = all together).
	Model string
	// Raw keeps the server's own families, for JSON "raw".
	Raw []*dto.MetricFamily
}

// Scalar returns a scalar and whether it is present and a number.
func (s *Snapshot) Scalar(name string) (float64, bool) {
	v, ok := s.Scalars[name]
	if !ok || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// Get returns a scalar, 0 when absent or NaN.
func (s *Snapshot) Get(name string) float64 {
	v, _ := s.Scalar(name)
	return v
}

// Hist returns a histogram or nil.
func (s *Snapshot) Hist(name string) *histogram.Histogram {
	return s.Histograms[name]
}

// StartTime is the process start in Unix seconds: the
// process_start_time_seconds series, else the Process-Start-Time-Unix header,
// else 0 (unknown).
func (s *Snapshot) StartTime() float64 {
	if v, ok := s.Scalar("process_start_time_seconds"); ok && v > 0 {
		return v
	}
	return s.HeaderStart
}
