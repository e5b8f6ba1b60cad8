package dialect

import (
	"math"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// sglang reads SGLang's series (--enable-metrics), under the upstream
// "sglang:" prefix or the "sglang_" spelling some builds use. Tokenizer-side
// series (tokens, requests, latency histograms) carry model_name; scheduler
// series (queue, KV pool, throughput) add rank labels, one series per
// scheduler. docs/servers.md lists the names read and their versions.
//
// Ranks: by default only each data-parallel group's first attention rank
// publishes, so series that differ in dp_rank (or engine_type) are separate
// batches and are summed (counters, request and token gauges) or averaged
// (ratios). Ranks that differ only in tp_rank, pp_rank or moe_ep_rank
// (--enable-metrics-for-all-schedulers) report the same scheduler state,
// so within such a group the largest value is taken, never the sum.
//
// Traps handled:
//   - sglang:prompt_tokens_total is the whole prompt, cached tokens included,
//     counted when a request finishes. Computed tokens are
//     prefill_effective_tokens_total{mode="input"} where published (below),
//     else realtime_tokens_total{mode="prefill_compute"} (with
//     mode="prefill_cache" as the cached ones), else prompt_tokens_total −
//     cached_tokens_total. Either way queries = computed + cached and
//     hits = cached: the lifetime hit rate from counters.
//   - cached_tokens_total appeared in 0.4.3.post4, added to on every
//     finished request; from 0.4.4.post4 only on a request with a cache hit,
//     so there it is absent until the first hit. Absent next to prompt
//     tokens it means 0 only where the scrape shows a version that publishes
//     it lazily (sglangLazyCached); otherwise the cached share is unknown
//     and the report gets the whole prompt count as PromptTokensAll.
//   - Newer versions split cached_tokens_total by cache_source (each
//     request counted under its sources, or under "total" when it has no
//     breakdown), so all its series add. Each realtime mode also appears
//     only after its first increment: absent next to prefill_compute is 0.
//   - cache_hit_rate is the last batch's rate, gen_throughput the last log
//     interval's: Extra *_gauge only. The first metrics (late 2024, the
//     docs' example with num_requests_running and name= labels) published
//     cache_hit_rate in percent; every release since, a fraction.
//   - token_usage is a fraction 0..1; num_used_tokens and
//     max_total_num_tokens are tokens.
//   - time_per_output_token_seconds was the per-token latency histogram
//     before inter_token_latency_seconds.
//   - The engine's busy time is forward_execution_seconds_total{category}
//     (2026, with the environment variable SGLANG_ENABLE_METRICS_DEVICE_TIMER=1;
//     before, gpu_execution_seconds_total, categories "forward_extend",
//     "forward_decode", …): the GPU's own time per scheduler, one series per
//     forward mode, the one engine-level busy figure among the servers read,
//     so its rate is a utilization. Forward modes add up within a scheduler;
//     replicas of one scheduler (tp_rank, …) agree, and data-parallel
//     schedulers are averaged, so that the rate is the share of the time a
//     scheduler was busy. Prefill is the modes "extend" and "split_prefill",
//     decode "decode" and speculative decoding's "target_verify"; the rest
//     (mixed batches, idle data-parallel ranks, the drafter's own passes)
//     is busy time of neither phase. dp_cooperation_forward_execution_
//     seconds_total is the same time again, labelled by how many ranks
//     were prefilling: not read. The last interval's sglang:utilization
//     gauge is not a utilization: it is running requests over the SLO
//     capacity or token usage over 0.9, whichever is larger, and stays 0
//     where that capacity is not set.
//   - With --enable-priority-scheduling the running and waiting gauges (and
//     the disaggregation queues) gain a priority label: the total is the
//     series with priority="" and each priority has its own series beside
//     it, so adding them all counts every request twice. Totals are read
//     from the series without a priority; each priority's is a breakdown
//     (Extra running_priority:, queued_priority:).
//   - In 2026 token_usage became the fullest of the full-attention, SWA and
//     mamba pools; full_token_usage is the full-attention pool, and
//     num_used_tokens the larger of the full-attention and SWA pools' use,
//     which against max_total_num_tokens (the full-attention pool) mixes
//     pools. The KV cache figures are the full-attention pool's:
//     kv_used_tokens (locked by running requests), kv_evictable_tokens
//     (cached prefixes no request uses), kv_available_tokens (free), and
//     full_token_usage. Where a hybrid model's scrape has only token_usage,
//     that is read and said to be the fullest pool's.
//   - prefill_effective_tokens_total{mode=input|device_hit|host_hit|
//     storage_hit} (2026) counts prefill with the second count of a
//     retracted request's tokens left out: computed tokens are "input",
//     hits the three tiers. Where published it is the one source of
//     prompt tokens and the hit rate; the work retractions threw away is
//     num_retracted_input_tokens_total and …_output_tokens_total.
//   - cache_config_info{page_size,num_pages} (until 2026, replaced by the
//     page_size, num_pages and context_len gauges) carries no rank label
//     in upstream code: with several data-parallel ranks it is one
//     scheduler's pages, and the total is not known.
var sglang = dialect{
	name:  "sglang",
	title: "SGLang",
	match: isSGLang,
	read:  readSGLang,
	advice: snapshot.Advice{
		Preempted:   "retracted",
		Preemptions: "retractions",
		PreemptFix:  "lower --max-running-requests, or raise --mem-fraction-static",
		QueueFix:    "raise --max-running-requests while the KV cache has room; past that, add data-parallel replicas (--dp-size)",
		KVFix:       "raise --mem-fraction-static, lower --context-length, or store the cache as --kv-cache-dtype fp8_e5m2",
	},
	partLabel: "dp_rank",
}

// sglangFirstModelLabels name the served model in SGLang's first metrics.
var sglangFirstModelLabels = []string{"model_name", "name"}

func isSGLang(name string) bool {
	return strings.HasPrefix(name, "sglang:") || strings.HasPrefix(name, "sglang_")
}

// sgNames spells a gauge or histogram under both prefixes.
func sgNames(base string) []string {
	return []string{"sglang:" + base, "sglang_" + base}
}

// sgCounter spells a counter under both prefixes, with and without _total.
func sgCounter(base string) []string {
	return append(counterNames("sglang:"+base), counterNames("sglang_"+base)...)
}

// replicaLabels tell apart ranks that replicate one scheduler (and the pid a
// multiprocess gauge may add); dp_rank and engine_type do not.
var replicaLabels = map[string]bool{"tp_rank": true, "pp_rank": true, "moe_ep_rank": true, "attn_tp_rank": true, "pid": true}

// rankGroups buckets the kept series of mf by their labels minus the replica
// labels.
func rankGroups(mf *dto.MetricFamily, keep func(*dto.Metric) bool) map[string][]*dto.Metric {
	groups := map[string][]*dto.Metric{}
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		var key []string
		for _, lp := range m.GetLabel() {
			if !replicaLabels[lp.GetName()] {
				key = append(key, lp.GetName()+"\xff"+lp.GetValue())
			}
		}
		sort.Strings(key)
		k := strings.Join(key, "\xfe")
		groups[k] = append(groups[k], m)
	}
	return groups
}

// rankValues is one value per rank group: the group's largest number.
func rankValues(mf *dto.MetricFamily, keep func(*dto.Metric) bool) []float64 {
	var out []float64
	for _, ms := range rankGroups(mf, keep) {
		if best, ok := groupMax(ms); ok {
			out = append(out, best)
		}
	}
	return out
}

// groupMax is the largest number among a rank group's series; false where
// none has one.
func groupMax(ms []*dto.Metric) (float64, bool) {
	best, ok := math.Inf(-1), false
	for _, m := range ms {
		if v, isScalar := scalarValue(m); isScalar && !math.IsNaN(v) {
			best, ok = math.Max(best, v), true
		}
	}
	return best, ok
}

// rankSum adds the rank groups' values.
func rankSum(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (float64, bool) {
	vs := rankValues(mf, keep)
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum, len(vs) > 0
}

// rankMean averages the rank groups' values.
func rankMean(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (float64, bool) {
	vs := rankValues(mf, keep)
	if len(vs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs)), true
}

// rankHist merges one histogram per rank group: the group's fullest one.
func rankHist(mf *dto.MetricFamily, keep func(*dto.Metric) bool) *histogram.Histogram {
	chosen := map[*dto.Metric]bool{}
	for _, ms := range rankGroups(mf, keep) {
		var best *dto.Metric
		for _, m := range ms {
			if m.GetHistogram() == nil {
				continue
			}
			if best == nil || m.GetHistogram().GetSampleCount() > best.GetHistogram().GetSampleCount() {
				best = m
			}
		}
		if best != nil {
			chosen[best] = true
		}
	}
	return Hist(mf, func(m *dto.Metric) bool { return chosen[m] })
}

func readSGLang(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	// name= labels a model only in the first metrics: later it names the
	// function func_latency_seconds times.
	first := sglangFirstMetrics(newMapper(fams, nil, s))
	labels := modelLabel
	if first {
		labels = sglangFirstModelLabels
	}
	s.Models = servedModels(fams, isSGLang, labels)
	keep, err := pickModel(s, o.Model, labels)
	if err != nil {
		return err
	}
	// Totals are the series without a priority (priority=""): a priority's
	// own series is part of them.
	p := rankMapper{newMapper(fams, both(keep, noPriority), s)}

	sglangPromptTokens(p)
	sglangScalars(p)
	haveMax := sglangKV(p)
	sglangPriorities(rankMapper{newMapper(fams, keep, s)})
	haveQueue, haveSizes := sglangHists(p)
	sglangExtras(p, first)
	sglangBusy(p)
	sglangPages(p, fams)

	p.missing("prefill and decode time: SGLang publishes none per request (its device timer times the engine's passes)")
	if !haveQueue {
		p.missing("queue time: this SGLang publishes no queue-time histogram")
	}
	if !haveSizes {
		p.missing("prompt and generation sizes: SGLang publishes them only with --collect-tokens-histogram")
	}
	if !haveMax {
		p.missing("KV capacity: this SGLang does not publish max_total_num_tokens")
	}
	if v, ok := p.sum(sgNames("spec_accept_length")...); ok && v > 0 {
		if _, counted := s.Extra[snapshot.ExtraSpecVerifyCalls]; counted {
			p.missing("draft acceptance: SGLang counts verify passes (spec_verify_calls_total), not drafted or accepted tokens; its acceptance rate is a per-batch gauge")
		} else {
			p.missing("speculative decoding totals: SGLang publishes per-batch acceptance gauges only")
		}
	}
	p.missing("largest prompt and generation: SGLang publishes no peak series")
	p.processStart("uptime: no process_start_time_seconds (SGLang's multiprocess registry drops it)")
	return nil
}

// noPriority keeps a series that is not one priority's part of a total:
// one without a priority label, or with the empty one that labels the
// total under priority scheduling.
func noPriority(m *dto.Metric) bool {
	v, ok := labelValue(m, "priority")
	return !ok || v == ""
}

// sglangPriorities sets the running and waiting requests of each priority
// (priority scheduling): a breakdown of the totals, each summed over the
// data-parallel ranks as the totals are.
func sglangPriorities(p rankMapper) {
	for _, g := range []struct{ prefix, base string }{
		{snapshot.ExtraRunningByPriority, "num_running_reqs"},
		{snapshot.ExtraQueuedByPriority, "num_queue_reqs"},
	} {
		mf := p.fam(sgNames(g.base)...)
		if mf == nil {
			continue
		}
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			if v, ok := labelValue(m, "priority"); ok && v != "" && !seen[v] && (p.keep == nil || p.keep(m)) {
				seen[v] = true
				if n, ok := rankSum(mf, both(p.keep, withLabel("priority", v))); ok {
					p.extra(g.prefix+v, n)
				}
			}
		}
	}
}

// rankMapper is a mapper for servers whose every rank (tensor, pipeline,
// expert parallel) publishes its own copy of a figure: its sum, scalar and
// hist read one value per rank group (rankSum, rankHist).
type rankMapper struct{ *mapper }

// sum is rankSum over the first family of names present.
func (p rankMapper) sum(names ...string) (float64, bool) {
	if mf := p.fam(names...); mf != nil {
		return rankSum(mf, p.keep)
	}
	return 0, false
}

// scalar sets a canonical scalar from the first family of names present.
func (p rankMapper) scalar(canon string, names ...string) bool {
	v, ok := p.sum(names...)
	if ok {
		p.s.Scalars[canon] = v
	}
	return ok
}

// hist sets a canonical histogram from the first family of names present.
func (p rankMapper) hist(canon string, names ...string) bool {
	if mf := p.fam(names...); mf != nil {
		if h := rankHist(mf, p.keep); h != nil {
			p.s.Histograms[canon] = h
			return true
		}
	}
	return false
}

// sglangScalars sets the token and request figures and the live state's
// request gauges.
func sglangScalars(p rankMapper) {
	p.scalar(snapshot.TokensPredictedTotal, sgCounter("generation_tokens")...)
	if !p.scalar(snapshot.RequestsTotal, sgCounter("num_requests")...) {
		p.scalar(snapshot.RequestsTotal, sgCounter("request_success")...)
	}
	p.scalar(snapshot.RequestsProcessing, append(sgNames("num_running_reqs"), sgNames("num_requests_running")...)...)
	p.scalar(snapshot.RequestsDeferred, append(sgNames("num_queue_reqs"), sgNames("num_requests_waiting")...)...)
}

// sglangHists sets the latency and size histograms; it reports whether
// queue time and either of the request sizes were among them.
func sglangHists(p rankMapper) (haveQueue, haveSizes bool) {
	p.hist(snapshot.TimeToFirstTokenSeconds, sgNames("time_to_first_token_seconds")...)
	p.hist(snapshot.E2ERequestLatencySeconds, sgNames("e2e_request_latency_seconds")...)
	haveQueue = p.hist(snapshot.RequestQueueTimeSeconds, slices.Concat(sgNames("queue_time_seconds"), sgNames("queue_time_s"), sgNames("waiting_request_latency_seconds"))...)
	p.hist(snapshot.InterTokenLatencySeconds, append(sgNames("inter_token_latency_seconds"), sgNames("time_per_output_token_seconds")...)...)
	haveSizes = p.hist(snapshot.RequestPromptTokens, append(sgNames("prompt_tokens_histogram"), sgNames("request_prompt_tokens")...)...)
	if p.hist(snapshot.RequestGenerationTokens, append(sgNames("generation_tokens_histogram"), sgNames("request_generation_tokens")...)...) {
		haveSizes = true
	}
	return haveQueue, haveSizes
}

// sglangExtras sets SGLang's own figures: the last batch's cache hit rate
// (a percent in the first metrics) and throughput, aborted and retracted
// requests.
func sglangExtras(p rankMapper, first bool) {
	if mf := p.fam(sgNames("cache_hit_rate")...); mf != nil {
		scale, unit := 1.0, "fraction"
		if first {
			scale, unit = 100, "percent"
		}
		if p.ratioOK(mf, p.keep, scale, unit) {
			if v, ok := rankMean(mf, p.keep); ok {
				p.extra(snapshot.ExtraCacheHitRateGauge, v/scale)
			}
		}
	}
	if v, ok := p.sum(sgNames("gen_throughput")...); ok {
		p.extra(snapshot.ExtraGenThroughputGauge, v)
	}
	if v, ok := p.sum(sgCounter("num_aborted_requests")...); ok {
		p.extra(snapshot.ExtraAbortedRequests, v)
	}
	// The counter from December 2025; before it (0.4.9.post3 to 0.5.3) a
	// gauge holding each scheduler's running total.
	if v, ok := p.sum(slices.Concat(sgCounter("num_retracted_requests"), sgNames("total_retracted_reqs"))...); ok {
		p.extra(snapshot.ExtraPreemptions, v)
	}
	// What retractions threw away: the prompt and generated tokens whose KV
	// was dropped, computed again as prompt when the requests resume.
	if v, ok := p.sum(sgCounter("num_retracted_input_tokens")...); ok {
		p.extra(snapshot.ExtraRetractedPromptTokens, v)
	}
	if v, ok := p.sum(sgCounter("num_retracted_output_tokens")...); ok {
		p.extra(snapshot.ExtraRetractedGeneratedTokens, v)
	}
	// Set at each log interval to those paused for a weight update since
	// the one before (a pid label per scheduler process).
	if v, ok := p.sum(sgNames("num_paused_reqs")...); ok {
		p.extra(snapshot.ExtraPausedRequests, v)
	}
	// Added when a request that was verified finishes: a series only once
	// speculative decoding has served one.
	if v, ok := p.sum(sgCounter("spec_verify_calls")...); ok {
		p.extra(snapshot.ExtraSpecVerifyCalls, v)
	}
}

// sglangPrefill and sglangDecode are the forward modes whose GPU time is
// prefill's and decode's: the target model's extend passes (the first
// spelling 2026's, the others gpu_execution_seconds_total's), and its
// decode and speculative verify passes. Other modes (mixed, idle, the
// drafter's) are busy time of neither.
var (
	sglangPrefill = []string{"extend", "split_prefill", "forward_extend", "forward_prefill", "forward_split_prefill"}
	sglangDecode  = []string{"decode", "target_verify", "forward_decode", "forward_target_verify"}
)

// sglangBusy sets the engine's busy seconds from forward_execution_seconds_total
// (gpu_execution_seconds_total before): each scheduler's forward modes
// added (one value per mode, the largest of its replicas'), averaged over
// data-parallel schedulers; and the same of the prefill and decode modes,
// each averaged over the schedulers that ran one (0 where none has).
func sglangBusy(p rankMapper) {
	mf := p.fam(append(sgCounter("forward_execution_seconds"), sgCounter("gpu_execution_seconds")...)...)
	if mf == nil {
		return
	}
	busy, prefill, decode := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for key, ms := range rankGroups(mf, p.keep) {
		best, ok := groupMax(ms)
		if !ok {
			continue
		}
		mode, _ := labelValue(ms[0], "category")
		scheduler := strings.Replace(key, "category\xff"+mode, "", 1)
		busy[scheduler] += best
		switch {
		case slices.Contains(sglangPrefill, mode):
			prefill[scheduler] += best
		case slices.Contains(sglangDecode, mode):
			decode[scheduler] += best
		}
	}
	if len(busy) == 0 {
		return
	}
	// A mode's series appears with its first pass: where no scheduler has
	// one yet, that phase has taken 0 s.
	for canon, per := range map[string]map[string]float64{
		snapshot.EngineBusySecondsTotal:    busy,
		snapshot.EnginePrefillSecondsTotal: prefill,
		snapshot.EngineDecodeSecondsTotal:  decode,
	} {
		sum := 0.0
		for _, v := range per {
			sum += v
		}
		p.s.Scalars[canon] = sum / math.Max(float64(len(per)), 1)
	}
}

// sglangFirstMetrics reports whether the scrape is from SGLang's first
// metrics (November 2024, before 0.3.5.post1; the docs' example until
// December 2024): names and a name= label no release kept, and a percent
// cache_hit_rate whose HELP is "Cache hit rate".
func sglangFirstMetrics(p *mapper) bool {
	for _, base := range []string{"num_requests_running", "num_requests_waiting", "waiting_request_latency_seconds", "new_seq", "new_token", "cached_token", "queue_req"} {
		if p.fam(sgNames(base)...) != nil {
			return true
		}
	}
	if mf := p.fam(sgNames("cache_hit_rate")...); mf != nil {
		if mf.GetHelp() == "Cache hit rate" {
			return true
		}
		for _, m := range mf.GetMetric() {
			if _, ok := labelValue(m, "model_name"); ok {
				return false
			}
			if _, ok := labelValue(m, "name"); ok {
				return true
			}
		}
	}
	return false
}

// sglangLazySignals are series that only versions publishing
// cached_tokens_total lazily (0.4.4.post4 on) have: scheduler gauges set at
// every log interval and newer families.
var sglangLazySignals = []string{
	"avg_request_queue_latency", "num_grammar_queue_reqs", "num_so_requests_total",
	"prompt_tokens_histogram", "generation_tokens_histogram", "num_aborted_requests_total",
	"total_retracted_reqs", "utilization", "engine_startup_time", "queue_time_seconds",
	"per_stage_req_latency_seconds", "num_retracted_reqs", "swa_token_usage", "cache_config_info",
	"realtime_tokens_total", "num_retracted_requests_total", "spec_accept_rate", "is_cuda_graph",
	"num_paused_reqs", "max_running_requests_under_SLO",
}

// sglangLazyCached reports whether the scrape shows a version that adds to
// cached_tokens_total only on a cache hit, so that its absence means none
// yet. 0.4.4.post4 made the counter lazy in the same change that dropped
// time_per_output_token_seconds; before 0.4.3.post4 there was no counter,
// and in between it was published with the first finished request.
func sglangLazyCached(p *mapper) bool {
	if p.fam(sgNames("time_per_output_token_seconds")...) != nil {
		return false
	}
	if p.fam(sgNames("inter_token_latency_seconds")...) != nil {
		return true
	}
	for _, base := range sglangLazySignals {
		if p.fam(sgNames(base)...) != nil {
			return true
		}
	}
	return false
}

// sglangPromptTokens sets computed and cached prompt tokens and the
// lifetime prefix-cache queries and hits, from one source so they agree.
// Where the cached share is unknown it sets only PromptTokensAll.
func sglangPromptTokens(p rankMapper) {
	if sglangEffectiveTokens(p) {
		return
	}
	var computed, cached float64
	ok := false
	if rt := p.fam(sgCounter("realtime_tokens")...); rt != nil {
		var okCompute bool
		computed, okCompute = rankSum(rt, both(p.keep, withLabel("mode", "prefill_compute")))
		if okCompute {
			var okCache bool
			if cached, okCache = rankSum(rt, both(p.keep, withLabel("mode", "prefill_cache"))); !okCache {
				cached = 0 // no cache hit logged yet
			}
			ok = true
		}
	}
	if !ok {
		prompt, okPrompt := p.sum(sgCounter("prompt_tokens")...)
		if !okPrompt || math.IsNaN(prompt) {
			return
		}
		var okCached bool
		if cached, okCached = p.sum(sgCounter("cached_tokens")...); !okCached {
			if !sglangLazyCached(p.mapper) {
				p.s.Scalars[snapshot.PromptTokensAll] = prompt
				p.missing("prefix-cache hit rate and computed prompt tokens: this SGLang publishes no cached-token counter (its cache_hit_rate gauge is the last batch's)")
				return
			}
			cached = 0 // this version adds the counter with the first cache hit
		}
		if prompt < cached || math.IsNaN(cached) {
			return
		}
		computed, ok = prompt-cached, true
	}
	p.s.Scalars[snapshot.PromptTokensTotal] = computed
	p.s.Scalars[snapshot.CachedTokensTotal] = cached
	p.s.Scalars[snapshot.PrefixCacheQueries] = computed + cached
	p.s.Scalars[snapshot.PrefixCacheHits] = cached
}
