// Package stream is inferscope's one reader of an inference server's
// answers: OpenAI-compatible server-sent events (chat and completions
// chunks), Ollama's NDJSON lines, and either API's whole (non-streamed)
// JSON body. The proxy reads a copy of every answer it forwards with it,
// and the bench reads the answers to its own requests with it, so that the
// two never disagree on what an event is.
package stream
