package histogram

import (
	"math"
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

func TestQuantileCapped(t *testing.T) {
	// Prompts clustered at ~203k in a (200k, 500k] bucket (the reference's
	// fixed-ladder failure): 31 of 100 observations there, peak 206000.
	h := hist([]float64{100000, 200000, 500000, inf}, []float64{60, 69, 100, 100})
	// Uncapped p99: rank 99 lies 30 into the 31-count bucket:
	// 200000 + 300000*30/31 = 490322.58…
	if got := h.Quantile(0.99); math.Abs(got-490322.58) > 0.01 {
		t.Fatalf("uncapped p99 = %v", got)
	}
	// Capped: the bucket's top is lowered to 206000: 200000 + 6000*30/31.
	got, capped := h.QuantileCapped(0.99, 206000)
	if want := 200000 + 6000*30.0/31; math.Abs(got-want) > 1e-6 || !capped {
		t.Fatalf("capped p99 = %v (capped %v), want %v", got, capped, want)
	}
	// Ordered and ≤ peak for every q.
	prev := 0.0
	for q := 0.01; q <= 1; q += 0.01 {
		v, _ := h.QuantileCapped(q, 206000)
		if v > 206000 || v < prev {
			t.Fatalf("q=%.2f: %v (prev %v)", q, v, prev)
		}
		prev = v
	}
	// A quantile in a bucket wholly below the peak is not capped.
	if v, capped := h.QuantileCapped(0.5, 206000); capped || math.Abs(v-100000*50.0/60) > 1e-9 {
		t.Fatalf("p50 = %v capped=%v", v, capped)
	}
	// A rank in +Inf is held to the peak when the peak is below the top bound.
	top := hist([]float64{10, 100, inf}, []float64{5, 5, 10})
	if v, capped := top.QuantileCapped(0.99, 40); v != 40 || !capped {
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
