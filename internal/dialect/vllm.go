package dialect

import (
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// vllm reads vLLM's series: the V1 engine's (0.8 to current) and, where
// the names are the same, the V0 engine's (0.4 to 0.10). Every V1 series
// carries model_name and engine (the data-parallel engine index); engines
// are summed (counters, request gauges) or averaged (the KV usage
// fraction), and Options.Model keeps one model.
//
// Ray Serve LLM re-exports the same series under ray_vllm: (ray_vllm_ once
// its exporter sanitises names), adding Ray's own labels (ReplicaId,
// WorkerId, Component, …): each replica's engine is one more series, summed
// or averaged like engines. They are read as vllm: series of the same name.
//
// Aphrodite (aphrodite.go) publishes the same series under aphrodite:,
// read here under vLLM's names and reported as Aphrodite.
//
// Traps handled:
//   - vllm:prompt_tokens_total counts every prompt token, cached ones too.
//     Computed tokens are, first found: prompt_tokens_by_source_total
//     {source="local_compute"} (0.16 on); prompt_tokens_total −
//     prompt_tokens_cached_total (which also subtracts the single token a
//     fully cached prompt recomputes); with prefix caching off
//     (cache_config_info enable_prefix_caching "False", or "None", which
//     no engine reads as on) every prompt token, none cached; the _sum of
//     request_prefill_kv_computed_tokens (0.13 to 0.15: each finished
//     request's prompt less the tokens it found cached, locally or through
//     a KV connector, counted when the request finishes rather than as its
//     prefill ends, and a request aborted before it was scheduled counted
//     whole). Versions before that get no computed figure:
//     prompt_tokens_total − prefix_cache_hits would only approximate it
//     (hits are counted again after each preemption, prompt tokens when
//     prefill ends); the report gets vLLM's own count as
//     snapshot.PromptTokensAll instead.
//   - admission_rejections_total{reason} (PR #55812, on v0.29's
//     --max-num-queued-reqs and --max-num-queued-tokens) counts requests
//     refused with 503 before they queue: no queue gauge or finished count
//     ever sees them, so without it an overloaded server looks calm.
//   - num_requests_waiting_by_reason{reason="deferred"} is the part of the
//     queue waiting on a LoRA adapter budget, a KV transfer or a blocked
//     status, not for batch room: capacity does not shorten it.
//   - engine_sleep_state{sleep_state} is 0/1 per engine for awake,
//     weights_offloaded (sleep level 1) and discard_all (level 2); a
//     sleeping engine runs nothing and is not idle.
//   - iteration_tokens_total is a histogram, one observation per engine
//     step that emitted a token, of the prompt tokens of prefills that
//     ended in it (every chunk at once) plus the tokens generated: its sum
//     over its count is tokens per step as the frontend counts them, not a
//     share of max_num_batched_tokens, which vLLM does not publish.
//   - The KV offloading connector's kv_offload_{load,store}_bytes and
//     _time (vllm/backends/distributed/kv_transfer/kv_connector/v1/
//     offloading/metrics.py @055e47c) are the offload figures read back
//     and written; the deprecated kv_offload_total_bytes and _total_time
//     by transfer_type (CPU_to_GPU is a load) where only they are
//     published. The connector publishes no capacity, pages or evictions.
//   - Prefix-cache queries and hits are tokens from the 0.9-era rename on, but
//     vLLM 0.8's gpu_prefix_cache_* counted full blocks. A block hit rate is
//     not a token hit rate (a prompt's partial last block is never looked
//     up), so block counts stay out of the canonical figures and a Missing
//     line carries the block hit rate instead. The unit is read from the HELP
//     text ("blocks" in 0.8, "tokens" after); without HELP, lookups far
//     fewer than the prompt tokens can only be blocks.
//   - kv_cache_usage_perc (old gpu_cache_usage_perc) is a fraction 0..1
//     despite its name (HELP "1 means 100 percent usage"); a value above 1
//     is invalid, not a percent.
//   - KV capacity comes from cache_config_info: kv_cache_size_tokens where
//     present, else num_gpu_blocks × block_size, summed over engines.
//   - time_per_output_token_seconds was the per-step inter-token latency
//     before its rename to inter_token_latency_seconds (0.10.2);
//     request_time_per_output_token_seconds (0.11 on) is each request's
//     mean decode time per token.
var vllm = dialect{
	name:  "vllm",
	title: "vLLM",
	match: isVLLM,
	read:  readVLLM,
	advice: snapshot.Advice{
		Preempted:   "preempted",
		Preemptions: "preemptions",
		PreemptFix:  "lower max_num_seqs or max_model_len, or raise gpu_memory_utilization",
		QueueFix:    "raise max_num_seqs while the KV cache has room; past that, add replicas or data-parallel engines",
		KVFix:       "raise gpu_memory_utilization, lower max_model_len, or store the cache as kv_cache_dtype=fp8",
		AdmissionLimit: "--max-num-queued-reqs caps the requests in flight (waiting and running), " +
			"--max-num-queued-tokens the prompt tokens still in prefill",
		QueueDeferred: "deferred requests wait on a LoRA adapter slot (--max-loras), a KV transfer from another " +
			"instance, or a blocked status: more batch room does not shorten that",
		Wake:          "POST /wake_up",
		OffloadBudget: "cpu_bytes_to_use in --kv-transfer-config's kv_connector_extra_config",
	},
	partLabel: "engine",
}

// Ray Serve LLM's spellings of vLLM's prefix.
const (
	rayVLLMColon = "ray_vllm:"
	rayVLLMUnder = "ray_vllm_"
)

func isVLLM(name string) bool {
	return strings.HasPrefix(name, "vllm:") || strings.HasPrefix(name, rayVLLMColon) || strings.HasPrefix(name, rayVLLMUnder)
}

// vllmNames renames Ray Serve's re-exported families to vLLM's own names.
// Where a server publishes both spellings of one family, vLLM's own is read
// and Ray's copy ignored, so nothing is counted twice.
func vllmNames(fams []*dto.MetricFamily) []*dto.MetricFamily {
	native := map[string]bool{}
	ray := false
	for _, mf := range fams {
		n := mf.GetName()
		switch {
		case strings.HasPrefix(n, "vllm:"):
			native[n] = true
		case strings.HasPrefix(n, rayVLLMColon), strings.HasPrefix(n, rayVLLMUnder):
			ray = true
		}
	}
	if !ray {
		return fams
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		n := mf.GetName()
		base, ok := strings.CutPrefix(n, rayVLLMColon)
		if !ok {
			base, ok = strings.CutPrefix(n, rayVLLMUnder)
		}
		if !ok {
			out = append(out, mf)
			continue
		}
		name := "vllm:" + base
		if native[name] {
			continue
		}
		native[name] = true
		out = append(out, &dto.MetricFamily{Name: &name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: mf.Metric})
	}
	return out
}

func readVLLM(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	return readVLLMAs("vLLM", vllmNames(fams), o, s)
}

// readVLLMAs reads vLLM's series, spelt vllm: (Ray Serve's and
// Aphrodite's copies renamed first), for the server people call title.
func readVLLMAs(title string, fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	s.Models = servedModels(fams, isVLLM, modelLabel)
	keep, err := pickModel(s, o.Model, modelLabel)
	if err != nil {
		return err
	}
	p := newMapper(fams, keep, s)

	p.scalar(snapshot.RequestsProcessing, "vllm:num_requests_running")
	p.scalar(snapshot.RequestsDeferred, "vllm:num_requests_waiting")
	vllmLive(p)
	if mf := p.fam("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"); mf != nil && p.ratioOK(mf, keep, 1, "fraction") {
		// Each engine has its own cache; data-parallel engines are sized alike.
		if v, ok := mean(mf, keep); ok {
			s.Scalars[snapshot.KVCacheUsageRatio] = v
		}
	}
	p.scalar(snapshot.TokensPredictedTotal, counterNames("vllm:generation_tokens")...)
	p.scalar(snapshot.RequestsTotal, counterNames("vllm:request_success")...)
	// vLLM labels the reason finished_reason; llm-d's simulator (eec055a)
	// finish_reason.
	p.extraByLabels(snapshot.ExtraFinishedReason, []string{"finished_reason", "finish_reason"}, counterNames("vllm:request_success")...)
	p.extraSum(snapshot.ExtraPreemptions, counterNames("vllm:num_preemptions")...)

	vllmCacheConfig(p, s.Model) // "" where no model was asked for
	vllmPromptTokens(p)
	vllmPrefixCache(p)

	p.hist(snapshot.TimeToFirstTokenSeconds, "vllm:time_to_first_token_seconds")
	p.hist(snapshot.InterTokenLatencySeconds, "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
	p.hist(snapshot.RequestTimePerOutputTokenSeconds, "vllm:request_time_per_output_token_seconds")
	p.hist(snapshot.E2ERequestLatencySeconds, "vllm:e2e_request_latency_seconds")
	p.hist(snapshot.RequestQueueTimeSeconds, "vllm:request_queue_time_seconds")
	if h := p.hist(snapshot.RequestPrefillTimeSeconds, "vllm:request_prefill_time_seconds"); h != nil && !h.NoSum {
		s.Scalars[snapshot.PromptSecondsTotal] = h.Sum
	}
	if h := p.hist(snapshot.RequestDecodeTimeSeconds, "vllm:request_decode_time_seconds"); h != nil && !h.NoSum {
		s.Scalars[snapshot.TokensPredictedSecondsTotal] = h.Sum
	}
	p.hist(snapshot.RequestPromptTokens, "vllm:request_prompt_tokens")
	p.hist(snapshot.RequestGenerationTokens, "vllm:request_generation_tokens")

	p.scalar(snapshot.SpecDecodeNumDraftTokensTotal, counterNames("vllm:spec_decode_num_draft_tokens")...)
	p.scalar(snapshot.SpecDecodeNumAcceptedTokensTotal, counterNames("vllm:spec_decode_num_accepted_tokens")...)
	p.extraSum(snapshot.ExtraSpecDecodeDrafts, counterNames("vllm:spec_decode_num_drafts")...)
	p.extraByLabel(snapshot.ExtraAcceptedPerPosition, "position", counterNames("vllm:spec_decode_num_accepted_tokens_per_pos")...)
	vllmSteps(p)
	vllmOffload(p)

	p.missing("KV tokens in use: %s publishes the usage fraction only", title)
	p.missing("largest prompt and generation: %s publishes no peak series", title)
	p.processStart("uptime: no process_start_time_seconds (" + title + " drops it when --api-server-count > 1)")
	return nil
}

// vllmSleepStates are engine_sleep_state's states: awake, asleep at level
// 1 (weights offloaded to CPU memory) and at level 2 (weights and KV
// discarded). An engine asleep at level 0 (scheduling paused) reads 0 in
// all three.
var vllmSleepStates = []string{"awake", "weights_offloaded", "discard_all"}

// vllmLive reads what the queue and the engines' state say beyond the two
// request gauges: requests refused at admission (v0.29's
// --max-num-queued-reqs and --max-num-queued-tokens, counted by
// admission_rejections_total: they never reach the queue or the finished
// count), the part of the queue deferred rather than waiting for capacity,
// and each engine's sleep state.
func vllmLive(p *mapper) {
	p.extraSum(snapshot.ExtraAdmissionRejections, counterNames("vllm:admission_rejections")...)
	p.extraByLabel(snapshot.ExtraAdmissionRejectionsBy, "reason", counterNames("vllm:admission_rejections")...)
	if mf := p.fam("vllm:num_requests_waiting_by_reason"); mf != nil {
		if v, ok := Sum(mf, both(p.keep, withLabel("reason", "deferred"))); ok {
			p.extra(snapshot.ExtraWaitingDeferred, v)
		}
	}
	if mf := p.fam("vllm:engine_sleep_state"); mf != nil {
		for _, st := range vllmSleepStates {
			if v, ok := Sum(mf, both(p.keep, withLabel("sleep_state", st))); ok {
				p.extra(snapshot.ExtraSleepState+st, v)
			}
		}
	}
}

// vllmSteps reads iteration_tokens_total, a histogram despite its name:
// one observation per engine step that emitted a token, of the tokens the
// frontend counted in it. Its sum and count give the mean tokens a step
// carried; its bounds (fixed in vLLM, but a histogram's bounds are the
// server's to choose) are not needed for that.
func vllmSteps(p *mapper) {
	mf := p.fam("vllm:iteration_tokens_total")
	if mf == nil {
		return
	}
	// A paste cut short (no _count, no +Inf bucket) gives neither: a mean
	// needs both.
	h := Hist(mf, p.keep)
	if h == nil || h.NoSum || h.NoTop {
		return
	}
	p.extra(snapshot.ExtraStepTokens, h.Sum)
	p.extra(snapshot.ExtraEngineSteps, h.Count)
}

// vllmOffload reads the KV offloading connector's transfers: load is the
// offload medium to the GPU (read back), store the GPU to the medium
// (written), in bytes and seconds. The flat names (load_bytes,
// store_time, …) replaced kv_offload_total_bytes and _total_time by
// transfer_type (CPU_to_GPU, GPU_to_CPU), which newer versions keep
// updating for the CPU spec only: the flat ones are read where published.
// A direction not yet published beside the other is none yet: the
// connector creates a series at its first transfer.
func vllmOffload(p *mapper) {
	for _, d := range []struct {
		load, store string // the flat bases
		old         string // the deprecated base, by transfer_type
		read, write string // where they go
		extra       bool
	}{
		{"vllm:kv_offload_load_bytes", "vllm:kv_offload_store_bytes", "vllm:kv_offload_total_bytes",
			snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal, false},
		{"vllm:kv_offload_load_time", "vllm:kv_offload_store_time", "vllm:kv_offload_total_time",
			snapshot.ExtraKVOffloadLoadSeconds, snapshot.ExtraKVOffloadStoreSeconds, true},
	} {
		load, okL := p.sum(counterNames(d.load)...)
		store, okS := p.sum(counterNames(d.store)...)
		if !okL && !okS {
			mf := p.fam(counterNames(d.old)...)
			if mf == nil {
				continue
			}
			load, _ = Sum(mf, both(p.keep, withLabel("transfer_type", "CPU_to_GPU")))
			store, _ = Sum(mf, both(p.keep, withLabel("transfer_type", "GPU_to_CPU")))
		}
		set := func(key string, v float64) {
			if d.extra {
				p.extra(key, v)
			} else if !math.IsNaN(v) {
				p.s.Scalars[key] = v
			}
		}
		set(d.read, load)
		set(d.write, store)
	}
}

// vllmPromptTokens sets computed and cached prompt tokens, which vLLM's own
// prompt_tokens_total lumps together.
func vllmPromptTokens(p *mapper) {
	c := vllmPromptCounts(p)
	if c.haveComputed {
		p.s.Scalars[snapshot.PromptTokensTotal] = c.computed
	}
	if c.haveCached {
		p.s.Scalars[snapshot.CachedTokensTotal] = c.cached
	}
	if !c.haveComputed && c.haveAll {
		p.s.Scalars[snapshot.PromptTokensAll] = c.all
	}
	switch {
	case !c.haveCached && !c.haveComputed && c.haveAll:
		p.missing("prompt tokens computed: this vLLM counts prompt tokens including prefix-cache hits and publishes no cached-token count")
	case c.haveCached && !c.haveComputed:
		p.missing("prompt tokens computed: this scrape has cached prompt tokens but no prompt-token total to take them from")
	}
}

// promptCounts are prompt tokens in all, computed and cached; a have flag
// is false where the scrape gives no figure.
type promptCounts struct {
	all, computed, cached             float64
	haveAll, haveComputed, haveCached bool
}

// vllmPromptCounts reads prompt tokens from whichever counters this vLLM
// has, and derives computed ones from the total where it can.
func vllmPromptCounts(p *mapper) promptCounts {
	var c promptCounts
	c.all, c.haveAll = p.sum(counterNames("vllm:prompt_tokens")...)
	bySource := p.fam(counterNames("vllm:prompt_tokens_by_source")...)
	if bySource != nil {
		c.computed, c.haveComputed = Sum(bySource, both(p.keep, withLabel("source", "local_compute")))
	}
	c.cached, c.haveCached = p.sum(counterNames("vllm:prompt_tokens_cached")...)
	if !c.haveCached && bySource != nil {
		c.cached, c.haveCached = Sum(bySource, both(p.keep, withLabel("source", "local_cache_hit", "external_kv_transfer")))
	}
	switch {
	case !c.haveComputed && !c.haveCached && c.haveAll && p.s.PrefixCaching == "off":
		// Nothing is looked up, so nothing is reused. (A server that counts
		// its cached tokens is believed over its configuration.)
		c.computed, c.haveComputed, c.cached, c.haveCached = c.all, true, 0, true
	case !c.haveComputed && c.haveCached && c.haveAll && c.all >= c.cached:
		c.computed, c.haveComputed = c.all-c.cached, true
	}
	if !c.haveComputed {
		// 0.13 to 0.15: each finished request's prompt less what it found
		// cached, locally or through a KV connector.
		if mf := p.fam("vllm:request_prefill_kv_computed_tokens"); mf != nil {
			if h := Hist(mf, p.keep); h != nil && !h.NoSum {
				c.computed, c.haveComputed = h.Sum, true
			}
		}
	}
	return c
}

// vllmPrefixCache sets prefix-cache queries and hits when they count tokens.
func vllmPrefixCache(p *mapper) {
	if p.fam(counterNames("vllm:prefix_cache_queries")...) != nil {
		p.scalar(snapshot.PrefixCacheQueries, counterNames("vllm:prefix_cache_queries")...)
		p.scalar(snapshot.PrefixCacheHits, counterNames("vllm:prefix_cache_hits")...)
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
			p.s.Scalars[snapshot.PrefixCacheQueries] = queries
		}
		if okH {
			p.s.Scalars[snapshot.PrefixCacheHits] = hits
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

// vllmCacheConfig reads KV capacity, block size and whether prefix caching
// is on from cache_config_info, an info gauge whose labels are the engine's
// CacheConfig (one series per engine in newer versions; none of them names
// the model).
func vllmCacheConfig(p *mapper, model string) {
	mf := p.byName["vllm:cache_config_info"]
	if mf == nil || len(mf.GetMetric()) == 0 {
		p.missing("KV capacity: no vllm:cache_config_info series")
		return
	}
	named := slices.ContainsFunc(mf.GetMetric(), func(m *dto.Metric) bool {
		_, ok := labelValue(m, "model_name")
		return ok
	})
	split := model != "" && !named && len(p.s.Models) > 1
	p.s.PrefixCaching = vllmPrefixCaching(mf, p.keep, split)
	if split {
		p.missing("KV capacity: cache_config_info does not name its model, so it cannot be split between %d models", len(p.s.Models))
		return
	}
	kv := vllmKVCapacity(mf, p.keep)
	if kv.engines == 0 {
		return
	}
	if kv.blockSize > 0 {
		p.extra(snapshot.ExtraKVBlockSize, kv.blockSize)
	}
	if kv.allBlocks {
		p.extra(snapshot.ExtraKVNumBlocks, kv.blocks)
	}
	if kv.allTokens {
		p.s.Scalars[snapshot.KVCacheMaxTokens] = kv.tokens
	}
}

// kvCapacity is the KV cache over the engines kept: blocks and tokens are
// totals, known only when every engine states them (allBlocks, allTokens);
// blockSize is the largest stated.
type kvCapacity struct {
	blocks, tokens, blockSize float64
	allBlocks, allTokens      bool
	engines                   int
}

func vllmKVCapacity(mf *dto.MetricFamily, keep func(*dto.Metric) bool) kvCapacity {
	kv := kvCapacity{allBlocks: true, allTokens: true}
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		kv.engines++
		bs, okBS := labelNumber(m, "block_size")
		nb, okNB := labelNumber(m, "num_gpu_blocks")
		if okBS && bs > kv.blockSize {
			kv.blockSize = bs
		}
		if okNB {
			kv.blocks += nb
		} else {
			kv.allBlocks = false
		}
		// The engine's own token count where it states one: with hybrid
		// models it is not exactly blocks × block size.
		if kt, ok := labelNumber(m, "kv_cache_size_tokens"); ok {
			kv.tokens += kt
		} else if okNB && okBS {
			kv.tokens += nb * bs
		} else {
			kv.allTokens = false
		}
	}
	return kv
}

// vllmPrefixCaching reads enable_prefix_caching across the engines kept:
// "on" when any says True, "off" when every one says False or None (an
// unset flag, which no engine reads as on), "" when one does not say. When
// the series cannot be told apart by model (split), only what every engine
// of every model says holds for the model asked for.
func vllmPrefixCaching(mf *dto.MetricFamily, keep func(*dto.Metric) bool, split bool) string {
	on, off := 0, 0
	for _, m := range mf.GetMetric() {
		if !split && keep != nil && !keep(m) {
			continue
		}
		v, _ := labelValue(m, "enable_prefix_caching")
		switch {
		case strings.EqualFold(v, "true"):
			on++
		case strings.EqualFold(v, "false"), v == "None":
			off++
		default:
			return ""
		}
	}
	switch {
	case on > 0 && (off == 0 || !split):
		return "on"
	case off > 0 && on == 0:
		return "off"
	}
	return ""
}
