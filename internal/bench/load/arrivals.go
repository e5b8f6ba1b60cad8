package load

import (
	"math"
	"math/rand/v2"
	"time"
)

// Schedule is an open loop's arrival times, from the run's start: each
// the last plus a gap drawn from the arrival process, so that the times
// are absolute and a late send does not push the next one later. The same
// arrival, rate, shape and seed give the same times.
type Schedule struct {
	rng   *rand.Rand
	kind  Arrival
	rate  float64
	shape float64
	at    float64 // the last arrival, in seconds from the start
}

// NewSchedule returns the arrivals at rate per second: Poisson
// (exponential gaps), Gamma (gaps of shape k and mean 1/rate: a
// coefficient of variation of 1/√k, so k < 1 is burstier than Poisson and
// k > 1 smoother; k of 1 is Poisson) or Constant (gaps of 1/rate). The
// first arrival is at 0 for Constant, and one gap in otherwise (as vLLM's
// and GuideLLM's Poisson start).
func NewSchedule(kind Arrival, rate, shape float64, seed uint64) *Schedule {
	if shape <= 0 {
		shape = 1
	}
	if kind == Gamma && shape == 1 {
		kind = Poisson
	}
	s := &Schedule{rng: rand.New(rand.NewPCG(seed, 0x6c6f6164)), kind: kind, rate: rate, shape: shape}
	if kind == Constant {
		s.at = -1 / rate
	}
	return s
}

// Next returns the next arrival's time from the start.
func (s *Schedule) Next() time.Duration {
	s.at += s.gap()
	return time.Duration(s.at * float64(time.Second))
}

// gap draws one gap in seconds.
func (s *Schedule) gap() float64 {
	switch s.kind {
	case Constant:
		return 1 / s.rate
	case Gamma:
		return gamma(s.rng, s.shape) / (s.shape * s.rate)
	}
	return s.rng.ExpFloat64() / s.rate
}

// gamma draws from the gamma distribution of shape k and scale 1, by
// Marsaglia and Tsang's method ("A simple method for generating gamma
// variables", ACM TOMS 26(3), 2000); for k < 1, Gamma(k+1)·U^(1/k).
func gamma(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gamma(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
