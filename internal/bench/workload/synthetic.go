package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// DistKind is how a length is drawn.
type DistKind int

const (
	Fixed   DistKind = iota // always Mean
	Uniform                 // uniform on [Min, Max]
	Normal                  // normal of Mean and StdDev, redrawn until within [Min, Max]
)

// Dist is a distribution of lengths in tokens.
type Dist struct {
	Kind     DistKind
	Mean     int
	Min, Max int
	StdDev   float64
}

// ParseDist reads a length as written on a command line: "512" (fixed),
// "256..1024" (uniform, both ends included), "512~128" (normal, mean 512,
// standard deviation 128, within mean ± 3 deviations and at least 1) or
// "512~128:64..1024" (normal within the bounds given).
func ParseDist(s string) (Dist, error) {
	bad := func(why string) (Dist, error) {
		return Dist{}, fmt.Errorf("%q is not a length: %s (write 512, 256..1024, or 512~128 with optional bounds :64..1024)", s, why)
	}
	atoi := func(v string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	}
	s = strings.TrimSpace(s)
	if mean, rest, ok := strings.Cut(s, "~"); ok {
		sd, bounds, hasBounds := strings.Cut(rest, ":")
		m, ok1 := atoi(mean)
		d, err := strconv.ParseFloat(strings.TrimSpace(sd), 64)
		if !ok1 || err != nil || d < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return bad("the mean and the deviation must be numbers")
		}
		dist := Dist{Kind: Normal, Mean: m, StdDev: d, Min: max(1, m-int(math.Ceil(3*d))), Max: m + int(math.Ceil(3*d))}
		if hasBounds {
			lo, hi, ok := strings.Cut(bounds, "..")
			a, ok1 := atoi(lo)
			b, ok2 := atoi(hi)
			if !ok || !ok1 || !ok2 {
				return bad("the bounds are written low..high")
			}
			dist.Min, dist.Max = a, b
		}
		return dist, dist.Check()
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, ok1 := atoi(lo)
		b, ok2 := atoi(hi)
		if !ok1 || !ok2 {
			return bad("the range is written low..high")
		}
		d := Dist{Kind: Uniform, Min: a, Max: b, Mean: (a + b) / 2}
		return d, d.Check()
	}
	n, ok := atoi(s)
	if !ok {
		return bad("not a number")
	}
	d := Dist{Kind: Fixed, Mean: n, Min: n, Max: n}
	return d, d.Check()
}

// Check refuses a distribution that cannot be drawn from.
func (d Dist) Check() error {
	switch {
	case d.Kind == Fixed && d.Mean < 0:
		return errors.New("a length cannot be negative")
	case d.Kind != Fixed && (d.Min < 0 || d.Max < d.Min):
		return fmt.Errorf("the bounds %d..%d are not a range of lengths", d.Min, d.Max)
	case d.Kind == Normal && (d.Mean < d.Min || d.Mean > d.Max):
		return fmt.Errorf("the mean %d is outside its bounds %d..%d", d.Mean, d.Min, d.Max)
	}
	return nil
}

// Largest is the longest length the distribution draws.
func (d Dist) Largest() int {
	if d.Kind == Fixed {
		return d.Mean
	}
	return d.Max
}

// draw draws one length.
func (d Dist) draw(r *rand.Rand) int {
	switch d.Kind {
	case Uniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case Normal:
		if d.StdDev == 0 {
			return d.Mean
		}
		// Bounds narrow beside the deviation make most draws miss:
		// after many, the mean.
		for range 10000 {
			n := int(math.Round(float64(d.Mean) + d.StdDev*r.NormFloat64()))
			if n >= d.Min && n <= d.Max {
				return n
			}
		}
	}
	return d.Mean
}

// Synthetic makes prompts of controlled length from a vocabulary of words
// (Calibration says how many of the server's tokens a word is), with a
// shared prefix on a share of the requests.
type Synthetic struct {
	Shape  Shape
	Prompt Dist // the prompt's tokens, the shared prefix and the API's own included
	Output Dist // max_tokens (num_predict) asked; a fixed 0 asks for none
	// FixedOutput asks for exactly the output drawn where the API can
	// say so (see FixedOutput).
	FixedOutput bool
	// Prefix is the shared prefix's tokens, and PrefixShare the share of
	// requests (0 to 1) that begin with it: the prefix cache is
	// exercised on purpose. The other requests' words are their own.
	Prefix      int
	PrefixShare float64
	// UniqueFirst begins every request with words of its own (its index),
	// before any prefix: the prefix cache is defeated, on the same
	// content.
	UniqueFirst bool
	Seed        uint64
	Calibration Calibration
}

// Check refuses a workload that cannot be made.
func (s *Synthetic) Check() error {
	if err := s.Prompt.Check(); err != nil {
		return fmt.Errorf("prompt length: %w", err)
	}
	if err := s.Output.Check(); err != nil {
		return fmt.Errorf("output length: %w", err)
	}
	switch {
	case s.PrefixShare < 0 || s.PrefixShare > 1 || math.IsNaN(s.PrefixShare):
		return fmt.Errorf("a prefix share of %v: it must be from 0 to 1", s.PrefixShare)
	case s.Prefix < 0:
		return errors.New("a prefix cannot be negative")
	case s.Prefix > 0 && s.Prompt.Kind != Fixed && s.Prefix >= s.Prompt.Min,
		s.Prefix > 0 && s.Prompt.Kind == Fixed && s.Prefix >= s.Prompt.Mean:
		return fmt.Errorf("a shared prefix of %d tokens leaves no room in prompts of %d", s.Prefix, min(s.Prompt.Min, s.Prompt.Mean))
	}
	return nil
}

// rng is the generator of request i's draws: the same seed and i, the same
// draws, whatever the order requests are made in.
func (s *Synthetic) rng(i int) *rand.Rand {
	return rand.New(rand.NewPCG(s.Seed, uint64(i)<<1|1))
}

// Next makes request i.
func (s *Synthetic) Next(i int) Request {
	r := s.rng(i)
	c := s.Calibration.orDefault()
	prompt := s.Prompt.draw(r)
	output := s.Output.draw(r)
	shared := s.Prefix > 0 && r.Float64() < s.PrefixShare
	words := c.words(prompt)
	var b strings.Builder
	n := 0
	add := func(w string) {
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		n++
	}
	if s.UniqueFirst {
		// Its index, in base len(Words), three words: unique among the
		// first len(Words)³ requests (16 million for 256 words).
		for k, v := 0, i; k < 3 && n < words; k++ {
			add(c.Words[v%len(c.Words)])
			v /= len(c.Words)
		}
	}
	if shared {
		pr := rand.New(rand.NewPCG(s.Seed, 0))
		for k := c.words(s.Prefix + c.Overhead); k > 0 && n < words; k-- {
			add(c.Words[pr.IntN(len(c.Words))])
		}
	}
	for n < words {
		add(c.Words[r.IntN(len(c.Words))])
	}
	fixed := s.FixedOutput && FixedOutput(s.Shape.API) && output > 0
	return Request{
		Body:         s.Shape.Body([]Message{{Role: "user", Content: b.String()}}, output, fixed),
		PromptTokens: c.tokens(words),
		OutputTokens: output,
		Fixed:        fixed,
	}
}
