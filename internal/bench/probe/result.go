package probe

import (
	"github.com/inferscope/inferscope/internal/report"
)

// Schema is the version of a probe's JSON (docs/json.md).
const Schema = 1

// The probes.
const (
	Prefill = "prefill"
	Decode  = "decode"
)

// Where a server-side speed comes from ([PrefillPoint.ServerFrom],
// [DecodePoint.ServerFrom]).
const (
	// FromTimings is the answer's own account of the request (llama.cpp's
	// timings, Ollama's durations): one figure per request.
	FromTimings = "timings"
	// FromMetrics is the server's /metrics read before and after each
	// request (prefill) or each round (decode): its prefill or decode
	// time over the requests the probe alone sent.
	FromMetrics = "metrics"
)

// Result is one probe run: prefill speed by prompt length, decode speed
// by batch size, or both, as measured under control (one request at a
// time; a round of requests started together). Text and JSON are two
// renderings of it ([Text], [JSON]); [Read] reads the JSON back, which is
// what --probe-file takes. Every speed is tokens per second; a figure the
// probe could not have is NaN (JSON null), never 0.
type Result struct {
	Schema  int    `json:"schema"`
	Kind    string `json:"kind"` // "probe"
	Version string `json:"inferscope_version,omitempty"`
	Target  string `json:"target"`
	API     string `json:"api"`
	Model   string `json:"model"`
	// StartedAt is the probe's start (wall clock).
	StartedAt report.Time `json:"started_at"`
	// Metrics is the /metrics URL read between requests, "" where the
	// server publishes none; Dialect is the server as its /metrics reads
	// ("llamacpp", "vllm"), "" where unknown.
	Metrics string `json:"metrics"`
	Dialect string `json:"dialect"`
	// Made says how the prompts' lengths were made ("lengths aligned with
	// the server's /tokenize").
	Made string `json:"workload_made"`
	Seed uint64 `json:"seed"`
	// Repeat is the measured requests per prompt length and the measured
	// rounds per batch size, beside the cold one set aside.
	Repeat int `json:"repeat"`
	// Prefill and Decode are the two probes; nil (null) where not run.
	Prefill *PrefillProbe `json:"prefill"`
	Decode  *DecodeProbe  `json:"decode"`
	// Partial says Ctrl-C stopped the probe: what completed is reported.
	Partial bool                     `json:"partial"`
	Notes   report.List[report.Note] `json:"notes"`
}

// PrefillProbe is prefill speed at each prompt length asked: requests one
// at a time, each prompt unique from its first token so that no cache
// serves it, each answer a few tokens long.
type PrefillProbe struct {
	Points report.List[PrefillPoint] `json:"points"`
}

// PrefillPoint is one prompt length.
type PrefillPoint struct {
	// Length is the prompt length asked, in the server's tokens where the
	// prompts were aligned with its /tokenize.
	Length int `json:"length"`
	// PromptTokens and CachedTokens are the means over the measured
	// requests of the prompt tokens the server counted and of those it
	// served from a cache (NaN where its answers say none); the speeds
	// count the tokens computed, prompt less cached.
	PromptTokens report.Number `json:"prompt_tokens"`
	CachedTokens report.Number `json:"cached_tokens"`
	// Requests is the measured requests that completed, Failed those that
	// did not (neither counts the cold one).
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// Cold is the first request at this length, set aside: some engines
	// tune kernels on the first prompt of a size. Nil where it failed.
	Cold *PrefillSample `json:"cold"`
	// TTFT is the client's time to first token of the measured requests.
	TTFT Spread `json:"ttft_seconds"`
	// Client is each measured request's tokens computed over its client
	// TTFT: the network and the server's front end included.
	Client Spread `json:"client_tokens_per_second"`
	// Server is the same tokens over the server's own prefill time, where
	// it publishes one (ServerFrom says how it was read); nil otherwise.
	Server     *Spread `json:"server_tokens_per_second"`
	ServerFrom string  `json:"server_from"`
}

// PrefillSample is one request's figures (the cold one).
type PrefillSample struct {
	TTFT   report.Number `json:"ttft_seconds"`
	Client report.Number `json:"client_tokens_per_second"`
	Server report.Number `json:"server_tokens_per_second"`
}

// DecodeProbe is decode speed at each batch size asked: rounds of Batch
// requests of a short prompt and a fixed output, started together.
type DecodeProbe struct {
	// PromptTokens and OutputTokens are the lengths every request asked.
	PromptTokens int                      `json:"prompt_tokens"`
	OutputTokens int                      `json:"output_tokens"`
	Points       report.List[DecodePoint] `json:"points"`
}

// DecodePoint is one batch size.
type DecodePoint struct {
	Batch int `json:"batch"`
	// Rounds is the measured rounds whose every request completed;
	// Requests and Failed count the measured requests (a round with a
	// failure gives no total, its completed requests still a speed).
	Rounds   int `json:"rounds"`
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// EarlyStops counts the measured requests that ended before the
	// output asked (a server that does not honour ignore_eos).
	EarlyStops int `json:"early_stops"`
	// Cold is the first round at this batch size, set aside; nil where a
	// request of it failed.
	Cold *DecodeSample `json:"cold"`
	// PerRequest is each measured request's decode speed as the client
	// saw it: its output tokens but the first (which prefill gives) over
	// the time from its first token to its last.
	PerRequest Spread `json:"client_tokens_per_second"`
	// Total is each complete round's per-request speeds summed: the
	// batch's speed while its requests decode together.
	Total Spread `json:"client_total_tokens_per_second"`
	// Overlap is the least, over the rounds, share of a round's decoding
	// (its first request's first token to its last request's last) during
	// which every request of it was decoding: 1 when all decoded together
	// throughout; well below 1 when the server ran fewer at once than
	// asked, or prefilled them one after another.
	Overlap report.Number `json:"overlap"`
	// Server is each request's decode speed by the server's own decode
	// time where it publishes one (ServerFrom says how it was read: from
	// /metrics, per round); nil otherwise.
	Server     *Spread `json:"server_tokens_per_second"`
	ServerFrom string  `json:"server_from"`
}

// DecodeSample is one round's figures (the cold one): its requests'
// median decode speed, their sum, and the server's median.
type DecodeSample struct {
	PerRequest report.Number `json:"client_tokens_per_second"`
	Total      report.Number `json:"client_total_tokens_per_second"`
	Server     report.Number `json:"server_tokens_per_second"`
}

// Spread is a figure over the measured requests (or rounds): the median
// (nearest rank: a value some request had), the least and the most, and
// how many. NaN each where N is 0.
type Spread struct {
	Median report.Number `json:"median"`
	Min    report.Number `json:"min"`
	Max    report.Number `json:"max"`
	N      int           `json:"n"`
}
