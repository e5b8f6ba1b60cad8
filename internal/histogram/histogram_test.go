package histogram

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func hist(bounds []float64, counts []float64) Histogram {
	h := Histogram{}
	for i, b := range bounds {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: counts[i]})
	}
	h.Count = counts[len(counts)-1]
	h.Normalize()
	return h
}

var inf = math.Inf(1)

func TestQuantile(t *testing.T) {
	// 10 observations: 4 in (0,1], 4 in (1,2], 2 in (2,4], none above.
	h := hist([]float64{1, 2, 4, inf}, []float64{4, 8, 10, 10})
	tests := []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		// rank 5 lies 1 into the 4-count (1,2] bucket: 1 + 1*(1/4).
		{"p50", h, 0.5, 1.25},
		// rank 9 lies 1 into the 2-count (2,4] bucket: 2 + 2*(1/2).
		{"p90", h, 0.9, 3},
		// rank 2 in the lowest bucket interpolates from 0: 1*(2/4).
		{"p20 from zero", h, 0.2, 0.5},
		{"p100 top finite", h, 1, 4},
		// rank in +Inf returns the highest finite bound.
		{"rank in +Inf", hist([]float64{1, 2, inf}, []float64{1, 2, 10}), 0.99, 2},
		{"lowest bound ≤ 0 returns bound", hist([]float64{0, 1, inf}, []float64{5, 10, 10}), 0.1, 0},
		{"no observations", hist([]float64{1, inf}, []float64{0, 0}), 0.5, math.NaN()},
		{"single bucket", Histogram{Buckets: []Bucket{{inf, 3}}, Count: 3}, 0.5, math.NaN()},
		{"q<0", h, -0.1, math.Inf(-1)},
		{"q>1", h, 1.1, math.Inf(1)},
		// Non-monotonic input is lifted to an envelope: (1,2] is treated as 5 → 5.
		{"non-monotonic", hist([]float64{1, 2, 4, inf}, []float64{5, 3, 10, 10}), 0.5, 1},
	}
	for _, tt := range tests {
		got := tt.h.Quantile(tt.q)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want) || math.Abs(got-tt.want) < 1e-9) {
			t.Errorf("%s: Quantile(%v) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
}

func TestQuantileHeldToPeak(t *testing.T) {
	// Prompts clustered at ~203k in a (200k, 500k] bucket (the reference's
	// fixed-ladder failure): 31 of 100 observations there, peak 206000.
	h := hist([]float64{100000, 200000, 500000, inf}, []float64{60, 69, 100, 100})
	// Uncapped p99: rank 99 lies 30 into the 31-count bucket:
	// 200000 + 300000*30/31 = 490322.58…
	if got := h.Quantile(0.99); math.Abs(got-490322.58) > 0.01 {
		t.Fatalf("uncapped p99 = %v", got)
	}
	// Capped: the bucket's top is lowered to 206000: 200000 + 6000*30/31.
	got, capped := h.quantile(0.99, 206000)
	if want := 200000 + 6000*30.0/31; math.Abs(got-want) > 1e-6 || !capped {
		t.Fatalf("capped p99 = %v (capped %v), want %v", got, capped, want)
	}
	// Ordered and ≤ peak for every q.
	prev := 0.0
	for q := 0.01; q <= 1; q += 0.01 {
		v, _ := h.quantile(q, 206000)
		if v > 206000 || v < prev {
			t.Fatalf("q=%.2f: %v (prev %v)", q, v, prev)
		}
		prev = v
	}
	// A quantile in a bucket wholly below the peak is not capped.
	if v, capped := h.quantile(0.5, 206000); capped || math.Abs(v-100000*50.0/60) > 1e-9 {
		t.Fatalf("p50 = %v capped=%v", v, capped)
	}
	// A rank in +Inf is held to the peak when the peak is below the top bound.
	top := hist([]float64{10, 100, inf}, []float64{5, 5, 10})
	if v, capped := top.quantile(0.99, 40); v != 40 || !capped {
		t.Fatalf("+Inf rank capped = %v, %v", v, capped)
	}
}

func TestInOpenTop(t *testing.T) {
	h := hist([]float64{1, 2, inf}, []float64{90, 98, 100})
	if h.InOpenTop(0.9) || h.InOpenTop(0.98) || !h.InOpenTop(0.99) {
		t.Fatal("InOpenTop misjudged the +Inf bucket")
	}
}

func TestSub(t *testing.T) {
	a := hist([]float64{1, 2, inf}, []float64{1, 2, 3})
	a.Sum = 3
	b := hist([]float64{1, 2, inf}, []float64{4, 6, 9})
	b.Count, b.Sum = 9, 12
	d, ok := b.Sub(a)
	if !ok || d.Count != 6 || d.Sum != 9 || d.Buckets[0].Count != 3 || d.Buckets[2].Count != 6 {
		t.Fatalf("Sub = %+v, %v", d, ok)
	}
	if _, ok := a.Sub(b); ok {
		t.Fatal("a decrease must not give a delta")
	}
	c := hist([]float64{1, 5, inf}, []float64{4, 6, 9})
	if _, ok := c.Sub(a); ok {
		t.Fatal("different layouts must not give a delta")
	}
}

func TestNormalizeAddsInf(t *testing.T) {
	h := Histogram{Buckets: []Bucket{{2, 3}, {1, 1}}, Count: 5}
	h.Normalize()
	if len(h.Buckets) != 3 || h.Buckets[0].UpperBound != 1 || !math.IsInf(h.Buckets[2].UpperBound, 1) || h.Buckets[2].Count != 5 {
		t.Fatalf("Normalize = %+v", h.Buckets)
	}
	nc := h.NonCumulative()
	if nc[0].Count != 1 || nc[1].Count != 2 || nc[2].Count != 2 {
		t.Fatalf("NonCumulative = %+v", nc)
	}
}

func TestQuantileBounded(t *testing.T) {
	// 289 prompts of exactly 32000 tokens in a (20000, 50000] bucket: the
	// mean equals the peak, so every quantile is the peak.
	same := hist([]float64{20000, 50000, inf}, []float64{0, 289, 289})
	same.Sum = 289 * 32000
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if v, capped := same.QuantileBounded(q, 32000); v != 32000 || !capped {
			t.Errorf("all 32000: q%v = %v (capped %v)", q, v, capped)
		}
	}
	// 100 requests in (0, 0.3] with a mean of 70 ms: interpolation gives
	// p50 = 0.15, impossible (half at ≥ 0.15 s would make the mean ≥ 75 ms).
	// k = 50, so v ≤ 7/(100−50+1) = 0.13725…
	fast := hist([]float64{0.3, 0.5, inf}, []float64{100, 100, 100})
	fast.Sum = 7
	if v, _ := fast.Quantile(0.5), 0; v != 0.15 {
		t.Fatalf("interpolated p50 = %v", v)
	}
	if v, capped := fast.QuantileBounded(0.5, math.Inf(1)); math.Abs(v-7.0/51) > 1e-12 || !capped {
		t.Errorf("bounded p50 = %v, want 7/51", v)
	}
	// All zeros: every quantile is 0.
	zero := hist([]float64{0.3, inf}, []float64{10, 10})
	if v, _ := zero.QuantileBounded(0.99, math.Inf(1)); v != 0 {
		t.Errorf("all-zero p99 = %v", v)
	}
	// Bounds that do not bind leave the estimate alone: 10 observations
	// spread evenly, sum consistent with the interpolation.
	even := hist([]float64{1, 2, inf}, []float64{5, 10, 10})
	even.Sum = 10
	if v, capped := even.QuantileBounded(0.5, 2); v != 1 || capped {
		t.Errorf("even p50 = %v (capped %v)", v, capped)
	}
	// Inconsistent data (sum above n·peak) skips the lower bound rather
	// than exceed the peak.
	odd := hist([]float64{10, inf}, []float64{4, 4})
	odd.Sum = 100
	if v, _ := odd.QuantileBounded(0.5, 5); v > 5 {
		t.Errorf("p50 %v above the peak", v)
	}
	// Ordered for every q on a skewed histogram.
	sk := hist([]float64{0.3, 1, 10, 100, inf}, []float64{60, 80, 95, 99, 100})
	sk.Sum = 150
	prev := 0.0
	for q := 0.01; q <= 1.0001; q += 0.01 {
		v, _ := sk.QuantileBounded(math.Min(q, 1), 250)
		if v < prev-1e-12 || v > 250 {
			t.Fatalf("q=%.2f: %v after %v", q, v, prev)
		}
		prev = v
	}
}

// The bounds contain the true quantile, so clamping an estimate into them
// can only bring it closer to the truth: checked on random data of several
// shapes against the exact empirical quantile (the ⌈q·n⌉-th smallest).
func TestQuantileBoundedNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 60, 120, inf}
	shapes := map[string]func() float64{
		"exponential": func() float64 { return rng.ExpFloat64() * 2 },
		"constant":    func() float64 { return 7 },
		"bimodal": func() float64 {
			if rng.IntN(10) == 0 {
				return 40 + rng.Float64()*50
			}
			return rng.Float64() * 0.2
		},
		"tiny": func() float64 { return rng.Float64() * 0.05 },
	}
	for name, draw := range shapes {
		for trial := 0; trial < 200; trial++ {
			n := 1 + rng.IntN(400)
			data := make([]float64, n)
			h := Histogram{Buckets: make([]Bucket, len(bounds))}
			peak := 0.0
			for i := range data {
				x := draw()
				data[i] = x
				h.Sum += x
				peak = math.Max(peak, x)
				for j, b := range bounds {
					h.Buckets[j].UpperBound = b
					if x <= b {
						h.Buckets[j].Count++
					}
				}
			}
			h.Count = float64(n)
			slices.Sort(data)
			for _, q := range []float64{0.5, 0.9, 0.99} {
				k := int(math.Ceil(q * float64(n)))
				truth := data[max(k, 1)-1]
				interp, _ := h.quantile(q, peak)
				bounded, _ := h.QuantileBounded(q, peak)
				if math.Abs(bounded-truth) > math.Abs(interp-truth)+1e-9 {
					t.Fatalf("%s n=%d q=%v: bounded %v is farther from the truth %v than %v", name, n, q, bounded, truth, interp)
				}
				unbounded, _ := h.QuantileBounded(q, math.Inf(1)) // no peak known
				plain := h.Quantile(q)
				if math.Abs(unbounded-truth) > math.Abs(plain-truth)+1e-9 {
					t.Fatalf("%s n=%d q=%v (no peak): %v farther from %v than %v", name, n, q, unbounded, truth, plain)
				}
			}
		}
	}
}
