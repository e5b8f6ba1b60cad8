package dialect

import (
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// llamaCpp reads llama-server's series (started with --metrics), from the
// endpoint's first build (b2258, February 2024) on, and ik_llama.cpp's,
// which kept the older set. They carry no labels except the draft
// position, so there is no model to choose. docs/servers.md lists the names
// and the builds that publish them.
//
// Traps handled:
//   - prompt_tokens_total already excludes prompt tokens reused from the
//     slot cache, as tabbyAPI's does; prompt_tokens_cached_total counts
//     those, and the two add up to every prompt token looked up. The
//     cached counter is not in b10309 (82bb485, the newest build run
//     here); upstream added it after, in ggml-org/llama.cpp #26920
//     (decaf508b, 2026-08-13). prompt_tokens_cache_total ("cache"), of an
//     unmerged pull request (#24850, #25328) and forks carrying it, is not
//     read.
//   - n_tokens_max (old n_past_max) is the longest prompt + generation, not
//     the largest prompt: it goes to Extra as largest_sequence_tokens.
//   - prompt_tokens_seconds and predicted_tokens_seconds are not read.
//     Before b5153 each /metrics call reset them, so they covered only the
//     time since the previous scrape (whoever made it); from b5153 on
//     nothing resets them and they are the lifetime tokens over the summed
//     per-slot seconds, the same figure as the counters give. The HELP text
//     did not change, so a scrape cannot always say which; the counters
//     say it on every build: slot_prefill_tokens_per_second and
//     slot_decode_tokens_per_second.
//   - n_busy_slots_per_decode is busy slots over max(decode calls, 1): with
//     no decode call yet it reads 0 for 0/0, and is left out.
//   - kv_cache_usage_ratio and kv_cache_tokens were removed in b5441; older
//     servers still publish them. The ratio is a fraction 0..1.
//   - The Process-Start-Time-Unix header is a monotonic clock reading, not
//     an epoch, so there is no uptime.
var llamaCpp = dialect{
	name:  "llamacpp",
	title: "llama.cpp",
	match: func(n string) bool { return strings.HasPrefix(n, "llamacpp:") },
	read:  readLlamaCpp,
	advice: snapshot.Advice{
		SlowScrape: "llama-server answers /metrics from the loop that drives generation, between decode batches",
		QueueFix:   "start llama-server with more slots (--parallel N); each slot gets --ctx-size / N tokens of context, so raise --ctx-size with it",
		KVFix:      "raise --ctx-size, or quantise the cache with --cache-type-k q8_0 --cache-type-v q8_0",
	},
}

func readLlamaCpp(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	p := newMapper(fams, nil, s)

	prompt, okPrompt := p.sum(counterNames("llamacpp:prompt_tokens")...)
	if okPrompt {
		s.Scalars[snapshot.PromptTokensTotal] = prompt
	}
	cached, okCached := p.sum(counterNames("llamacpp:prompt_tokens_cached")...)
	if okCached {
		s.Scalars[snapshot.CachedTokensTotal] = cached
		if okPrompt {
			// tabbyAPI's definition: every prompt token is looked up, the
			// cached ones hit.
			s.Scalars[snapshot.PrefixCacheQueries] = prompt + cached
			s.Scalars[snapshot.PrefixCacheHits] = cached
		}
	}
	p.scalar(snapshot.PromptSecondsTotal, counterNames("llamacpp:prompt_seconds")...)
	p.scalar(snapshot.TokensPredictedTotal, counterNames("llamacpp:tokens_predicted")...)
	p.scalar(snapshot.TokensPredictedSecondsTotal, counterNames("llamacpp:tokens_predicted_seconds")...)
	p.scalar(snapshot.RequestsProcessing, "llamacpp:requests_processing")
	p.scalar(snapshot.RequestsDeferred, "llamacpp:requests_deferred")
	kv := p.fam("llamacpp:kv_cache_usage_ratio")
	if kv != nil && p.ratioOK(kv, nil, 1, "fraction") {
		p.scalar(snapshot.KVCacheUsageRatio, "llamacpp:kv_cache_usage_ratio")
	}
	p.scalar(snapshot.KVCacheTokens, "llamacpp:kv_cache_tokens")
	p.scalar(snapshot.SpecDecodeNumDraftTokensTotal, counterNames("llamacpp:spec_decode_num_draft_tokens")...)
	p.scalar(snapshot.SpecDecodeNumAcceptedTokensTotal, counterNames("llamacpp:spec_decode_num_accepted_tokens")...)

	slotSpeed(p, snapshot.ExtraSlotPrefillSpeed, snapshot.PromptTokensTotal, snapshot.PromptSecondsTotal)
	slotSpeed(p, snapshot.ExtraSlotDecodeSpeed, snapshot.TokensPredictedTotal, snapshot.TokensPredictedSecondsTotal)

	decodes, okDecodes := p.sum(counterNames("llamacpp:n_decode")...)
	p.extraSum(snapshot.ExtraDecodeCalls, counterNames("llamacpp:n_decode")...)
	if !okDecodes || decodes > 0 {
		// A counter in older servers, a gauge in newer ones; an average either way.
		p.extraSum(snapshot.ExtraBusySlotsPerDecode, "llamacpp:n_busy_slots_per_decode", "llamacpp:n_busy_slots_per_decode_total")
	}
	p.extraSum(snapshot.ExtraLargestSequence, "llamacpp:n_tokens_max", "llamacpp:n_tokens_max_total", "llamacpp:n_past_max", "llamacpp:n_past_max_total")
	p.extraSum(snapshot.ExtraSpecDecodeDrafts, counterNames("llamacpp:spec_decode_num_drafts")...)
	p.extraByLabel(snapshot.ExtraAcceptedPerPosition, "position", counterNames("llamacpp:spec_decode_num_accepted_tokens_per_pos")...)

	if kv == nil {
		p.missing("KV-cache usage: llama.cpp no longer publishes it")
	}
	if !okCached {
		p.missing("prompt cache reuse: this llama.cpp publishes no cached-token count")
	}
	p.missing("time to first token: llama.cpp does not publish latency histograms")
	p.missing("end-to-end latency: llama.cpp does not publish latency histograms")
	p.missing("prompt and generation sizes: llama.cpp publishes no per-request histograms")
	p.missing("requests finished: llama.cpp does not count requests")
	p.missing("largest prompt: llama.cpp tracks only the largest sequence (prompt + generation)")
	p.missing("uptime: llama.cpp's start header is not a wall-clock time")
	return nil
}

// slotSpeed sets tokens over their summed per-slot seconds: how fast a
// request was served while it ran, not the server's throughput. With no
// seconds yet there is no speed (0/0 is not 0).
func slotSpeed(p *mapper, key, tokens, seconds string) {
	n, okN := p.s.Scalar(tokens)
	t, okT := p.s.Scalar(seconds)
	if okN && okT && t > 0 {
		p.extra(key, n/t)
	}
}
