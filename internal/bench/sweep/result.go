package sweep

import (
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/report"
)

// Schema is the sweep's JSON schema version (docs/json.md).
const Schema = 1

// Kind is the JSON's kind of a sweep.
const Kind = "bench_sweep"

// The profiles a sweep runs.
const (
	// ProfileConcurrency is a list of closed loops (--sweep
	// concurrency=1,4,16).
	ProfileConcurrency = "concurrency"
	// ProfileRate is a list of open loops (--sweep rate=2,4,8).
	ProfileRate = "rate"
	// ProfileAuto is the automatic profile: a synchronous step, a
	// throughput step for the ceiling, then rates spread between.
	ProfileAuto = "auto"
	// ProfileKnee is the automatic profile searching for the knee under
	// an SLO (--sweep auto --slo ...).
	ProfileKnee = "knee"
	// ProfileRepeat is one load run several times (--repeat without
	// --sweep).
	ProfileRepeat = "repeat"
)

// The phases a step belongs to.
const (
	PhaseList        = "list"        // a step of a list
	PhaseSynchronous = "synchronous" // one request at a time
	PhaseThroughput  = "throughput"  // the ceiling: many at once
	PhaseBetween     = "between"     // a rate spread between the two
	PhaseBracket     = "bracket"     // the knee search's bounds
	PhaseRefine      = "refine"      // the knee search's halving
)

// The axes a sweep's load moves along.
const (
	AxisConcurrency = "concurrency" // requests in flight (closed loops)
	AxisRate        = "rate"        // requests a second offered (open loops)
)

// Result is a sweep: every step in the order run, each step's bench runs
// (one per repeat) and their summary, and with an SLO the knee. Text,
// JSON and CSV are renderings of it; docs/json.md describes the JSON.
type Result struct {
	Schema  int    `json:"schema"`
	Kind    string `json:"kind"` // "bench_sweep"
	Version string `json:"inferscope_version,omitempty"`
	Target  string `json:"target"`
	API     string `json:"api"`
	Model   string `json:"model"`
	// StartedAt is the sweep's start (wall clock).
	StartedAt report.Time `json:"started_at"`
	// Profile is how the steps were chosen (Profile*); Axis what a step's
	// load is on the knee's scale (Axis*): concurrency for a list of
	// closed loops, else the rate.
	Profile string `json:"profile"`
	Axis    string `json:"axis"`
	// Repeat is how many runs each step has.
	Repeat int `json:"repeat"`
	// SLO is the target each step is held to; nil where none was given.
	SLO *Target `json:"slo"`
	// Steps are in the order they ran.
	Steps []Step `json:"steps"`
	// Knee is where the target stopped being met; nil without an SLO.
	Knee *Knee `json:"knee"`
	// Partial says the sweep was interrupted (Ctrl-C): the steps run are
	// reported, the last one's runs partial.
	Partial bool `json:"partial"`
	// Notes are the sweep's own (a step that started before the server
	// was idle, a knee beyond the sweep); each run's are in its report.
	Notes report.List[report.Note] `json:"notes"`
}

// Target is the SLO a step is held to: the latency limits (as --slo
// writes them) and the share of requests that must meet every one.
type Target struct {
	Limits string        `json:"limits"`
	Share  report.Number `json:"share"`
}

// Step is one load of the sweep, run Repeat times.
type Step struct {
	// Index counts the steps from 1, in the order run.
	Index int    `json:"index"`
	Phase string `json:"phase"`
	// Mode is "closed", "open" or "open, capped", as a run's load says;
	// Concurrency the closed loop's size or the open loop's cap (0:
	// none); Rate the open loop's requests a second (null in a closed
	// loop).
	Mode        string        `json:"mode"`
	Concurrency int           `json:"concurrency"`
	Rate        report.Number `json:"rate"`
	// Drains are the waits for the server to be idle before each run.
	Drains []Drain `json:"drains"`
	// Runs are the step's bench reports, one per repeat, as `bench -o
	// json` writes one run.
	Runs []*bench.Report `json:"runs"`
	// Summary states each figure over the runs with its spread.
	Summary Summary `json:"summary"`
	// TTFT is the completed requests' time to first token over every run
	// of the step, bucketed alike in every step.
	TTFT Histogram `json:"ttft_histogram"`
	// SLO is how the step fared against the target; nil without one.
	SLO *StepSLO `json:"slo"`

	// prefillSeconds and decodeSeconds are the server's request time in
	// each phase over the runs' windows (NaN: not published).
	prefillSeconds, decodeSeconds float64
}

// Drain is the wait before a run for the server's running and waiting
// requests to return to zero.
type Drain struct {
	// Seconds is how long it waited; Scrapes how many readings it took.
	Seconds report.Number `json:"seconds"`
	Scrapes int           `json:"scrapes"`
	// Idle says the server read idle before the run started; null where
	// it publishes neither gauge (or could not be read).
	Idle *bool `json:"idle"`
	// Running and Waiting are the gauges at the last reading (null where
	// not published).
	Running report.Number `json:"running"`
	Waiting report.Number `json:"waiting"`
}

// Summary is a step's figures over its runs, each with its spread.
type Summary struct {
	Runs int `json:"runs"`
	// Sent, Completed and Failed are summed over the runs.
	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// The client's figures: completed requests, output tokens and good
	// requests a second; the good share; per-request latency quantiles.
	RequestRate Spread `json:"request_rate"`
	OutputRate  Spread `json:"output_token_rate"`
	GoodputRate Spread `json:"goodput_rate"`
	GoodShare   Spread `json:"good_share"`
	TTFTP50     Spread `json:"ttft_p50"`
	TTFTP99     Spread `json:"ttft_p99"`
	TPOTP50     Spread `json:"tpot_p50"`
	TPOTP99     Spread `json:"tpot_p99"`
	E2EP50      Spread `json:"e2e_p50"`
	E2EP99      Spread `json:"e2e_p99"`
	ITLP99      Spread `json:"itl_p99"`
	// The server's, over each run's window: requests waiting on average,
	// KV usage at its highest, the mean queue and prefill time a request
	// (null where not published).
	Waiting Spread `json:"server_waiting"`
	KVPeak  Spread `json:"server_kv_peak"`
	Queue   Spread `json:"server_queue"`
	Prefill Spread `json:"server_prefill"`
	// Verdict is the runs' verdict where they agree, "mixed" where they
	// do not, "" where none had one; Verdicts are each run's.
	Verdict  string   `json:"verdict"`
	Verdicts []string `json:"verdicts"`
	// Notes are the ids of the notes any run had, sorted.
	Notes []string `json:"notes"`
}

// Spread is one figure over a step's runs: its mean, and how far the runs
// were apart. Min and Max bound every run's value; Stdev is the runs'
// sample standard deviation (null with one run). N counts the runs that
// had the figure; null everywhere where none did.
type Spread struct {
	N     int           `json:"n"`
	Mean  report.Number `json:"mean"`
	Min   report.Number `json:"min"`
	Max   report.Number `json:"max"`
	Stdev report.Number `json:"stdev"`
}

// Histogram is a per-request figure's distribution in fixed buckets:
// Counts[i] requests at or below Bounds[i] (seconds) and above the bound
// before it; the last count, one more than the bounds, is of those above
// the last bound.
type Histogram struct {
	Bounds []report.Number `json:"bounds"`
	Counts []int           `json:"counts"`
}

// StepSLO is a step against the target: its good requests (every run's)
// over every measured request that ended or was due and never sent, and
// which limit each miss broke.
type StepSLO struct {
	Good  int           `json:"good"`
	Of    int           `json:"of"`
	Share report.Number `json:"share"`
	Meets bool          `json:"meets"`
	// Missed counts the requests over each limit ("ttft", "tpot", "e2e"),
	// a request over two counted under both; "failed" the requests that
	// failed, "not_sent" the arrivals never sent.
	Missed map[string]int `json:"missed"`
}

// The reasons a knee gives for the step where the target broke.
const (
	ReasonKVCache = "kv_cache" // requests waited for KV cache pages
	ReasonQueue   = "queue"    // requests waited for the server to take them
	ReasonPrefill = "prefill"  // prefill time grew: prompts waited for compute
	ReasonDecode  = "decode"   // decode time grew: each token took longer
	ReasonErrors  = "errors"   // requests failed
	ReasonClient  = "client"   // the generator could not send the load
	ReasonUnknown = "unknown"  // the server publishes nothing that says
)

// Knee is where the target stopped being met: the highest load that met
// it, the lowest above it that did not, and the server's reason at that
// step.
type Knee struct {
	// Axis is what Load and Broke are (Axis*).
	Axis string `json:"axis"`
	// Load is the highest load whose step met the target, Step its index;
	// null and 0 where no step met it.
	Load report.Number `json:"load"`
	Step int           `json:"step"`
	// Broke is the lowest load above Load whose step missed the target,
	// BrokeStep its index; null and 0 where every step met it (the knee
	// lies beyond the sweep).
	Broke     report.Number `json:"broke"`
	BrokeStep int           `json:"broke_step"`
	// Width is Broke − Load: how closely the knee is known (null where
	// either is).
	Width report.Number `json:"width"`
	// Reason names what gave way at the step that broke (Reason*), Phase
	// the engine's larger phase there ("prefill", "decode"; "" not
	// published), Verdict that step's verdict; Why says it in words.
	Reason  string `json:"reason"`
	Phase   string `json:"phase"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}
