// Package promql is inferscope's PromQL: for one server, the windowed
// expression of each report figure and of each note a window can decide,
// written against the series names that server publishes.
//
// # Names
//
// A [Library] is built from one scrape ([New]) or, without one, from the
// newest names a dialect knows ([Newest]). Every expression reads the
// series the scrape carries, spelt as a store keeps them: vLLM's
// kv_cache_usage_perc or the older gpu_cache_usage_perc,
// inter_token_latency_seconds or time_per_output_token_seconds, token or
// (never) block prefix counters, SGLang's sglang: or sglang_ prefix, Ray
// Serve's ray_vllm: copies. A counter published without _total is matched
// under both spellings, {__name__=~"x|x_total"}: Prometheus stores it with
// _total when it scrapes the server as OpenMetrics, and without when it
// scrapes the text format, and a rule naming one spelling silently never
// fires under the other.
//
// # Aggregation
//
// Every expression aggregates to the labels of [Options.By] (an instance,
// a model). A ratio aggregates its numerator and its denominator to those
// labels before dividing, so series whose other labels differ still match;
// a fraction published per engine (vLLM's KV usage) is averaged, never
// summed; SGLang's ranks that replicate one scheduler (tp_rank and the
// like) are reduced to their largest value first, as the dialect does.
// Quantiles are histogram_quantile over sum by (le, …) of the buckets'
// rates; a mean latency is the rate of _sum over the rate of _count (queue
// time is a latency, never a rate of sums). Computed prompt tokens exclude
// prefix-cache hits. 0/0 is NaN, never 0; a series the server does not
// publish has no expression at all.
//
// # Thresholds
//
// A note's condition takes its thresholds from the report's judgement
// table ([analysis.Bands]), so the alert and the report cannot disagree
// on where a band starts.
package promql
