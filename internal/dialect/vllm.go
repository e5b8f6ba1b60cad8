package dialect

import (
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
	dto "github.com/prometheus/client_model/go"
)

// vllm reads vLLM's V1-engine series (0.8 to current). Every series carries
// model_name and engine (the data-parallel engine index); engines are summed
// (counters, request gauges) or averaged (the KV usage fraction), and
// Options.Model keeps one model.
//
// Traps handled:
//   - vllm:prompt_tokens_total counts every prompt token, cached ones too.
//     Computed tokens are prompt_tokens_by_source_total{source="local_compute"}
//     where published, else prompt_tokens_total − prompt_tokens_cached_total
//     (which also subtracts the single token a fully cached prompt
//     recomputes). Versions before the cached counter get no computed figure:
//     prompt_tokens_total − prefix_cache_hits would only approximate it
//     (hits are counted again after each preemption, prompt tokens when
//     prefill ends).
//   - Prefix-cache queries and hits are tokens from the 0.9-era rename on, but
//     vLLM 0.8's gpu_prefix_cache_* counted full blocks. A block hit rate is
//     not a token hit rate (a prompt's partial last block is never looked
//     up), so block counts stay out of the canonical figures and a Missing
//     line carries the block hit rate instead. The unit is read from the HELP
//     text ("blocks" in 0.8, "tokens" after); without HELP, lookups far
//     fewer than the prompt tokens can only be blocks.
//   - kv_cache_usage_perc (old gpu_cache_usage_perc) is a fraction 0..1.
//   - KV capacity comes from cache_config_info: kv_cache_size_tokens where
//     present, else num_gpu_blocks × block_size, summed over engines.
//   - time_per_output_token_seconds was the per-step inter-token latency
//     before its rename to inter_token_latency_seconds.
var vllm = dialect{
	name:  "vllm",
	match: isVLLM,
	read:  readVLLM,
}

func isVLLM(name string) bool { return strings.HasPrefix(name, "vllm:") }

func readVLLM(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	s.Models = servedModels(fams, isVLLM)
	keep, err := modelFilter(s.Models, o.Model)
	if err != nil {
		return err
	}
	p := newMapper(fams, keep, s)

	p.scalar("requests_processing", "vllm:num_requests_running")
	p.scalar("requests_deferred", "vllm:num_requests_waiting")
	if mf := p.fam("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"); mf != nil {
		// Each engine has its own cache; data-parallel engines are sized alike.
		if v, ok := mean(mf, keep); ok {
			s.Scalars["kv_cache_usage_ratio"] = v
		}
	}
	p.scalar("tokens_predicted_total", counterNames("vllm:generation_tokens")...)
	p.scalar("requests_total", counterNames("vllm:request_success")...)
	p.extraByLabel("finished_reason:", "finished_reason", counterNames("vllm:request_success")...)
	p.extraSum("num_preemptions_total", counterNames("vllm:num_preemptions")...)

	vllmPromptTokens(p)
	vllmPrefixCache(p)

	p.hist("time_to_first_token_seconds", "vllm:time_to_first_token_seconds")
	p.hist("inter_token_latency_seconds", "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
	p.hist("e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds")
	p.hist("request_queue_time_seconds", "vllm:request_queue_time_seconds")
	if h := p.hist("request_prefill_time_seconds", "vllm:request_prefill_time_seconds"); h != nil {
		s.Scalars["prompt_seconds_total"] = h.Sum
	}
	if h := p.hist("request_decode_time_seconds", "vllm:request_decode_time_seconds"); h != nil {
		s.Scalars["tokens_predicted_seconds_total"] = h.Sum
	}
	p.hist("request_prompt_tokens", "vllm:request_prompt_tokens")
	p.hist("request_generation_tokens", "vllm:request_generation_tokens")

	p.scalar("spec_decode_num_draft_tokens_total", counterNames("vllm:spec_decode_num_draft_tokens")...)
	p.scalar("spec_decode_num_accepted_tokens_total", counterNames("vllm:spec_decode_num_accepted_tokens")...)
	p.extraSum("spec_decode_num_drafts_total", counterNames("vllm:spec_decode_num_drafts")...)
	p.extraByLabel("spec_decode_accepted_per_pos:", "position", counterNames("vllm:spec_decode_num_accepted_tokens_per_pos")...)

	vllmCacheConfig(p, o.Model)

	p.missing("KV tokens in use: vLLM publishes the usage fraction only")
	p.missing("largest prompt and generation: vLLM publishes no peak series")
	p.processStart("uptime: no process_start_time_seconds (vLLM drops it when --api-server-count > 1)")
	return nil
}

// vllmPromptTokens sets computed and cached prompt tokens, which vLLM's own
// prompt_tokens_total lumps together.
func vllmPromptTokens(p *mapper) {
	bySource := p.fam(counterNames("vllm:prompt_tokens_by_source")...)
	var computed float64
	haveComputed := false
	if bySource != nil {
		computed, haveComputed = Sum(bySource, both(p.keep, withLabel("source", "local_compute")))
	}
	cached, haveCached := p.sum(counterNames("vllm:prompt_tokens_cached")...)
	if !haveCached && bySource != nil {
		cached, haveCached = Sum(bySource, both(p.keep, withLabel("source", "local_cache_hit", "external_kv_transfer")))
	}
	if !haveComputed && haveCached {
		if total, ok := p.sum(counterNames("vllm:prompt_tokens")...); ok && total >= cached {
			computed, haveComputed = total-cached, true
		}
	}
	if haveComputed {
		p.s.Scalars["prompt_tokens_total"] = computed
	}
	if haveCached {
		p.s.Scalars["cached_tokens_total"] = cached
	}
	if !haveCached && p.fam(counterNames("vllm:prompt_tokens")...) != nil {
		p.missing("prompt tokens computed: this vLLM counts prompt tokens including prefix-cache hits and publishes no cached-token count")
	}
}

// vllmPrefixCache sets prefix-cache queries and hits when they count tokens.
func vllmPrefixCache(p *mapper) {
	if p.fam(counterNames("vllm:prefix_cache_queries")...) != nil {
		p.scalar("prefix_cache_queries", counterNames("vllm:prefix_cache_queries")...)
		p.scalar("prefix_cache_hits", counterNames("vllm:prefix_cache_hits")...)
		return
	}
	q := p.fam(counterNames("vllm:gpu_prefix_cache_queries")...)
	if q == nil {
		return
	}
	queries, okQ := Sum(q, p.keep)
	hits, okH := p.sum(counterNames("vllm:gpu_prefix_cache_hits")...)
	switch vllmPrefixUnit(p, q, queries) {
	case "tokens":
		if okQ {
			p.s.Scalars["prefix_cache_queries"] = queries
		}
		if okH {
			p.s.Scalars["prefix_cache_hits"] = hits
		}
	case "blocks":
		if okQ && okH && queries > 0 {
			p.missing("prefix-cache hit rate: vLLM 0.8 counted lookups in blocks, not tokens (block hit rate %.1f%%, %.0f of %.0f blocks)",
				100*hits/queries, hits, queries)
		} else {
			p.missing("prefix-cache hit rate: vLLM 0.8 counted lookups in blocks, not tokens")
		}
	default:
		p.missing("prefix-cache hit rate: gpu_prefix_cache_* may count blocks (vLLM 0.8) or tokens, and this scrape does not say which")
	}
}

// vllmPrefixUnit tells whether gpu_prefix_cache_* count "blocks" or
// "tokens", or "" when it cannot.
func vllmPrefixUnit(p *mapper, q *dto.MetricFamily, queries float64) string {
	help := strings.ToLower(q.GetHelp())
	switch {
	case strings.Contains(help, "block"):
		return "blocks"
	case strings.Contains(help, "token"):
		return "tokens"
	}
	// Token lookups are at least the prompt tokens prefilled; full-block
	// lookups are a block size's fraction of them.
	prompt, ok := p.sum(counterNames("vllm:prompt_tokens")...)
	if !ok || prompt <= 0 || queries <= 0 {
		return ""
	}
	if queries*2 < prompt {
		return "blocks"
	}
	return "tokens"
}

// vllmCacheConfig reads KV capacity and block size from cache_config_info,
// an info gauge whose labels are the engine's CacheConfig (one series per
// engine in newer versions; none of them names the model).
func vllmCacheConfig(p *mapper, model string) {
	mf := p.byName["vllm:cache_config_info"]
	if mf == nil || len(mf.GetMetric()) == 0 {
		p.missing("KV capacity: no vllm:cache_config_info series")
		return
	}
	named := false
	for _, m := range mf.GetMetric() {
		if _, ok := labelValue(m, "model_name"); ok {
			named = true
			break
		}
	}
	if model != "" && !named && len(p.s.Models) > 1 {
		p.missing("KV capacity: cache_config_info does not name its model, so it cannot be split between %d models", len(p.s.Models))
		return
	}
	var blocks, tokens, blockSize float64
	allBlocks, allTokens, n := true, true, 0
	for _, m := range mf.GetMetric() {
		if p.keep != nil && !p.keep(m) {
			continue
		}
		n++
		bs, okBS := labelNumber(m, "block_size")
		nb, okNB := labelNumber(m, "num_gpu_blocks")
		if okBS && bs > blockSize {
			blockSize = bs
		}
		if okNB {
			blocks += nb
		} else {
			allBlocks = false
		}
		// The engine's own token count where it states one: with hybrid
		// models it is not exactly blocks × block size.
		if kt, ok := labelNumber(m, "kv_cache_size_tokens"); ok {
			tokens += kt
		} else if okNB && okBS {
			tokens += nb * bs
		} else {
			allTokens = false
		}
	}
	if n == 0 {
		return
	}
	if blockSize > 0 {
		p.extra("kv_block_size", blockSize)
	}
	if allBlocks {
		p.extra("kv_num_blocks", blocks)
	}
	if allTokens {
		p.s.Scalars["kv_cache_max_tokens"] = tokens
	}
}
