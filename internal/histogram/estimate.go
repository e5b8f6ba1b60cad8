package histogram

import "math"

// Kind says what an [Estimate]'s Value is, and so how it may be stated.
type Kind int

const (
	// Unknown: nothing can be said (no observations, a quantile outside
	// [0, 1], or inputs that are not numbers). Value is NaN.
	Unknown Kind = iota
	// Exact: the data allow one value only (a single observation, or a sum
	// that pins every observation to a bucket edge). State it plainly.
	Exact
	// Interpolated: histogram_quantile's linear interpolation, which lies
	// inside what the data allow. An estimate: state it as one.
	Interpolated
	// AtMost: interpolation went above what the data allow, and Value is
	// the largest value they do allow. State it as "≤ Value".
	AtMost
	// AtLeast: Value is the smallest value the data allow, either because
	// interpolation went below it or because nothing bounds the quantile
	// from above (its rank is in the open +Inf bucket and no peak is known;
	// or the histogram's total is unknown). State it as "≥ Value".
	AtLeast
)

func (k Kind) String() string {
	switch k {
	case Exact:
		return "exact"
	case Interpolated:
		return "interpolated"
	case AtMost:
		return "at most"
	case AtLeast:
		return "at least"
	}
	return "unknown"
}

// NearlyAll is the share of the observations from which the bucket holding
// a quantile's rank is said to hold nearly all of them. Interpolating
// inside such a bucket shows the bucket's own shape (an even spread from
// its lower edge to its upper one), not the data's: every observation in
// (0, 10 ms] with a mean of 2.7 ms would read p50 5 ms, p90 9 ms, p99
// 9.9 ms. There the quantile is stated as the bound the count, sum and peak
// allow (p50 ≤ 5.4 ms, p90 and p99 ≤ 10 ms), never as an estimate.
const NearlyAll = 0.9

// Say writes e as every view states a quantile: a bound with "≤" or "≥"
// before the value, an exact or interpolated value plainly (the legend
// says which values are estimates), and "" when nothing can be said.
func (e Estimate) Say(format func(float64) string) string {
	switch e.Kind {
	case AtMost:
		return "≤" + format(e.Value)
	case AtLeast:
		return "≥" + format(e.Value)
	case Unknown:
		return ""
	}
	return format(e.Value)
}

// Estimate is a quantile as it can honestly be stated: a value, what kind
// of statement it is, and the interval [Lo, Hi] every dataset consistent with
// the histogram (its buckets, sum, total, and the peak when one is given)
// keeps the quantile in. See the package documentation for how the interval
// is found.
type Estimate struct {
	// Value is what to show: Plain with its top bucket held to the peak,
	// projected into [Lo, Hi], or the exact value. NaN when Kind is Unknown.
	Value float64
	Kind  Kind
	// Lo and Hi bound the quantile: the smallest and the largest value it
	// takes over all datasets the facts allow (widened by the rounding the
	// sum may carry). Lo may be -Inf and Hi +Inf where nothing bounds it.
	Lo, Hi float64
	// Plain is histogram_quantile's own estimate ([Histogram.Quantile]).
	Plain float64
	// Inconsistent says that the facts contradict one another (a sum the
	// buckets cannot hold, a peak outside the highest occupied bucket):
	// [Lo, Hi] then uses only the facts that agree with the buckets.
	Inconsistent bool
	// NoEstimate says that interpolation is no estimate here (see [NearlyAll]):
	// the rank's bucket holds nearly all the observations, or the sum
	// puts that bucket's observations near one end of it. Value is then
	// the bound on the side interpolation errs to, not an estimate.
	NoEstimate bool
	// Projected is histogram_quantile's estimate held to the peak and
	// projected into [Lo, Hi]: the value the data allow nearest to it. It
	// is Value unless NoEstimate, and is never farther from the truth than
	// interpolation; NaN when Kind is Unknown.
	Projected float64
}

// Estimate states the q-quantile of h. peak, when known (not NaN or ±Inf),
// is the largest value ever observed: attained by one observation and ≥
// every other. Estimate allocates nothing: it runs for every histogram on
// every watch frame.
//
// With NoTop (no total) every quantile is a lower bound (AtLeast): the
// rank's bucket among the observations published, since any the exposition
// cut off lie above the last bound and only raise the rank. With NoSum the
// bounds use the buckets (and the peak) alone.
func (h Histogram) Estimate(q, peak float64) Estimate {
	e := h.estimate(q, peak)
	if !e.NoEstimate {
		e.Projected = e.Value
	}
	return e
}

func (h Histogram) estimate(q, peak float64) Estimate {
	nan := math.NaN()
	e := Estimate{Value: nan, Lo: nan, Hi: nan, Plain: h.Quantile(q), Projected: nan}
	if !h.estimable(q) {
		return e
	}
	b := h.Buckets
	hasPeak := !math.IsNaN(peak) && !math.IsInf(peak, 0)
	r := ranked{b: b, sum: h.Sum, peak: peak}
	if h.NoTop {
		return r.lowerOnly(q, hasPeak, e)
	}
	if !r.rank(q, b[len(b)-1].Count) {
		return e
	}
	iv, inconsistent, ok := h.consistentBounds(&r, hasPeak)
	if !ok {
		return e // unreachable: the buckets alone always admit a dataset
	}
	e.Inconsistent = inconsistent
	r.peak = iv.peak
	e.Lo, e.Hi = iv.widened(&r)
	if iv.same() {
		v := iv.one()
		e.Value, e.Kind = v, Exact
		e.Lo, e.Hi = math.Min(e.Lo, v), math.Max(e.Hi, v)
		return e
	}
	plain, _ := h.quantile(q, r.peak)
	return r.place(e, plain, h.NoSum)
}

// estimable reports whether a quantile can be estimated at all: q is in
// [0, 1], the buckets end at +Inf with counts that are numbers and never
// fall, and the sum, where there is one, is finite.
func (h Histogram) estimable(q float64) bool {
	b := h.Buckets
	if math.IsNaN(q) || q < 0 || q > 1 || len(b) == 0 || !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return false
	}
	prev := 0.0
	for _, x := range b {
		if math.IsNaN(x.UpperBound) || math.IsInf(x.UpperBound, -1) || math.IsNaN(x.Count) || math.IsInf(x.Count, 0) || x.Count < prev {
			return false
		}
		prev = x.Count
	}
	return h.NoSum || !(math.IsNaN(h.Sum) || math.IsInf(h.Sum, 0))
}

// consistentBounds is the interval the facts allow, all of them first;
// where they contradict one another, the buckets are kept and the others
// given up: first the peak (a separate series, possibly of another window),
// then the sum. inconsistent says a fact was given up.
func (h Histogram) consistentBounds(r *ranked, hasPeak bool) (iv interval, inconsistent, ok bool) {
	for _, f := range [...]struct{ sum, peak bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
		if (f.sum && h.NoSum) || (f.peak && !hasPeak) {
			continue
		}
		if iv, ok = r.bounds(f.sum, f.peak); ok {
			return iv, (!f.sum && !h.NoSum) || (!f.peak && hasPeak), true
		}
	}
	return iv, false, false
}

// place states the quantile within [e.Lo, e.Hi], which is not one value:
// plain (histogram_quantile's estimate held to the peak) where it lies
// inside and it may stand as an estimate ([NearlyAll]), else the bound
// it crosses or the bound on the side it errs to. noSum: the histogram has
// no sum.
func (r *ranked) place(e Estimate, plain float64, noSum bool) Estimate {
	switch {
	case math.IsInf(r.up(r.i), 1):
		// The rank is in the open +Inf bucket and no peak closes it:
		// interpolation has nothing to go on, only the floor is known
		// (none at all with a lone +Inf bucket and no sum).
		if !math.IsInf(e.Lo, -1) {
			e.Value, e.Kind = e.Lo, AtLeast
		}
	case math.IsInf(r.lower(r.i), -1):
		// Symmetrically, a lowest bucket open below (a bound < 0).
		e.Value, e.Kind = e.Hi, AtMost
	case math.IsNaN(plain):
		// Fewer than two buckets: histogram_quantile says nothing.
	case plain > e.Hi:
		e.Value, e.Kind = e.Hi, AtMost
		if plain-e.Hi <= relTiny*math.Abs(plain) {
			e.Kind = Interpolated
		}
	case plain < e.Lo:
		e.Value, e.Kind = e.Lo, AtLeast
		if e.Lo-plain <= relTiny*math.Abs(plain) {
			e.Kind = Interpolated
		}
	default:
		e = r.inside(e, plain, !noSum && !e.Inconsistent)
	}
	return e
}

// inside states a quantile whose interpolation, plain, lies inside
// [e.Lo, e.Hi]: plain, as an estimate, unless the rank's bucket holds
// nearly all the observations or (useSum: the sum is one of the facts
// kept) the sum puts them near one end of it; then the bound on the side
// interpolation errs to.
func (r *ranked) inside(e Estimate, plain float64, useSum bool) Estimate {
	e.Value, e.Kind = plain, Interpolated
	bunched := 0
	if useSum {
		bunched = r.bunched()
	}
	if bunched == 0 && r.count(r.i) < NearlyAll*r.n {
		return e
	}
	e.Projected, e.NoEstimate = plain, true
	e.Value, e.Kind = e.Hi, AtMost
	if bunched > 0 || (bunched == 0 && useSum && r.meanAbove()) {
		e.Value, e.Kind = e.Lo, AtLeast
	}
	return e
}

// bucketMeans is the least and the most the mean of the rank bucket's
// observations can be, as far as the sum says: the sum less every other
// observation at its upper edge, and at its lower edge, over their count.
// ok is false where an edge is infinite or the bucket empty.
func (r *ranked) bucketMeans() (meanLo, meanHi float64, ok bool) {
	i := r.i
	a, b := r.lower(i), r.up(i)
	c := r.count(i)
	if c <= 0 || math.IsInf(a, 0) || math.IsInf(b, 0) || b <= a {
		return 0, 0, false
	}
	var minO, maxO float64
	for j := range r.b {
		if j == i {
			continue
		}
		if cj := r.count(j); cj > 0 {
			minO += cj * r.lower(j)
			maxO += cj * r.up(j)
		}
	}
	if math.IsInf(minO, 0) || math.IsNaN(minO) || math.IsInf(maxO, 0) || math.IsNaN(maxO) {
		return 0, 0, false
	}
	return (r.sum - maxO) / c, (r.sum - minO) / c, true
}

// bunched tells whether the rank bucket's observations must sit in its
// lowest quarter (-1) or its highest (1), as far as the sum says.
// Interpolation assumes them spread evenly, with a mean at the bucket's
// middle; a mean held to a quarter of the width from either end is far
// from that.
func (r *ranked) bunched() int {
	meanLo, meanHi, ok := r.bucketMeans()
	if !ok {
		return 0
	}
	a, b := r.lower(r.i), r.up(r.i)
	w := b - a
	switch {
	case meanHi < a+w/4:
		return -1
	case meanLo > b-w/4:
		return 1
	}
	return 0
}

// meanAbove reports whether the sum puts the rank bucket's observations'
// mean above the bucket's middle for certain: interpolation, which puts it
// at the middle, then errs low.
func (r *ranked) meanAbove() bool {
	meanLo, _, ok := r.bucketMeans()
	return ok && meanLo > (r.lower(r.i)+r.up(r.i))/2
}

// QuantileBounded is [Estimate]'s Projected for the q-quantile:
// histogram_quantile's estimate held to the peak (peak < 0, NaN or +Inf:
// none known) and projected into what the buckets, sum, total and peak
// allow. changed reports whether that moved it from
// [Histogram.Quantile]. It does not say whether the value is exact, an
// estimate or a bound: callers that show it should use Estimate.
func (h Histogram) QuantileBounded(q, peak float64) (v float64, changed bool) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return h.Quantile(q), false
	}
	if peak < 0 {
		peak = math.Inf(1)
	}
	e := h.Estimate(q, peak)
	if math.IsNaN(e.Projected) {
		return e.Plain, false
	}
	return e.Projected, e.Projected != e.Plain
}

// relTiny is the relative difference below which two values are the same
// value rounded differently: the bucket bounds, sum and peak come as
// decimal text and the sum was accumulated in float64.
const relTiny = 1e-9

// ranked is a histogram with the rank of one quantile located in it.
type ranked struct {
	b         []Bucket
	sum, peak float64 // peak is +Inf when none is known or used
	n, k      float64 // observations; the rank: the k-th smallest is the quantile
	i, t      int     // the bucket holding rank k; the highest occupied bucket
	// Of bucket i's observations other than the k-th: how many rank below
	// it (they lie between the bucket's lower edge and the quantile) and
	// above it (between the quantile and the bucket's upper edge).
	below, above float64
	tol          float64 // relative rounding the sum may carry
}

// rank locates the k-th smallest of n, k = max(1, ⌈q·n⌉) as
// histogram_quantile ranks. False when nothing was observed.
func (r *ranked) rank(q, n float64) bool {
	if n <= 0 {
		return false
	}
	r.n = n
	r.k = math.Min(math.Max(math.Ceil(q*n), 1), n)
	lo, hi := 0, len(r.b)-1 // the last bucket holds n ≥ k
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); r.b[m].Count >= r.k {
			hi = m
		} else {
			lo = m + 1
		}
	}
	r.i = lo
	r.t = len(r.b) - 1
	for r.t > 0 && r.b[r.t].Count == r.b[r.t-1].Count {
		r.t--
	}
	r.below = math.Max(r.k-1-r.start(r.i), 0)
	r.above = math.Max(r.b[r.i].Count-r.k, 0)
	// A server's float64 sum of n values is off by at most (n−1)·2⁻⁵³ of
	// their magnitude; our own sums over the buckets add len(b) terms.
	// Capped: beyond it an interval would be called exact when it is not.
	r.tol = math.Min(2*(n+float64(len(r.b))+4)*0x1p-53, 1e-10)
	return true
}

func (r *ranked) start(j int) float64 {
	if j == 0 {
		return 0
	}
	return r.b[j-1].Count
}

func (r *ranked) count(j int) float64 { return r.b[j].Count - r.start(j) }

// lower is bucket j's lower edge: the previous bound, and for the lowest
// bucket 0 when its bound is ≥ 0 (histogram_quantile's convention: such a
// histogram observes nothing negative), else -Inf.
func (r *ranked) lower(j int) float64 {
	if j > 0 {
		return r.b[j-1].UpperBound
	}
	if u := r.b[0].UpperBound; u >= 0 && !math.IsInf(u, 1) {
		return 0
	}
	return math.Inf(-1)
}

// up is bucket j's upper edge, held to the peak.
func (r *ranked) up(j int) float64 { return upper(r.b[j].UpperBound, r.peak) }

func upper(bound, peak float64) float64 { return math.Min(bound, peak) }

// interval is what the facts allow for the k-th smallest, before widening.
type interval struct {
	lo, hi float64
	peak   float64 // the peak the interval holds to, +Inf for none
	// loEdge and hiEdge: the bound is a bucket edge or the peak, exact as
	// published, not a quotient of the sum.
	loEdge, hiEdge bool
	eLo, eHi       float64 // how far the sum's rounding can move a quotient bound
}

// same reports whether the interval is one value but for rounding.
func (iv interval) same() bool {
	if math.IsInf(iv.lo, 0) || math.IsInf(iv.hi, 0) {
		return false
	}
	return math.Abs(iv.hi-iv.lo) <= iv.eLo+iv.eHi+relTiny*math.Max(math.Abs(iv.lo), math.Abs(iv.hi))
}

// bounds solves for the range of the k-th smallest observation v using the
// buckets and, as asked, the sum and the peak; ok is false when those facts
// admit no dataset at all. Derivation (the package documentation has it in
// words): v lies in its bucket (a, b]. Given v, the other observations are
// free inside their own buckets, except that bucket i's `below` are ≤ v and
// its `above` ≥ v, and that one of the highest bucket's is the peak P. The
// dataset's sum therefore ranges over [minSum(v), maxSum(v)]:
//
//	minSum(v) = A + (above+1)·v     A = Σ lower edges of the others
//	maxSum(v) = B + (below+1)·v     B = Σ upper edges of the others
//
// where in A bucket i's `above` sit at v (counted in the factor) and its
// `below` at a; in B the `below` sit at v and the `above` at b. Both grow
// with v, so the sum S is reachable exactly for v in
//
//	[ (S − B)/(below+1), (S − A)/(above+1) ] ∩ [a, b].
//
// The peak: every upper edge is held to P; one observation of the highest
// occupied bucket t is P itself, so A counts P instead of that one's lower
// edge, or, when t = i, P instead of one of the `above` at v (the factor
// becomes `above`); when v is the largest observation (t = i, above = 0) v
// is P. Edges are open below ((a, b]): the interval is the closure, with its
// ends approached as closely as one likes, never a value outside.
// One function: its steps are the terms of this derivation, in order.
func (r *ranked) bounds(useSum, usePeak bool) (iv interval, ok bool) {
	peak := math.Inf(1)
	if usePeak {
		peak = r.peak
		// The peak was observed, so it lies in the highest occupied
		// bucket; the lower edge itself is the closure's limit.
		if peak < r.lower(r.t) || peak > r.b[r.t].UpperBound {
			return iv, false
		}
	}
	up := func(j int) float64 { return upper(r.b[j].UpperBound, peak) }
	i := r.i
	iv = interval{lo: r.lower(i), hi: up(i), peak: peak, loEdge: true, hiEdge: true}
	// The quantile is the largest observation: the peak (up(i) is it).
	largest := usePeak && r.t == i && r.above == 0
	if largest {
		iv.lo = peak
	}
	if !useSum {
		return iv, true
	}
	var minO, maxO float64 // A and B above
	prevCount, lower := 0.0, r.lower(0)
	for j, bk := range r.b {
		c, lo := bk.Count-prevCount, lower
		prevCount, lower = bk.Count, bk.UpperBound
		if j == i || c == 0 {
			continue
		}
		minO += c * lo
		if u := bk.UpperBound; u < peak {
			maxO += c * u
		} else {
			maxO += c * peak
		}
	}
	if r.below > 0 {
		minO += r.below * r.lower(i)
	}
	if r.above > 0 {
		maxO += r.above * up(i)
	}
	wHi, wLo := r.above+1, r.below+1
	switch {
	case !usePeak || largest: // the peak is v itself, held above
	case r.t > i:
		minO += peak - r.lower(r.t)
	default: // t == i, above > 0: one of those above is the peak
		minO += peak
		wHi = r.above
	}
	s := r.sum
	if hiSum := (s - minO) / wHi; hiSum < iv.hi {
		iv.hi, iv.hiEdge = hiSum, false
		iv.eHi = r.tol * (math.Abs(s) + math.Abs(minO)) / wHi
	}
	if loSum := (s - maxO) / wLo; loSum > iv.lo {
		iv.lo, iv.loEdge = loSum, false
		iv.eLo = r.tol * (math.Abs(s) + math.Abs(maxO)) / wLo
	}
	if iv.lo > iv.hi {
		if !iv.same() {
			return iv, false // the sum is outside what the buckets allow
		}
		v := iv.one()
		iv.lo, iv.hi = v, v
	}
	return iv, true
}

// one is the value of an interval that is one value but for rounding: the
// exact one (a bucket edge or the peak, as published) if either end is,
// else the middle.
func (iv interval) one() float64 {
	switch {
	case iv.hiEdge:
		return iv.hi
	case iv.loEdge:
		return iv.lo
	}
	return (iv.lo + iv.hi) / 2
}

// widened is the interval with each bound from the sum moved out by the
// rounding the sum may carry, never past the bucket's edges.
func (iv interval) widened(r *ranked) (lo, hi float64) {
	lo, hi = iv.lo, iv.hi
	if !iv.loEdge {
		lo = math.Max(lo-iv.eLo, r.lower(r.i))
	}
	if !iv.hiEdge {
		hi = math.Min(hi+iv.eHi, r.up(r.i))
	}
	return lo, hi
}

// lowerOnly states a quantile of a histogram with no total: of the m
// observations published (the last bucket's count) the quantile's rank k
// lies in some bucket, and the N ≥ m there were rank at least as high
// (⌈q·N⌉ ≥ ⌈q·m⌉, and the observations the exposition cut off lie above
// every published one), so that bucket's lower edge is a floor. The sum
// covers observations of unknown number and size and bounds nothing.
func (r *ranked) lowerOnly(q float64, hasPeak bool, e Estimate) Estimate {
	if !r.rank(q, r.b[len(r.b)-1].Count) {
		return e
	}
	e.Lo, e.Hi = r.lower(r.i), math.Inf(1)
	if hasPeak {
		if p := r.peak; p >= e.Lo {
			e.Hi = p
		} else {
			e.Inconsistent = true
		}
	}
	if !math.IsInf(e.Lo, -1) { // a lowest bucket open below has no floor
		e.Value, e.Kind = e.Lo, AtLeast
	}
	return e
}
