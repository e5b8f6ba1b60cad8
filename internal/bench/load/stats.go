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
	s.h.RecordValue(max(int64(d), 1))
}

func (s *stats) lateness() Lateness {
	if s.n == 0 {
		return Lateness{}
	}
	return Lateness{Count: s.n, P50: time.Duration(s.h.ValueAtQuantile(50)), P99: time.Duration(s.h.ValueAtQuantile(99)),
		Max: s.max, Mean: s.sum / time.Duration(s.n), Late: s.late}
}
