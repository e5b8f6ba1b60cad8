package snapshot

import "time"

// Part is one unit a server's totals add up from, read on its own: a vLLM
// data-parallel engine (the engine label), an SGLang data-parallel rank
// (dp_rank). Its Snapshot is what the same dialect reads from that unit's
// series alone, so a part's figure means what the whole's does; series
// without the label are in no part.
type Part struct {
	// Label tells the units apart ("engine", "dp_rank"); Value is this
	// unit's.
	Label, Value string
	*Snapshot
	// Rates are the part's windowed figures over a watch session's last
	// interval, by rates row id ("requests", "generation"); nil outside a
	// watch, or where the interval has none. A watch sets them.
	Rates map[string]float64
}

// Whether and how llama.cpp's /slots was read: Slots.Status.
const (
	SlotsRead     = "read"     // the answer is in Slots.Slots
	SlotsOff      = "off"      // not asked for (--no-slots)
	SlotsDisabled = "disabled" // the server answered 501: started with --no-slots
	SlotsAbsent   = "absent"   // the server answered 404: no such endpoint
	SlotsFailed   = "failed"   // any other failure: Why says it
)

// Slots is llama.cpp's /slots answer, read beside its /metrics: each
// slot's request, one per slot the server was started with (-np).
type Slots struct {
	Status string
	// Why says what failed or what the server answered, for a status other
	// than SlotsRead.
	Why string
	// At is when the answer arrived.
	At    time.Time
	Slots []Slot
}

// Slot is one slot of a llama.cpp server as /slots describes it. Token
// counts are of the request running, or, on an idle slot, of the last
// one it ran (HasTask false: none yet).
type Slot struct {
	ID         int
	Ctx        int // n_ctx: the slot's context, tokens
	Processing bool
	HasTask    bool
	Task       int // id_task
	// ContextTokens is n_prompt_tokens: the tokens in the slot's context,
	// the prompt and what was generated after it so far (b10309).
	ContextTokens int
	// PromptComputed and PromptCached are n_prompt_tokens_processed and
	// n_prompt_tokens_cache: the prompt's tokens computed and taken from
	// the cache.
	PromptComputed, PromptCached int
	// Decoded and Remaining are next_token's n_decoded and n_remain:
	// tokens generated, and those left before the request's limit (-1:
	// the request has none).
	Decoded, Remaining int
	// Cleared says the server reset the request's counts when it ended
	// (llama.cpp from b10406, ggml-org/llama.cpp #26920: an idle slot's
	// computed, cached and generated tokens read 0 and n_remain -1): of
	// the last request only Task and ContextTokens are known. Every build
	// clears PromptCached at the end, so an idle slot never has it.
	Cleared bool
	// Speed is the tokens the slot generated per second since the previous
	// reading, where both readings were of this request running; nil
	// otherwise, and outside a watch (which sets it).
	Speed *float64
}
