package dialect

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// trtllm reads TensorRT-LLM's trtllm-serve (tensorrt_llm/metrics/collector.py,
// written by the OpenAI server when return_perf_metrics is true). Its
// Prometheus text is at /prometheus/metrics; /metrics answers the iteration
// stats as JSON, draining them from the queue its collector counts from
// (internal/scrape tries the other path, once).
//
// Versions (docs/servers.md):
//   - 1.1 and 1.2 (PR #5785, August 2025, to early 2026) publish five
//     families without a prefix: request_success_total{finished_reason},
//     e2e_request_latency_seconds, time_to_first_token_seconds,
//     time_per_output_token_seconds and request_queue_time_seconds, every
//     series labelled model_name="undefined", engine_type="undefined".
//     NVIDIA Dynamo's TensorRT-LLM worker re-exports the same families under
//     trtllm_, with the model named.
//   - From 1.3.0rc5 (PR #11243, February 2026) the collector prefixes its
//     own names with trtllm_ and adds kv_cache_utilization and
//     kv_cache_hit_rate; later 2026 versions (PRs #12545, #12636) add the
//     iteration stats (requests running and waiting, KV blocks), prompt,
//     cached and generation token counters, prefill and decode histograms
//     and speculative-decoding counters.
//
// Every series carries model_name and engine_type (and, through Dynamo,
// Dynamo's own labels): series that differ in them are summed (counters,
// histograms, request gauges) or averaged (the KV utilization), each one
// more engine.
//
// Traps handled:
//   - model_name="undefined" (every series of trtllm-serve before PR #12545)
//     names no model: the server is read as one that labels no model.
//   - time_per_output_token_seconds is each request's mean decode time per
//     token after the first ((last token − first token) / (tokens − 1)),
//     observed once per finished request of two or more tokens: it is
//     request_time_per_output_token_seconds, not an inter-token latency.
//   - prompt_tokens_total counts every prompt token, cache hits included;
//     prompt_cached_tokens_total the hits, both at each request's end.
//     Computed tokens are their difference; without the cached counter
//     only the lump sum is known (snapshot.PromptTokensAll).
//   - kv_cache_hit_rate and the reused/missed counters count KV blocks,
//     not tokens: a block hit rate is not the token hit rate the report
//     gives, so they stay out of the canonical figures.
//   - kv_cache_utilization is used over all blocks, a fraction 0..1; the
//     capacity is kv_cache_max_blocks × kv_cache_tokens_per_block.
//   - Before PR #12545 a request whose queue time was exactly 0 was left
//     out of request_queue_time_seconds, and every series of a histogram
//     is observed only for a positive value (a one-token answer has no
//     time per output token): their counts can be below the requests'.
//   - The multiprocess registry drops process_start_time_seconds.
//
// The five unprefixed names are plain words another program may use
// (request_success_total): a scrape of that program would read as
// trtllm-serve's. No label tells them apart that survives a store's
// reading (the fleet reads a histogram's one bucket on its own), so the
// names alone decide.
var trtllm = dialect{
	name:  "trtllm",
	title: "TensorRT-LLM",
	match: isTRTLLM,
	read:  readTRTLLM,
	advice: snapshot.Advice{
		QueueFix: "raise --max_batch_size (and --max_num_tokens) while the KV cache has room; past that, add replicas",
		KVFix:    "raise --kv_cache_free_gpu_memory_fraction, lower --max_seq_len, or store the cache in FP8 (kv_cache_config.dtype: fp8 in --extra_llm_api_options, PyTorch backend)",
	},
}

// trtllmPrefix is the prefix of TensorRT-LLM's own names from 1.3 on, and of
// Dynamo's re-export of the older ones.
const trtllmPrefix = "trtllm_"

// trtllmBare are the families trtllm-serve published without a prefix
// (1.1, 1.2): the only unprefixed names the dialect owns.
var trtllmBare = []string{
	"request_success",
	"e2e_request_latency_seconds",
	"time_to_first_token_seconds",
	"time_per_output_token_seconds",
	"request_queue_time_seconds",
}

// isTRTLLM reports a trtllm_ family or one of the unprefixed five, under
// any of the names a store keeps it by (_total, _bucket, _count, _sum,
// _created).
func isTRTLLM(name string) bool {
	if strings.HasPrefix(name, trtllmPrefix) {
		return true
	}
	for _, b := range trtllmBare {
		if name == b || strings.HasPrefix(name, b+"_") {
			return true
		}
	}
	return false
}

// trtNames spells one of TensorRT-LLM's families: trtllm_ first, and the
// unprefixed name where the first versions published it.
func trtNames(base string) []string {
	for _, b := range trtllmBare {
		if base == b {
			return []string{trtllmPrefix + base, base}
		}
	}
	return []string{trtllmPrefix + base}
}

// trtCounter spells a counter with and without _total under trtNames.
func trtCounter(base string) []string {
	var out []string
	for _, n := range trtNames(base) {
		out = append(out, counterNames(n)...)
	}
	return out
}

// trtllmUndefined is the model_name trtllm-serve wrote before it named the
// model.
const trtllmUndefined = "undefined"

func readTRTLLM(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	s.Models = ServedModels("trtllm", servedModels(fams, isTRTLLM, modelLabel))
	keep, err := pickModel(s, o.Model, modelLabel)
	if err != nil {
		return err
	}
	p := newMapper(fams, keep, s)

	p.scalar(snapshot.RequestsTotal, trtCounter("request_success")...)
	p.extraByLabel(snapshot.ExtraFinishedReason, "finished_reason", trtCounter("request_success")...)
	p.hist(snapshot.E2ERequestLatencySeconds, trtNames("e2e_request_latency_seconds")...)
	p.hist(snapshot.TimeToFirstTokenSeconds, trtNames("time_to_first_token_seconds")...)
	p.hist(snapshot.RequestTimePerOutputTokenSeconds, trtNames("time_per_output_token_seconds")...)
	p.hist(snapshot.RequestQueueTimeSeconds, trtNames("request_queue_time_seconds")...)
	if h := p.hist(snapshot.RequestPrefillTimeSeconds, trtNames("request_prefill_time_seconds")...); h != nil && !h.NoSum {
		s.Scalars[snapshot.PromptSecondsTotal] = h.Sum
	} else if h == nil {
		p.missing("prefill and decode time: this TensorRT-LLM publishes neither (trtllm_request_prefill_time_seconds, 2026 versions)")
	}
	if h := p.hist(snapshot.RequestDecodeTimeSeconds, trtNames("request_decode_time_seconds")...); h != nil && !h.NoSum {
		s.Scalars[snapshot.TokensPredictedSecondsTotal] = h.Sum
	}

	live := p.scalar(snapshot.RequestsProcessing, trtNames("num_requests_running")...)
	if p.scalar(snapshot.RequestsDeferred, trtNames("num_requests_waiting")...) {
		live = true
	}
	if !live {
		p.missing("requests running and waiting: this TensorRT-LLM publishes no iteration gauges (2026 versions do, with enable_iter_perf_stats: true)")
	}
	trtllmKV(p)
	trtllmTokens(p)

	p.scalar(snapshot.SpecDecodeNumDraftTokensTotal, trtCounter("spec_decode_num_draft_tokens")...)
	p.scalar(snapshot.SpecDecodeNumAcceptedTokensTotal, trtCounter("spec_decode_num_accepted_tokens")...)

	if len(s.Models) == 0 && slices.Contains(servedModels(fams, isTRTLLM, modelLabel), trtllmUndefined) {
		p.missing("model: this trtllm-serve labels every series model_name=\"undefined\"")
	}
	p.missing("inter-token latency: TensorRT-LLM publishes only each request's mean time per output token")
	p.missing("largest prompt and generation: TensorRT-LLM publishes no peak series")
	p.processStart("uptime: no process_start_time_seconds (trtllm-serve's multiprocess registry drops it; Dynamo drops it from its workers' scrapes)")
	return nil
}

// trtllmKV reads KV use and capacity from the iteration gauges: the
// utilization averaged over engines, the capacity their blocks × tokens
// per block added.
func trtllmKV(p *mapper) {
	if mf := p.fam(trtNames("kv_cache_utilization")...); mf != nil && p.ratioOK(mf, p.keep, 1, "fraction") {
		if v, ok := mean(mf, p.keep); ok {
			p.s.Scalars[snapshot.KVCacheUsageRatio] = v
		}
	} else if mf == nil {
		p.missing("KV-cache usage: this TensorRT-LLM publishes none (trtllm_kv_cache_utilization, 1.3 on, with enable_iter_perf_stats: true)")
		return
	}
	blocks, per := p.fam(trtNames("kv_cache_max_blocks")...), p.fam(trtNames("kv_cache_tokens_per_block")...)
	if blocks == nil {
		p.missing("KV capacity: this TensorRT-LLM publishes no trtllm_kv_cache_max_blocks")
		return
	}
	total, ok := Sum(blocks, p.keep)
	if !ok {
		return
	}
	p.extra(snapshot.ExtraKVNumBlocks, total)
	if per == nil {
		return
	}
	// Each engine's blocks at its own block size: series are paired by
	// their labels.
	sizes := map[string]float64{}
	largest := 0.0
	for _, m := range per.GetMetric() {
		if p.keep != nil && !p.keep(m) {
			continue
		}
		if v, ok := scalarValue(m); ok && v > 0 {
			sizes[labelKey(m)] = v
			largest = max(largest, v)
		}
	}
	if largest > 0 {
		p.extra(snapshot.ExtraKVBlockSize, largest)
	}
	tokens, all := 0.0, true
	for _, m := range blocks.GetMetric() {
		if p.keep != nil && !p.keep(m) {
			continue
		}
		v, okV := scalarValue(m)
		size, okS := sizes[labelKey(m)]
		if !okV || !okS {
			all = false
			continue
		}
		tokens += v * size
	}
	if all {
		p.s.Scalars[snapshot.KVCacheMaxTokens] = tokens
	}
}

// labelKey is a series' labels, sorted, as one string: what pairs two
// families' series of one engine.
func labelKey(m *dto.Metric) string {
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		pairs = append(pairs, lp.GetName()+"\xff"+lp.GetValue())
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "\xfe")
}

// trtllmTokens reads generated tokens and prompt tokens, computed and
// cached: prompt_tokens_total includes the cache hits that
// prompt_cached_tokens_total counts.
func trtllmTokens(p *mapper) {
	generated := p.scalar(snapshot.TokensPredictedTotal, trtCounter("generation_tokens")...)
	all, okAll := p.sum(trtCounter("prompt_tokens")...)
	cached, okCached := p.sum(trtCounter("prompt_cached_tokens")...)
	switch {
	case okAll && okCached && all >= cached:
		p.s.Scalars[snapshot.PromptTokensTotal] = all - cached
		p.s.Scalars[snapshot.CachedTokensTotal] = cached
		p.s.Scalars[snapshot.PrefixCacheQueries] = all
		p.s.Scalars[snapshot.PrefixCacheHits] = cached
	case okAll:
		p.s.Scalars[snapshot.PromptTokensAll] = all
		p.missing("prompt tokens computed: this TensorRT-LLM counts prompt tokens with cache hits and publishes no cached-token count")
	case !generated:
		p.missing("prompt and generated tokens: this TensorRT-LLM counts neither (trtllm_prompt_tokens_total and trtllm_generation_tokens_total, 2026 versions)")
	default:
		p.missing("prompt tokens: this TensorRT-LLM counts none (trtllm_prompt_tokens_total)")
	}
	if okAll && !generated {
		p.missing("generated tokens: this TensorRT-LLM counts none (trtllm_generation_tokens_total)")
	}
	if okCached {
		return
	}
	if mf := p.fam(trtNames("kv_cache_hit_rate")...); mf != nil {
		if v, ok := mean(mf, p.keep); ok {
			p.missing("prefix-cache hit rate: TensorRT-LLM's kv_cache_hit_rate counts reused KV blocks, not tokens (%.1f%% of blocks)", 100*v)
		}
	}
}
