package promql

import "github.com/inferscope/inferscope/internal/snapshot"

// --- TensorRT-LLM ----------------------------------------------------------

// trtBare are the families trtllm-serve published without a prefix (1.1,
// 1.2), as internal/dialect reads them.
var trtBare = map[string]bool{
	"request_success": true, "e2e_request_latency_seconds": true, "time_to_first_token_seconds": true,
	"time_per_output_token_seconds": true, "request_queue_time_seconds": true,
}

// trtSpellings are one family's names: trtllm_ first, and the unprefixed
// name of the first versions.
func trtSpellings(base string) []string {
	if trtBare[base] {
		return []string{"trtllm_" + base, base}
	}
	return []string{"trtllm_" + base}
}

func trtCounter(base string) []string {
	var out []string
	for _, n := range trtSpellings(base) {
		out = append(out, counterNames(n)...)
	}
	return out
}

// readTRTLLM reads TensorRT-LLM's names as the dialect does: each
// request's mean time per output token (not an inter-token latency),
// computed prompt tokens as all less cached (prompt_tokens_total counts
// the hits), KV use averaged over engines.
func readTRTLLM(sc scrape) sources {
	out := sources{}
	counter := func(canon, base string) (ref, bool) {
		r, ok := sc.counter(trtCounter(base)...)
		out.set(canon, snapshot.Counter, r, ok)
		return r, ok
	}
	gauge := func(canon, base string) bool {
		r, ok := sc.gauge(trtSpellings(base)...)
		return out.set(canon, snapshot.Gauge, r, ok)
	}
	hist := func(canon, base string) (ref, bool) {
		r, ok := sc.hist(trtSpellings(base)...)
		out.set(canon, snapshot.Histogram, r, ok)
		return r, ok
	}

	counter(snapshot.RequestsTotal, "request_success")
	hist(snapshot.E2ERequestLatencySeconds, "e2e_request_latency_seconds")
	hist(snapshot.TimeToFirstTokenSeconds, "time_to_first_token_seconds")
	hist(snapshot.RequestTimePerOutputTokenSeconds, "time_per_output_token_seconds")
	hist(snapshot.RequestQueueTimeSeconds, "request_queue_time_seconds")
	out.phaseTimes(hist)
	gauge(snapshot.RequestsProcessing, "num_requests_running")
	gauge(snapshot.RequestsDeferred, "num_requests_waiting")
	// Each engine's own cache: averaged, never summed.
	if gauge(snapshot.KVCacheUsageRatio, "kv_cache_utilization") {
		s := out[snapshot.KVCacheUsageRatio]
		s.mean = true
		out[snapshot.KVCacheUsageRatio] = s
	}
	counter(snapshot.TokensPredictedTotal, "generation_tokens")
	all, okAll := sc.counter(trtCounter("prompt_tokens")...)
	cached, okCached := sc.counter(trtCounter("prompt_cached_tokens")...)
	switch {
	case okAll && okCached:
		out[snapshot.PromptTokensTotal] = source{kind: snapshot.Counter, terms: []term{{ref: all}, {ref: cached, neg: true}}}
		out[snapshot.CachedTokensTotal] = one(snapshot.Counter, cached)
		out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, all)
		out[snapshot.PrefixCacheHits] = one(snapshot.Counter, cached)
	case okAll:
		out[snapshot.PromptTokensAll] = one(snapshot.Counter, all)
	}
	counter(snapshot.SpecDecodeNumDraftTokensTotal, "spec_decode_num_draft_tokens")
	counter(snapshot.SpecDecodeNumAcceptedTokensTotal, "spec_decode_num_accepted_tokens")
	return out
}
