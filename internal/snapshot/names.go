package snapshot

// Canonical names added since the first dialects; the older ones are still
// literals where they are used (issue 11 declares them all here).
const (
	// PromptTokensAll is a counter of every prompt token of finished requests,
	// cached and computed alike (vLLM's and SGLang's own prompt_tokens_total).
	// The report uses it only where the computed share (prompt_tokens_total)
	// is unknown, and then says the cached share is unknown.
	PromptTokensAll = "prompt_tokens_all_total"
)
