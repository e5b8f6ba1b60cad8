package histogram

import (
	"math"
	"sort"
)

// Bucket is one cumulative bucket: Count observations were ≤ UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a classic cumulative histogram. Buckets are sorted by upper
// bound and the last one is +Inf once Normalize has run.
type Histogram struct {
	Buckets []Bucket
	Count   float64
	Sum     float64
	// What the exposition left out: a histogram cut short (a paste that
	// ends before +Inf, _sum or _count) is still read, but what it lacks is
	// unknown, never 0.
	NoSum bool // no _sum: Sum and the mean are unknown
	NoTop bool // no +Inf bucket and no _count: the total is only at least the last bucket's count
}

// Normalize sorts buckets, merges equal bounds, appends a +Inf bucket when
// the exposition left it out and lifts non-monotonic counts to an envelope
// (as histogram_quantile does). The appended bucket holds Count, or, with
// NoTop, the last bucket's count: the least the total can be.
func (h *Histogram) Normalize() {
	sort.SliceStable(h.Buckets, func(i, j int) bool { return h.Buckets[i].UpperBound < h.Buckets[j].UpperBound })
	out := h.Buckets[:0]
	for _, b := range h.Buckets {
		if math.IsNaN(b.UpperBound) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].UpperBound == b.UpperBound {
			out[n-1].Count = math.Max(out[n-1].Count, b.Count)
			continue
		}
		out = append(out, b)
	}
	h.Buckets = out
	if n := len(h.Buckets); n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		top := h.Count
		if h.NoTop && n > 0 {
			top = h.Buckets[n-1].Count
		}
		h.Buckets = append(h.Buckets, Bucket{UpperBound: math.Inf(1), Count: top})
	}
	// After the append, so that a _count below the last bucket (counters
	// read out of step) cannot make the total fall.
	for i := 1; i < len(h.Buckets); i++ {
		if h.Buckets[i].Count < h.Buckets[i-1].Count {
			h.Buckets[i].Count = h.Buckets[i-1].Count
		}
	}
}

// Total is the number of observations: the +Inf bucket's count. With NoTop
// the total is unknown and Total is the least it can be, the last published
// bucket's count: use it to say "at least", never as a denominator.
func (h Histogram) Total() float64 {
	if len(h.Buckets) == 0 {
		return h.Count
	}
	return h.Buckets[len(h.Buckets)-1].Count
}

// Mean is Sum/Count: NaN when nothing was observed, and when the sum or the
// total is unknown (NoSum, NoTop), since a missing series is not 0.
func (h Histogram) Mean() float64 {
	if h.Count <= 0 || h.NoSum || h.NoTop {
		return math.NaN()
	}
	return h.Sum / h.Count
}

// Quantile estimates the q-quantile exactly as PromQL's histogram_quantile
// does for classic buckets: NaN with fewer than two buckets, no +Inf bucket
// (NoTop: the exposition had none) or no observations; linear interpolation
// inside the bucket holding the rank, the lowest bucket starting at 0 (or
// returning its bound when that is ≤ 0); a rank in +Inf returns the highest
// finite bound. [Histogram.Estimate] says how far the data bear it out.
func (h Histogram) Quantile(q float64) float64 {
	v, _ := h.quantile(q, math.Inf(1))
	return v
}

// quantile is Quantile held to peak, an observed maximum (+Inf: none): the
// bucket holding the rank has its upper bound lowered to peak before
// interpolating (the +Inf bucket too, which then interpolates up to the
// peak rather than returning its lower bound), so the estimate never
// exceeds the largest value ever seen and successive quantiles stay
// ordered. capped reports whether the peak changed the estimate.
// One function: each case is one place the rank can fall, as
// histogram_quantile tells them apart.
func (h Histogram) quantile(q, peak float64) (float64, bool) {
	switch {
	case math.IsNaN(q):
		return math.NaN(), false
	case q < 0:
		return math.Inf(-1), false
	case q > 1:
		return math.Inf(1), false
	}
	b := h.Buckets
	if len(b) < 2 || !math.IsInf(b[len(b)-1].UpperBound, 1) || h.NoTop {
		return math.NaN(), false
	}
	total := b[len(b)-1].Count
	if total <= 0 || math.IsNaN(total) {
		return math.NaN(), false
	}
	rank := q * total
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	var v float64
	switch {
	case i == len(b)-1 && peak > b[len(b)-2].UpperBound && !math.IsInf(peak, 1):
		// The +Inf bucket held to the peak is (last bound, peak].
		lo, start := b[len(b)-2].UpperBound, b[len(b)-2].Count
		return lerp(lo, peak, rank-start, total-start), true
	case i == len(b)-1:
		v = b[len(b)-2].UpperBound
	case i == 0 && b[0].UpperBound <= 0:
		v = b[0].UpperBound
	default:
		lo, start := 0.0, 0.0
		if i > 0 {
			lo, start = b[i-1].UpperBound, b[i-1].Count
		}
		hi, count := b[i].UpperBound, b[i].Count-start
		if hi > peak {
			if lo >= peak {
				return peak, true
			}
			capped := lerp(lo, hi, rank-start, count)
			v = lerp(lo, peak, rank-start, count)
			return v, capped > v
		}
		v = lerp(lo, hi, rank-start, count)
	}
	if v > peak {
		return peak, true
	}
	return v, false
}

func lerp(lo, hi, into, count float64) float64 {
	if count <= 0 {
		return hi
	}
	return lo + (hi-lo)*(into/count)
}

// Sub returns h minus an earlier reading of the same histogram: what was
// observed between the two scrapes. ok is false when the bucket layouts
// differ or any count fell (the histogram restarted), since a delta across a
// restart would be meaningless. What either reading lacks (NoSum, NoTop)
// the delta lacks too.
func (h Histogram) Sub(prev Histogram) (d Histogram, ok bool) {
	if len(h.Buckets) != len(prev.Buckets) || h.Count < prev.Count {
		return Histogram{}, false
	}
	d.Buckets = make([]Bucket, len(h.Buckets))
	for i, b := range h.Buckets {
		p := prev.Buckets[i]
		if b.UpperBound != p.UpperBound && !(math.IsInf(b.UpperBound, 1) && math.IsInf(p.UpperBound, 1)) {
			return Histogram{}, false
		}
		if b.Count < p.Count {
			return Histogram{}, false
		}
		d.Buckets[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - p.Count}
	}
	d.Count = h.Count - prev.Count
	d.Sum = h.Sum - prev.Sum
	d.NoSum = h.NoSum || prev.NoSum
	d.NoTop = h.NoTop || prev.NoTop
	return d, true
}

// NonCumulative returns each bucket's own count (not the running total), in
// bucket order, for drawing a distribution.
func (h Histogram) NonCumulative() []Bucket {
	out := make([]Bucket, len(h.Buckets))
	prev := 0.0
	for i, b := range h.Buckets {
		out[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - prev}
		prev = b.Count
	}
	return out
}

// InOpenTop reports whether the q-quantile's rank falls in the +Inf bucket,
// where Quantile can only return the highest finite bound: the true value is
// above it. False when the +Inf bucket is unknown (NoTop).
func (h Histogram) InOpenTop(q float64) bool {
	b := h.Buckets
	if len(b) < 2 || q < 0 || q > 1 || h.NoTop {
		return false
	}
	total := b[len(b)-1].Count
	if total <= 0 {
		return false
	}
	return b[len(b)-2].Count < q*total
}

// MergeLadders adds series bound by bound over the union of their bounds,
// each series counting at a bound it lacks what it has at its next lower
// one: exact at every bound all share, below the truth elsewhere.
func MergeLadders(series [][]Bucket) []Bucket {
	var bounds []float64
	for _, bs := range series {
		for _, b := range bs {
			bounds = append(bounds, b.UpperBound)
		}
	}
	sort.Float64s(bounds)
	var merged []Bucket
	for i, u := range bounds {
		if i > 0 && u == bounds[i-1] {
			continue
		}
		c := 0.0
		for _, bs := range series {
			// The count at the largest own bound not above u.
			j := sort.Search(len(bs), func(k int) bool { return bs[k].UpperBound > u })
			if j > 0 {
				c += bs[j-1].Count
			}
		}
		merged = append(merged, Bucket{UpperBound: u, Count: c})
	}
	return merged
}
