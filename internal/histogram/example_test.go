package histogram_test

import (
	"fmt"
	"math"

	"github.com/inferscope/inferscope/internal/histogram"
)

// 1,000 prefill times, all ≤ 0.3 s (vLLM's lowest bucket), summing 22 s.
// Interpolation spreads them evenly over (0, 0.3] and puts p50 at 0.15 s,
// but with a mean of 22 ms the median and the 500 above it (501 values ≥
// p50) cannot exceed 22 s together: p50 ≤ 22/501 s. And with a 22 ms mean
// in a 300 ms bucket the values are not spread evenly, so even p99, which
// the sum cannot hold below the bucket's edge, is stated as a bound.
func ExampleHistogram_Estimate() {
	h := histogram.Histogram{
		Buckets: []histogram.Bucket{{UpperBound: 0.3, Count: 1000}, {UpperBound: 0.5, Count: 1000}},
		Count:   1000,
		Sum:     22,
	}
	h.Normalize()
	for _, q := range []float64{0.5, 0.9, 0.99} {
		e := h.Estimate(q, math.NaN())
		fmt.Printf("p%g: %s %.4f s (histogram_quantile %.4f s; between %.4f and %.4f)\n",
			q*100, e.Kind, e.Value, e.Plain, e.Lo, e.Hi)
	}
	// Output:
	// p50: at most 0.0439 s (histogram_quantile 0.1500 s; between 0.0000 and 0.0439)
	// p90: at most 0.2178 s (histogram_quantile 0.2700 s; between 0.0000 and 0.2178)
	// p99: at most 0.3000 s (histogram_quantile 0.2970 s; between 0.0192 and 0.3000)
}
