package snapshot

import (
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
)

// TestStart: a start time is taken only where it can be this process's:
// not before 2015, not after the scrape, not so recent that a request the
// histograms hold could not have run since.
func TestStart(t *testing.T) {
	at := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	now := float64(at.Unix())
	// Two requests in (60, 120] seconds: up at least 60 s.
	long := &histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 60, Count: 0}, {UpperBound: 120, Count: 2}, {UpperBound: math.Inf(1), Count: 2}}, Count: 2, Sum: 150}
	tests := []struct {
		name    string
		gauge   float64 // process_start_time_seconds; 0: none
		header  float64
		hist    *histogram.Histogram
		scraped time.Time
		want    float64
		wantWhy string
	}{
		{name: "none", scraped: at},
		{name: "gauge", gauge: now - 3600, scraped: at, want: now - 3600},
		{name: "header", header: now - 3600, scraped: at, want: now - 3600},
		{name: "gauge wins", gauge: now - 60, header: now - 3600, scraped: at, want: now - 60},
		// llama.cpp's monotonic microseconds read as milliseconds: 1.2e9 s
		// is 2008.
		{name: "before 2015", header: 1.2e9, scraped: at, wantWhy: "the start header is before 2015, so not a wall-clock time"},
		{name: "after the scrape", gauge: now + 3600, scraped: at, wantWhy: "process_start_time_seconds is after the scrape"},
		{name: "just after: clock skew", gauge: now + 5, scraped: at, want: now},
		{name: "younger than a request", gauge: now - 3, hist: long, scraped: at, wantWhy: "process_start_time_seconds gives 3 s of uptime, but a request took at least 60 s"},
		{name: "old enough for it", gauge: now - 61, hist: long, scraped: at, want: now - 61},
		{name: "no scrape time: no comparison", gauge: now + 3600, want: now + 3600},
	}
	for _, tt := range tests {
		s := &Snapshot{Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}, HeaderStart: tt.header, ScrapedAt: tt.scraped}
		if tt.gauge != 0 {
			s.Scalars[ProcessStartTimeSeconds] = tt.gauge
		}
		if tt.hist != nil {
			s.Histograms[E2ERequestLatencySeconds] = tt.hist
		}
		got, why := s.Start()
		if got != tt.want || why != tt.wantWhy {
			t.Errorf("%s: Start() = %v, %q; want %v, %q", tt.name, got, why, tt.want, tt.wantWhy)
		}
		// As published: what a restart is told by.
		if want := max(tt.gauge, 0); tt.gauge == 0 && s.StartTime() != tt.header || tt.gauge != 0 && s.StartTime() != want {
			t.Errorf("%s: StartTime() = %v, want the published %v or %v", tt.name, s.StartTime(), tt.gauge, tt.header)
		}
	}
}
