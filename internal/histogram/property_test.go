package histogram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// A random case: a dataset drawn from one shape, bucketed on one ladder.
type dataset struct {
	name   string
	ladder []float64 // finite bounds
	data   []float64 // sorted
	h      Histogram // with sum; +Inf bucket; Count
	peak   float64   // the true largest
}

// ladders returns bucket ladders to draw from: servers' own, ones much
// wider than the data, random ones, and one reaching below 0.
func ladders(rng *rand.Rand) (name string, bounds []float64, signed bool) {
	switch rng.IntN(8) {
	case 0:
		return "vllm-lat", vllmLAT, false
	case 1:
		return "vllm-ttft", vllmTTFT, false
	case 2:
		return "tokens-125", tokens125, false
	case 3:
		b := make([]float64, 17)
		for i := range b {
			b[i] = math.Ldexp(1, i)
		}
		return "powers-of-2", b, false
	case 4:
		return "one-wide", []float64{1000}, false
	case 5:
		return "signed", []float64{-5, -1, -0.25, 0, 0.25, 1, 5}, true
	default:
		m := 1 + rng.IntN(30)
		scale := math.Pow(10, rng.Float64()*6-3)
		b := make([]float64, m)
		for i := range b {
			b[i] = scale * rng.ExpFloat64() * 10
		}
		slices.Sort(b)
		return "random", slices.Compact(b), false
	}
}

// draw returns a sampler of one shape at a random scale. Some shapes put
// observations exactly at bucket bounds or just above them, where the bounds
// are tight.
func draw(rng *rand.Rand, bounds []float64, signed bool) (string, func() float64) {
	scale := math.Pow(10, rng.Float64()*5-3)
	if signed {
		return "normal", func() float64 { return rng.NormFloat64() * scale }
	}
	edge := func() float64 { return bounds[rng.IntN(len(bounds))] }
	switch rng.IntN(9) {
	case 0:
		return "exponential", func() float64 { return rng.ExpFloat64() * scale }
	case 1:
		return "lognormal", func() float64 { return math.Exp(rng.NormFloat64()*1.5) * scale }
	case 2:
		c := rng.ExpFloat64() * scale
		return "constant", func() float64 { return c }
	case 3:
		return "bimodal", func() float64 {
			if rng.IntN(10) == 0 {
				return (20 + rng.Float64()*50) * scale
			}
			return rng.Float64() * 0.2 * scale
		}
	case 4:
		return "tokens", func() float64 { return math.Ceil(rng.ExpFloat64() * scale * 1000) }
	case 5:
		return "pareto", func() float64 { return scale / math.Pow(1-rng.Float64(), 1/1.2) }
	case 6:
		return "at-bounds", edge
	case 7:
		return "above-bounds", func() float64 { return math.Nextafter(edge(), math.Inf(1)) }
	default:
		c := edge()
		return "one-bound", func() float64 { return c }
	}
}

func newDataset(rng *rand.Rand, maxN int) dataset {
	lname, bounds, signed := ladders(rng)
	sname, sample := draw(rng, bounds, signed)
	n := int(math.Exp(rng.Float64() * math.Log(float64(maxN))))
	n = max(n, 1)
	d := dataset{name: lname + "/" + sname, ladder: bounds, data: make([]float64, n)}
	for i := range d.data {
		d.data[i] = sample()
		d.h.Sum += d.data[i] // in the order observed, as a server adds
	}
	slices.Sort(d.data)
	d.peak = d.data[n-1]
	for _, b := range bounds {
		c := sort.Search(n, func(i int) bool { return d.data[i] > b })
		d.h.Buckets = append(d.h.Buckets, Bucket{UpperBound: b, Count: float64(c)})
	}
	d.h.Count = float64(n)
	d.h.Normalize()
	return d
}

// truth is the q-quantile as histogram_quantile ranks: the
// max(1, ⌈q·n⌉)-th smallest (data is sorted).
func (d dataset) truth(q float64) float64 {
	k := max(int(math.Ceil(q*float64(len(d.data)))), 1)
	return d.data[k-1]
}

var propertyQs = []float64{0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// On random data of many shapes and ladders, n from 1 to 10⁵, with and
// without the peak and the sum:
//
//	(a) the true quantile lies in [Lo, Hi];
//	(b) Value lies in [Lo, Hi]: nothing shown is outside what the buckets,
//	    sum, count and peak allow;
//	(c) Value is never farther from the truth than histogram_quantile held
//	    to the peak;
//	(d) Values rise with q;
//	(f) the truth is inside what the statement says (≤ Value, ≥ Value, or
//	    within [Lo, Hi] for an estimate), and a quantile whose bucket holds
//	    nearly all the observations is never stated as an estimate;
//	and Kind says what Value is, and true facts are never called
//	inconsistent.
func TestEstimateProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 7))
	cases := 2000
	if testing.Short() {
		cases = 300
	}
	for c := range cases {
		d := newDataset(rng, 100000)
		for _, variant := range []struct {
			name  string
			peak  float64
			noSum bool
		}{{"peak", d.peak, false}, {"no peak", nan, false}, {"no sum", d.peak, true}, {"nothing", nan, true}} {
			h := d.h
			h.NoSum = variant.noSum
			prev := math.Inf(-1)
			for _, q := range propertyQs {
				where := fmt.Sprintf("case %d %s n=%d %s q=%v", c, d.name, len(d.data), variant.name, q)
				e := h.Estimate(q, variant.peak)
				truth := d.truth(q)
				checkEstimate(t, where, e, truth, h, q, variant.peak)
				if e.Kind != Unknown {
					if e.Value < prev-1e-9*math.Abs(prev) {
						t.Fatalf("%s: (d) %v below the previous quantile's %v", where, e.Value, prev)
					}
					prev = e.Value
				}
			}
		}
	}
}

func checkEstimate(t *testing.T, where string, e Estimate, truth float64, h Histogram, q, peak float64) {
	t.Helper()
	if e.Inconsistent {
		t.Fatalf("%s: true facts called inconsistent: %+v", where, e)
	}
	if e.Kind == Unknown {
		// Only a lone +Inf bucket and no sum leaves nothing to say.
		if len(h.Buckets) > 1 || !h.NoSum {
			t.Fatalf("%s: unknown: %+v", where, e)
		}
		return
	}
	if !(e.Lo <= truth && truth <= e.Hi) {
		t.Fatalf("%s: (a) the truth %v is outside [%v, %v] (%+v)", where, truth, e.Lo, e.Hi, e)
	}
	if !(e.Lo <= e.Value && e.Value <= e.Hi) {
		t.Fatalf("%s: (b) shown %v outside [%v, %v]", where, e.Value, e.Lo, e.Hi)
	}
	// histogram_quantile held to the peak (a peak below 0 holds too: the
	// signed ladder has them).
	if math.IsNaN(peak) {
		peak = math.Inf(1)
	}
	plain, _ := h.quantile(q, peak)
	// Where interpolation is no estimate the quantile is stated as a
	// bound: (a), (b) and (f) are what it promises.
	if !math.IsNaN(plain) && !e.NoEstimate {
		slack := 1e-9 * (math.Abs(truth) + math.Abs(plain) + math.Abs(e.Value))
		if math.Abs(e.Value-truth) > math.Abs(plain-truth)+slack {
			t.Fatalf("%s: (c) shown %v is farther from the truth %v than interpolation %v (%+v)", where, e.Value, truth, plain, e)
		}
	}
	if !math.IsNaN(plain) {
		slack := 1e-9 * (math.Abs(truth) + math.Abs(plain) + math.Abs(e.Projected))
		if !(e.Lo <= e.Projected && e.Projected <= e.Hi) || math.Abs(e.Projected-truth) > math.Abs(plain-truth)+slack {
			t.Fatalf("%s: (c) projected %v is outside [%v, %v] or farther from the truth %v than interpolation %v", where, e.Projected, e.Lo, e.Hi, truth, plain)
		}
	}
	checkStated(t, where, e, truth, h, q)
	switch e.Kind {
	case Exact:
		// As wide as the sum's rounding, no wider: a float64 sum of n
		// values errs by up to n·2⁻⁵³ of their magnitude, and a bound
		// divides what is left of it by as little as 1.
		// The magnitudes involved: the sum and the observations pushed
		// to their buckets' finite edges.
		n, mag := h.Total(), 2*math.Abs(h.Sum)+h.Total()*math.Abs(e.Value)
		top := math.Inf(1)
		if !math.IsNaN(peak) {
			top = math.Abs(peak)
		}
		for j, bk := range h.Buckets {
			if u := math.Min(math.Abs(bk.UpperBound), top); !math.IsInf(u, 0) {
				mag += (bk.Count - start(h.Buckets, j)) * math.Abs(u)
			}
		}
		allow := 1e-9*math.Abs(e.Value) + 8*(n+float64(len(h.Buckets))+4)*0x1p-53*mag
		if e.Hi-e.Lo > allow {
			t.Fatalf("%s: exact over a wide interval: %+v", where, e)
		}
	case AtMost:
		if e.Value != e.Hi {
			t.Fatalf("%s: at most, not its bound: %+v", where, e)
		}
	case AtLeast:
		if e.Value != e.Lo {
			t.Fatalf("%s: at least, not its bound: %+v", where, e)
		}
	case Interpolated:
		if e.Value != plain && math.Abs(e.Value-plain) > 1e-9*math.Abs(plain) {
			t.Fatalf("%s: interpolated %v is not interpolation %v", where, e.Value, plain)
		}
	}
}

// checkStated is (f): the statement holds the truth, and a bucket holding
// nearly all the observations is never interpolated into.
func checkStated(t *testing.T, where string, e Estimate, truth float64, h Histogram, q float64) {
	t.Helper()
	slack := 1e-9 * (math.Abs(truth) + math.Abs(e.Value))
	switch e.Kind {
	case AtMost:
		if truth > e.Value+slack {
			t.Fatalf("%s: (f) stated ≤%v, the truth is %v", where, e.Value, truth)
		}
	case AtLeast:
		if truth < e.Value-slack {
			t.Fatalf("%s: (f) stated ≥%v, the truth is %v", where, e.Value, truth)
		}
	case Interpolated:
		n := h.Total()
		k := math.Min(math.Max(math.Ceil(q*n), 1), n)
		for j, b := range h.Buckets {
			if b.Count >= k {
				if c := b.Count - start(h.Buckets, j); c >= NearlyAll*n && !math.IsInf(b.UpperBound, 1) && (j > 0 || b.UpperBound >= 0) {
					t.Fatalf("%s: (f) interpolated %v inside a bucket holding %v of %v observations", where, e.Value, c, n)
				}
				break
			}
		}
	}
}

// A histogram cut before its +Inf bucket (and perhaps some finite ones):
// every quantile is stated as a lower bound, and it is one.
func TestEstimateIncompleteProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for c := range 1000 {
		d := newDataset(rng, 10000)
		keep := 1 + rng.IntN(len(d.h.Buckets)-1) // finite buckets kept
		h := Histogram{Buckets: slices.Clone(d.h.Buckets[:keep]), NoTop: true, NoSum: rng.IntN(2) == 0, Sum: d.h.Sum}
		h.Normalize()
		for _, q := range propertyQs {
			e := h.Estimate(q, d.peak)
			if h.Total() == 0 {
				if e.Kind != Unknown {
					t.Fatalf("case %d: nothing published yet %+v", c, e)
				}
				continue
			}
			truth := d.truth(q)
			if e.Kind == Unknown && math.IsInf(e.Lo, -1) && truth <= e.Hi {
				continue // a rank in a lowest bucket open below: no floor
			}
			if e.Kind != AtLeast || e.Value > truth || truth > e.Hi {
				t.Fatalf("case %d %s cut at %d q=%v: %+v, truth %v", c, d.name, keep, q, e, truth)
			}
		}
	}
}

// (e) The interval is tight: for small datasets, datasets with every fact
// of the histogram exist whose quantile is Lo and whose quantile is Hi
// (and, where Hi is +Inf, one as large as you like).
func TestEstimateTight(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for c := range 2000 {
		d := newDataset(rng, 40)
		if d.ladder[0] < 0 {
			continue // values unbounded below: no finite dataset at -Inf
		}
		for _, variant := range []struct {
			peak   float64
			useSum bool
		}{{d.peak, true}, {nan, true}, {d.peak, false}, {nan, false}} {
			h := d.h
			h.NoSum = !variant.useSum
			for _, q := range propertyQs {
				e := h.Estimate(q, variant.peak)
				targets := []float64{e.Lo, e.Hi}
				if e.Kind == Exact {
					// Lo and Hi differ by rounding only.
					targets = []float64{e.Value}
				}
				if math.IsInf(e.Hi, 1) {
					targets[1] = math.Max(e.Lo, 1) * 1e6
				}
				for _, v := range targets {
					xs, err := attain(h, variant.peak, variant.useSum, q, v)
					if err == nil {
						err = hasFacts(h, variant.peak, variant.useSum, xs)
					}
					if err == nil && !near(kthSmallest(xs, q), v) {
						err = fmt.Errorf("its quantile is %v", kthSmallest(xs, q))
					}
					if err != nil {
						t.Fatalf("case %d %s n=%d q=%v peak %v sum %v: no dataset reaches %v of %+v: %v",
							c, d.name, len(d.data), q, variant.peak, variant.useSum, v, e, err)
					}
				}
			}
		}
	}
}

// attain builds a dataset with h's bucket counts, sum (if useSum) and peak
// (if known) whose q-quantile is v, or says why it cannot: v and the
// observations ranked around it are placed, the peak given to one of the
// highest bucket's, and the rest start at their bucket's floor and are
// raised, one by one, until the values add up to the sum.
func attain(h Histogram, peak float64, useSum bool, q, v float64) ([]float64, error) {
	b := h.Buckets
	n := int(b[len(b)-1].Count)
	k := max(int(math.Ceil(q*float64(n))), 1)
	hasPeak := !math.IsNaN(peak)
	type item struct{ lo, hi float64 }
	var items []item
	vAt, peakAt := -1, -1
	top := -1 // the highest occupied bucket's first item
	for j := range b {
		lo, hi := 0.0, b[j].UpperBound
		if j > 0 {
			lo = b[j-1].UpperBound
		}
		if hasPeak {
			hi = math.Min(hi, peak)
		}
		first := int(start(b, j))
		if c := int(b[j].Count) - first; c > 0 {
			top = len(items)
		}
		for r := first + 1; r <= int(b[j].Count); r++ {
			switch {
			case r < k && k <= int(b[j].Count):
				items = append(items, item{lo, v}) // ranked below v in its bucket
			case r == k:
				vAt = len(items)
				items = append(items, item{v, v})
			case r > k && first < k:
				items = append(items, item{v, hi}) // ranked above v in its bucket
			default:
				items = append(items, item{lo, hi})
			}
		}
	}
	if hasPeak {
		switch {
		case vAt < top:
			peakAt = top
		case vAt == len(items)-1:
			peakAt = vAt // v is the largest
		default:
			peakAt = vAt + 1 // the first above v in v's bucket
		}
		if peakAt == vAt && v != peak {
			return nil, fmt.Errorf("the largest must be the peak %v", peak)
		}
		items[peakAt] = item{peak, peak}
	}
	xs := make([]float64, len(items))
	sum := 0.0
	for i, it := range items {
		if it.lo > it.hi+1e-12*math.Abs(it.hi) {
			return nil, fmt.Errorf("item %d: [%v, %v] is empty", i, it.lo, it.hi)
		}
		xs[i] = it.lo
		sum += it.lo
	}
	if !useSum {
		return xs, nil
	}
	rest := h.Sum - sum
	for i, it := range items {
		if rest <= 0 {
			break
		}
		if add := it.hi - it.lo; add <= rest {
			xs[i], rest = it.hi, rest-add
		} else {
			xs[i], rest = it.lo+rest, 0
		}
	}
	return xs, nil // hasFacts checks the sum
}
