// Package workload is what the bench sends: each request's body for the
// target's API, and the lengths it was meant to have.
//
// A [Source] gives request i as a pure function of i and its seed
// (math/rand/v2's PCG seeded with the run's seed and i), so that the same
// seed gives the same requests in the same order whatever the
// concurrency, and a sweep can run many steps from one source.
package workload

import "github.com/inferscope/inferscope/internal/stream"

// Request is one request to send.
type Request struct {
	// Body is the JSON body for the target's API, asking for a streamed
	// answer (and for usage, on OpenAI's APIs).
	Body []byte
	// PromptTokens is the prompt's length as intended, in the server's
	// tokens where it was aligned with the server's /tokenize, else as
	// calibrated from its reported usage or estimated; -1 unknown (a
	// dataset prompt not measured). The achieved length is the server's
	// usage, which the bench reports beside it.
	PromptTokens int
	// OutputTokens is the output length asked for (max_tokens or
	// num_predict); 0 none.
	OutputTokens int
	// Fixed says the output length was asked to be exact (ignore_eos,
	// min_tokens where the API has them): an earlier stop is a validity
	// flag.
	Fixed bool
}

// Source gives a run's requests: request i of the run, for any i ≥ 0.
// Next must be safe to call from several goroutines and return the same
// request for the same i.
type Source interface {
	Next(i int) Request
}

// Shape is what every body of a run has in common.
type Shape struct {
	API   stream.API
	Model string
}
