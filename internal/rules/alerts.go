package rules

import "github.com/inferscope/inferscope/internal/snapshot"

// Prefix starts every alert's name, as monitoring mixins do, so that a
// routing tree or a silence can take them all at once.
const Prefix = "Inferscope"

// alertDef is how one condition becomes an alert.
type alertDef struct {
	id   string // the condition's id (internal/promql)
	name string // after Prefix, CamelCase
	// severity is the alert's where no note gives one (critical or
	// warning); a note's alert takes the note's (bad → critical, warn →
	// warning).
	severity string
	// hold is how long the condition must hold before the alert fires: a
	// reading at one instant (a gauge) must persist, a window's increase
	// has already been averaged over it.
	hold string
	// summary is a line saying what is wrong; describe the note's own text
	// with its figure as a template, and the advice's knob where the note
	// names one.
	summary  string
	describe func(a snapshot.Advice, window string) string
	// clause is a part of describe's text that the report's note says in
	// the same words (tests hold the two to it); "" for an alert with no
	// note.
	clause string
}

// Template pieces: how the alert's value is written in its description.
const (
	percent = "{{ $value | humanizePercentage }}"
	count   = `{{ printf "%.0f" $value }}`
	fixed2  = `{{ printf "%.2f" $value }}`
	secs    = `{{ printf "%.1f" $value }} s`
)

// knob appends "; "+fix when the server's advice names one.
func knob(fix string) string {
	if fix == "" {
		return ""
	}
	return "; " + fix
}

func or(s, general string) string {
	if s != "" {
		return s
	}
	return general
}

// alertDefs are the alerts, notes first, in the order of the conditions.
var alertDefs = []alertDef{
	{id: "kv_cache_over_capacity", name: "KVCacheOverCapacity", hold: "5m",
		summary: "KV cache gauges out of step",
		clause:  "its gauges are out of step",
		describe: func(snapshot.Advice, string) string {
			return "the server reports more KV cache in use than its capacity (" + percent + " of it): its gauges are out of step, so KV pressure cannot be judged from them"
		}},
	{id: "kv_cache_pressure", name: "KVCachePressure", hold: "5m",
		summary: "KV cache nearly full of running requests",
		clause:  "referenced by in-flight jobs: new requests wait for pages (unreferenced cached prefixes are already counted as free)",
		describe: func(a snapshot.Advice, _ string) string {
			return "KV cache " + percent + " referenced by in-flight jobs: new requests wait for pages (unreferenced cached prefixes are already counted as free)" + knob(a.KVFix)
		}},
	{id: "queue_pressure", name: "QueuePressure", hold: "5m",
		summary: "the queue outgrows what runs",
		clause:  "requests spend longer waiting than the batch can absorb, and time to first token grows with the queue",
		describe: func(a snapshot.Advice, _ string) string {
			deferred := ""
			if a.QueueDeferred != "" {
				// The note tells the two apart; the alert cannot.
				deferred = "; where most of the queue is deferred (num_requests_waiting_by_reason{reason=\"deferred\"}), not waiting for capacity: " + a.QueueDeferred
			}
			return count + " requests queued, at least twice those running: requests spend longer waiting than the batch can absorb, and time to first token grows with the queue" + knob(a.QueueFix) + deferred
		}},
	{id: "kv_offload_over_capacity", name: "KVOffloadOverCapacity", hold: "5m",
		summary: "KV offload gauges out of step",
		clause:  "its gauges are out of step, so the offload cache cannot be judged",
		describe: func(snapshot.Advice, string) string {
			return "the server reports more KV offload in use than its capacity (" + percent + " of it): its gauges are out of step, so the offload cache cannot be judged from them"
		}},
	{id: "kv_offload_cold_allocs", name: "KVOffloadColdAllocs",
		summary: "KV offload stores pinning memory synchronously",
		clause:  "KV offload stores had to pin memory synchronously",
		describe: func(a snapshot.Advice, w string) string {
			cost := ""
			if a.ColdAlloc != "" {
				cost = " (" + a.ColdAlloc + ")"
			}
			return count + " KV offload stores had to pin memory synchronously in the last " + w + cost + "; the pinned pool is growing behind demand"
		}},
	{id: "kv_offload_thrashing", name: "KVOffloadThrashing",
		summary: "KV offload thrashing",
		clause:  "of what was written to RAM was read back, and pages are being evicted",
		describe: func(a snapshot.Advice, w string) string {
			return "KV offload thrashing: only " + fixed2 + " of what was written to RAM was read back, and pages are being evicted (last " + w + "); raise " +
				or(a.OffloadBudget, "the offload cache's RAM budget") + " (or turn offload off)"
		}},
	{id: "recurrent_over_budget", name: "RecurrentOverBudget", hold: "5m",
		summary: "recurrent checkpoint cache over its budget",
		clause:  "it is over budget, so RAM use is above what",
		describe: func(a snapshot.Advice, _ string) string {
			return "the recurrent checkpoint cache holds " + percent + " of its budget: it is over budget, so RAM use is above what " + or(a.RecurrentBudget, "the budget") + " allows for"
		}},
	{id: "recurrent_live_kv_evictions", name: "RecurrentLiveKVEvictions",
		summary: "recurrent checkpoints dropped while their K/V is cached",
		clause:  "recurrent checkpoints were dropped while their K/V page was still cached: those prefixes will be re-prefilled",
		describe: func(_ snapshot.Advice, w string) string {
			return count + " recurrent checkpoints were dropped while their K/V page was still cached: those prefixes will be re-prefilled (last " + w + ")"
		}},
	{id: "recurrent_raise_budget", name: "RecurrentBudgetTooSmall",
		summary: "reusable prompt re-prefilled for lack of recurrent checkpoints",
		clause:  "of reusable prompt was re-prefilled for lack of a recurrent checkpoint while checkpoints are being dropped live: raise",
		describe: func(a snapshot.Advice, w string) string {
			return percent + " of reusable prompt was re-prefilled for lack of a recurrent checkpoint while checkpoints are being dropped live: raise " +
				or(a.RecurrentBudget, "the recurrent cache's budget") + " (last " + w + ")"
		}},
	{id: "preemptions", name: "Preemptions",
		summary: "requests preempted: the KV cache ran out mid-request",
		clause:  "the KV cache ran out while they ran, and their work is recomputed",
		describe: func(a snapshot.Advice, w string) string {
			return count + " requests were " + or(a.Preempted, "preempted") + " in the last " + w + ": the KV cache ran out while they ran, and their work is recomputed" + knob(a.PreemptFix)
		}},
	{id: "retracted_work", name: "RetractedWork",
		summary: "retractions throwing work away",
		clause:  "of the prompt tokens computed: that work is done again when they resume",
		describe: func(a snapshot.Advice, w string) string {
			return "retracted requests threw away " + percent + " of the prompt tokens computed: that work is done again when they resume (last " + w + ")" + knob(a.PreemptFix)
		}},
	{id: "requests_errored", name: "RequestsErrored",
		summary: "requests ending in an engine error",
		clause:  "ended in an error",
		describe: func(_ snapshot.Advice, w string) string {
			return count + " requests ended in an error in the last " + w + ": see the server's log"
		}},
	{id: "draft_acceptance_low", name: "DraftAcceptanceLow",
		summary: "most drafted tokens rejected",
		clause:  "of drafted tokens were accepted: most of the drafter's work is thrown away; a draft model closer to the target model, or fewer tokens per draft, wastes less",
		describe: func(_ snapshot.Advice, w string) string {
			return "only " + percent + " of drafted tokens were accepted: most of the drafter's work is thrown away; a draft model closer to the target model, or fewer tokens per draft, wastes less (last " + w + ")"
		}},

	{id: "requests_refused", name: "RequestsRefused",
		summary: "requests refused before queueing",
		clause:  "refused with 503 at admission, before queueing: they reach neither the queue nor the finished count, so the queue and the request rate understate the load",
		describe: func(a snapshot.Advice, w string) string {
			return count + " requests were refused with 503 at admission in the last " + w + ", before queueing: they reach neither the queue nor the finished count, so the queue and the request rate understate the load" +
				knob(a.AdmissionLimit) + "; raise the limit where the latency it protects allows, or add replicas"
		}},

	{id: "admission_stalled", name: "AdmissionStalled", severity: "critical", hold: "5m",
		summary: "requests waiting and none running",
		describe: func(snapshot.Advice, string) string {
			return count + " requests waiting and none running for 5 minutes: admission is stalled (a full KV cache, a model loading, or an engine error in the server's log)"
		}},
	{id: "queue_time_high", name: "QueueTimeHigh", severity: "warning",
		summary: "requests wait long to be admitted",
		describe: func(a snapshot.Advice, w string) string {
			return "requests waited " + secs + " on average to be admitted over the last " + w + ": the engine is stalled or far over capacity" + knob(a.QueueFix)
		}},
	{id: "requests_aborted", name: "RequestsAborted", severity: "warning",
		summary: "many requests aborted",
		describe: func(_ snapshot.Advice, w string) string {
			return percent + " of finished requests were aborted in the last " + w + ": clients gave up or disconnected, often because answers came too slowly"
		}},
	{id: "requests_failed", name: "RequestsFailing", severity: "warning",
		summary: "many requests failing",
		describe: func(a snapshot.Advice, w string) string {
			return percent + " of requests failed in the last " + w + ": " + or(a.FailedWhy, "the server's failure counts by reason say why")
		}},
	{id: "target_down", name: "TargetDown", severity: "critical", hold: "5m",
		summary: "inference server down",
		describe: func(snapshot.Advice, string) string {
			return "Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}), which published this server's series within the last day: the server is down or unreachable, whatever its own health check says"
		}},
}
