package histogram

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// Bucket ladders servers publish.
var (
	// vLLM's latency ladder (request_prefill_time_seconds and friends).
	vllmLAT = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	// vLLM's time-to-first-token ladder.
	vllmTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	// 1-2-5 token ladder (vLLM's request_prompt_tokens up to a 100K context).
	tokens125 = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
)

// with builds a histogram from finite bounds and their cumulative counts,
// every observation ≤ the last bound (the +Inf bucket adds none), and sets
// its sum.
func with(bounds, cum []float64, sum float64) Histogram {
	h := Histogram{Sum: sum}
	for i, b := range bounds {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: cum[i]})
	}
	h.Count = cum[len(cum)-1]
	h.Normalize()
	return h
}

// all puts n observations in bucket j of bounds (cumulative 0 below, n from
// j up).
func all(bounds []float64, j int, n float64) []float64 {
	cum := make([]float64, len(bounds))
	for i := j; i < len(cum); i++ {
		cum[i] = n
	}
	return cum
}

var nan = math.NaN()

func near(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= 1e-9*math.Max(1e-9, math.Max(math.Abs(got), math.Abs(want)))
}

// The expected values are worked by hand in the comments: the derivation
// of [ranked.bounds], applied to each case.
func TestEstimateWorked(t *testing.T) {
	one := with([]float64{1, 2, 5, 10, 20}, []float64{0, 0, 1, 1, 1}, 5)
	prompts := with([]float64{2.555, 5.11, 10.22, 20.44}, all([]float64{2.555, 5.11, 10.22, 20.44}, 2, 109), 662)
	ttft := with(vllmTTFT, all(vllmTTFT, 3, 2276), 45.52)
	prefill := with(vllmLAT, all(vllmLAT, 0, 1000), 22)
	same := with([]float64{20000, 50000}, []float64{0, 289}, 289*32000)
	// 10 observations: 5 in (0,10], 5 above 10, the largest 50, sum 150.
	itl := with([]float64{0.01, 0.025}, []float64{969, 969}, 2.907)
	top := with([]float64{10}, []float64{5}, 150)
	top.Buckets[1].Count, top.Count = 10, 10
	tests := []struct {
		name       string
		h          Histogram
		peak, q    float64
		value      float64
		kind       Kind
		lo, hi     float64
		plain      float64
		incoherent bool
	}{
		// One observation of 5 tokens in (2, 5]: it is the sum, 5, at
		// every quantile; interpolation puts p50 at 2 + 3·½ = 3.5.
		{"one p50", one, nan, 0.5, 5, Exact, 5, 5, 3.5, false},
		{"one p99", one, nan, 0.99, 5, Exact, 5, 5, 2 + 3*0.99, false},
		// 109 prompts in (5.11, 10.22], sum 662. p50 is the 55th: 54
		// below it at ≥ 5.11 and it with the 54 above at ≥ v give
		// 54·5.11 + 55·v ≤ 662, v ≤ 386.06/55 = 7.01927…; interpolation
		// says 5.11 + 5.11·54.5/109 = 7.665. The floor is the edge 5.11
		// (55·v + 54·10.22 ≥ 662 holds for any v ≥ 2.0).
		{"prompts p50", prompts, nan, 0.5, 386.06 / 55, AtMost, 5.11, 386.06 / 55, 7.665, false},
		// p90 is the 99th: 99·v + 10·10.22 ≥ 662 gives v ≥ 559.8/99 =
		// 5.6545…; 98·5.11 + 11·v ≤ 662 gives v ≤ 14.66, above the edge
		// 10.22. Interpolation, 5.11 + 5.11·98.1/109 = 9.709, is inside,
		// but it assumes the 109 spread evenly over the bucket, and their
		// mean, 662/109 = 6.07, is in its lowest quarter (below 6.39): the
		// figure is the bound, 10.22, stated as such.
		{"prompts p90", prompts, nan, 0.9, 10.22, AtMost, 559.8 / 99, 10.22, 9.709, false},
		// 2,276 first-token times in (0.01, 0.02] with mean 0.02: the
		// ceiling and the sum force every one to 0.02 (interpolation:
		// p50 0.01 + 0.01·½ = 0.015).
		{"ttft p50", ttft, nan, 0.5, 0.02, Exact, 0.02, 0.02, 0.015, false},
		{"ttft p1", ttft, nan, 0.01, 0.02, Exact, 0.02, 0.02, 0.01 + 0.01*0.01, false},
		{"ttft p99", ttft, nan, 0.99, 0.02, Exact, 0.02, 0.02, 0.0199, false},
		// 1,000 prefills in (0, 0.3], sum 22 s. p90 is the 900th: it and
		// the 100 above it are ≥ v, so 101·v ≤ 22, v ≤ 0.21782 s, where
		// interpolation says 0.27. p50: 501·v ≤ 22, v ≤ 43.9 ms (0.15).
		{"prefill p90", prefill, nan, 0.9, 22.0 / 101, AtMost, 0, 22.0 / 101, 0.27, false},
		{"prefill p50", prefill, nan, 0.5, 22.0 / 501, AtMost, 0, 22.0 / 501, 0.15, false},
		// p99 is the 990th: 11·v ≤ 22 allows up to the edge 0.3, and
		// 990·v + 10·0.3 ≥ 22 needs v ≥ 19/990. 0.297 is inside, but with a
		// 22 ms mean in a 300 ms bucket nothing is spread evenly: at most
		// 0.3, said so (the report printed 297 ms as an estimate).
		{"prefill p99", prefill, nan, 0.99, 0.3, AtMost, 19.0 / 990, 0.3, 0.297, false},
		// 289 prompts of 32000 in (20000, 50000], peak 32000: the mean is
		// the peak, so all are 32000. p50 (145th): 144 below at ≤ v, the
		// 144 above at ≤ 32000: 145·v + 144·32000 ≥ 289·32000, v ≥ 32000.
		{"same p50", same, 32000, 0.5, 32000, Exact, 32000, 32000, 20000 + 30000*144.5/289, false},
		// Without the peak the sum still bounds it: 145·v + 144·50000 ≥
		// 9248000 gives v ≥ 14124.1 (below the edge 20000), and 144·20000 +
		// 145·v ≤ 9248000 gives v ≤ 43917.24…. Interpolation (35000) is
		// inside, but the bucket holds every observation: it would show
		// the bucket's shape, so the bound is stated, on the side the mean
		// 32000 (below the middle 35000) says interpolation errs to.
		{"same p50 no peak", same, nan, 0.5, (9248000 - 144*20000) / 145.0, AtMost, 20000, (9248000 - 144*20000) / 145.0, 20000 + 30000*144.5/289, false},
		// The largest observation is the peak, whatever the buckets say.
		{"p100 is the peak", prompts, 9.5, 1, 9.5, Exact, 9.5, 9.5, 10.22, false},
		// p90 of top (the 9th) is in (10, 50]: the 8th, 7th below it at
		// ≥ 10 (3 of the bucket's 5), 5 in (0, 10] at ≥ 0, and the 10th
		// is the peak 50: 30 + v + 50 ≤ 150 allows v ≤ 70, so the peak 50
		// binds; 5·10 + 4·v + 50 ≥ 150 needs v ≥ 12.5. Interpolation
		// held to the peak: 10 + 40·4/5 = 42.
		{"top p90 peak", top, 50, 0.9, 42, Interpolated, 12.5, 50, 10, false},
		// Without the peak the rank is in the open +Inf bucket: the sum
		// still caps it (30 + 2·v ≤ 150, v ≤ 60), but the floor is only
		// the bound 10: a lower bound is all that can be said.
		{"top p90 open", top, nan, 0.9, 10, AtLeast, 10, 60, 10, false},
		// p100 of top without peak: the largest, with 5 at ≤ 10 and 4 at
		// ≤ v: 5·10 + 5·v ≥ 150, v ≥ 20; 5·0 + 4·10 + v ≤ 150, v ≤ 110.
		{"top p100 open", top, nan, 1, 20, AtLeast, 20, 110, 10, false},
		// A sum no dataset in the buckets has (4 in (0, 10] summing 100):
		// the sum is given up, the peak kept: p50 (2nd) in (0, 5],
		// interpolation held to the peak 5·2/4 = 2.5.
		// All four are in that one bucket: no estimate, the ceiling.
		{"sum too big", with([]float64{10}, []float64{4}, 100), 5, 0.5, 5, AtMost, 0, 5, 5, true},
		{"negative sum", with([]float64{10}, []float64{4}, -1), nan, 0.5, 10, AtMost, 0, 10, 5, true},
		// A peak below the rank's bucket: the peak is given up, the sum
		// kept: 10 in (5, 10] summing 70, p50 (5th): 4·5 + 6·v ≤ 70 and
		// 5·v + 5·10 ≥ 70: v in [4 → 5, 8.333…]; all ten in one bucket,
		// so the ceiling.
		{"peak too small", with([]float64{5, 10}, []float64{0, 10}, 70), 3, 0.5, 50.0 / 6, AtMost, 5, 50.0 / 6, 7.5, true},
		// Empty buckets between: 5 in (0, 1], 5 in (2, 4], sum 10.5.
		// p50 (5th) in (0, 1]: 4·0 + v + 5·2 ≤ 10.5, v ≤ 0.5.
		{"gap", with([]float64{1, 2, 4}, []float64{5, 5, 10}, 10.5), nan, 0.5, 0.5, AtMost, 0, 0.5, 1, false},
		// A lowest bound of 0 holds exactly 0 (nothing is negative).
		{"zeros", with([]float64{0, 1}, []float64{10, 10}, 0), nan, 0.9, 0, Exact, 0, 0, 0, false},
		// A lowest bound below 0: nothing bounds the values from below,
		// so a rank there is at most its bound (−1), as histogram_quantile
		// returns; the sum −20 of 10 (3 in (−∞, −1], 7 in (−1, 0]) bounds
		// the 2nd from below: the 1st ≤ v, the 3rd ≤ −1, the 7 ≤ 0, so
		// 2·v − 1 ≥ −20, v ≥ −9.5.
		{"negative ladder", with([]float64{-1, 0}, []float64{3, 10}, -20), nan, 0.2, -1, AtMost, -9.5, -1, -1, false},
		// A lone +Inf bucket: histogram_quantile says nothing, but one
		// observation is its sum.
		{"lone +Inf one", Histogram{Buckets: []Bucket{{inf, 1}}, Count: 1, Sum: 7}, nan, 0.5, 7, Exact, 7, 7, nan, false},
		{"lone +Inf three", Histogram{Buckets: []Bucket{{inf, 3}}, Count: 3, Sum: 7}, nan, 0.5, nan, Unknown, math.Inf(-1), inf, nan, false},
		// Nothing to say.
		{"empty", with([]float64{1, 2}, []float64{0, 0}, 0), nan, 0.5, nan, Unknown, nan, nan, nan, false},
		{"q NaN", one, nan, nan, nan, Unknown, nan, nan, nan, false},
		{"q > 1", one, nan, 1.5, nan, Unknown, nan, nan, inf, false},
		{"sum NaN", with([]float64{1, 2}, []float64{1, 2}, nan), nan, 0.5, nan, Unknown, nan, nan, 1, false},
		{"sum +Inf", with([]float64{1, 2}, []float64{1, 2}, inf), nan, 0.5, nan, Unknown, nan, nan, 1, false},
		// (histogram_quantile's search skips the NaN bucket.)
		{"count NaN", Histogram{Buckets: []Bucket{{1, nan}, {inf, 2}}, Count: 2, Sum: 1}, nan, 0.5, nan, Unknown, nan, nan, 1, false},
		// The largest is the peak only if the sum agrees: 109 in (5.11,
		// 10.22] cannot sum to 662 with none above 6 (109·6 = 654). The
		// peak is given up; the sum says the largest is ≥ the mean 662/109.
		{"peak against sum", with([]float64{2.555, 5.11, 10.22, 20.44}, all([]float64{2.555, 5.11, 10.22, 20.44}, 2, 109), 662), 6, 1, 10.22, AtMost, 662.0 / 109, 10.22, 10.22, true},
		// llm-d's simulator (testdata/real): 969 inter-token times, all in
		// (0, 10 ms], summing 2.907 s (a 3 ms mean). Interpolation reads
		// 5, 9 and 9.9 ms: the bucket's shape. p50 is the 485th: it and
		// the 484 above it are ≥ v, so 485·v ≤ 2.907, v ≤ 5.994 ms (about
		// twice the mean); p90 (873rd): 97·v ≤ 2.907 allows 30 ms, above
		// the edge: ≤ 10 ms. p50's floor is 0 (the 484 above it at the
		// edge 10 ms leave less than nothing); p90's is (2.907 − 96·0.01)
		// / 873 = 2.23 ms. Interpolation ranks q·n: 0.01·872.1/969 = 9 ms.
		{"one bucket p50", itl, nan, 0.5, 2.907 / 485, AtMost, 0, 2.907 / 485, 0.005, false},
		{"one bucket p90", itl, nan, 0.9, 0.01, AtMost, (2.907 - 0.96) / 873, 0.01, 0.009, false},
		// Ten in (0, 1] summing 6.5: their mean is above the middle for
		// certain, so interpolation (0.5) errs low and the floor is
		// stated: the 5th and the 5 above it, these at most 1: 5·v + 5 ≥
		// 6.5, v ≥ 0.3.
		{"one bucket, mean high", with([]float64{1}, []float64{10}, 6.5), nan, 0.5, 0.3, AtLeast, 0.3, 1, 0.5, false},
	}
	for _, tt := range tests {
		e := tt.h.Estimate(tt.q, tt.peak)
		if !near(e.Value, tt.value) || e.Kind != tt.kind || !near(e.Lo, tt.lo) || !near(e.Hi, tt.hi) ||
			!near(e.Plain, tt.plain) || e.Inconsistent != tt.incoherent {
			t.Errorf("%s: Estimate(%v, %v) = %+v, want value %v (%v) in [%v, %v], plain %v, inconsistent %v",
				tt.name, tt.q, tt.peak, e, tt.value, tt.kind, tt.lo, tt.hi, tt.plain, tt.incoherent)
		}
	}
	// Exact means exact where an edge binds: 0.02 itself, not 0.0199….
	if v := ttft.Estimate(0.5, nan).Value; v != 0.02 {
		t.Errorf("ttft p50 = %v, want 0.02 exactly", v)
	}
}

// Each bound of the worked examples is reached by a dataset that has every
// published fact: the interval is as tight as the facts allow. (Values at a
// lower edge stand for values just above it: (a, b] is open below.)
func TestEstimateWorkedTight(t *testing.T) {
	rep := func(v float64, n int) []float64 { return slices.Repeat([]float64{v}, n) }
	tests := []struct {
		name string
		h    Histogram
		peak float64
		q    float64
		data []float64 // a dataset with those facts; its k-th smallest …
		want float64   // … is this bound
		hi   bool      // the bound is Hi (else Lo)
	}{
		// 54 at the floor 5.11 and 55 at 7.01927…: sum 662, p50 = Hi.
		{"prompts p50 hi", with([]float64{2.555, 5.11, 10.22, 20.44}, all([]float64{2.555, 5.11, 10.22, 20.44}, 2, 109), 662),
			nan, 0.5, append(rep(5.11, 54), rep(386.06/55, 55)...), 386.06 / 55, true},
		// 99 at 5.6545… and 10 at the ceiling 10.22: sum 662, p90 = Lo.
		{"prompts p90 lo", with([]float64{2.555, 5.11, 10.22, 20.44}, all([]float64{2.555, 5.11, 10.22, 20.44}, 2, 109), 662),
			nan, 0.9, append(rep(559.8/99, 99), rep(10.22, 10)...), 559.8 / 99, false},
		// 899 at 0 and 101 at 0.21782…: sum 22, p90 = Hi.
		{"prefill p90 hi", with(vllmLAT, all(vllmLAT, 0, 1000), 22),
			nan, 0.9, append(rep(0, 899), rep(22.0/101, 101)...), 22.0 / 101, true},
		// 990 at 19/990 and 10 at 0.3: sum 22, p99 = Lo.
		{"prefill p99 lo", with(vllmLAT, all(vllmLAT, 0, 1000), 22),
			nan, 0.99, append(rep(19.0/990, 990), rep(0.3, 10)...), 19.0 / 990, false},
		// 5 at 10, 4 at 20 and 1… the largest must be 20 for p100 = Lo:
		// 5·10 + 5·20 = 150.
		{"top p100 lo", func() Histogram {
			h := with([]float64{10}, []float64{5}, 150)
			h.Buckets[1].Count, h.Count = 10, 10
			return h
		}(), nan, 1, append(rep(10, 5), rep(20, 5)...), 20, false},
	}
	for _, tt := range tests {
		e := tt.h.Estimate(tt.q, tt.peak)
		got := e.Lo
		if tt.hi {
			got = e.Hi
		}
		if !near(got, tt.want) {
			t.Errorf("%s: bound %v, want %v (%+v)", tt.name, got, tt.want, e)
		}
		if err := hasFacts(tt.h, tt.peak, true, tt.data); err != nil {
			t.Errorf("%s: the dataset does not fit: %v", tt.name, err)
		}
		if kth := kthSmallest(tt.data, tt.q); !near(kth, tt.want) {
			t.Errorf("%s: the dataset's quantile is %v, want %v", tt.name, kth, tt.want)
		}
	}
}

// kthSmallest is the q-quantile as histogram_quantile ranks: the
// max(1, ⌈q·n⌉)-th smallest.
func kthSmallest(data []float64, q float64) float64 {
	s := slices.Clone(data)
	slices.Sort(s)
	k := max(int(math.Ceil(q*float64(len(s)))), 1)
	return s[min(k, len(s))-1]
}

// hasFacts checks a dataset against a histogram's facts, buckets closed
// below (the closure of (a, b]): each bucket's count, the sum up to
// rounding, and the peak as the largest value.
func hasFacts(h Histogram, peak float64, useSum bool, data []float64) error {
	b := h.Buckets
	lowest := math.Inf(-1)
	if b[0].UpperBound >= 0 && len(b) > 1 {
		lowest = 0
	}
	// Each value may sit in its own bucket or, at a lower edge, stand
	// for one just above it: count both ways and require the buckets to
	// be fillable, greedily from the bottom.
	s := slices.Clone(data)
	slices.Sort(s)
	j, used := 0, 0.0
	for _, x := range s {
		if x < lowest {
			return fmt.Errorf("value %v below the floor %v", x, lowest)
		}
		for j < len(b) && used >= b[j].Count-start(b, j) {
			j, used = j+1, 0
		}
		if j == len(b) {
			return fmt.Errorf("more values than the histogram counts")
		}
		lo := lowest
		if j > 0 {
			lo = b[j-1].UpperBound
		}
		if x < lo || x > b[j].UpperBound {
			return fmt.Errorf("value %v does not fit bucket %d [%v, %v]", x, j, lo, b[j].UpperBound)
		}
		used++
	}
	if float64(len(s)) != b[len(b)-1].Count {
		return fmt.Errorf("%d values, histogram counts %v", len(s), b[len(b)-1].Count)
	}
	if useSum {
		sum, mag := 0.0, 0.0
		for _, x := range data {
			sum += x
			mag += math.Abs(x)
		}
		if math.Abs(sum-h.Sum) > 1e-9*(mag+math.Abs(h.Sum)) {
			return fmt.Errorf("sum %v, histogram says %v", sum, h.Sum)
		}
	}
	if !math.IsNaN(peak) && !math.IsInf(peak, 0) && s[len(s)-1] != peak {
		return fmt.Errorf("largest %v, peak %v", s[len(s)-1], peak)
	}
	return nil
}

func start(b []Bucket, j int) float64 {
	if j == 0 {
		return 0
	}
	return b[j-1].Count
}

func TestEstimateHugeCounts(t *testing.T) {
	// 10¹⁸ observations (past float64's integers) in (0.01, 0.02], mean
	// 0.02: every one is 0.02.
	h := with([]float64{0.01, 0.02, 0.04}, []float64{0, 1e18, 1e18}, 2e16)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if e := h.Estimate(q, nan); e.Value != 0.02 || e.Kind != Exact {
			t.Errorf("q%v = %+v, want exactly 0.02", q, e)
		}
	}
	// Spread: no NaN, Value inside its bounds, ordered.
	s := with([]float64{1, 2, 5, 10}, []float64{3e17, 7e17, 9e17, 1e18}, 2.5e18)
	prev := math.Inf(-1)
	for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 1} {
		e := s.Estimate(q, nan)
		if math.IsNaN(e.Value) || e.Value < e.Lo || e.Value > e.Hi || e.Value < prev || e.Inconsistent {
			t.Errorf("q%v = %+v (previous %v)", q, e, prev)
		}
		prev = e.Value
	}
}

func TestEstimateIncomplete(t *testing.T) {
	// A paste cut after le="5": 3 ≤ 1, 7 ≤ 2, 10 ≤ 5, nothing more.
	cut := Histogram{Buckets: []Bucket{{1, 3}, {2, 7}, {5, 10}}, NoTop: true, NoSum: true}
	cut.Normalize()
	if n := len(cut.Buckets); n != 4 || cut.Buckets[n-1].Count != 10 || !math.IsInf(cut.Buckets[n-1].UpperBound, 1) {
		t.Fatalf("Normalize with NoTop = %+v, want a +Inf bucket holding 10", cut.Buckets)
	}
	if cut.Total() != 10 || !math.IsNaN(cut.Mean()) || !math.IsNaN(cut.Quantile(0.5)) || cut.InOpenTop(0.99) {
		t.Fatalf("cut: total %v mean %v p50 %v", cut.Total(), cut.Mean(), cut.Quantile(0.5))
	}
	tests := []struct {
		q, peak, lo, hi float64
	}{
		// Of the 10 published the 5th is in (1, 2]; with N ≥ 10 the
		// ⌈N/2⌉-th is at least that: ≥ 1.
		{0.5, nan, 1, inf},
		{0.99, nan, 2, inf}, // the 10th is in (2, 5]
		{0.2, nan, 0, inf},  // the 2nd is in [0, 1]
		{0.99, 40, 2, 40},   // a peak caps it
	}
	for _, tt := range tests {
		e := cut.Estimate(tt.q, tt.peak)
		if e.Kind != AtLeast || e.Value != tt.lo || e.Lo != tt.lo || e.Hi != tt.hi || !math.IsNaN(e.Plain) {
			t.Errorf("cut q%v peak %v = %+v, want ≥ %v up to %v", tt.q, tt.peak, e, tt.lo, tt.hi)
		}
	}
	// A rank in a lowest bucket open below (a bound < 0) has no floor.
	neg := Histogram{Buckets: []Bucket{{-1, 3}, {0, 10}}, NoTop: true, NoSum: true}
	neg.Normalize()
	if e := neg.Estimate(0.2, nan); e.Kind != Unknown || !math.IsNaN(e.Value) || !math.IsInf(e.Lo, -1) {
		t.Errorf("cut, open below: %+v", e)
	}
	if e := neg.Estimate(0.9, nan); e.Kind != AtLeast || e.Value != -1 {
		t.Errorf("cut, 9th of 10 in (-1, 0]: %+v, want ≥ -1", e)
	}
	// With a sum but no total the sum bounds nothing (the observations
	// cut off may be of any number and size): the same lower bound.
	cut.NoSum, cut.Sum = false, 1e6
	if e := cut.Estimate(0.5, nan); e.Kind != AtLeast || e.Value != 1 || !math.IsNaN(cut.Mean()) {
		t.Errorf("cut with sum: %+v, mean %v", e, cut.Mean())
	}

	// No _sum, total known: bounds from the buckets alone, mean unknown.
	nosum := with([]float64{1, 2, 5, 10}, []float64{0, 0, 1, 1}, 0)
	nosum.NoSum = true
	if !math.IsNaN(nosum.Mean()) || nosum.Total() != 1 {
		t.Fatalf("no sum: mean %v total %v", nosum.Mean(), nosum.Total())
	}
	// Its one bucket holds every observation: interpolation (3.5) would
	// be the bucket's middle, so its ceiling is stated.
	if e := nosum.Estimate(0.5, nan); e.Kind != AtMost || e.Value != 5 || e.Lo != 2 || e.Hi != 5 || e.Inconsistent || e.Projected != 3.5 {
		t.Errorf("no sum, one in (2, 5]: %+v, want ≤5 of [2, 5]", e)
	}
	// The peak still pins the largest.
	if e := nosum.Estimate(0.5, 4.2); e.Kind != Exact || e.Value != 4.2 {
		t.Errorf("no sum, peak 4.2: %+v", e)
	}

	// Sub keeps what either side lacks.
	a, b := nosum, with([]float64{1, 2, 5, 10}, []float64{0, 0, 2, 2}, 9)
	if d, ok := b.Sub(a); !ok || !d.NoSum || d.NoTop {
		t.Errorf("Sub = %+v, %v: want NoSum", d, ok)
	}
	full := with([]float64{1, 2}, []float64{1, 2}, 3)
	if full.Mean() != 1.5 {
		t.Errorf("complete histogram: mean %v", full.Mean())
	}
}

// A _count below the last bucket cannot make the total fall.
func TestNormalizeCountBelowBuckets(t *testing.T) {
	h := Histogram{Buckets: []Bucket{{1, 4}, {2, 6}}, Count: 5}
	h.Normalize()
	if h.Total() != 6 {
		t.Fatalf("Total = %v, want 6", h.Total())
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Unknown: "unknown", Exact: "exact", Interpolated: "interpolated", AtMost: "at most", AtLeast: "at least", Kind(99): "unknown"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d) = %q, want %q", k, got, want)
		}
	}
}

// FuzzEstimate feeds arbitrary buckets, sums and peaks: the statement must
// never contradict its own interval.
func FuzzEstimate(f *testing.F) {
	f.Add(1.0, 2.0, 5.0, uint16(3), uint16(4), uint16(0), 7.5, 4.0, 0.5)
	f.Add(0.3, 0.5, 1.0, uint16(1000), uint16(0), uint16(0), 22.0, math.NaN(), 0.9)
	f.Add(-1.0, 0.0, 1.0, uint16(3), uint16(7), uint16(2), -20.0, math.Inf(1), 0.2)
	f.Add(10.0, 20.0, 30.0, uint16(0), uint16(0), uint16(9), 1e9, 3.0, 1.0)
	f.Fuzz(func(t *testing.T, b0, b1, b2 float64, c0, c1, c2 uint16, sum, peak, q float64) {
		h := Histogram{Buckets: []Bucket{{b0, float64(c0)}, {b1, float64(c0) + float64(c1)}, {b2, float64(c0) + float64(c1) + float64(c2)}},
			Count: float64(c0) + float64(c1) + float64(c2) + 1, Sum: sum}
		h.Normalize()
		e := h.Estimate(q, peak)
		if e.Kind == Unknown {
			if !math.IsNaN(e.Value) {
				t.Fatalf("unknown with a value: %+v", e)
			}
			return
		}
		if math.IsNaN(e.Value) || e.Lo > e.Hi || e.Value < e.Lo || e.Value > e.Hi {
			t.Fatalf("%+v outside its own interval (%+v)", e, h)
		}
		if e.Kind == AtMost && e.Value != e.Hi || e.Kind == AtLeast && e.Value != e.Lo {
			t.Fatalf("a bound that is not its interval's end: %+v", e)
		}
	})
}

// benchHistogram puts a few observations in each bucket, at its middle, and
// 3 above the last bound, the largest of them the peak it returns.
func benchHistogram(bounds []float64) (Histogram, float64) {
	h := Histogram{}
	c, lo := 0.0, 0.0
	for i, b := range bounds {
		k := float64((i*7919)%13 + 1)
		c += k
		h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: c})
		h.Sum += k * (lo + b) / 2
		lo = b
	}
	top := bounds[len(bounds)-1]
	h.Count = c + 3
	h.Sum += 1.5*top + 2*top + 2.5*top
	h.Normalize()
	return h, 2.5 * top
}

func benchEstimate(b *testing.B, h Histogram, peak float64) {
	if e := h.Estimate(0.99, peak); e.Inconsistent || e.Kind == Unknown {
		b.Fatalf("the benchmark's histogram is not coherent: %+v", e)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range [...]float64{0.5, 0.9, 0.99} {
			_ = h.Estimate(q, peak)
		}
	}
}

// Three quantiles (a report row) per op.
func BenchmarkEstimate22(b *testing.B) {
	h, peak := benchHistogram(vllmTTFT)
	benchEstimate(b, h, peak)
}

func BenchmarkEstimate200(b *testing.B) {
	bounds := make([]float64, 200)
	for i := range bounds {
		bounds[i] = math.Pow(1.05, float64(i))
	}
	h, peak := benchHistogram(bounds)
	benchEstimate(b, h, peak)
}
