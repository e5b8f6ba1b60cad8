package rates

import (
	"math"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
)

// Merged ladders: exact at shared bounds, each histogram counting what it
// has at its next lower bound elsewhere.
func TestAddHists(t *testing.T) {
	a := histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 0.5, Count: 2}, {UpperBound: 1, Count: 5}, {UpperBound: math.Inf(1), Count: 6}}, Count: 6, Sum: 3}
	b := histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 0.25, Count: 1}, {UpperBound: 1, Count: 3}, {UpperBound: math.Inf(1), Count: 4}}, Count: 4, Sum: 2}
	m := AddHists([]histogram.Histogram{a, b})
	// 0.25: a has nothing at or below (0) + b 1; 0.5: a 2 + b 1 (its 0.25
	// count); 1: 5 + 3; +Inf: 6 + 4.
	want := []histogram.Bucket{{UpperBound: 0.25, Count: 1}, {UpperBound: 0.5, Count: 3}, {UpperBound: 1, Count: 8}, {UpperBound: math.Inf(1), Count: 10}}
	if len(m.Buckets) != len(want) {
		t.Fatalf("buckets %v", m.Buckets)
	}
	for i, w := range want {
		if m.Buckets[i] != w {
			t.Errorf("bucket %d = %v, want %v", i, m.Buckets[i], w)
		}
	}
	if m.Count != 10 || m.Sum != 5 {
		t.Errorf("count %v sum %v", m.Count, m.Sum)
	}
}

// rateHists are exactly the histograms the rates table reads: a snapshot
// holding one canonical histogram has a percentile row iff it is listed.
