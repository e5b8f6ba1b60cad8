// Package probe measures a server's prefill and decode speeds under
// control: `inferscope bench --probe prefill|decode`. Production traffic
// cannot give them honestly (a server's prefill time summed per request
// decays with prefix-cache reuse, its decode time is shared with whatever
// else ran), so the probe sends the traffic that isolates each phase and
// reads the answer and the server's own account of it.
//
// # Prefill
//
// At each prompt length asked, requests go one at a time, each prompt
// unique from its first words (workload.Synthetic's UniqueFirst, under a
// seed of the probe's own), so that no prefix cache serves it, each
// asking for a few tokens (the first is the prefill's; one of them has
// text to time): its time to first token is queue-free prefill plus the
// way there and back. The first request at each length is cold
// and set aside (some engines tune kernels on the first prompt of a
// size); the next Repeat are measured. A request's speed is the tokens
// computed (prompt less any the server says it served from a cache) over
// its client TTFT, and over the server's own prefill time where it
// publishes one: the answer's timings (llama.cpp, Ollama) for that
// request, else its /metrics read before and after the request, whose
// prefill time then grew by that request's alone. A /metrics reading
// over which the server generated other tokens than the probe's (another
// client) gives no figure.
//
// # Decode
//
// At each batch size B, rounds of B requests of the same short prompt
// length and a fixed output (ignore_eos) are started together; the first
// round is cold and set aside. A request's decode speed is its output
// tokens but the first (which prefill gives) over the time from its first
// token to its last; a round's total is its requests' speeds summed: the
// batch's speed while they decode together, which holds only where they
// did (Overlap says how much of the round they did, since a server with
// fewer slots than B runs the rest after). The server's per-request
// decode speed is its generated tokens but the first over its decode
// time, from its /metrics around each round.
//
// # What reads a probe
//
// [Result] is the probe's JSON (docs/json.md). [Result.Speeds] makes it
// the analysis's [analysis.PhaseSpeeds], which the one-shot report's
// exchange-rate and break-even rows weigh in place of the server's own
// phase times where --probe-file names a probe.
package probe
