package promql

import (
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Unit is what a figure's value counts.
type Unit string

// Figure units.
const (
	Count          Unit = "count"            // requests, pages
	Ratio          Unit = "ratio"            // a fraction 0..1
	Seconds        Unit = "seconds"          // a latency
	Tokens         Unit = "tokens"           // a size
	TokensPerSec   Unit = "tokens_per_sec"   // a token rate
	RequestsPerSec Unit = "requests_per_sec" // a request rate
	BytesPerSec    Unit = "bytes_per_sec"    // a byte rate
	PerSec         Unit = "per_sec"          // events per second
	Factor         Unit = "factor"           // a multiple (tokens per step, request-seconds per second)
)

// Section is one of the report's sections, in the report's order.
type Section struct{ ID, Title string }

// Sections are the report's sections that have windowed figures.
var Sections = []Section{
	{"live", "Live"},
	{"throughput", "Throughput"},
	{"phases", "Where the time goes"},
	{"spec_decode", "Speculative decode"},
	{"prefix_cache", "Prefix cache"},
	{"kv_offload", "KV offload"},
	{"recurrent", "Recurrent state"},
	{"requests", "Requests"},
	{"latency", "Latency"},
	{"size", "Size in tokens"},
}

// Figure is one report figure as PromQL over the library's window.
type Figure struct {
	// ID is "section/row" as the report names the row, with _p50, _p90,
	// _p99 or _mean after a latency or size row.
	ID string
	// Title says what the figure is, for a panel or a rule's comment.
	Title string
	Unit  Unit
	// Metric is the recorded series' metric part, dialect-neutral
	// ("inferscope_kv_cache_usage"); Op its operations part ("avg",
	// "rate5m", "ratio_rate5m", "p99_rate5m"), after Prometheus' naming
	// practice level:metric:operations.
	Metric, Op string
	// Expr is the PromQL.
	Expr string
}

// Section is the figure's report section id.
func (f Figure) Section() string { s, _, _ := strings.Cut(f.ID, "/"); return s }

// figureDef builds one figure from what the library has; ok is false when
// the server publishes too little for it.
type figureDef struct {
	id, title, metric string
	unit              Unit
	// op is the recorded operation; "$w" in it is replaced by the window.
	op    string
	build func(l *Library) (string, bool)
}

func rateOf(name string) func(*Library) (string, bool) {
	return func(l *Library) (string, bool) { return l.rate(name) }
}

func gaugeOf(name string) func(*Library) (string, bool) {
	return func(l *Library) (string, bool) { return l.gauge(name) }
}

// ratioOf divides the increase of num by the sum of the increases of den,
// each aggregated first.
func ratioOf(num string, den ...string) func(*Library) (string, bool) {
	return func(l *Library) (string, bool) { return l.ratio(num, den...) }
}

func (l *Library) ratio(num string, den ...string) (string, bool) {
	n, ok := l.increase(num)
	if !ok {
		return "", false
	}
	var ds []string
	for _, d := range den {
		e, ok := l.increase(d)
		if !ok {
			return "", false
		}
		ds = append(ds, e)
	}
	d := strings.Join(ds, " + ")
	if len(ds) > 1 {
		d = "(" + d + ")"
	}
	return div(n, d), true
}

// kvUsage is the KV cache's usage as the report takes it: tokens in use
// over capacity where both are published, else the server's own fraction
// (averaged over engines, never summed).
func (l *Library) kvUsage() (string, bool) {
	used, ok1 := l.gauge(snapshot.KVCacheTokens)
	capacity, ok2 := l.gauge(snapshot.KVCacheMaxTokens)
	if ok1 && ok2 {
		return div(used, capacity), true
	}
	return l.gauge(snapshot.KVCacheUsageRatio)
}

// gaugeRatio divides two gauges aggregated to the same labels.
func (l *Library) gaugeRatio(num, den string) (string, bool) {
	n, ok1 := l.gauge(num)
	d, ok2 := l.gauge(den)
	return div(n, d), ok1 && ok2
}

// recurrentUsage is checkpoint bytes over the budget.
func (l *Library) recurrentUsage() (string, bool) {
	return l.gaugeRatio(snapshot.RecurrentCacheBytes, snapshot.RecurrentCacheMaxBytes)
}

// onePlus is 1 + the increase of num over that of den (tokens a step emits).
func onePlus(num, den string) func(*Library) (string, bool) {
	return func(l *Library) (string, bool) {
		r, ok := l.ratio(num, den)
		return "1 + " + r, ok
	}
}

// inFlight is request-seconds spent in prefill and decode per second: the
// mean number of requests in flight (Little's law), not the engine's busy
// share (ten requests decoding together for a minute add ten minutes).
func (l *Library) inFlight() (string, bool) {
	p, ok1 := l.rate(snapshot.PromptSecondsTotal)
	d, ok2 := l.rate(snapshot.TokensPredictedSecondsTotal)
	return p + " + " + d, ok1 && ok2
}

// computedEstimate is prompt tokens computed where the server counts only
// every prompt token (vLLM before 0.16, llm-d's simulator): its
// prefix-cache lookups less hits, never below zero, as the report
// estimates them. The two counts are not quite the same tokens (lookups
// are counted as requests are scheduled, again after a preemption).
func (l *Library) computedEstimate() (string, bool) {
	if l.Has(snapshot.PromptTokensTotal) {
		return "", false
	}
	q, ok1 := l.rate(snapshot.PrefixCacheQueries)
	h, ok2 := l.rate(snapshot.PrefixCacheHits)
	return "clamp_min(" + q + " - " + h + ", 0)", ok1 && ok2
}

// share is one finish reason's share of finished requests.
func share(reason string) func(*Library) (string, bool) {
	return func(l *Library) (string, bool) {
		return l.ratio(snapshot.ExtraFinishedReason+reason, snapshot.RequestsTotal)
	}
}

// failedTotal keys every failed request whatever its reason (TGI).
const failedTotal = snapshot.ExtraFailedReason + "*"

// figureDefs are the figures in the report's order.
var figureDefs = func() []figureDef {
	defs := []figureDef{
		{"live/running", "requests running", "inferscope_requests_running", Count, "sum", gaugeOf(snapshot.RequestsProcessing)},
		{"live/waiting", "requests waiting to be admitted", "inferscope_requests_waiting", Count, "sum", gaugeOf(snapshot.RequestsDeferred)},
		{"live/waiting_deferred", "requests waiting deferred, not for capacity (a LoRA budget, a KV transfer)", "inferscope_requests_waiting_deferred", Count, "sum", gaugeOf(snapshot.ExtraWaitingDeferred)},
		{"live/refused", "requests refused with 503 at admission, before queueing", "inferscope_requests_refused", RequestsPerSec, "rate$w", rateOf(snapshot.ExtraAdmissionRejections)},
		{"live/kv_cache", "KV cache referenced by running requests", "inferscope_kv_cache_usage", Ratio, "ratio", (*Library).kvUsage},
		{"live/kv_offload", "KV offload cache held", "inferscope_kv_offload_usage", Ratio, "ratio", func(l *Library) (string, bool) {
			return l.gaugeRatio(snapshot.KVOffloadTokens, snapshot.KVOffloadMaxTokens)
		}},
		{"live/token_budget", "token budget reserved by the running batch (prompt + max_new_tokens, not KV in use)", "inferscope_token_budget_reserved", Ratio, "ratio", func(l *Library) (string, bool) {
			return l.gaugeRatio(snapshot.ExtraTokenBudgetReserved, snapshot.ExtraTokenBudgetMax)
		}},

		{"throughput/prefill_work", "prompt tokens computed (cache hits excluded)", "inferscope_prompt_computed_tokens", TokensPerSec, "rate$w", rateOf(snapshot.PromptTokensTotal)},
		{"throughput/prompt_tokens", "prompt tokens, cache hits included (the server counts every prompt token, the prefix cache's hits among them)", "inferscope_prompt_tokens", TokensPerSec, "rate$w", func(l *Library) (string, bool) {
			if l.Has(snapshot.PromptTokensTotal) {
				return "", false
			}
			return l.rate(snapshot.PromptTokensAll)
		}},
		{"throughput/prefill_work_estimate", "prompt tokens computed, estimated: prefix-cache lookups less hits (where computed tokens are not published)", "inferscope_prompt_computed_tokens_estimate", TokensPerSec, "rate$w", (*Library).computedEstimate},
		{"throughput/cached", "prompt tokens served from the prefix cache", "inferscope_prompt_cached_tokens", TokensPerSec, "rate$w", rateOf(snapshot.CachedTokensTotal)},
		{"throughput/decode_work", "tokens generated", "inferscope_generated_tokens", TokensPerSec, "rate$w", rateOf(snapshot.TokensPredictedTotal)},
		{"throughput/requests", "requests finished", "inferscope_requests_finished", RequestsPerSec, "rate$w", rateOf(snapshot.RequestsTotal)},
		{"throughput/step_tokens", "tokens per engine step that emitted a token (a prefill's tokens when it ends: not a share of the step budget)", "inferscope_engine_step_tokens", Factor, "ratio_rate$w", ratioOf(snapshot.ExtraStepTokens, snapshot.ExtraEngineSteps)},

		{"phases/engine_busy", "engine busy: the share of the time a scheduler executed on the GPU (SGLang's device timer) or was in a batch call (TGI's), a utilization", "inferscope_engine_utilization", Ratio, "rate$w", rateOf(snapshot.EngineBusySecondsTotal)},
		{"phases/engine_prefill", "engine prefill: the share of the time a scheduler executed prefill passes (SGLang's device timer) or prefill batch calls (TGI's)", "inferscope_engine_prefill_utilization", Ratio, "rate$w", rateOf(snapshot.EnginePrefillSecondsTotal)},
		{"phases/engine_decode", "engine decode: the share of the time a scheduler executed decode passes (SGLang's device timer) or decode batch calls (TGI's)", "inferscope_engine_decode_utilization", Ratio, "rate$w", rateOf(snapshot.EngineDecodeSecondsTotal)},
		{"phases/mean_in_flight", "requests in flight, in prefill or decode, on average: summed request time per second (not a busy share: requests overlap)", "inferscope_mean_in_flight", Factor, "rate$w", (*Library).inFlight},
		{"phases/prefill_share", "prefill share of request time", "inferscope_prefill_share", Ratio, "ratio_rate$w", ratioOf(snapshot.PromptSecondsTotal, snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal)},
		{"phases/decode_share", "decode share of request time", "inferscope_decode_share", Ratio, "ratio_rate$w", ratioOf(snapshot.TokensPredictedSecondsTotal, snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal)},

		{"spec_decode/draft_acceptance", "drafted tokens accepted", "inferscope_draft_acceptance", Ratio, "ratio_rate$w", ratioOf(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDraftTokensTotal)},
		{"spec_decode/tokens_per_step", "tokens per decode step with the drafter", "inferscope_tokens_per_step", Factor, "ratio_rate$w", onePlus(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDecodeStepsTotal)},
		{"spec_decode/tokens_per_verify", "generated tokens per verify pass, the target's own included (SGLang's accept length)", "inferscope_tokens_per_verify", Factor, "ratio_rate$w", ratioOf(snapshot.TokensPredictedTotal, snapshot.ExtraSpecVerifyCalls)},
		{"spec_decode/mean_acceptance_length", "mean acceptance length (1 + accepted / drafts)", "inferscope_mean_acceptance_length", Factor, "ratio_rate$w", onePlus(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.ExtraSpecDecodeDrafts)},

		{"prefix_cache/hit_rate", "prefix-cache hit rate (tokens)", "inferscope_prefix_cache_hits_per_queries", Ratio, "ratio_rate$w", ratioOf(snapshot.PrefixCacheHits, snapshot.PrefixCacheQueries)},
		{"prefix_cache/hit_host", "prefix-cache hits from host memory, per token queried", "inferscope_prefix_cache_host_hits_per_queries", Ratio, "ratio_rate$w", ratioOf(snapshot.PrefixCacheHostHits, snapshot.PrefixCacheQueries)},
		{"prefix_cache/hit_storage", "prefix-cache hits from storage, per token queried", "inferscope_prefix_cache_storage_hits_per_queries", Ratio, "ratio_rate$w", ratioOf(snapshot.PrefixCacheStorageHits, snapshot.PrefixCacheQueries)},

		{"kv_offload/hit_share", "share of cache hits restored from RAM", "inferscope_kv_offload_restored_per_hits", Ratio, "ratio_rate$w", ratioOf(snapshot.KVOffloadRestoredTokensTotal, snapshot.PrefixCacheHits)},
		{"kv_offload/traffic", "offload bytes read back per byte written", "inferscope_kv_offload_read_per_written", Ratio, "ratio_rate$w", ratioOf(snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal)},
		{"kv_offload/read", "offload read", "inferscope_kv_offload_read_bytes", BytesPerSec, "rate$w", rateOf(snapshot.KVOffloadReadBytesTotal)},
		{"kv_offload/written", "offload written", "inferscope_kv_offload_written_bytes", BytesPerSec, "rate$w", rateOf(snapshot.KVOffloadWrittenBytesTotal)},
		{"kv_offload/evictions", "offload pages evicted", "inferscope_kv_offload_evictions", PerSec, "rate$w", rateOf(snapshot.KVOffloadEvictionsTotal)},
		{"kv_offload/load_speed", "offload load speed while loading (bytes over the time loads took)", "inferscope_kv_offload_load_speed", BytesPerSec, "ratio_rate$w", ratioOf(snapshot.KVOffloadReadBytesTotal, snapshot.ExtraKVOffloadLoadSeconds)},
		{"kv_offload/store_speed", "offload store speed while storing (bytes over the time stores took)", "inferscope_kv_offload_store_speed", BytesPerSec, "ratio_rate$w", ratioOf(snapshot.KVOffloadWrittenBytesTotal, snapshot.ExtraKVOffloadStoreSeconds)},
		{"kv_offload/cold_allocs", "offload stores pinned synchronously", "inferscope_kv_offload_cold_allocs", PerSec, "rate$w", rateOf(snapshot.KVOffloadColdAllocsTotal)},

		{"recurrent/cache", "recurrent checkpoint cache used", "inferscope_recurrent_cache_usage", Ratio, "ratio", (*Library).recurrentUsage},
		{"recurrent/capped", "reusable prompt re-prefilled for lack of a checkpoint", "inferscope_recurrent_capped_share", Ratio, "ratio_rate$w", ratioOf(snapshot.RecurrentCappedTokensTotal, snapshot.RecurrentCappedTokensTotal, snapshot.PrefixCacheHits)},
		{"recurrent/live_kv_evictions", "checkpoints dropped with their K/V still cached", "inferscope_recurrent_live_kv_evictions", PerSec, "rate$w", rateOf(snapshot.RecurrentCacheLiveKVEvictionsTotal)},

		{"requests/preemptions", "requests preempted", "inferscope_preemptions", PerSec, "rate$w", rateOf(snapshot.ExtraPreemptions)},
		{"requests/retracted_work", "tokens retracted requests threw away, prompt and generated, computed again on resuming", "inferscope_retracted_tokens", TokensPerSec, "rate$w", func(l *Library) (string, bool) {
			in, ok1 := l.rate(snapshot.ExtraRetractedPromptTokens)
			out, ok2 := l.rate(snapshot.ExtraRetractedGeneratedTokens)
			return in + " + " + out, ok1 && ok2
		}},
		{"requests/finished_error", "finished requests that ended in an error", "inferscope_requests_error_share", Ratio, "ratio_rate$w", share("error")},
		{"requests/finished_abort", "finished requests aborted", "inferscope_requests_abort_share", Ratio, "ratio_rate$w", share("abort")},
		{"requests/failed", "requests failed", "inferscope_requests_failed", RequestsPerSec, "rate$w", rateOf(failedTotal)},
		{"requests/aborted", "requests aborted", "inferscope_requests_aborted", RequestsPerSec, "rate$w", rateOf(snapshot.ExtraAbortedRequests)},
	}
	quantiles := func(id, hist, title, metric string, unit Unit) {
		defs = append(defs, figureDef{id + "_mean", title + ", mean", metric, unit, "mean$w", func(l *Library) (string, bool) { return l.mean(hist) }})
		for _, q := range []struct {
			suffix string
			q      float64
		}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
			defs = append(defs, figureDef{id + "_" + q.suffix, title + ", " + q.suffix, metric, unit, q.suffix + "_rate$w",
				func(l *Library) (string, bool) { return l.quantile(hist, q.q) }})
		}
	}
	// The report's rows: latencies titled as their distributions, sizes
	// as their rows.
	for _, r := range analysis.LatencyRows {
		quantiles("latency/"+r.ID, r.Hist, r.Title, "inferscope_"+r.Hist, Seconds)
	}
	for _, r := range analysis.SizeRows {
		quantiles("size/"+r.ID, r.Hist, r.Label, "inferscope_"+r.Hist, Tokens)
	}
	return defs
}()

// Figures returns every figure the server publishes enough for, in the
// report's order, of the sections the library writes ([Library.Sections]).
func (l *Library) Figures() []Figure {
	var out []Figure
	for _, d := range figureDefs {
		if !l.sections.HasRow(d.id) {
			continue
		}
		e, ok := d.build(l)
		if !ok {
			continue
		}
		out = append(out, Figure{ID: d.id, Title: d.title, Unit: d.unit, Metric: d.metric,
			Op: strings.ReplaceAll(d.op, "$w", windowName(l.window)), Expr: e})
	}
	return out
}

// Figure returns one figure by id; ok is false when the server does not
// publish enough for it.
func (l *Library) Figure(id string) (Figure, bool) {
	for _, f := range l.Figures() {
		if f.ID == id {
			return f, true
		}
	}
	return Figure{}, false
}

// windowName is the window as a rule name spells it: "5m", or "" for a
// dashboard variable.
func windowName(w string) string {
	if strings.HasPrefix(w, "$") {
		return ""
	}
	return w
}
