package exporter

import "slices"

// Bucket sets of the reference metric set. The latency and TTFT sets are
// vLLM's, so its dashboards work after a prefix swap.
var (
	// latencyBuckets are the upper bounds, in seconds, of the queue, prefill,
	// decode and end-to-end latency histograms.
	latencyBuckets = [...]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	// ttftBuckets are the upper bounds, in seconds, of the time-to-first-token
	// histogram: finer below a second, where a warm prefill lands.
	ttftBuckets = [...]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	// acceptanceBuckets are the upper bounds of the per-request draft
	// acceptance-rate histogram, a ratio in [0, 1].
	acceptanceBuckets = [...]float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
)

// maxLadder is the most bounds a token ladder can have: 1-2-5 times every
// power of ten up to 5e18, plus the limit itself.
const maxLadder = 3*19 + 1

// DefaultMaxSeqLen is the token-ladder limit used before a model is loaded
// (before [Metrics.ConfigureTokenBuckets] is called with its context length).
const DefaultMaxSeqLen = 1_000_000

// TokenBuckets returns the token ladder for a context length: 1, 2, 5, 10,
// 20, 50, … (1-2-5 times powers of ten) up to maxSeqLen, plus maxSeqLen itself
// when the ladder stops below it, so the longest usable prompts do not fall
// into +Inf. No boundary exceeds maxSeqLen. It returns nil for maxSeqLen < 1.
func TokenBuckets(maxSeqLen int) []float64 {
	ints := tokenLadder(maxSeqLen)
	if ints == nil {
		return nil
	}
	out := make([]float64, len(ints))
	for i, v := range ints {
		out[i] = float64(v)
	}
	return out
}

// tokenLadder is TokenBuckets in integers, exact however large the limit.
func tokenLadder(maxSeqLen int) []int64 {
	if maxSeqLen < 1 {
		return nil
	}
	var out []int64
	last := 0
ladder:
	for decade := 1; ; decade *= 10 {
		for _, k := range [...]int{1, 2, 5} {
			// Compared by division so a limit near MaxInt cannot overflow.
			if decade > maxSeqLen/k {
				break ladder
			}
			last = k * decade
			out = append(out, int64(last))
		}
		if decade > maxSeqLen/10 {
			break // the next decade starts above the limit
		}
	}
	if last < maxSeqLen {
		out = append(out, int64(maxSeqLen))
	}
	return out
}

// nsBounds converts bounds in seconds to whole nanoseconds, so a duration is
// placed by integer comparison: exact at the boundary (300 ms lands in
// le="0.3", as the float comparison of the reference does).
func nsBounds(secs []float64) []uint64 {
	out := make([]uint64, len(secs))
	for i, s := range secs {
		out[i] = uint64(s*1e9 + 0.5)
	}
	return out
}

var (
	latencyNs = nsBounds(latencyBuckets[:])
	ttftNs    = nsBounds(ttftBuckets[:])
)

// bucketOf returns the index of the first bound ≥ v: the bucket v is counted
// in (le is inclusive), or len(bounds) for the +Inf overflow.
func bucketOf[T uint64 | float64](bounds []T, v T) int {
	i, _ := slices.BinarySearch(bounds, v)
	return i
}

// ladder is one token-bucket layout. It is immutable once built, so shards
// and scrapes share it by pointer.
type ladder struct {
	maxSeqLen int
	bounds    []float64 // for exposition
	ints      []uint64  // the same bounds, for placing token counts
}

func newLadder(maxSeqLen int) *ladder {
	ints := tokenLadder(maxSeqLen)
	l := &ladder{maxSeqLen: maxSeqLen, bounds: make([]float64, len(ints)), ints: make([]uint64, len(ints))}
	for i, v := range ints {
		l.bounds[i] = float64(v)
		l.ints[i] = uint64(v)
	}
	return l
}
