package promql

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Each reader below mirrors what internal/dialect reads from its server,
// name for name (the package tests hold the two to the same figures on
// every fixture): the dialect reads values from one scrape, this writes
// the PromQL that reads them from a store.

//go:embed newest/*.prom
var newestFiles embed.FS

// NewestExposition returns an exposition of the series the newest version
// of a dialect's server publishes that a library reads, one placeholder
// sample each: tabbyAPI's is the exporter's own, the others are written
// from each server's newest fixture.
func NewestExposition(dialect string) ([]byte, error) {
	if !slices.Contains(dialectNames, dialect) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownDialect, dialect, strings.Join(dialectNames, ", "))
	}
	if dialect == "tabbyapi" {
		var b bytes.Buffer
		if err := exporter.New(exporter.Options{}).WriteText(&b); err != nil {
			return nil, fmt.Errorf("writing the exporter's series: %w", err)
		}
		return b.Bytes(), nil
	}
	return newestFiles.ReadFile("newest/" + dialect + ".prom")
}

// newestOf reads a dialect's newest exposition as a scrape (empty if it
// cannot be read, which the package tests rule out).
func newestOf(dialect string) func() scrape {
	return func() scrape {
		body, err := NewestExposition(dialect)
		if err != nil {
			return scrape{}
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			return scrape{}
		}
		return scrapeOf(fams)
	}
}

// --- tabbyAPI ----------------------------------------------------------------

// readTabbyAPI reads tabbyAPI's names: the canonical ones under
// "tabbyapi:", unlabelled. Three counters have no _total
// (prefix_cache_queries, prefix_cache_hits, n_tokens_max); scraped as
// OpenMetrics they gain one.
func readTabbyAPI(sc scrape) sources {
	out := sources{}
	for name := range sc {
		base, ok := strings.CutPrefix(name, "tabbyapi:")
		if !ok {
			continue
		}
		d, ok := snapshot.Declared(base)
		if !ok {
			// A counter tabbyAPI publishes bare, read from OpenMetrics.
			trimmed, cut := strings.CutSuffix(base, "_total")
			if d, ok = snapshot.Declared(trimmed); !cut || !ok || d.Kind != snapshot.Counter {
				continue
			}
			base = trimmed
		}
		if d.Extra {
			continue
		}
		var r ref
		switch d.Kind {
		case snapshot.Histogram:
			r, ok = sc.hist(name)
		case snapshot.Counter:
			r, ok = sc.counter(name)
		default:
			r, ok = sc.gauge(name)
		}
		out.set(base, d.Kind, r, ok)
	}
	return out
}

// --- vLLM --------------------------------------------------------------------

// vllmNames spells one vLLM family every way a scrape may carry it, in the
// order read (the first found is read).
type vllmNames func(base string) []string

// vllmSpellings are the names one vLLM family may have: vLLM's own, then
// Ray Serve LLM's two copies (read only where vLLM's own is absent).
func vllmSpellings(base string) []string {
	return []string{"vllm:" + base, "ray_vllm:" + base, "ray_vllm_" + base}
}

// aphroditeSpellings are Aphrodite's: vLLM's families under aphrodite:.
func aphroditeSpellings(base string) []string { return []string{"aphrodite:" + base} }

// counter spells a counter family with and without _total, every way.
func (sp vllmNames) counter(base string) []string {
	var out []string
	for _, n := range sp(base) {
		out = append(out, counterNames(n)...)
	}
	return out
}

func readVLLM(sc scrape) sources { return readVLLMAs(sc, vllmSpellings) }

// readAphrodite reads Aphrodite's series as vLLM's, as the dialect does.
func readAphrodite(sc scrape) sources { return readVLLMAs(sc, aphroditeSpellings) }

func readVLLMAs(sc scrape, sp vllmNames) sources {
	out := sources{}
	gauge := func(canon string, bases ...string) {
		for _, b := range bases {
			if r, ok := sc.gauge(sp(b)...); ok {
				out[canon] = one(snapshot.Gauge, r)
				return
			}
		}
	}
	counter := func(canon, base string, match ...Matcher) bool {
		r, ok := sc.counter(sp.counter(base)...)
		r.match = match
		return out.set(canon, snapshot.Counter, r, ok)
	}
	hist := func(canon string, bases ...string) (ref, bool) {
		for _, b := range bases {
			if r, ok := sc.hist(sp(b)...); ok {
				out[canon] = one(snapshot.Histogram, r)
				return r, true
			}
		}
		return ref{}, false
	}

	gauge(snapshot.RequestsProcessing, "num_requests_running")
	gauge(snapshot.RequestsDeferred, "num_requests_waiting")
	// A fraction per engine, each its own cache: averaged, never summed.
	gauge(snapshot.KVCacheUsageRatio, "kv_cache_usage_perc", "gpu_cache_usage_perc")
	if s, ok := out[snapshot.KVCacheUsageRatio]; ok {
		s.mean = true
		out[snapshot.KVCacheUsageRatio] = s
	}
	vllmLive(sc, sp, out)
	counter(snapshot.TokensPredictedTotal, "generation_tokens")
	counter(snapshot.RequestsTotal, "request_success")
	if n, f := sc.first(sp.counter("request_success")...); f != nil {
		if label := reasonLabel(f); label != "" {
			total, _ := sc.counter(n)
			for _, reason := range []string{"error", "abort"} {
				// A reason's series may appear only with its first
				// request: absent beside the others, it is 0.
				r := total
				r.match = []Matcher{{label, Equal, reason}}
				out[snapshot.ExtraFinishedReason+reason] = source{kind: snapshot.Counter, terms: []term{{ref: r, zeroWith: &total}}}
			}
		}
	}
	counter(snapshot.ExtraPreemptions, "num_preemptions")
	vllmPromptTokens(sc, sp, out)
	vllmPrefixCache(sc, sp, out)

	hist(snapshot.TimeToFirstTokenSeconds, "time_to_first_token_seconds")
	// Per-step inter-token latency, renamed in 0.10.2.
	hist(snapshot.InterTokenLatencySeconds, "inter_token_latency_seconds", "time_per_output_token_seconds")
	hist(snapshot.RequestTimePerOutputTokenSeconds, "request_time_per_output_token_seconds")
	hist(snapshot.E2ERequestLatencySeconds, "e2e_request_latency_seconds")
	hist(snapshot.RequestQueueTimeSeconds, "request_queue_time_seconds")
	out.phaseTimes(func(canon, base string) (ref, bool) { return hist(canon, base) })
	hist(snapshot.RequestPromptTokens, "request_prompt_tokens")
	hist(snapshot.RequestGenerationTokens, "request_generation_tokens")
	// Tokens per engine step: iteration_tokens_total is a histogram.
	if r, ok := sc.hist(sp("iteration_tokens_total")...); ok {
		out[snapshot.ExtraStepTokens] = one(snapshot.Counter, ref{name: r.name + "_sum"})
		out[snapshot.ExtraEngineSteps] = one(snapshot.Counter, ref{name: r.name + "_count"})
	}

	counter(snapshot.SpecDecodeNumDraftTokensTotal, "spec_decode_num_draft_tokens")
	counter(snapshot.SpecDecodeNumAcceptedTokensTotal, "spec_decode_num_accepted_tokens")
	counter(snapshot.ExtraSpecDecodeDrafts, "spec_decode_num_drafts")
	vllmOffload(sc, sp, out)
	return out
}

// vllmLive reads the admission refusals (their total), the deferred part
// of the queue and the engines in each sleep state, as the dialect does.
func vllmLive(sc scrape, sp vllmNames, out sources) {
	if r, ok := sc.counter(sp.counter("admission_rejections")...); ok {
		out[snapshot.ExtraAdmissionRejections] = one(snapshot.Counter, r)
	}
	if n, f := sc.first(sp("num_requests_waiting_by_reason")...); f.has("reason", "deferred") {
		r, _ := sc.gauge(n)
		r.match = []Matcher{{"reason", Equal, "deferred"}}
		out[snapshot.ExtraWaitingDeferred] = one(snapshot.Gauge, r)
	}
	if n, f := sc.first(sp("engine_sleep_state")...); f != nil {
		for _, st := range vllmSleepStates {
			if f.has("sleep_state", st) {
				r, _ := sc.gauge(n)
				r.match = []Matcher{{"sleep_state", Equal, st}}
				out[snapshot.ExtraSleepState+st] = one(snapshot.Gauge, r)
			}
		}
	}
}

// vllmSleepStates are the states engine_sleep_state publishes, each a 0/1
// series per engine.
var vllmSleepStates = []string{"awake", "weights_offloaded", "discard_all"}

// vllmOffload reads the offloading connector's transfers as the dialect
// does: the flat load and store names where published (a direction not
// yet published beside the other is 0), else the deprecated ones by
// transfer_type (CPU_to_GPU a load), a direction absent beside the family
// 0.
func vllmOffload(sc scrape, sp vllmNames, out sources) {
	for _, d := range []struct{ load, store, old, read, write string }{
		{"kv_offload_load_bytes", "kv_offload_store_bytes", "kv_offload_total_bytes",
			snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal},
		{"kv_offload_load_time", "kv_offload_store_time", "kv_offload_total_time",
			snapshot.ExtraKVOffloadLoadSeconds, snapshot.ExtraKVOffloadStoreSeconds},
	} {
		load, okL := sc.counter(sp.counter(d.load)...)
		store, okS := sc.counter(sp.counter(d.store)...)
		switch {
		case okL && okS:
			out[d.read] = one(snapshot.Counter, load)
			out[d.write] = one(snapshot.Counter, store)
		case okL:
			// The other direction is spelt as this one is.
			other := ref{name: strings.Replace(load.name, d.load, d.store, 1), bare: load.bare}
			out[d.read] = one(snapshot.Counter, load)
			out[d.write] = source{kind: snapshot.Counter, terms: []term{{ref: other, zeroWith: &load}}}
		case okS:
			other := ref{name: strings.Replace(store.name, d.store, d.load, 1), bare: store.bare}
			out[d.read] = source{kind: snapshot.Counter, terms: []term{{ref: other, zeroWith: &store}}}
			out[d.write] = one(snapshot.Counter, store)
		default:
			total, ok := sc.counter(sp.counter(d.old)...)
			if !ok {
				continue
			}
			for _, dir := range []struct{ into, tt string }{{d.read, "CPU_to_GPU"}, {d.write, "GPU_to_CPU"}} {
				r := total
				r.match = []Matcher{{"transfer_type", Equal, dir.tt}}
				out[dir.into] = source{kind: snapshot.Counter, terms: []term{{ref: r, zeroWith: &total}}}
			}
		}
	}
}

// reasonLabel is the label a vLLM scrape names a finished request's
// reason by: vLLM's finished_reason, llm-d's simulator's finish_reason.
func reasonLabel(f *family) string {
	for _, l := range []string{"finished_reason", "finish_reason"} {
		if f.hasLabel(l) {
			return l
		}
	}
	return ""
}

// vllmPromptTokens reads computed and cached prompt tokens as the dialect
// does: prompt_tokens_total counts cached tokens too, so computed ones are
// the by-source local_compute count, or prompt − cached; with prefix
// caching off every prompt token is computed; else the finished requests'
// request_prefill_kv_computed_tokens sum (0.13 to 0.15); otherwise only
// the lump sum is known.
func vllmPromptTokens(sc scrape, sp vllmNames, out sources) {
	all, haveAll := sc.counter(sp.counter("prompt_tokens")...)
	bsName, bySource := sc.first(sp.counter("prompt_tokens_by_source")...)
	cached, haveCached := sc.counter(sp.counter("prompt_tokens_cached")...)
	if !haveCached && bySource.has("source", "local_cache_hit") {
		cached, haveCached = sc.counter(bsName)
		cached.match = []Matcher{{"source", Match, "local_cache_hit|external_kv_transfer"}}
	}
	kv, haveKV := sc.hist(sp("request_prefill_kv_computed_tokens")...)
	switch {
	case bySource.has("source", "local_compute"):
		r, _ := sc.counter(bsName)
		r.match = []Matcher{{"source", Equal, "local_compute"}}
		out[snapshot.PromptTokensTotal] = one(snapshot.Counter, r)
	case haveCached && haveAll:
		out[snapshot.PromptTokensTotal] = source{kind: snapshot.Counter, terms: []term{{ref: all}, {ref: cached, neg: true}}}
	case !haveCached && haveAll && vllmPrefixCachingOff(sc, sp):
		// Nothing is looked up, so nothing is reused.
		out[snapshot.PromptTokensTotal] = one(snapshot.Counter, all)
		out[snapshot.CachedTokensTotal] = source{kind: snapshot.Counter, terms: []term{{ref: all, zero: true}}}
	case haveKV:
		out[snapshot.PromptTokensTotal] = one(snapshot.Counter, ref{name: kv.name + "_sum"})
	case haveAll:
		out[snapshot.PromptTokensAll] = one(snapshot.Counter, all)
	}
	if haveCached {
		out[snapshot.CachedTokensTotal] = one(snapshot.Counter, cached)
	}
}

// vllmPrefixCachingOff reports that every engine says prefix caching is
// off (False, or None: an unset flag no engine reads as on).
func vllmPrefixCachingOff(sc scrape, sp vllmNames) bool {
	_, f := sc.first(sp("cache_config_info")...)
	if f == nil || len(f.values["enable_prefix_caching"]) == 0 {
		return false
	}
	for v := range f.values["enable_prefix_caching"] {
		if !strings.EqualFold(v, "false") && v != "None" {
			return false
		}
	}
	return true
}

// vllmPrefixCache reads token prefix-cache counters; vLLM 0.8's counted
// blocks, which make no token hit rate, and are left out.
func vllmPrefixCache(sc scrape, sp vllmNames, out sources) {
	if q, ok := sc.counter(sp.counter("prefix_cache_queries")...); ok {
		h, okH := sc.counter(sp.counter("prefix_cache_hits")...)
		if okH {
			out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, q)
			out[snapshot.PrefixCacheHits] = one(snapshot.Counter, h)
		}
		return
	}
	q, ok := sc.counter(sp.counter("gpu_prefix_cache_queries")...)
	h, okH := sc.counter(sp.counter("gpu_prefix_cache_hits")...)
	if !ok || !okH || vllmPrefixUnit(sc, sp, q.name) != "tokens" {
		return
	}
	out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, q)
	out[snapshot.PrefixCacheHits] = one(snapshot.Counter, h)
}

// vllmPrefixUnit says what gpu_prefix_cache_* count, as the dialect
// judges it: the HELP text, else lookups far fewer than prompt tokens can
// only be blocks.
func vllmPrefixUnit(sc scrape, sp vllmNames, queries string) string {
	f := sc[queries]
	help := strings.ToLower(f.help)
	switch {
	case strings.Contains(help, "block"):
		return "blocks"
	case strings.Contains(help, "token"):
		return "tokens"
	}
	f.bySize = true
	_, p := sc.first(sp.counter("prompt_tokens")...)
	if p == nil || p.sum <= 0 || f.sum <= 0 {
		return ""
	}
	if f.sum*2 < p.sum {
		return "blocks"
	}
	return "tokens"
}

// --- llama.cpp ---------------------------------------------------------------

// readLlamaCpp reads llama-server's names; prompt_tokens_total already
// excludes tokens reused from the slot cache, so queries are computed +
// cached and hits the cached ones. prompt_seconds_total is summed request
// prefill time before the cached counter's build (b10406) and the
// engine's prefill time (decode batches holding prompt tokens) from it
// on, as the dialect reads it.
func readLlamaCpp(sc scrape) sources {
	out := sources{}
	counter := func(canon, base string) (ref, bool) {
		r, ok := sc.counter(counterNames("llamacpp:" + base)...)
		out.set(canon, snapshot.Counter, r, ok)
		return r, ok
	}
	prompt, okP := counter(snapshot.PromptTokensTotal, "prompt_tokens")
	cached, okC := counter(snapshot.CachedTokensTotal, "prompt_tokens_cached")
	if okP && okC {
		out[snapshot.PrefixCacheQueries] = source{kind: snapshot.Counter, terms: []term{{ref: prompt}, {ref: cached}}}
		out[snapshot.PrefixCacheHits] = one(snapshot.Counter, cached)
	}
	if okC {
		counter(snapshot.EnginePrefillSecondsTotal, "prompt_seconds")
	} else {
		counter(snapshot.PromptSecondsTotal, "prompt_seconds")
	}
	counter(snapshot.TokensPredictedTotal, "tokens_predicted")
	counter(snapshot.TokensPredictedSecondsTotal, "tokens_predicted_seconds")
	counter(snapshot.SpecDecodeNumDraftTokensTotal, "spec_decode_num_draft_tokens")
	counter(snapshot.SpecDecodeNumAcceptedTokensTotal, "spec_decode_num_accepted_tokens")
	counter(snapshot.ExtraSpecDecodeDrafts, "spec_decode_num_drafts")
	for canon, name := range map[string]string{
		snapshot.RequestsProcessing: "llamacpp:requests_processing",
		snapshot.RequestsDeferred:   "llamacpp:requests_deferred",
		snapshot.KVCacheUsageRatio:  "llamacpp:kv_cache_usage_ratio",
		snapshot.KVCacheTokens:      "llamacpp:kv_cache_tokens",
	} {
		r, ok := sc.gauge(name)
		out.set(canon, snapshot.Gauge, r, ok)
	}
	return out
}

// --- SGLang ------------------------------------------------------------------

// sglangReplicas are the labels of ranks that replicate one scheduler's
// state: the largest value is taken over them, never the sum.
var sglangReplicas = []string{"tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank", "pid"}

func sgSpellings(base string) []string { return []string{"sglang:" + base, "sglang_" + base} }

func sgCounter(base string) []string {
	return append(counterNames("sglang:"+base), counterNames("sglang_"+base)...)
}

func readSGLang(sc scrape) sources {
	out := sources{}
	withRanks := func(r ref) ref {
		r.replicas = sglangReplicas
		return r
	}
	gauge := func(canon string, bases ...string) bool {
		for _, b := range bases {
			if r, ok := sc.gauge(sgSpellings(b)...); ok {
				out[canon] = one(snapshot.Gauge, withRanks(r))
				return true
			}
		}
		return false
	}
	counter := func(canon string, bases ...string) bool {
		for _, b := range bases {
			if r, ok := sc.counter(sgCounter(b)...); ok {
				out[canon] = one(snapshot.Counter, withRanks(r))
				return true
			}
		}
		return false
	}
	hist := func(canon string, bases ...string) {
		for _, b := range bases {
			if r, ok := sc.hist(sgSpellings(b)...); ok {
				out[canon] = one(snapshot.Histogram, withRanks(r))
				return
			}
		}
	}

	sglangPromptTokens(sc, out, withRanks)
	counter(snapshot.TokensPredictedTotal, "generation_tokens")
	counter(snapshot.RequestsTotal, "num_requests", "request_success")
	// Under priority scheduling the total is the priority="" series, each
	// priority's own beside it. priority="" also matches a series without
	// the label (a store keeps an empty label as none), so it is asked
	// whatever the scrape: rules written before priority scheduling is
	// turned on stay right after.
	for canon, bases := range map[string][]string{
		snapshot.RequestsProcessing: {"num_running_reqs", "num_requests_running"},
		snapshot.RequestsDeferred:   {"num_queue_reqs", "num_requests_waiting"},
	} {
		if gauge(canon, bases...) {
			out[canon].terms[0].ref.match = []Matcher{{"priority", Equal, ""}}
		}
	}
	sglangKV(sc, out, gauge)

	hist(snapshot.TimeToFirstTokenSeconds, "time_to_first_token_seconds")
	hist(snapshot.E2ERequestLatencySeconds, "e2e_request_latency_seconds")
	hist(snapshot.RequestQueueTimeSeconds, "queue_time_seconds", "queue_time_s", "waiting_request_latency_seconds")
	hist(snapshot.InterTokenLatencySeconds, "inter_token_latency_seconds", "time_per_output_token_seconds")
	hist(snapshot.RequestPromptTokens, "prompt_tokens_histogram", "request_prompt_tokens")
	hist(snapshot.RequestGenerationTokens, "generation_tokens_histogram", "request_generation_tokens")

	sglangBusy(sc, out, withRanks)
	counter(snapshot.ExtraAbortedRequests, "num_aborted_requests")
	// The counter from December 2025; before it a gauge holding each
	// scheduler's running total, which a rate reads the same way.
	if !counter(snapshot.ExtraPreemptions, "num_retracted_requests") {
		if r, ok := sc.gauge(sgSpellings("total_retracted_reqs")...); ok {
			out[snapshot.ExtraPreemptions] = one(snapshot.Counter, withRanks(r))
		}
	}
	counter(snapshot.ExtraRetractedPromptTokens, "num_retracted_input_tokens")
	counter(snapshot.ExtraRetractedGeneratedTokens, "num_retracted_output_tokens")
	counter(snapshot.ExtraSpecVerifyCalls, "spec_verify_calls")
	gauge(snapshot.ExtraPausedRequests, "num_paused_reqs")
	return out
}

// sglangKV reads the KV cache figures as the dialect does: the
// full-attention pool's (full_token_usage, else token_usage, averaged over
// ranks; kv_used_tokens, else num_used_tokens where there is no SWA pool
// whose use it may be), the cached prefixes that can be freed, the free
// tokens and the capacity. A hybrid model's other pools are the scrape's
// own rows, not read here.
func sglangKV(sc scrape, out sources, gauge func(string, ...string) bool) {
	if !gauge(snapshot.KVCacheUsageRatio, "full_token_usage") {
		gauge(snapshot.KVCacheUsageRatio, "token_usage")
	}
	if s, ok := out[snapshot.KVCacheUsageRatio]; ok {
		s.mean = true
		out[snapshot.KVCacheUsageRatio] = s
	}
	if !gauge(snapshot.KVCacheTokens, "kv_used_tokens") && !sglangSWAPool(sc) {
		gauge(snapshot.KVCacheTokens, "num_used_tokens")
	}
	gauge(snapshot.KVCacheEvictableTokens, "kv_evictable_tokens")
	gauge(snapshot.KVCacheFreeTokens, "kv_available_tokens")
	gauge(snapshot.KVCacheMaxTokens, "max_total_num_tokens")
}

// sglangSWAPool reports a hybrid model's SWA pool as the dialect finds it:
// its capacity published, or its use above 0. Only the second rests on
// the scrape's values (Library.ReadByValue), in versions that publish
// num_used_tokens but not kv_used_tokens.
func sglangSWAPool(sc scrape) bool {
	if _, f := sc.first(sgSpellings("max_total_num_tokens_swa")...); f != nil {
		return true
	}
	_, f := sc.first(sgSpellings("swa_token_usage")...)
	if f == nil {
		return false
	}
	f.bySize = true
	return f.sum > 0
}

// sglangPrefill and sglangDecode are the forward modes of the engine's
// prefill and decode passes, as the dialect reads them.
var (
	sglangPrefill = "extend|split_prefill|forward_extend|forward_prefill|forward_split_prefill"
	sglangDecode  = "decode|target_verify|forward_decode|forward_target_verify"
)

// sglangBusy reads the GPU's own busy time (forward_execution_seconds_total,
// before 2026 gpu_execution_seconds_total, with
// SGLANG_ENABLE_METRICS_DEVICE_TIMER=1) as the dialect does: the largest of
// a scheduler's replicas for each forward mode, the modes added, the
// data-parallel schedulers averaged, so that its rate is the share of the
// time a scheduler was busy; and the prefill and decode modes alike, each
// averaged over the schedulers that ran one (0 where none has).
func sglangBusy(sc scrape, out sources, withRanks func(ref) ref) {
	r, ok := sc.counter(append(sgCounter("forward_execution_seconds"), sgCounter("gpu_execution_seconds")...)...)
	if !ok {
		return
	}
	r = withRanks(r)
	r.within = []string{"category"}
	out[snapshot.EngineBusySecondsTotal] = source{kind: snapshot.Counter, terms: []term{{ref: r}}, mean: true}
	for canon, modes := range map[string]string{snapshot.EnginePrefillSecondsTotal: sglangPrefill, snapshot.EngineDecodeSecondsTotal: sglangDecode} {
		phase := r
		phase.match = []Matcher{{"category", Match, modes}}
		// A mode's series appears with its first pass: none yet is 0.
		out[canon] = source{kind: snapshot.Counter, terms: []term{{ref: phase, zeroWith: &r}}, mean: true}
	}
}

// sglangPromptTokens reads computed and cached prompt tokens and the
// prefix-cache queries and hits from one source, as the dialect does:
// prefill_effective_tokens_total by mode where published (every mode from
// the start), realtime_tokens_total by mode next (prefill_cache appearing
// with the first hit), else prompt_tokens_total − cached_tokens_total,
// the cached counter being 0 until the first hit only where the scrape
// shows a version that adds it lazily.
func sglangPromptTokens(sc scrape, out sources, withRanks func(ref) ref) {
	if sglangEffectiveTokens(sc, out, withRanks) {
		return
	}
	if rtName, rt := sc.first(sgCounter("realtime_tokens")...); rt.has("mode", "prefill_compute") {
		base, _ := sc.counter(rtName)
		base = withRanks(base)
		computed, cached, both := base, base, base
		computed.match = []Matcher{{"mode", Equal, "prefill_compute"}}
		cached.match = []Matcher{{"mode", Equal, "prefill_cache"}}
		both.match = []Matcher{{"mode", Match, "prefill_compute|prefill_cache"}}
		lazy := term{ref: cached, zeroWith: &computed}
		out[snapshot.PromptTokensTotal] = one(snapshot.Counter, computed)
		out[snapshot.CachedTokensTotal] = source{kind: snapshot.Counter, terms: []term{lazy}}
		out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, both)
		out[snapshot.PrefixCacheHits] = source{kind: snapshot.Counter, terms: []term{lazy}}
		return
	}
	prompt, ok := sc.counter(sgCounter("prompt_tokens")...)
	if !ok {
		return
	}
	prompt = withRanks(prompt)
	cached, okC := sc.counter(sgCounter("cached_tokens")...)
	var c term
	switch {
	case okC:
		c = term{ref: withRanks(cached)}
	case sglangLazy(sc):
		// Not published until the first hit: absent is 0. It is spelt as
		// the prompt counter is.
		name := strings.Replace(prompt.name, "prompt_tokens", "cached_tokens", 1)
		c = term{ref: withRanks(ref{name: name, bare: prompt.bare}), zeroWith: &prompt}
	default:
		out[snapshot.PromptTokensAll] = one(snapshot.Counter, prompt)
		return
	}
	neg := c
	neg.neg = true
	out[snapshot.PromptTokensTotal] = source{kind: snapshot.Counter, terms: []term{{ref: prompt}, neg}}
	out[snapshot.CachedTokensTotal] = source{kind: snapshot.Counter, terms: []term{c}}
	out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, prompt)
	out[snapshot.PrefixCacheHits] = source{kind: snapshot.Counter, terms: []term{c}}
}

// sglangLazy reports a scrape from a version that publishes
// cached_tokens_total only from the first cache hit (0.4.4.post4 on), by
// the families only such versions have.
func sglangLazy(sc scrape) bool {
	if _, f := sc.first(sgSpellings("time_per_output_token_seconds")...); f != nil {
		return false
	}
	for _, base := range []string{"inter_token_latency_seconds", "num_grammar_queue_reqs", "prompt_tokens_histogram",
		"num_aborted_requests_total", "total_retracted_reqs", "queue_time_seconds", "cache_config_info",
		"realtime_tokens_total", "num_retracted_requests_total", "num_retracted_reqs", "utilization"} {
		if _, f := sc.first(sgSpellings(base)...); f != nil {
			return true
		}
	}
	return false
}

// sglangEffectiveTokens reads prompt tokens, queries and hits from
// prefill_effective_tokens_total (2026) as the dialect does: "input"
// computed, the *_hit modes cached, a hit mode absent beside "input" 0,
// and the host and storage tiers where their series are. false where the
// scrape has no such series.
func sglangEffectiveTokens(sc scrape, out sources, withRanks func(ref) ref) bool {
	name, f := sc.first(sgCounter("prefill_effective_tokens")...)
	if !f.has("mode", "input") {
		return false
	}
	base, _ := sc.counter(name)
	base = withRanks(base)
	mode := func(m string) ref {
		r := base
		r.match = []Matcher{{"mode", Equal, m}}
		return r
	}
	input := mode("input")
	all := base
	all.match = []Matcher{{"mode", Match, "input|device_hit|host_hit|storage_hit"}}
	// The tiers' hits, each its own term (so that each can be written
	// back on its own); the device's is 0 where absent beside "input".
	hits := []term{{ref: mode("device_hit"), zeroWith: &input}}
	for canon, m := range map[string]string{snapshot.PrefixCacheHostHits: "host_hit", snapshot.PrefixCacheStorageHits: "storage_hit"} {
		if f.has("mode", m) {
			out[canon] = one(snapshot.Counter, mode(m))
			hits = append(hits, term{ref: mode(m)})
		}
	}
	slices.SortFunc(hits[1:], func(a, b term) int { return strings.Compare(a.ref.match[0].Value, b.ref.match[0].Value) })
	out[snapshot.PromptTokensTotal] = one(snapshot.Counter, input)
	out[snapshot.CachedTokensTotal] = source{kind: snapshot.Counter, terms: hits}
	out[snapshot.PrefixCacheQueries] = one(snapshot.Counter, all)
	out[snapshot.PrefixCacheHits] = source{kind: snapshot.Counter, terms: hits}
	return true
}

// --- TGI ---------------------------------------------------------------------

// readTGI reads text-generation-inference's router names: counters without
// _total, no model label, generated tokens as the generated-tokens
// histogram's sum.
func readTGI(sc scrape) sources {
	out := sources{}
	r, ok := sc.counter(counterNames("tgi_request_success")...)
	out.set(snapshot.RequestsTotal, snapshot.Counter, r, ok)
	r, ok = sc.counter(counterNames("tgi_request_failure")...)
	out.set(failedTotal, snapshot.Counter, r, ok)
	r, ok = sc.gauge("tgi_batch_current_size")
	out.set(snapshot.RequestsProcessing, snapshot.Gauge, r, ok)
	r, ok = sc.gauge("tgi_queue_size")
	out.set(snapshot.RequestsDeferred, snapshot.Gauge, r, ok)
	for canon, name := range map[string]string{
		snapshot.E2ERequestLatencySeconds:         "tgi_request_duration",
		snapshot.RequestQueueTimeSeconds:          "tgi_request_queue_duration",
		snapshot.RequestPromptTokens:              "tgi_request_input_length",
		snapshot.RequestGenerationTokens:          "tgi_request_generated_tokens",
		snapshot.RequestTimePerOutputTokenSeconds: "tgi_request_mean_time_per_token_duration",
	} {
		r, ok := sc.hist(name)
		out.set(canon, snapshot.Histogram, r, ok)
	}
	if _, ok := sc.hist("tgi_request_generated_tokens"); ok {
		out[snapshot.TokensPredictedTotal] = one(snapshot.Counter, ref{name: "tgi_request_generated_tokens_sum"})
	}
	r, ok = sc.counter(counterNames("tgi_request_count")...)
	out.set(snapshot.ExtraRequestCount, snapshot.Counter, r, ok)
	r, ok = sc.gauge("tgi_batch_current_max_tokens")
	out.set(snapshot.ExtraTokenBudgetReserved, snapshot.Gauge, r, ok)
	r, ok = sc.gauge("tgi_batch_max_total_tokens")
	out.set(snapshot.ExtraTokenBudgetMax, snapshot.Gauge, r, ok)
	// The batch calls run one at a time: their durations add up to the
	// engine's busy time, every method's together (one router, summed).
	if f := sc["tgi_batch_inference_duration"]; f != nil && f.typ == dto.MetricType_HISTOGRAM {
		out[snapshot.EngineBusySecondsTotal] = one(snapshot.Counter, ref{name: "tgi_batch_inference_duration_sum"})
		for method, canon := range map[string]string{"prefill": snapshot.EnginePrefillSecondsTotal, "decode": snapshot.EngineDecodeSecondsTotal} {
			if f.has("method", method) {
				out[canon] = one(snapshot.Counter,
					ref{name: "tgi_batch_inference_duration_sum", match: []Matcher{{"method", Equal, method}}})
			}
		}
	}
	// A summary on a stock router, a histogram where buckets are set: its
	// _sum and _count either way.
	if f := sc["tgi_request_skipped_tokens"]; f != nil && (f.typ == dto.MetricType_SUMMARY || f.typ == dto.MetricType_HISTOGRAM) {
		out[snapshot.ExtraSpeculatedTokens] = one(snapshot.Counter, ref{name: "tgi_request_skipped_tokens_sum"})
		out[snapshot.ExtraSpeculationSteps] = one(snapshot.Counter, ref{name: "tgi_request_skipped_tokens_count"})
	}
	return out
}

// phaseTimes reads the requests' prefill and decode time histograms (hist
// reads one under its canonical name and gives its reference) and takes
// their sums as the engine's prefill and decode seconds.
func (out sources) phaseTimes(hist func(canon, base string) (ref, bool)) {
	if r, ok := hist(snapshot.RequestPrefillTimeSeconds, "request_prefill_time_seconds"); ok {
		out[snapshot.PromptSecondsTotal] = one(snapshot.Counter, ref{name: r.name + "_sum"})
	}
	if r, ok := hist(snapshot.RequestDecodeTimeSeconds, "request_decode_time_seconds"); ok {
		out[snapshot.TokensPredictedSecondsTotal] = one(snapshot.Counter, ref{name: r.name + "_sum"})
	}
}
