package load

import (
	"testing"
	"time"
)

// A distribution's quantiles stay within what was recorded: waits of zero
// read zero, and no quantile passes the largest value.
func TestStatsQuantilesWithinData(t *testing.T) {
	for _, c := range []struct {
		name     string
		values   []time.Duration
		p50, p99 time.Duration
	}{
		{"all zero", []time.Duration{0, 0, 0}, 0, 0},
		{"one value", []time.Duration{1234567}, 1234567, 1234567},
		// 1,000 waits of 1..1000 µs: p50 about 500 µs within 0.1%, p99
		// about 990 µs; the largest bucket's top (1.0005 ms) is cut to
		// the 1 ms maximum.
		{"a ramp", ramp(1000, time.Microsecond), 500 * time.Microsecond, 990 * time.Microsecond},
	} {
		s := newStats()
		for _, v := range c.values {
			s.add(v)
		}
		l := s.lateness()
		if l.P50 > l.Max || l.P99 > l.Max {
			t.Errorf("%s: p50 %v, p99 %v beyond the max %v", c.name, l.P50, l.P99, l.Max)
		}
		if !within(l.P50, c.p50) || !within(l.P99, c.p99) {
			t.Errorf("%s: p50 %v, p99 %v; want %v, %v within 0.1%%", c.name, l.P50, l.P99, c.p50, c.p99)
		}
	}
}

func ramp(n int, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * step
	}
	return out
}

func within(got, want time.Duration) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return float64(d) <= 0.001*float64(want)
}
