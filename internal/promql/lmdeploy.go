package promql

import "github.com/inferscope/inferscope/internal/snapshot"

// --- LMDeploy ----------------------------------------------------------------

// readLMDeploy reads LMDeploy's names as the dialect does: requests
// waiting at the engine and for a request handle added, computed prompt
// tokens as request_prompt_tokens' sum less cached_tokens_total (both of
// the finished requests), the per-step time per output token as the
// inter-token latency.
func readLMDeploy(sc scrape) sources {
	out := sources{}
	counter := func(canon, base string) (ref, bool) {
		r, ok := sc.counter(counterNames("lmdeploy:" + base)...)
		out.set(canon, snapshot.Counter, r, ok)
		return r, ok
	}
	hist := func(canon, base string) (ref, bool) {
		r, ok := sc.hist("lmdeploy:" + base)
		out.set(canon, snapshot.Histogram, r, ok)
		return r, ok
	}

	if r, ok := sc.gauge("lmdeploy:num_requests_running"); ok {
		out[snapshot.RequestsProcessing] = one(snapshot.Gauge, r)
	}
	if w, ok := sc.gauge("lmdeploy:num_requests_waiting"); ok {
		s := one(snapshot.Gauge, w)
		if api, ok := sc.gauge("lmdeploy:num_api_requests_waiting"); ok {
			s.terms = append(s.terms, term{ref: api})
		}
		out[snapshot.RequestsDeferred] = s
	}
	// Each engine's own cache: averaged, never summed.
	if r, ok := sc.gauge("lmdeploy:gpu_cache_usage_perc"); ok {
		s := one(snapshot.Gauge, r)
		s.mean = true
		out[snapshot.KVCacheUsageRatio] = s
	}
	counter(snapshot.TokensPredictedTotal, "generation_tokens")
	counter(snapshot.RequestsTotal, "request_success")

	hist(snapshot.TimeToFirstTokenSeconds, "time_to_first_token_seconds")
	hist(snapshot.InterTokenLatencySeconds, "time_per_output_token_seconds")
	hist(snapshot.E2ERequestLatencySeconds, "e2e_request_latency_seconds")
	hist(snapshot.RequestQueueTimeSeconds, "request_queue_time_seconds")
	out.phaseTimes(hist)
	prompts, okPrompts := hist(snapshot.RequestPromptTokens, "request_prompt_tokens")
	hist(snapshot.RequestGenerationTokens, "request_generation_tokens")

	cached, okCached := sc.counter(counterNames("lmdeploy:cached_tokens")...)
	if okPrompts && okCached {
		finished := ref{name: prompts.name + "_sum"}
		out[snapshot.PromptTokensTotal] = source{kind: snapshot.Counter, terms: []term{{ref: finished}, {ref: cached, neg: true}}}
		out[snapshot.CachedTokensTotal] = one(snapshot.Counter, cached)
		out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, finished)
		out[snapshot.PrefixCacheHits] = one(snapshot.Counter, cached)
	} else {
		counter(snapshot.PromptTokensAll, "prompt_tokens")
	}

	counter(snapshot.SpecDecodeNumDraftTokensTotal, "spec_decode_num_draft_tokens")
	counter(snapshot.SpecDecodeNumAcceptedTokensTotal, "spec_decode_num_accepted_tokens")
	counter(snapshot.ExtraSpecDecodeDrafts, "spec_decode_num_drafts")
	return out
}
