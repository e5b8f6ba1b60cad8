package snapshot

import "strings"

// The canonical names: the keys of Snapshot.Scalars, Histograms and Extra.
// They are tabbyAPI's names without the "tabbyapi:" prefix (the exporter
// publishes the same set); every dialect maps its server's series onto
// them, and a dialect that produces any other name fails its tests. Each
// says its unit and whether it is a counter (only rises; a fall is a
// restart), a gauge or a histogram; docs/metrics.md has how the exporter
// computes each.

// Prompt and generation work, summed over finished requests.
const (
	// PromptTokensTotal is a counter of prompt tokens computed (prefilled),
	// prefix-cache hits excluded; tokens.
	PromptTokensTotal = "prompt_tokens_total"
	// PromptTokensAll is a counter of every prompt token of finished
	// requests, cached and computed alike (vLLM's and SGLang's own
	// prompt_tokens_total); tokens. A dialect sets it only where the
	// computed share (PromptTokensTotal) is unknown, and the report then
	// says the cached share is unknown.
	PromptTokensAll = "prompt_tokens_all_total"
	// CachedTokensTotal is a counter of prompt tokens served from the
	// prefix cache instead of computed; tokens.
	CachedTokensTotal = "cached_tokens_total"
	// PrefixCacheQueries is a counter of prompt tokens looked up in the
	// prefix cache (computed + cached); tokens.
	PrefixCacheQueries = "prefix_cache_queries"
	// PrefixCacheHits is a counter of prompt tokens the prefix cache had;
	// tokens.
	PrefixCacheHits = "prefix_cache_hits"
	// PromptSecondsTotal is a counter of prefill time summed per request;
	// seconds.
	PromptSecondsTotal = "prompt_seconds_total"
	// TokensPredictedTotal is a counter of generated tokens; tokens.
	TokensPredictedTotal = "tokens_predicted_total"
	// TokensPredictedSecondsTotal is a counter of decode time summed per
	// request; seconds.
	TokensPredictedSecondsTotal = "tokens_predicted_seconds_total"
	// EngineBusySecondsTotal is a counter of the time the engine was busy
	// executing work (SGLang's forward_execution_seconds_total, before
	// 2026 gpu_execution_seconds_total, with its device timer on; TGI's
	// batch prefill and decode calls, which one task runs one at a time):
	// wall time, not summed per request, so its rate is a busy share 0..1;
	// seconds.
	EngineBusySecondsTotal = "engine_busy_seconds_total"
	// RequestsTotal is a counter of finished requests; requests.
	RequestsTotal = "requests_total"
	// NTokensMax is a counter holding the largest prompt seen (it only
	// rises); tokens.
	NTokensMax = "n_tokens_max"
	// TokensPredictedMax is a counter holding the largest generation seen
	// (it only rises); tokens.
	TokensPredictedMax = "tokens_predicted_max"
	// PredictedTokensSeconds is a gauge of lifetime generated tokens over
	// decode seconds; tokens per second.
	PredictedTokensSeconds = "predicted_tokens_seconds"
	// PromptTokensSeconds is a gauge of lifetime prompt tokens over
	// prefill seconds, which tabbyAPI once published; tokens per second.
	PromptTokensSeconds = "prompt_tokens_seconds"
)

// The server's live state.
const (
	// RequestsProcessing is a gauge of requests running; requests.
	RequestsProcessing = "requests_processing"
	// RequestsDeferred is a gauge of requests waiting to be admitted;
	// requests.
	RequestsDeferred = "requests_deferred"
	// ProcessStartTimeSeconds is a gauge of the process start; Unix
	// seconds.
	ProcessStartTimeSeconds = "process_start_time_seconds"
	// KVCacheUsageRatio is a gauge of KV cache referenced by in-flight
	// requests over its capacity; a fraction 0..1.
	KVCacheUsageRatio = "kv_cache_usage_ratio"
	// KVCacheTokens is a gauge of KV cache referenced by in-flight
	// requests; tokens.
	KVCacheTokens = "kv_cache_tokens"
	// KVCacheMaxTokens is a gauge of KV cache capacity; tokens.
	KVCacheMaxTokens = "kv_cache_max_tokens"
	// LiveStateAgeSeconds is a gauge of how old the live state a scrape
	// served is, 0 when read fresh (the exporter's, when its engine did
	// not answer in time); seconds.
	LiveStateAgeSeconds = "live_state_age_seconds"
	// LiveStateFailuresTotal is a counter of scrapes that served an
	// earlier live state because the engine timed out or failed (the
	// exporter's); scrapes.
	LiveStateFailuresTotal = "live_state_failures_total"
)

// Speculative decoding.
const (
	// SpecDecodeNumDraftTokensTotal is a counter of tokens the drafter
	// proposed; tokens.
	SpecDecodeNumDraftTokensTotal = "spec_decode_num_draft_tokens_total"
	// SpecDecodeNumAcceptedTokensTotal is a counter of drafted tokens the
	// target model accepted; tokens.
	SpecDecodeNumAcceptedTokensTotal = "spec_decode_num_accepted_tokens_total"
	// SpecDecodeNumDecodeStepsTotal is a counter of decode steps of
	// requests served with a drafter; steps.
	SpecDecodeNumDecodeStepsTotal = "spec_decode_num_decode_steps_total"
	// SpecDecodeRequestsTotal is a counter of finished requests served
	// with a drafter; requests.
	SpecDecodeRequestsTotal = "spec_decode_requests_total"
	// SpecDecodeDraftAcceptanceRate is a gauge of accepted over drafted
	// tokens; a fraction 0..1.
	SpecDecodeDraftAcceptanceRate = "spec_decode_draft_acceptance_rate"
	// SpecDecodeMeanAcceptedLength is a gauge of accepted tokens per
	// decode step; tokens.
	SpecDecodeMeanAcceptedLength = "spec_decode_mean_accepted_length"
	// SpecDecodeTokensPerStep is a gauge of tokens emitted per decode
	// step, the target model's own included; tokens.
	SpecDecodeTokensPerStep = "spec_decode_tokens_per_step"
)

// KV offload: pages evicted from VRAM kept in system RAM.
const (
	// KVOffloadBytes is a gauge of system RAM holding offloaded pages;
	// bytes.
	KVOffloadBytes = "kv_offload_bytes"
	// KVOffloadMaxBytes is a gauge of the offload cache's size, pinned up
	// front; bytes.
	KVOffloadMaxBytes = "kv_offload_max_bytes"
	// KVOffloadTokens is a gauge of KV held in system RAM; tokens.
	KVOffloadTokens = "kv_offload_tokens"
	// KVOffloadMaxTokens is a gauge of the offload cache's capacity;
	// tokens.
	KVOffloadMaxTokens = "kv_offload_max_tokens"
	// KVOffloadUsageRatio is a gauge of offload tokens held over capacity;
	// a fraction 0..1.
	KVOffloadUsageRatio = "kv_offload_usage_ratio"
	// KVOffloadStoresTotal is a counter of pages copied from VRAM to RAM;
	// pages.
	KVOffloadStoresTotal = "kv_offload_stores_total"
	// KVOffloadDedupedStoresTotal is a counter of page stores skipped
	// because RAM already held the page; pages.
	KVOffloadDedupedStoresTotal = "kv_offload_deduped_stores_total"
	// KVOffloadEvictionsTotal is a counter of pages dropped from RAM to
	// make room; pages.
	KVOffloadEvictionsTotal = "kv_offload_evictions_total"
	// KVOffloadReadBytesTotal is a counter of bytes restored from RAM to
	// VRAM (vLLM's offloading connector: loaded from its offload medium,
	// system RAM with its CPU spec); bytes.
	KVOffloadReadBytesTotal = "kv_offload_read_bytes_total"
	// KVOffloadWrittenBytesTotal is a counter of bytes stored from VRAM to
	// RAM (vLLM's connector: stored to its offload medium); bytes.
	KVOffloadWrittenBytesTotal = "kv_offload_written_bytes_total"
	// KVOffloadRestoredTokensTotal is a counter of prompt tokens read back
	// from RAM instead of prefilled (already among CachedTokensTotal);
	// tokens.
	KVOffloadRestoredTokensTotal = "kv_offload_restored_tokens_total"
	// KVOffloadColdAllocsTotal is a counter of page stores that had to
	// pin memory synchronously; stores.
	KVOffloadColdAllocsTotal = "kv_offload_cold_allocs_total"
)

// Recurrent state checkpoints of hybrid models, kept in system RAM.
const (
	// RecurrentCacheBytes is a gauge of RAM holding checkpoints; bytes.
	RecurrentCacheBytes = "recurrent_cache_bytes"
	// RecurrentCacheMaxBytes is a gauge of the checkpoint budget; bytes.
	RecurrentCacheMaxBytes = "recurrent_cache_max_bytes"
	// RecurrentCacheUsageRatio is a gauge of checkpoint bytes over the
	// budget; a fraction, above 1 when over budget.
	RecurrentCacheUsageRatio = "recurrent_cache_usage_ratio"
	// RecurrentCheckpoints is a gauge of checkpoints held; checkpoints.
	RecurrentCheckpoints = "recurrent_checkpoints"
	// RecurrentCheckpointBytes is a gauge of one checkpoint's mean size;
	// bytes.
	RecurrentCheckpointBytes = "recurrent_checkpoint_bytes"
	// RecurrentCacheEvictionsTotal is a counter of checkpoints dropped to
	// make room; checkpoints.
	RecurrentCacheEvictionsTotal = "recurrent_cache_evictions_total"
	// RecurrentCacheLiveKVEvictionsTotal is a counter of checkpoints
	// dropped while their anchor KV page was still cached (costly);
	// checkpoints.
	RecurrentCacheLiveKVEvictionsTotal = "recurrent_cache_live_kv_evictions_total"
	// RecurrentCacheStrandedEvictionsTotal is a counter of checkpoints
	// dropped that had already lost their anchor page (free); checkpoints.
	RecurrentCacheStrandedEvictionsTotal = "recurrent_cache_stranded_evictions_total"
	// RecurrentCachePrunedTotal is a counter of unresumable checkpoints
	// reclaimed while idle (free); checkpoints.
	RecurrentCachePrunedTotal = "recurrent_cache_pruned_total"
	// RecurrentStrandedByKVTotal is a counter of checkpoints stranded by
	// the eviction of their anchor KV page; checkpoints.
	RecurrentStrandedByKVTotal = "recurrent_stranded_by_kv_total"
	// RecurrentCappedTokensTotal is a counter of tokens with valid KV
	// re-prefilled anyway for lack of a checkpoint; tokens.
	RecurrentCappedTokensTotal = "recurrent_capped_tokens_total"
)

// Histograms: one observation per finished request.
const (
	// TimeToFirstTokenSeconds is a histogram of queue + prefill time;
	// seconds.
	TimeToFirstTokenSeconds = "time_to_first_token_seconds"
	// E2ERequestLatencySeconds is a histogram of a request's whole time;
	// seconds.
	E2ERequestLatencySeconds = "e2e_request_latency_seconds"
	// RequestQueueTimeSeconds is a histogram of time waiting to be
	// admitted; seconds.
	RequestQueueTimeSeconds = "request_queue_time_seconds"
	// RequestPrefillTimeSeconds is a histogram of prefill time; seconds.
	RequestPrefillTimeSeconds = "request_prefill_time_seconds"
	// RequestDecodeTimeSeconds is a histogram of decode time; seconds.
	RequestDecodeTimeSeconds = "request_decode_time_seconds"
	// InterTokenLatencySeconds is a histogram of the time between
	// generated tokens, one observation per step or token; seconds.
	InterTokenLatencySeconds = "inter_token_latency_seconds"
	// RequestTimePerOutputTokenSeconds is a histogram of each request's
	// mean time per generated token (TGI's includes prefill, vLLM's does
	// not); seconds.
	RequestTimePerOutputTokenSeconds = "request_time_per_output_token_seconds"
	// RequestPromptTokens is a histogram of prompt lengths, cached part
	// included; tokens.
	RequestPromptTokens = "request_prompt_tokens"
	// RequestGenerationTokens is a histogram of generation lengths;
	// tokens.
	RequestGenerationTokens = "request_generation_tokens"
	// SpecDecodeAcceptanceRate is a histogram of each drafted request's
	// accepted over drafted tokens; a fraction 0..1.
	SpecDecodeAcceptanceRate = "spec_decode_acceptance_rate"
)

// Extra keys: figures only some servers publish, with no canonical
// counterpart in tabbyAPI's set. A key ending in ":" is a prefix, followed
// by a label value.
const (
	// ExtraPreemptions is a counter of requests preempted (vLLM
	// num_preemptions_total; SGLang's retractions, its name for the same
	// event); requests.
	ExtraPreemptions = "num_preemptions_total"
	// ExtraFinishedReason prefixes a counter of finished requests by
	// reason (vLLM request_success_total by finished_reason: stop, length,
	// abort, error, repetition); they sum to RequestsTotal; requests.
	ExtraFinishedReason = "finished_reason:"
	// ExtraFailedReason prefixes a counter of failed requests by error
	// (TGI tgi_request_failure by err: validation, overloaded,
	// generation, …), not among RequestsTotal; requests.
	ExtraFailedReason = "failed_reason:"
	// ExtraAbortedRequests is a counter of aborted requests (SGLang);
	// requests.
	ExtraAbortedRequests = "num_aborted_requests_total"
	// ExtraKVBlockSize is a gauge of tokens per KV block (vLLM
	// block_size, SGLang page_size), the largest where caches differ;
	// tokens.
	ExtraKVBlockSize = "kv_block_size"
	// ExtraKVNumBlocks is a gauge of KV blocks over all engines or ranks
	// (vLLM num_gpu_blocks, SGLang num_pages); blocks.
	ExtraKVNumBlocks = "kv_num_blocks"
	// ExtraSpecDecodeDrafts is a counter of speculative drafts, that is
	// verification steps (vLLM, llama.cpp); mean acceptance length = 1 +
	// accepted / drafts; drafts.
	ExtraSpecDecodeDrafts = "spec_decode_num_drafts_total"
	// ExtraAcceptedPerPosition prefixes a counter of accepted draft tokens
	// at a draft position from 0 (vLLM, llama.cpp); tokens.
	ExtraAcceptedPerPosition = "spec_decode_accepted_per_pos:"
	// ExtraBusySlotsPerDecode is a gauge of llama.cpp's mean busy slots
	// per llama_decode() call (batch occupancy); slots.
	ExtraBusySlotsPerDecode = "n_busy_slots_per_decode"
	// ExtraDecodeCalls is a counter of llama.cpp's llama_decode() calls;
	// calls.
	ExtraDecodeCalls = "n_decode_total"
	// ExtraLargestSequence is a counter holding llama.cpp's longest prompt
	// + generation seen (n_tokens_max, old n_past_max; it only rises),
	// never a largest prompt; tokens.
	ExtraLargestSequence = "largest_sequence_tokens"
	// ExtraSlotPrefillSpeed is a gauge of llama.cpp's prompt tokens over
	// their summed per-slot seconds: how fast a request was served while
	// it ran, not throughput; tokens per second.
	ExtraSlotPrefillSpeed = "slot_prefill_tokens_per_second"
	// ExtraSlotDecodeSpeed is the same gauge for generated tokens; tokens
	// per second.
	ExtraSlotDecodeSpeed = "slot_decode_tokens_per_second"
	// ExtraCacheHitRateGauge is a gauge of SGLang's last batch's prefix
	// hit rate (mean over data-parallel ranks), not a lifetime rate; a
	// fraction 0..1.
	ExtraCacheHitRateGauge = "cache_hit_rate_gauge"
	// ExtraGenThroughputGauge is a gauge of SGLang's generated tokens per
	// second over its last log interval, summed over data-parallel ranks;
	// tokens per second.
	ExtraGenThroughputGauge = "gen_throughput_gauge"
)

// Servers as they are now (issue 28): vLLM's admission limit, deferred
// queue, sleep state, engine steps and KV offload connector; TGI's token
// budget, batch time, entry count and speculated tokens. Extra keys all:
// no other server publishes them with these meanings.
const (
	// ExtraAdmissionRejections is a counter of requests vLLM refused with
	// 503 before queueing (--max-num-queued-reqs, --max-num-queued-tokens):
	// they reach neither the queue gauges nor the finished count; requests.
	ExtraAdmissionRejections = "admission_rejections_total"
	// ExtraAdmissionRejectionsBy prefixes a counter of those refusals by
	// vLLM's reason label; they sum to ExtraAdmissionRejections; requests.
	ExtraAdmissionRejectionsBy = "admission_rejections:"
	// ExtraWaitingDeferred is a gauge of waiting requests vLLM defers for a
	// transient constraint (a LoRA adapter budget, a KV transfer, a blocked
	// status), not for want of batch room: among RequestsDeferred; requests.
	ExtraWaitingDeferred = "requests_waiting_deferred"
	// ExtraSleepState prefixes a gauge of vLLM engines in each sleep state
	// (awake, weights_offloaded: level 1, discard_all: level 2), the sum of
	// engine_sleep_state's 0/1 series; engines.
	ExtraSleepState = "engine_sleep_state:"
	// ExtraStepTokens is a counter of the tokens vLLM's engine steps
	// carried as its frontend counts them (iteration_tokens_total's _sum:
	// prompt tokens of prefills that ended in the step, every chunk at
	// once, plus tokens generated); tokens.
	ExtraStepTokens = "engine_step_tokens_total"
	// ExtraEngineSteps is a counter of the engine steps that emitted a
	// token (iteration_tokens_total's _count; steps that only advanced a
	// chunked prefill are not among them); steps.
	ExtraEngineSteps = "engine_steps_total"
	// ExtraKVOffloadLoadSeconds is a counter of the time vLLM's offloading
	// connector spent loading KV from its offload medium to the GPU;
	// seconds.
	ExtraKVOffloadLoadSeconds = "kv_offload_load_seconds_total"
	// ExtraKVOffloadStoreSeconds is a counter of the time it spent storing
	// KV from the GPU to the offload medium; seconds.
	ExtraKVOffloadStoreSeconds = "kv_offload_store_seconds_total"
	// ExtraTokenBudgetReserved is a gauge of the tokens TGI's running
	// batch reserved (its KV blocks for each request's prompt and
	// max_new_tokens, shared prefix blocks once per request): a
	// reservation, not KV in use; tokens.
	ExtraTokenBudgetReserved = "token_budget_reserved_tokens"
	// ExtraTokenBudgetMax is a gauge of TGI's token budget
	// (--max-batch-total-tokens, or what warmup found room for); tokens.
	ExtraTokenBudgetMax = "token_budget_max_tokens"
	// ExtraRequestCount is a counter of TGI's tgi_request_count: calls into
	// its generation routes, failures included, an OpenAI-API request
	// counted at its route and again at each generation it starts;
	// requests.
	ExtraRequestCount = "request_count_total"
	// ExtraSpeculatedTokens is a counter of tokens TGI emitted beyond the
	// first of a request's step (tgi_request_skipped_tokens' _sum:
	// speculated tokens the model accepted); tokens.
	ExtraSpeculatedTokens = "speculated_tokens_total"
	// ExtraSpeculationSteps is a counter of the request-steps those were
	// counted over (its _count: one per request per prefill or decode
	// step); steps.
	ExtraSpeculationSteps = "speculated_token_steps_total"
)

// SGLang as it is in 2026 (issue 28): the engine's time by phase, the KV
// pool's parts, prefix-cache hits by tier, work thrown away by
// retractions, speculative verify calls, and the live state's breakdown
// by priority. Kept in one block (declared by sglang2026Kinds below) so
// that other servers' names can be added beside it without conflict.
const (
	// EnginePrefillSecondsTotal is a counter of the engine's own busy time
	// in prefill forward passes (SGLang's forward_execution_seconds_total
	// {category="extend"}, averaged over data-parallel schedulers as
	// EngineBusySecondsTotal is; TGI's prefill batch calls), so that its
	// rate is a share of the wall clock; seconds.
	EnginePrefillSecondsTotal = "engine_prefill_seconds_total"
	// EngineDecodeSecondsTotal is a counter of the engine's own busy time
	// in decode forward passes (category "decode", and "target_verify"
	// under speculative decoding; TGI's decode batch calls), averaged as
	// EnginePrefillSecondsTotal; seconds.
	EngineDecodeSecondsTotal = "engine_decode_seconds_total"
	// KVCacheEvictableTokens is a gauge of KV cache holding cached
	// prefixes that no running request references, freed for new requests
	// on demand (SGLang's kv_evictable_tokens); tokens.
	KVCacheEvictableTokens = "kv_cache_evictable_tokens"
	// KVCacheFreeTokens is a gauge of KV cache holding nothing (SGLang's
	// kv_available_tokens); tokens.
	KVCacheFreeTokens = "kv_cache_free_tokens"
	// PrefixCacheHostHits is a counter of prompt tokens the prefix cache
	// had in host memory, not on the device (SGLang's hierarchical cache),
	// among PrefixCacheHits; tokens.
	PrefixCacheHostHits = "prefix_cache_host_hits"
	// PrefixCacheStorageHits is a counter of prompt tokens the prefix
	// cache had in its storage tier, among PrefixCacheHits; tokens.
	PrefixCacheStorageHits = "prefix_cache_storage_hits"

	// ExtraRetractedPromptTokens is a counter of prompt tokens of requests
	// retracted (preempted) while they ran, whose KV was dropped and is
	// computed again when they resume (SGLang's
	// num_retracted_input_tokens_total); tokens.
	ExtraRetractedPromptTokens = "retracted_prompt_tokens_total"
	// ExtraRetractedGeneratedTokens is a counter of generated tokens of
	// retracted requests, whose KV is computed again as prompt when they
	// resume (num_retracted_output_tokens_total); tokens.
	ExtraRetractedGeneratedTokens = "retracted_generated_tokens_total"
	// ExtraSpecVerifyCalls is a counter of speculative decoding's verify
	// forward passes, summed over finished requests (SGLang's
	// spec_verify_calls_total): generated tokens over it is SGLang's
	// acceptance length, the bonus token included; passes.
	ExtraSpecVerifyCalls = "spec_decode_verify_calls_total"
	// ExtraPausedRequests is a gauge of requests SGLang paused for a
	// weight update (num_paused_reqs), as its last log interval counted
	// them; requests.
	ExtraPausedRequests = "paused_requests"
	// ExtraContextLength is a gauge of the most tokens one request may
	// hold, prompt and generation together (SGLang's context_len); tokens.
	ExtraContextLength = "context_length"
	// ExtraRunningByPriority prefixes a gauge of requests running at one
	// priority (SGLang with --enable-priority-scheduling); part of
	// RequestsProcessing, never added to it; requests.
	ExtraRunningByPriority = "running_priority:"
	// ExtraQueuedByPriority prefixes a gauge of requests waiting at one
	// priority, part of RequestsDeferred; requests.
	ExtraQueuedByPriority = "queued_priority:"
	// ExtraKVPoolUsage prefixes a gauge of a hybrid model's other KV pool
	// in use over its size ("swa", "mamba"), beside the full-attention
	// pool the KV cache figures are; a fraction 0..1.
	ExtraKVPoolUsage = "kv_pool_usage:"
)

// sglang2026Kinds are the kinds of the block above, merged into the
// tables at init.
var sglang2026Kinds = map[string]Kind{
	EnginePrefillSecondsTotal: Counter, EngineDecodeSecondsTotal: Counter,
	KVCacheEvictableTokens: Gauge, KVCacheFreeTokens: Gauge,
	PrefixCacheHostHits: Counter, PrefixCacheStorageHits: Counter,
}

var sglang2026ExtraKinds = map[string]Kind{
	ExtraRetractedPromptTokens: Counter, ExtraRetractedGeneratedTokens: Counter, ExtraSpecVerifyCalls: Counter,
	ExtraPausedRequests: Gauge, ExtraContextLength: Gauge,
	ExtraRunningByPriority: Gauge, ExtraQueuedByPriority: Gauge, ExtraKVPoolUsage: Gauge,
}

func init() {
	for k, v := range sglang2026Kinds {
		declared[k] = v
	}
	for k, v := range sglang2026ExtraKinds {
		declaredExtra[k] = v
	}
}

// Extra keys of the servers issue 28 added (NVIDIA Dynamo's frontend):
// what a router in front of engines sees of the requests it holds, which
// is neither an engine's running batch nor its queue.
const (
	// ExtraRequestsInFlight is a gauge of requests a frontend has accepted
	// and not yet answered in full, wherever they are (routed and queued
	// at a worker, prefilling, or generating); requests.
	ExtraRequestsInFlight = "requests_in_flight"
	// ExtraRequestsAwaitingFirstToken is a gauge of the requests in flight
	// that have had no token yet (queued at a worker or prefilling), among
	// ExtraRequestsInFlight; requests.
	ExtraRequestsAwaitingFirstToken = "requests_awaiting_first_token"
)

// Kind is what a canonical name holds.
type Kind uint8

const (
	// Counter only rises; a fall is a restart of the server's count.
	Counter Kind = iota + 1
	// Gauge is a reading at the scrape.
	Gauge
	// Histogram is a Histograms entry: buckets, sum and count.
	Histogram
)

func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	}
	return "unknown"
}

// declared is every canonical Scalars and Histograms name with its kind.
var declared = map[string]Kind{
	PromptTokensTotal: Counter, PromptTokensAll: Counter, CachedTokensTotal: Counter,
	PrefixCacheQueries: Counter, PrefixCacheHits: Counter, PromptSecondsTotal: Counter,
	TokensPredictedTotal: Counter, TokensPredictedSecondsTotal: Counter, RequestsTotal: Counter, EngineBusySecondsTotal: Counter,
	NTokensMax: Counter, TokensPredictedMax: Counter,
	PredictedTokensSeconds: Gauge, PromptTokensSeconds: Gauge,

	RequestsProcessing: Gauge, RequestsDeferred: Gauge, ProcessStartTimeSeconds: Gauge,
	KVCacheUsageRatio: Gauge, KVCacheTokens: Gauge, KVCacheMaxTokens: Gauge,
	LiveStateAgeSeconds: Gauge, LiveStateFailuresTotal: Counter,

	SpecDecodeNumDraftTokensTotal: Counter, SpecDecodeNumAcceptedTokensTotal: Counter,
	SpecDecodeNumDecodeStepsTotal: Counter, SpecDecodeRequestsTotal: Counter,
	SpecDecodeDraftAcceptanceRate: Gauge, SpecDecodeMeanAcceptedLength: Gauge, SpecDecodeTokensPerStep: Gauge,

	KVOffloadBytes: Gauge, KVOffloadMaxBytes: Gauge, KVOffloadTokens: Gauge, KVOffloadMaxTokens: Gauge,
	KVOffloadUsageRatio: Gauge, KVOffloadStoresTotal: Counter, KVOffloadDedupedStoresTotal: Counter,
	KVOffloadEvictionsTotal: Counter, KVOffloadReadBytesTotal: Counter, KVOffloadWrittenBytesTotal: Counter,
	KVOffloadRestoredTokensTotal: Counter, KVOffloadColdAllocsTotal: Counter,

	RecurrentCacheBytes: Gauge, RecurrentCacheMaxBytes: Gauge, RecurrentCacheUsageRatio: Gauge,
	RecurrentCheckpoints: Gauge, RecurrentCheckpointBytes: Gauge, RecurrentCacheEvictionsTotal: Counter,
	RecurrentCacheLiveKVEvictionsTotal: Counter, RecurrentCacheStrandedEvictionsTotal: Counter,
	RecurrentCachePrunedTotal: Counter, RecurrentStrandedByKVTotal: Counter, RecurrentCappedTokensTotal: Counter,

	TimeToFirstTokenSeconds: Histogram, E2ERequestLatencySeconds: Histogram, RequestQueueTimeSeconds: Histogram,
	RequestPrefillTimeSeconds: Histogram, RequestDecodeTimeSeconds: Histogram, InterTokenLatencySeconds: Histogram,
	RequestTimePerOutputTokenSeconds: Histogram, RequestPromptTokens: Histogram, RequestGenerationTokens: Histogram,
	SpecDecodeAcceptanceRate: Histogram,
}

// declaredExtra is every Extra key (prefixes end in ":") with its kind.
var declaredExtra = map[string]Kind{
	ExtraPreemptions: Counter, ExtraFinishedReason: Counter, ExtraFailedReason: Counter,
	ExtraAbortedRequests: Counter, ExtraKVBlockSize: Gauge, ExtraKVNumBlocks: Gauge,
	ExtraSpecDecodeDrafts: Counter, ExtraAcceptedPerPosition: Counter, ExtraBusySlotsPerDecode: Gauge,
	ExtraDecodeCalls: Counter, ExtraLargestSequence: Counter, ExtraSlotPrefillSpeed: Gauge,
	ExtraSlotDecodeSpeed: Gauge, ExtraCacheHitRateGauge: Gauge, ExtraGenThroughputGauge: Gauge,

	// Servers as they are now (issue 28).
	ExtraAdmissionRejections: Counter, ExtraAdmissionRejectionsBy: Counter, ExtraWaitingDeferred: Gauge,
	ExtraSleepState: Gauge, ExtraStepTokens: Counter, ExtraEngineSteps: Counter,
	ExtraKVOffloadLoadSeconds: Counter, ExtraKVOffloadStoreSeconds: Counter,
	ExtraTokenBudgetReserved: Gauge, ExtraTokenBudgetMax: Gauge, ExtraRequestCount: Counter,
	ExtraSpeculatedTokens: Counter, ExtraSpeculationSteps: Counter,
	ExtraRequestsInFlight: Gauge, ExtraRequestsAwaitingFirstToken: Gauge,
}

// Name is what a canonical name is declared as.
type Name struct {
	Kind Kind
	// Extra says the name is a key of Snapshot.Extra, not of Scalars or
	// Histograms.
	Extra bool
}

// Declared returns what a canonical name is declared as: a Scalars or
// Histograms name, or an Extra key (a labelled one, "finished_reason:stop",
// by its prefix). ok is false for a name not declared here.
func Declared(name string) (n Name, ok bool) {
	if k, ok := declared[name]; ok {
		return Name{Kind: k}, true
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		if i == len(name)-1 {
			return Name{}, false // a prefix alone names no figure
		}
		name = name[:i+1]
	}
	k, ok := declaredExtra[name]
	return Name{Kind: k, Extra: true}, ok
}
