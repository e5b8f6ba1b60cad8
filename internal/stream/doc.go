// Package stream is inferscope's one reader of an inference server's
// answers: OpenAI-compatible server-sent events (chat and completions
// chunks), Ollama's NDJSON lines, and either API's whole (non-streamed)
// JSON body. The proxy reads a copy of every answer it forwards with it,
// and the bench reads the answers to its own requests with it, so that the
// two never disagree on what an event is.
//
// # Events
//
// A [Reader] cuts the body into lines as the bytes arrive (a line may
// span reads, a read may hold many lines; "\r\n" ends a line as "\n"
// does) and calls its [Handler] with an [Event] for each:
//
//   - Data: a chunk or line decoded. Content says it carries generated
//     tokens: text, reasoning or a tool call. A role-only first chunk, an
//     empty delta, a finish chunk with an empty delta or a usage-only
//     chunk does not; comments (": keep-alive"), event names and ids are
//     not events at all. A chunk that carries several tokens (speculative
//     decoding, a server that batches its flushes) is one event: counting
//     events counts chunks, not tokens.
//   - Usage, Timings (llama.cpp), Final (Ollama's last line) and Finish
//     ride on the events that carry them; a stream's usage is the last
//     one seen (servers put it on a usage-only chunk before [DONE], or on
//     the finish chunk).
//   - Error: an error object in an answer whose status said 200 (vLLM and
//     SGLang write {"error": {...}} mid-stream; Ollama {"error": "..."}).
//   - Done: SSE's "data: [DONE]". A stream that ends without it (and
//     without a finish reason or Ollama's done) was cut.
//   - Skipped: a line over [MaxLine] (or a whole answer over the
//     reader's bound) passed unread: whatever it said is lost.
//   - Malformed: a line or answer that is not its API's JSON.
//
// The reader holds at most one line (or the whole answer) and never
// fails: what a server sends is data, not instructions. Counts and times
// a server reports are read as [Count] and [Phase] values that say
// whether they can be true (a negative or fractional count, a time over a
// day), never clamped.
//
// A handler that needs only the end of an answer (the proxy, once it has
// its first token) settles, and the lines that cannot say more are then
// passed by a scan of a few bytes, not decoded.
package stream
