package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// stats keeps a distribution of durations: in nanoseconds to 3
// significant figures (within 0.1%), the mean and maximum exact.
type stats struct {
	h     *hdrhistogram.Histogram
	n     int
	sum   time.Duration
	max   time.Duration
	late  int
	limit time.Duration
}

func newStats() *stats {
	return &stats{h: hdrhistogram.New(1, int64(24*time.Hour), 3), limit: time.Millisecond}
}

func (s *stats) add(d time.Duration) {
	d = max(d, 0) // a send cannot be early: a negative figure is the clock's grain
	s.n++
	s.sum += d
	s.max = max(s.max, d)
	if d > s.limit {
		s.late++
	}
	s.h.RecordValue(int64(d))
}

func (s *stats) lateness() Lateness {
	if s.n == 0 {
		return Lateness{}
	}
	// A histogram's quantile is its bucket's highest value, which may lie
	// past the largest wait itself: no quantile beyond the maximum.
	q := func(p float64) time.Duration { return min(time.Duration(s.h.ValueAtQuantile(p)), s.max) }
	return Lateness{Count: s.n, P50: q(50), P99: q(99), Max: s.max, Mean: s.sum / time.Duration(s.n), Late: s.late}
}
