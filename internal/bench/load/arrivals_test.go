package load

import (
	"math"
	"testing"
	"time"
)

// TestArrivalMoments: the gaps of each arrival process have the mean
// 1/rate and the coefficient of variation the process has (Poisson 1,
// gamma of shape k 1/√k, constant 0), computed here from the gaps, not
// from the generator.
//
// The tolerances are five standard errors, so a correct generator fails
// about once in 1.7 million runs (and the seeds are fixed anyway): with n
// gaps of coefficient of variation c, the sample mean's relative standard
// error is c/√n; the sample variance's is √((2 + κ)/n) for excess kurtosis
// κ (6/k for a gamma of shape k), so the sample CV's is about half of
// that.
func TestArrivalMoments(t *testing.T) {
	const n = 40000
	const rate = 250.0
	for _, c := range []struct {
		name  string
		kind  Arrival
		shape float64
		cv    float64
	}{
		{"Poisson", Poisson, 0, 1},
		{"gamma of shape 1 is Poisson", Gamma, 1, 1},
		{"bursty gamma", Gamma, 0.25, 2},
		{"gamma below 1", Gamma, 0.6, 1 / math.Sqrt(0.6)},
		{"smooth gamma", Gamma, 4, 0.5},
		{"constant", Constant, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSchedule(c.kind, rate, c.shape, 42)
			gaps := make([]float64, n)
			prev := s.Next()
			for i := range gaps {
				at := s.Next()
				gaps[i] = (at - prev).Seconds()
				prev = at
			}
			var sum float64
			for _, g := range gaps {
				sum += g
			}
			mean := sum / n
			var ss float64
			for _, g := range gaps {
				ss += (g - mean) * (g - mean)
			}
			cv := math.Sqrt(ss/(n-1)) / mean
			meanTol := 5*c.cv/math.Sqrt(n) + 1e-6 // a constant's mean is exact but for rounding to ns
			if d := math.Abs(mean*rate - 1); d > meanTol {
				t.Errorf("mean gap %.6f s, want %.6f (relative error %.4f, tolerance %.4f)", mean, 1/rate, d, meanTol)
			}
			kurt := 0.0
			if c.cv > 0 {
				kurt = 6 * c.cv * c.cv // 6/k, and CV² = 1/k
			}
			cvTol := 5*c.cv*0.5*math.Sqrt((2+kurt)/n) + 1e-3
			if math.Abs(cv-c.cv) > cvTol {
				t.Errorf("coefficient of variation %.4f, want %.4f ± %.4f", cv, c.cv, cvTol)
			}
		})
	}
}

// TestScheduleSeeded: the same seed, the same arrivals; another seed,
// others; and the times are absolute (the sum of the gaps, never drifting
// from the rate).
func TestScheduleSeeded(t *testing.T) {
	a, b, c := NewSchedule(Gamma, 100, 0.5, 7), NewSchedule(Gamma, 100, 0.5, 7), NewSchedule(Gamma, 100, 0.5, 8)
	same := true
	for range 1000 {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("the same seed gave %v and %v", x, y)
		}
		same = same && x == z
	}
	if same {
		t.Error("another seed gave the same arrivals")
	}
	k := NewSchedule(Constant, 3, 0, 1)
	for i := range 3000 {
		if at, want := k.Next(), time.Duration(float64(i)/3*float64(time.Second)); at-want > time.Microsecond || want-at > time.Microsecond {
			t.Fatalf("arrival %d at %v, want %v", i, at, want)
		}
	}
}
