// Package load is the bench's generator: it sends a [Plan]'s requests to a
// target, closed loop (a fixed number in flight) or open loop (arrivals at
// a rate, Poisson, gamma or constant, optionally capped by a concurrency),
// reads every answer with package stream, and hands each request's
// [Record] to the caller as it ends. It keeps no record itself, so a run of
// a million requests holds only the requests in flight.
//
// # Arrivals and lateness
//
// Arrivals are scheduled on absolute times from the run's monotonic start
// ([Schedule]: each the last plus a gap; never slept relatively, so that
// lateness does not accumulate). Each request's scheduled and actual send
// times are recorded, and the pacer's lateness (sent − scheduled − any
// wait for a slot) is in the [Summary] with the generator's own CPU time:
// a generator that could not keep up is seen, never taken for the server.
// With a cap, an arrival that finds every slot busy waits in line, and the
// wait is its Record's SlotWait; arrivals still waiting when a run by
// duration ends are Dropped, counted as scheduled and not sent.
//
// # What is measured, by measurement point
//
// All times are taken on the monotonic clock in the generator's process,
// from Sent, the moment the request is handed to the HTTP transport (after
// its body was made and any slot was free):
//
//   - TTFB: the first byte of the answer's status line (httptrace's
//     GotFirstResponseByte).
//   - TTFT: the read that completed the first event carrying content
//     (text, reasoning or a tool call; a role-only chunk, a keep-alive or
//     a usage chunk is not content). vLLM's bench counts the first chunk
//     with choices, empty or not: its TTFT can be earlier.
//   - E2E: the read that completed the last content event (vLLM's and
//     AIPerf's end; GuideLLM ends at the stream's close, which is Done).
//   - Done: the answer's end of body.
//   - ITL: every gap between consecutive content events, pooled over the
//     measured requests that ended without an error in an HdrHistogram (µs,
//     3 significant figures: within 0.1%); a chunk carrying several tokens
//     is one event, so one gap. ITLSum = E2E − TTFT; TPOT is the caller's
//     (E2E − TTFT)/(OutputTokens − 1).
//   - Tokens: the server's own count (OpenAI usage, asked for with
//     stream_options.include_usage; Ollama's eval_count; llama.cpp's
//     timings), TokenSource "usage"; else the content events counted,
//     "events".
//
// Events that arrive in one read share its time: the reader cannot tell
// them apart, and neither can any client of the same socket.
//
// Errors are kinds ([ErrorKind]): an HTTP status, a timeout, a stream cut
// before its end ([DONE], Ollama's done, or a finish reason at the end of
// body), an error object inside a 200 answer, usage that cannot be true, no
// answer at all, or a request canceled when the drain ran out.
//
// Changes from the contract in bench-design.md: Record.Ollama is
// Record.Split (*Split), which holds Ollama's final counts and durations
// or llama.cpp's timings alike (Split.Source says which); ErrorKind has
// one more value, ErrStream (an error object inside a 200 answer);
// Record has Streamed and Resent; Progress has Warmup; Summary has Warmup
// (requests sent in the warm-up), SlotWait, Dropped and SendEnd; Plan has
// OnMeasure. [Probe] sends one request (checks before a run, a workload's
// calibration); [Client] is the same policy's client for the other
// requests a bench makes.
package load

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/stream"
)

// API is the endpoint requests go to (package stream's, named here too).
type API = stream.API

// The APIs.
const (
	ChatCompletions = stream.ChatCompletions
	Completions     = stream.Completions
	OllamaChat      = stream.OllamaChat
	OllamaGenerate  = stream.OllamaGenerate
)

// Target is where requests go.
type Target struct {
	// Base is scheme://host:port[/prefix]; user info in it is sent as
	// basic auth to that origin only (internal/httpsafe's policy). A path
	// that already ends with the API's path (…/v1/chat/completions) is
	// used as it is; one ending in /v1 gets the rest of an OpenAI path.
	Base    *url.URL
	API     API
	Model   string
	Headers http.Header   // sent to the origin only
	Timeout time.Duration // one request, whole; 0 none
}

// Arrival is how an open loop's arrivals are spaced.
type Arrival int

const (
	Poisson  Arrival = iota // exponential gaps (gamma of shape 1)
	Gamma                   // gamma gaps of shape Plan.Burstiness: < 1 burstier, > 1 smoother
	Constant                // equal gaps
)

// Warmup is the part of a run before the measured part: its requests are
// sent and recorded (Record.Warmup) but not counted in the Summary. It
// ends when all its given conditions are met: Requests sent, Duration
// passed, Until closed (the caller's "the server's gauges settled"); none
// given, no warm-up.
type Warmup struct {
	Requests int
	Duration time.Duration
	Until    <-chan struct{}
}

// Plan is one run of load.
type Plan struct {
	Target Target
	// Concurrency is the closed loop's size; with Rate, the cap on
	// requests in flight (0 = none): an arrival waits for a slot, and the
	// wait is recorded (Record.SlotWait), never hidden.
	Concurrency int
	Rate        float64 // requests/s; 0 = closed loop
	Arrival     Arrival
	Burstiness  float64 // gamma shape; 0 is 1 (Poisson)
	// Requests is the measured requests to send (-n); 0 = by Duration.
	Requests int
	// Duration is the measured time to send for; 0 = by Requests.
	Duration time.Duration
	Warmup   Warmup
	// Drain is how long requests in flight may finish once sending stops
	// (at the end, or on ctx's cancellation); past it they are canceled
	// (ErrorKind "canceled"). 0 waits as long as they take at the end,
	// and not at all after a cancellation.
	Drain  time.Duration
	Source workload.Source
	Seed   uint64 // the arrivals' seed (the source has its own)
	// OnMeasure, when set, is called once as the measured part starts
	// (at, from the run's start), before its first request is sent: the
	// caller's cue to scrape the server's "before". It must return
	// quickly: arrivals are not held for it.
	OnMeasure func(at time.Duration)

	// dial replaces the transport's dialer (tests: a connection that
	// timestamps what the kernel received).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ErrorKind says how a request failed; "" is none.
type ErrorKind string

const (
	ErrHTTP         ErrorKind = "http"          // a status other than 200
	ErrTimeout      ErrorKind = "timeout"       // Target.Timeout passed
	ErrCut          ErrorKind = "cut"           // the answer ended before its end ([DONE], done, finish)
	ErrInvalidUsage ErrorKind = "invalid_usage" // usage that cannot be true
	ErrConnect      ErrorKind = "connect"       // no answer: refused, reset, unreachable
	ErrCanceled     ErrorKind = "canceled"      // stopped by the run (drain over)
	ErrStream       ErrorKind = "stream"        // an error object in the answer
)

// Split is the server's own account of one request's phases where its
// answer carries one: Ollama's last line (load_duration,
// prompt_eval_duration, eval_duration and counts) or llama.cpp's timings
// (prompt_ms, predicted_ms, cache_n, prompt_n, predicted_n).
type Split struct {
	Source          string        // "ollama" or "llama.cpp"
	Load            time.Duration // Ollama's model load; -1 not said
	Prefill, Decode time.Duration // -1 not said
	PromptTokens    int           // prompt tokens, cached included; -1 not said
	CachedTokens    int           // -1 not said
	GeneratedTokens int           // -1 not said
}

// Record is one request as the generator saw it. Times are offsets from
// the run's monotonic start (Scheduled, Sent) or from Sent (the rest); a
// time not reached is -1.
type Record struct {
	Index  int
	Warmup bool
	// Scheduled is when the arrival was due; Sent when the request was
	// written (after any slot wait). Scheduled = Sent in a closed loop.
	Scheduled, Sent time.Duration
	SlotWait        time.Duration // waiting for a concurrency slot (a rate with a cap)
	// From Sent: the first byte of the answer; the first event carrying
	// content (text, reasoning or a tool call); the last such event.
	TTFB, TTFT, E2E time.Duration
	Done            time.Duration // from Sent: the answer's end (the body closed)
	ContentEvents   int
	ITLMax, ITLSum  time.Duration // gaps between content events (the pooled histogram has all)
	// Tokens as the server reported them (TokenSource "usage": OpenAI's
	// usage, Ollama's counts, llama.cpp's timings), or OutputTokens
	// counted as content events ("events"; a chunk may carry several
	// tokens); -1 unknown.
	PromptTokens, OutputTokens, CachedTokens int
	TokenSource                              string
	RequestedPrompt, RequestedOutput         int // from the workload; -1 / 0 not set
	Status                                   int // HTTP status (0: no answer)
	Error                                    ErrorKind
	ErrorDetail                              string // clipped, one line
	Finish                                   string // finish_reason / done_reason
	Split                                    *Split // nil: the answer carried none
	// Streamed: the answer came as a stream (SSE or NDJSON); false for a
	// whole JSON body (a server that ignored "stream": true) or none.
	Streamed bool
	// Resent: the request went out again on a new connection, its reused
	// one having been closed by the server before it took the request
	// (the times are from the first send).
	Resent bool
}

// Progress is the run so far, for a progress line.
type Progress struct {
	Sent, InFlight, Done, Errors int
	Elapsed                      time.Duration
	// ReqRate is requests ended a second, TokRate content events a
	// second (a chunk may carry several tokens), over the last second
	// or so.
	ReqRate, TokRate float64
	Warmup           bool // still in the warm-up
}

// Lateness is how late the pacer sent the measured requests: send −
// scheduled (slot waits excluded: they are the cap's, not the pacer's).
type Lateness struct {
	Count         int
	P50, P99, Max time.Duration
	Mean          time.Duration
	Late          int // sent more than 1 ms late
}

// Summary is the run as a whole; the figures are the measured part's.
type Summary struct {
	Start time.Time // wall clock at the run's start
	// MeasuredFrom is when the measured part started (the warm-up's end),
	// -1 if it never did; MeasuredTo when its last request ended; SendEnd
	// when sending stopped. All from the run's start.
	MeasuredFrom, MeasuredTo, SendEnd time.Duration
	// Scheduled: measured arrivals due before sending stopped (in a
	// closed loop, Sent). Dropped: of those, the ones never sent (the
	// pacer behind at the end, or arrivals waiting for a slot when the
	// run ended): Scheduled = Sent + Dropped.
	Scheduled, Sent, Dropped int
	Completed, Errors        int // measured requests that ended without an error, with one
	Warmup                   int // requests sent in the warm-up
	Lateness                 Lateness
	SlotWait                 Lateness // the waits for a slot (a rate with a cap); Late counts waits over 1 ms
	// ITL pools the measured requests' gaps between content events, in
	// microseconds, 3 significant figures (relative error ≤ 0.1%).
	ITL     *hdrhistogram.Histogram
	CPU     time.Duration // the generator process's user+sys CPU over the run
	Partial bool          // interrupted
}
