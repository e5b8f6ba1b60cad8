// Package snapshot defines one scrape of an inference server translated into
// canonical quantities: scalars and histograms keyed by their tabbyAPI names
// without the "tabbyapi:" prefix, whatever server produced them.
package snapshot

import (
	"fmt"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/histogram"
)

// Snapshot is one scrape in canonical form.
type Snapshot struct {
	Source string // URL, file path or "-" for stdin
	// AnsweredJSON is the URL first scraped when it answered JSON and the
	// text came from another path of the same server, Source
	// (trtllm-serve's /metrics and /prometheus/metrics); "" otherwise.
	AnsweredJSON string
	Dialect      string    // "tabbyapi", "vllm", "aphrodite", "llamacpp", "sglang", "tgi", "trtllm", "dynamo", "lmdeploy"
	ScrapedAt    time.Time // when the scrape completed (or the time saved with a file)
	// TimeSource says how ScrapedAt is known: scrape.TimeScrape, TimeSaved,
	// TimeMtime (a file's modification time, taken as the scrape time),
	// TimeNow (stdin read now) or TimeGiven (--at).
	TimeSource string
	// TimeUnknown says why ScrapedAt is zero where a file claimed a time
	// that cannot be its scrape's (scrape.Result.TimeUnknown).
	TimeUnknown   string
	ScrapeSeconds float64 // how long the scrape waited; 0 for files
	HeaderStart   float64 // Process-Start-Time-Unix header, Unix seconds; 0 when absent
	// StartToken is that header's raw value: llama.cpp's is a monotonic
	// clock, no time at all, but it still changes when the server restarts.
	StartToken string
	Scalars    map[string]float64
	Histograms map[string]*histogram.Histogram
	// Extra holds dialect-only figures with no canonical counterpart
	// (e.g. vLLM preemptions), keyed by their own names.
	Extra map[string]float64
	// Missing lists canonical quantities a person would expect that this
	// server does not publish, each with why (rendered as dim lines).
	Missing []string
	// Invalid lists series whose published values cannot be (a counter
	// below zero, cumulative buckets that fall, a _count below its top
	// bucket, a negative _sum, ±Inf, a ratio far above 1): each is left out of
	// every figure, and the report names it in a note.
	Invalid []Problem
	// Advice is what the dialect knows about its server that notes need:
	// why a scrape waits, the knobs to turn. Empty fields: nothing to say.
	Advice Advice
	// PrefixCaching is "off" when the server says prefix caching is
	// disabled (every prompt token is computed), "on" when it says it is
	// enabled, "" when it does not say.
	PrefixCaching string
	// Via names what measured the figures when it is not the server itself
	// ("inferscope proxy": the upstream API's own timings and counts, and
	// none of the engine's state); "" for the server's own /metrics.
	Via string
	// Upstream names the server behind that proxy, as a dialect name
	// ("llamacpp"), when its answers said what it is; "" otherwise.
	Upstream string
	// Models lists the models the scrape serves when a dialect labels them.
	Models []string
	// Model names the model the report covers ("" = all together).
	Model string
	// Raw keeps the server's own families, for JSON "raw".
	Raw []*dto.MetricFamily
	// Parts are the units the figures add up from, each read on its own,
	// where the server has more than one (breakdown.go); nil otherwise.
	Parts []Part
	// Slots is llama.cpp's /slots answer, nil where it was not asked for
	// (another server, a file).
	Slots *Slots
	// GPU is the reading of the GPUs the engine runs on, taken beside
	// this scrape (--gpu, or a dcgm-exporter found beside the target); nil
	// where none was asked for or found.
	GPU *GPUs
}

// Scalar returns a scalar and whether it is present and finite.
func (s *Snapshot) Scalar(name string) (float64, bool) {
	v, ok := s.Scalars[name]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Get returns a scalar, 0 when absent or not finite. Use it only where the
// metric set defines absence as 0; a figure must check Scalar.
func (s *Snapshot) Get(name string) float64 {
	v, _ := s.Scalar(name)
	return v
}

// Hist returns a histogram or nil.
func (s *Snapshot) Hist(name string) *histogram.Histogram {
	return s.Histograms[name]
}

// StartTime is the process start as published: the
// process_start_time_seconds series, else the Process-Start-Time-Unix
// header, else 0. A change of it says the server restarted, whatever clock
// it is on; as a time (an uptime, when a restart happened) only
// [Snapshot.Start] may be used.
func (s *Snapshot) StartTime() float64 {
	if v, ok := s.Scalar(ProcessStartTimeSeconds); ok && v > 0 {
		return v
	}
	return s.HeaderStart
}

// FirstStart is 2015-01-01T00:00:00Z: no server inferscope reads ran
// before it, so a start time earlier than that is some other clock (a
// monotonic one counted from boot, read in the wrong unit).
const FirstStart = 1420070400

// StartSkew is how far a start time may lie after the scrape and still be
// taken as one: the server's clock may run a little ahead of ours.
const StartSkew = time.Minute

// Start is the process start in Unix seconds, from the
// process_start_time_seconds series, else the Process-Start-Time-Unix
// header; 0 when neither is published, or when the one published cannot
// be this process's start, and then why says why ("" when none was
// published). A start cannot be before [FirstStart], after the scrape
// (beyond [StartSkew]), or so recent that a request the histograms
// observed could not have run since: a request of at least 60 s rules out
// a process up for 3 s. A start within the skew after the scrape is the
// scrape time: the server had just started.
func (s *Snapshot) Start() (start float64, why string) {
	start, what := s.HeaderStart, "the start header"
	if v, ok := s.Scalar(ProcessStartTimeSeconds); ok && v > 0 {
		start, what = v, "process_start_time_seconds"
	}
	if start <= 0 {
		return 0, ""
	}
	at := float64(s.ScrapedAt.UnixNano()) / 1e9
	switch {
	case start < FirstStart:
		return 0, what + " is before 2015, so not a wall-clock time"
	case s.ScrapedAt.IsZero():
		return start, ""
	case start > at+StartSkew.Seconds():
		return 0, what + " is after the scrape"
	}
	start = math.Min(start, at)
	if longest := s.LongestRequest(); at-start < longest {
		return 0, fmt.Sprintf("%s gives %.0f s of uptime, but a request took at least %.0f s", what, at-start, longest)
	}
	return start, ""
}

// requestHists are the histograms of one request's whole time or a part
// of it: none of their observations can be longer than the process has
// been up.
var requestHists = []string{
	E2ERequestLatencySeconds, TimeToFirstTokenSeconds, RequestQueueTimeSeconds,
	RequestPrefillTimeSeconds, RequestDecodeTimeSeconds,
}

// LongestRequest is the least the longest request observed can have
// taken, in seconds: the lower edge of the highest occupied bucket of any
// request-time histogram; 0 when none is published.
func (s *Snapshot) LongestRequest() float64 {
	longest := 0.0
	for _, name := range requestHists {
		h := s.Hist(name)
		if h == nil {
			continue
		}
		prev, below := 0.0, 0.0
		for _, b := range h.Buckets {
			if b.Count > prev {
				longest = math.Max(longest, below)
			}
			prev = b.Count
			if !math.IsInf(b.UpperBound, 1) {
				below = b.UpperBound
			}
		}
	}
	return longest
}

// Problem is one invalid series and why.
type Problem struct {
	Series string // the series as published, name and labels
	Reason string // what is wrong with it, lower case, no period
}

// WhySlow says why a scrape of this server waited: the server's own reason
// where the dialect knows one, else that it was slow to answer.
func (a Advice) WhySlow() string {
	if a.SlowScrape != "" {
		return a.SlowScrape
	}
	return "the server was slow to answer"
}

// Advice is one server's wording for the notes that depend on the server:
// why something happens there and the knobs to turn. A dialect fills what
// applies to the series it reads; an empty field makes the note say it in
// general terms.
type Advice struct {
	// SlowScrape explains why this server can make a scrape wait
	// ("tabbyAPI renders /metrics on the loop that drives generation").
	SlowScrape string
	// Preempted names what the server calls a preemption ("preempted",
	// "retracted"), Preemptions the row that counts them ("retractions"),
	// and PreemptFix the knobs that make them rarer.
	Preempted, Preemptions, PreemptFix string
	// QueueFix names the knobs that admit more requests at once, for a queue
	// that outgrows what runs.
	QueueFix string
	// KVFix names the knobs that give the KV cache more room.
	KVFix string
	// OffloadBudget names the setting that sizes the KV offload cache in
	// system RAM ("sysmem_kv_cache"), which thrashing advice raises.
	OffloadBudget string
	// ColdAlloc says what a store that pins memory synchronously costs
	// ("about 2.5 GB/s on the generator's own thread: a stall").
	ColdAlloc string
	// RecurrentBudget names the setting that sizes the recurrent
	// checkpoint cache ("sysmem_recurrent_cache").
	RecurrentBudget string
	// AdmissionLimit names the settings that refuse requests before they
	// queue, and what each caps (vLLM's --max-num-queued-reqs and
	// --max-num-queued-tokens).
	AdmissionLimit string
	// QueueDeferred says what a queue deferred rather than waiting for
	// capacity waits on, and what shortens it (vLLM's LoRA budget, KV
	// transfers).
	QueueDeferred string
	// EngineBusy says what the engine's busy time measures ("GPU execution
	// time"); empty is SGLang's wording.
	EngineBusy string
	// Wake says how a sleeping engine is woken (vLLM's POST /wake_up).
	Wake string
	// FailedWhy says where the reason a request failed is published, for
	// an alert on failing requests ("the err label of tgi_request_failure
	// says why").
	FailedWhy string
}
