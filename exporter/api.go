package exporter

import "time"

// Generation is one finished generation, recorded once when it completes.
type Generation struct {
	PromptTokens, CachedTokens, GeneratedTokens int
	Queue, Prefill, Decode                      time.Duration
	Draft                                       *DraftTally // nil: no drafter served it
}

// DraftTally counts a drafted request's proposals. A non-nil tally with both
// fields zero still counts as a drafted request ("absent is not zero").
type DraftTally struct{ Accepted, Rejected int }

// Engine reports the engine's live state at scrape time.
type Engine interface{ Live() Live }

// Live is the engine's state at one instant.
type Live struct {
	ActiveJobs, PendingJobs    int
	PageSize                   int             // tokens per KV page
	KVPages, KVReferencedPages int             // capacity, and pages referenced by in-flight jobs
	KVOnlyPages, StrandedByKV  uint64          // page-table counters behind the recurrent cap
	Offload                    *OffloadStats   // nil when offloading is off
	Recurrent                  *RecurrentStats // nil on a pure transformer or when unreadable
}

// OffloadStats is the state of the system-RAM KV offload cache.
type OffloadStats struct {
	Slots, MaxSlots                                        int
	SlotBytes                                              int64
	Stores, DedupedStores, Restores, Evictions, ColdAllocs uint64
}

// RecurrentStats is the state of the recurrent-checkpoint cache of a hybrid model.
type RecurrentStats struct {
	Checkpoints                                           int
	Bytes, MaxBytes                                       int64
	Evictions, StrandedEvictions, LiveKVEvictions, Pruned uint64
}
