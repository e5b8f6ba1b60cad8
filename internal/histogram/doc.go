// Package histogram holds classic Prometheus histograms and the arithmetic
// the inspector does on them: quantiles with histogram_quantile semantics,
// the range every quantile is confined to by what the histogram publishes,
// and deltas between two scrapes.
//
// # What a histogram says
//
// A classic histogram publishes cumulative bucket counts (how many
// observations were ≤ each bound), a _count and a _sum. A bucket (a, b]
// holds values above a and at most b; the lowest bucket starts at 0 when its
// bound is ≥ 0 (nothing negative is observed, histogram_quantile's own
// convention) and at -Inf otherwise; the +Inf bucket holds values above the
// last bound. Some servers also publish a peak: the largest value ever
// observed.
//
// # Quantiles as histogram_quantile states them
//
// [Histogram.Quantile] is PromQL's estimate: the q-quantile is the value of
// rank q·n, found in the bucket whose cumulative count first reaches it, by
// linear interpolation inside that bucket, as if its observations were
// spread evenly across it. That is a guess about the shape inside a bucket,
// and the other published facts can refute it: one observation of 5 tokens
// in (2, 5] with sum 5 is 5, not 3.5; 2,276 values in (0.01, 0.02] with mean
// 0.02 are all 0.02, not a p50 of 0.015.
//
// # What the quantile can be
//
// [Histogram.Estimate] finds [Lo, Hi], the exact range the quantile (the
// k-th smallest of n observations, k = max(1, ⌈q·n⌉), as histogram_quantile
// ranks) takes over every dataset with the published bucket counts, sum and
// peak. The quantile v lies in its rank's bucket (a, b]. Given v, every other
// observation can be anywhere in its own bucket, except that the ones ranked
// below v in v's bucket are ≤ v and the ones ranked above are ≥ v. The sum of
// such a dataset is therefore at least
//
//	A + (above+1)·v
//
// where A puts every other observation at its bucket's lower edge (those
// below v at a), and at most
//
//	B + (below+1)·v
//
// where B puts every other observation at its bucket's upper edge (those
// above v at b). Both grow with v, so the published sum S is possible
// exactly when (S−B)/(below+1) ≤ v ≤ (S−A)/(above+1), and v is in [a, b]:
// that intersection is [Lo, Hi]. With the 109 prompts of (5.11, 10.22]
// summing 662, the median (55th) has 54 below it at ≥ 5.11 and 54 above it
// at ≥ v: 54·5.11 + 55·v ≤ 662, so v ≤ 7.02, wherever interpolation puts it
// (7.67).
//
// A known peak P holds every upper edge to P and is itself one observation
// of the highest occupied bucket: A counts P there instead of that bucket's
// lower edge (or instead of one of those above v at v, when v shares the
// bucket); the largest observation (k = n) is P. The lowest occupied
// bucket's lower edge is a floor and the highest one's upper edge a ceiling
// for every value, and one observation is its sum: those are cases of the
// same bounds, not extra rules.
//
// Bounds that come from the sum are widened by the rounding a float64 sum of
// n values may carry (n·2⁻⁵³ of their magnitude), so that the true quantile
// is inside [Lo, Hi] even where the sum pins it to a bucket edge.
//
// # How a quantile is stated
//
// One rule, the same wherever a quantile is shown (the report, the watch
// rates table, --since, fleet rows and totals, which all call
// [Histogram.Estimate] and [Estimate.Say]). An [Estimate] carries a Value
// and its [Kind]. Value starts from histogram_quantile's interpolation,
// with the rank's bucket held to the peak, and is projected into [Lo, Hi]:
//
//   - Exact: Lo and Hi differ only by rounding. The value is known, and
//     shown plainly.
//   - Interpolated: the interpolation is inside [Lo, Hi] and may stand as
//     an estimate: shown plainly, and the legend says it is one.
//   - AtMost, shown "≤ Value": Value is Hi, the largest value the data
//     allow, because interpolation went above it (with 1,000 prefill times
//     in (0, 0.3 s] summing 22 s, p90 is at most 22/101 s, whatever
//     interpolation says: 0.27 s), or because interpolation is no
//     estimate here (below) and errs high.
//   - AtLeast, shown "≥ Value": Value is Lo, the mirror image; also where
//     nothing bounds the quantile from above (its rank is in the open +Inf
//     bucket and no peak is known).
//
// Interpolation is no estimate (NoEstimate), and a bound is stated in its
// place, in two cases the published facts recognise:
//
//   - The rank's bucket holds nearly all the observations ([NearlyAll],
//     90%): interpolating inside it shows the bucket's own shape, an even
//     spread across it, whatever the data are. Every one of 969 inter-token
//     times in (0, 10 ms] with a mean of 3 ms reads p50 5 ms, p90 9 ms and
//     p99 9.9 ms by interpolation: a bucket's midpoint dressed as a
//     measurement. What the count and sum allow is what is stated: for
//     data that are never negative the k-th smallest of n is at most
//     sum/(n−k+1), about 2 × mean for p50 and mean/(1−q) for any q
//     (Markov's inequality, from the bounds above), and never above the
//     bucket's upper edge or the peak: "≤6 ms · ≤10 ms · ≤10 ms".
//   - The sum puts the rank bucket's observations in its lowest or highest
//     quarter, while interpolation puts their mean at the bucket's middle:
//     vLLM's prefill buckets start at 0.3 s, and prefills of 22 ms average
//     sit at the bottom of the first one.
//
// The bound stated is the one on the side interpolation errs to: Hi when
// the sum puts the bucket's observations below its middle or cannot say
// (the ceiling, which is also what a latency objective asks), Lo when it
// puts them above for certain.
//
// Where interpolation lands outside [Lo, Hi], or is no estimate, the bound
// is stated rather than some other estimate "consistent with the sum" (say,
// interpolating over a narrower range that has the bucket's mean): any such
// estimate assumes a shape inside the bucket the data cannot check, and
// shapes that fit the same facts disagree widely (an even spread over
// [0, 44 ms] and an exponential, both of mean 22 ms, put p99 at 44 ms and
// 101 ms), while the bound is a fact. Projected keeps the allowed value
// nearest the interpolation, never farther from the truth than
// histogram_quantile is.
//
// Value rises with q, since Lo, Hi and the interpolation all do. Where the
// facts contradict each other (a sum the buckets cannot hold, a peak outside
// the highest occupied bucket), Estimate says so (Inconsistent) and keeps the
// buckets, giving up first the peak (a separate series), then the sum.
//
// # Incomplete histograms
//
// A histogram cut short (a paste that ends before +Inf, _sum or _count) is
// read for what it has; what it lacks is unknown, never 0. Without a sum
// (NoSum) [Histogram.Mean] is NaN and the bounds use the buckets and the peak
// alone. Without a total (NoTop: no +Inf bucket and no _count),
// [Histogram.Total] is only the least the total can be, the mean is NaN and
// every quantile is a lower bound (AtLeast): the observations left out lie
// above the last published bound and can only raise a rank.
package histogram
