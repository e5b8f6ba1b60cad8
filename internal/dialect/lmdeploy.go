package dialect

import (
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// lmdeploy reads LMDeploy's api_server (lmdeploy/metrics/loggers.py):
// vLLM's V1 names under lmdeploy:, every series labelled model_name and
// engine (the data-parallel rank). Metrics arrived in 0.9.2 behind
// --enable-metrics and are on by default from 0.11.0 (PR #4108;
// --disable-metrics turns them off); docs/servers.md lists the names by
// version.
//
// Traps handled (each checked in LMDeploy's source at 1263d5c):
//   - prompt_tokens_total counts a request's whole prompt, cache hits
//     included, at its first token. cached_tokens_total (0.14 on) counts
//     the hits at the request's end, as request_prompt_tokens observes the
//     whole prompt: computed tokens are request_prompt_tokens' sum minus
//     cached_tokens_total, one set of finished requests. Before 0.14 only
//     the lump sum is known (snapshot.PromptTokensAll; prefix caching is
//     off by default, --enable-prefix-caching, but the scrape does not
//     say).
//   - request_success_total has a series per ResponseType
//     (finished_reason="ResponseType.FINISH", …) but only requests that
//     finish normally are counted: the other reasons stay 0, so it is
//     read as finished requests and not split by reason.
//   - gpu_cache_usage_perc is a fraction 0..1 despite its name (the
//     PyTorch engine's used blocks over all, TurboMind's live bytes over
//     the cache region).
//   - time_per_output_token_seconds is observed at every engine step of a
//     request after its first token: the step's time over the tokens it
//     produced, an inter-token latency, not a per-request mean.
//   - num_requests_waiting is the engine's queue; num_api_requests_waiting
//     (0.12.1 on) are requests the API server has not yet given a request
//     handle: both wait to be admitted, and neither counts the other's.
//   - prefix_cache_hit_rate is the scheduler's running block-trie rate, a
//     gauge; the hit rate comes from the token counters instead.
var lmdeploy = dialect{
	name:  "lmdeploy",
	title: "LMDeploy",
	match: func(n string) bool { return strings.HasPrefix(n, "lmdeploy:") },
	read:  readLMDeploy,
	advice: snapshot.Advice{
		QueueFix: "raise --max-batch-size while the KV cache has room; past that, add replicas or data-parallel engines (--dp)",
		KVFix:    "raise --cache-max-entry-count, lower --session-len, or quantise the cache with --quant-policy int8 (or fp8)",
	},
}

func readLMDeploy(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	owns := func(n string) bool { return strings.HasPrefix(n, "lmdeploy:") }
	s.Models = servedModels(fams, owns, modelLabel)
	keep, err := pickModel(s, o.Model, modelLabel)
	if err != nil {
		return err
	}
	p := newMapper(fams, keep, s)

	p.scalar(snapshot.RequestsProcessing, "lmdeploy:num_requests_running")
	if w, ok := p.sum("lmdeploy:num_requests_waiting"); ok {
		if api, ok := p.sum("lmdeploy:num_api_requests_waiting"); ok {
			w += api
		}
		s.Scalars[snapshot.RequestsDeferred] = w
	}
	if mf := p.fam("lmdeploy:gpu_cache_usage_perc"); mf != nil && p.ratioOK(mf, keep, 1, "fraction") {
		if v, ok := mean(mf, keep); ok {
			s.Scalars[snapshot.KVCacheUsageRatio] = v
		}
	}
	p.scalar(snapshot.TokensPredictedTotal, counterNames("lmdeploy:generation_tokens")...)
	p.scalar(snapshot.RequestsTotal, counterNames("lmdeploy:request_success")...)

	p.hist(snapshot.TimeToFirstTokenSeconds, "lmdeploy:time_to_first_token_seconds")
	p.hist(snapshot.InterTokenLatencySeconds, "lmdeploy:time_per_output_token_seconds")
	p.hist(snapshot.E2ERequestLatencySeconds, "lmdeploy:e2e_request_latency_seconds")
	p.hist(snapshot.RequestQueueTimeSeconds, "lmdeploy:request_queue_time_seconds")
	if h := p.hist(snapshot.RequestPrefillTimeSeconds, "lmdeploy:request_prefill_time_seconds"); h != nil && !h.NoSum {
		s.Scalars[snapshot.PromptSecondsTotal] = h.Sum
	}
	if h := p.hist(snapshot.RequestDecodeTimeSeconds, "lmdeploy:request_decode_time_seconds"); h != nil && !h.NoSum {
		s.Scalars[snapshot.TokensPredictedSecondsTotal] = h.Sum
	}
	prompts := p.hist(snapshot.RequestPromptTokens, "lmdeploy:request_prompt_tokens")
	p.hist(snapshot.RequestGenerationTokens, "lmdeploy:request_generation_tokens")
	if prompts != nil && !prompts.NoSum {
		lmdeployPromptTokens(p, true, prompts.Sum)
	} else {
		lmdeployPromptTokens(p, false, 0)
	}

	p.scalar(snapshot.SpecDecodeNumDraftTokensTotal, counterNames("lmdeploy:spec_decode_num_draft_tokens")...)
	p.scalar(snapshot.SpecDecodeNumAcceptedTokensTotal, counterNames("lmdeploy:spec_decode_num_accepted_tokens")...)
	p.extraSum(snapshot.ExtraSpecDecodeDrafts, counterNames("lmdeploy:spec_decode_num_drafts")...)
	p.extraByLabel(snapshot.ExtraAcceptedPerPosition, "position", counterNames("lmdeploy:spec_decode_num_accepted_tokens_per_pos")...)

	p.missing("KV tokens in use and capacity: LMDeploy publishes the usage fraction only")
	p.missing("largest prompt and generation: LMDeploy publishes no peak series")
	p.processStart("uptime: no process_start_time_seconds")
	return nil
}

// lmdeployPromptTokens sets computed and cached prompt tokens from one set
// of finished requests: request_prompt_tokens' sum (whole prompts) less
// cached_tokens_total. Without the cached counter the prompt count is the
// lump sum.
func lmdeployPromptTokens(p *mapper, haveFinished bool, finished float64) {
	cached, okCached := p.sum(counterNames("lmdeploy:cached_tokens")...)
	if okCached && haveFinished && finished >= cached {
		p.s.Scalars[snapshot.PromptTokensTotal] = finished - cached
		p.s.Scalars[snapshot.CachedTokensTotal] = cached
		p.s.Scalars[snapshot.PrefixCacheQueries] = finished
		p.s.Scalars[snapshot.PrefixCacheHits] = cached
		return
	}
	if p.scalar(snapshot.PromptTokensAll, counterNames("lmdeploy:prompt_tokens")...) {
		p.missing("prompt tokens computed: this LMDeploy counts prompt tokens with prefix-cache hits and publishes no cached-token count (0.14 on)")
	}
}
