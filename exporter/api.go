package exporter

import "time"

// Generation is one finished generation, recorded once when it completes.
//
// A server records every field. A source that sees only part of it (a proxy
// in front of a server that publishes no metrics) says what it does not
// know in Unknown: an unknown figure is left out, never counted as 0 (see
// [Quantity]).
type Generation struct {
	PromptTokens, CachedTokens, GeneratedTokens int
	Queue, Prefill, Decode                      time.Duration
	Draft                                       *DraftTally // nil: no drafter served it

	// TTFT and E2E are the time to first token and the whole request time
	// when measured directly (by a proxy, from the request's arrival). Zero
	// means "derive them": Queue+Prefill and Queue+Prefill+Decode, when
	// those phases are known.
	TTFT, E2E time.Duration
	// Unknown lists the figures above that the source did not report.
	Unknown Quantity
	// Model is the model that served the generation. With
	// [Options.PerModel] its series carry the label model="<Model>";
	// otherwise it is ignored.
	Model string
}

// Quantity is a set of figures a source may not know. In a [Generation]
// it lists what that generation did not report; in [Options.Unknown],
// what the source never reports.
//
// An unknown figure is never published as 0, and never added as 0:
//   - each series sums the generations that reported the figures it is
//     built from (its population); requests_total counts every generation,
//     and a histogram's _count is its own population, so a reader sees
//     how many generations each series covers;
//   - a series whose figure some generation did not report is published
//     once a generation did report it (a series whose figures were never
//     unknown is published from the start, at 0);
//   - prompt_tokens_all_total (every reported prompt token, cached or not)
//     is published once a generation reported its prompt but not the
//     cached part; prompt_tokens_total, cached_tokens_total and the
//     prefix-cache pair cover the generations that reported both;
//   - predicted_tokens_seconds is the tokens over the decode time of the
//     generations that reported both;
//   - the engine's groups (UnknownRunning …) are left out of the
//     exposition when named in [Options.Unknown].
type Quantity uint32

// The figures of a generation.
const (
	UnknownQueue     Quantity = 1 << iota // Queue: request_queue_time_seconds
	UnknownPrefill                        // Prefill: prompt_seconds_total, request_prefill_time_seconds
	UnknownDecode                         // Decode: tokens_predicted_seconds_total, request_decode_time_seconds
	UnknownTTFT                           // time to first token: time_to_first_token_seconds
	UnknownE2E                            // whole request time: e2e_request_latency_seconds
	UnknownPrompt                         // PromptTokens (and so every prompt series)
	UnknownCached                         // CachedTokens: the prefix-cache split
	UnknownGenerated                      // GeneratedTokens
	UnknownDraft                          // whether a drafter served it: the spec_decode_* series

	// The engine's live state, for [Options.Unknown] only.
	UnknownRunning   // ActiveJobs: requests_processing
	UnknownWaiting   // PendingJobs: requests_deferred
	UnknownKVCache   // the kv_cache_* gauges
	UnknownOffload   // the kv_offload_* series
	UnknownRecurrent // the recurrent_* series
	// UnknownStart leaves out process_start_time_seconds and the
	// Process-Start-Time-Unix header: for a source whose clock is not the
	// wall clock (a simulation run faster than real time), whose requests'
	// times no wall-clock uptime can hold.
	UnknownStart
)

// generationQuantities are the Quantity bits a Generation can carry.
const generationQuantities = UnknownQueue | UnknownPrefill | UnknownDecode | UnknownTTFT | UnknownE2E |
	UnknownPrompt | UnknownCached | UnknownGenerated | UnknownDraft

// ModelLabel is the label that carries [Generation.Model] with
// [Options.PerModel].
const ModelLabel = "model"

// OtherModel is the model label value of generations of models beyond
// [Options.MaxModels]: the label's values are bounded whatever names the
// caller passes.
const OtherModel = "(other)"

// DraftTally counts a drafted request's proposals. A non-nil tally with both
// fields zero still counts as a drafted request ("absent is not zero").
type DraftTally struct{ Accepted, Rejected int }

// Engine reports the engine's live state at scrape time.
//
// The exporter calls Live on a goroutine of its own, at most one call at a
// time, and never from inside RecordGeneration, so Live may take locks the
// generation loop holds. A scrape that starts a call waits for it at most
// [Options.LiveTimeout]; scrapes arriving while that call is outstanding
// share that one wait and, once it has run out, answer at once. A call that
// is abandoned keeps running; its reading, if it ever returns, becomes the
// last good one. A panic inside Live is recovered and counts as a failed
// reading. A scrape that gets no fresh reading serves the last good one (the
// zero Live, an idle engine with no model, before any), with
// <ns>:live_state_age_seconds set to its age in seconds (0 when fresh) and
// <ns>:live_state_failures_total counting such scrapes.
//
// Live must not keep or later modify the pointers it returns after
// returning: the exporter copies the reading, so an engine may reuse its
// structs for the next call.
type Engine interface{ Live() Live }

// Live is the engine's state at one instant. Every field is read as the
// engine reports it: used amounts are published even when they exceed their
// capacity (an overrun is what an operator must see, and usage ratios then
// read above 1); only a negative count or size, which cannot be true, reads
// as 0.
//
// "Gauge" fields are a current level; "running total" fields only rise
// while the engine's generator lives and restart from zero when it is
// recreated (a model reload, or recovery from an error), which readers treat
// as a counter reset.
type Live struct {
	// ActiveJobs is a gauge: requests being processed now (jobs).
	ActiveJobs int
	// PendingJobs is a gauge: requests queued and not yet started (jobs).
	PendingJobs int
	// PageSize is the KV cache's page size in tokens: a constant of the
	// loaded model, used to turn every page count below into tokens. 0 when
	// no model is loaded.
	PageSize int
	// KVPages is a gauge: the KV cache's capacity, in pages.
	KVPages int
	// KVReferencedPages is a gauge: pages referenced by in-flight jobs.
	// Unreferenced pages may hold reusable prefixes but are evictable, so
	// they count as headroom, not usage.
	KVReferencedPages int
	// KVOnlyPages is a running total, in pages: pages with valid K/V that
	// were prefilled again for lack of a recurrent checkpoint (published as
	// tokens, × PageSize). Read from the page table, so published even when
	// Recurrent is nil.
	KVOnlyPages uint64
	// StrandedByKV is a running total, in checkpoints: recurrent
	// checkpoints stranded because the KV page anchoring them was evicted.
	StrandedByKV uint64
	// Offload is the system-RAM KV offload cache; nil when offloading is off
	// (its series are then published at zero).
	Offload *OffloadStats
	// Recurrent is the recurrent checkpoint cache of a hybrid model; nil on a
	// pure transformer or when it cannot be read (its series are then
	// published at zero).
	Recurrent *RecurrentStats
}

// OffloadStats is the state of the system-RAM KV offload cache. A slot
// holds one KV page image, and one transfer moves one whole slot.
type OffloadStats struct {
	// Slots is a gauge: pages held in system RAM now (slots).
	Slots int
	// MaxSlots is a gauge: the cache's capacity, in slots.
	MaxSlots int
	// SlotBytes is the size of one slot in bytes: a constant of the
	// configuration, used to turn slot counts into bytes.
	SlotBytes int64
	// Stores is a running total, in pages: pages copied from VRAM to RAM.
	Stores uint64
	// DedupedStores is a running total, in pages: stores skipped because the
	// page was already held.
	DedupedStores uint64
	// Restores is a running total, in pages: pages read back from RAM
	// instead of being prefilled again.
	Restores uint64
	// Evictions is a running total, in pages: pages dropped from RAM to make
	// room.
	Evictions uint64
	// ColdAllocs is a running total, in stores: stores that had to pin
	// memory synchronously on the generator's thread (a stall).
	ColdAllocs uint64
}

// RecurrentStats is the state of the recurrent-checkpoint cache of a hybrid
// model.
type RecurrentStats struct {
	// Checkpoints is a gauge: checkpoints held in system RAM now.
	Checkpoints int
	// Bytes is a gauge: system RAM holding them now, in bytes. It may exceed
	// MaxBytes, and is published as it is.
	Bytes int64
	// MaxBytes is a gauge: the cache's budget, in bytes.
	MaxBytes int64
	// Evictions is a running total, in checkpoints: checkpoints dropped to
	// make room.
	Evictions uint64
	// StrandedEvictions is a running total, in checkpoints: evicted ones
	// that had already lost their anchor KV page (free).
	StrandedEvictions uint64
	// LiveKVEvictions is a running total, in checkpoints: evicted ones whose
	// anchor KV page was still cached (costly).
	LiveKVEvictions uint64
	// Pruned is a running total, in checkpoints: unresumable ones reclaimed
	// while the generator was idle (free).
	Pruned uint64
}
