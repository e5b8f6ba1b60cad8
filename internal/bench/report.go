package bench

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Schema is the bench report's JSON schema version (docs/json.md).
const Schema = 1

// Report is what one run says: the client figures, the server's window as
// `--since` reads it, and the run's notes. Text and JSON are two
// renderings of it ([Text], [JSON]); docs/json.md describes the JSON.
type Report struct {
	Schema  int    `json:"schema"`
	Kind    string `json:"kind"` // "bench"
	Version string `json:"inferscope_version,omitempty"`
	Target  string `json:"target"`
	API     string `json:"api"`
	Model   string `json:"model"`
	// StartedAt is the run's start (wall clock).
	StartedAt report.Time `json:"started_at"`
	Load      Load        `json:"load"`
	// Partial says the run was interrupted (Ctrl-C): it reports what
	// completed.
	Partial bool `json:"partial"`
	// MeasuredFrom and MeasuredTo bound the measured part, in seconds
	// from the run's start (the generator's own account).
	MeasuredFrom report.Number `json:"measured_from_seconds"`
	MeasuredTo   report.Number `json:"measured_to_seconds"`
	Client       Client        `json:"client"`
	// TTFTSplit is the client's mean TTFT beside the server's mean queue
	// and prefill time over the window, and what is left: time outside
	// the engine; nil where the server publishes neither.
	TTFTSplit *TTFTSplit `json:"ttft_split"`
	SelfCheck SelfCheck  `json:"self_check"`
	// Verdict is the id of the server's verdict's note
	// ("bench_decode_bound"), "" where nothing published could give one;
	// ClientBound says the generator could not keep up (its note says
	// how), beside it.
	Verdict     string `json:"verdict"`
	ClientBound bool   `json:"client_bound"`
	// Metrics says where the server's figures come from: the URL read,
	// or "bench" where the server publishes none and the bench measured
	// its own (the proxy's metric set, fed from the answers).
	Metrics string `json:"metrics"`
	Window  Window `json:"window"`
	// Server is the server's report over the measured window, as
	// `--since` writes it: the rates between its first and last scrape
	// first, then the one-shot sections of the last, notes judged on the
	// window. Nil where the window could not be read.
	Server *report.Report           `json:"server"`
	Notes  report.List[report.Note] `json:"notes"`

	// SentUntil is when sending stopped, in seconds from the run's start:
	// samples after it are the drain's. Samples are the server's gauges
	// at each of the window's scrapes (the HTML report's charts of the
	// run); none where the window could not be read.
	SentUntil report.Number       `json:"sent_until_seconds"`
	Samples   report.List[Sample] `json:"samples"`

	// rows colours the self-check's rows.
	rows map[string]report.Severity
}

// Sample is the server's state at one of the window's scrapes, beside
// the generator's; null where the server publishes no such gauge.
type Sample struct {
	// Seconds is the scrape's time from the run's start.
	Seconds report.Number `json:"seconds"`
	Running report.Number `json:"running"`
	Waiting report.Number `json:"waiting"`
	// KVUsage is the KV cache's usage, 0 to 1, as the report reads it.
	KVUsage report.Number `json:"kv_usage"`
	// InFlight is the generator's requests in flight at the scrape.
	InFlight report.Number `json:"in_flight"`
}

// Load is the load as the run was asked to send it.
type Load struct {
	// Mode is "closed" (a fixed number in flight), "open" (arrivals at
	// a rate) or "open, capped" (a rate with a concurrency cap).
	Mode        string        `json:"mode"`
	Concurrency int           `json:"concurrency"`
	Rate        report.Number `json:"rate"`
	Arrival     string        `json:"arrival"`
	Burstiness  report.Number `json:"burstiness"`
	Requests    int           `json:"requests"`
	Duration    report.Number `json:"duration_seconds"`
	Warmup      string        `json:"warmup"`
	Drain       report.Number `json:"drain_seconds"`
	Workload    string        `json:"workload"`
	Made        string        `json:"workload_made"`
	Seed        uint64        `json:"seed"`
}

// TTFTSplit is where the client's time to first token went, over the
// requests that finished in the server's window (those its histograms
// count, the warm-up's last ones included).
type TTFTSplit struct {
	Requests int           `json:"requests"`
	Client   report.Number `json:"client"`
	Queue    report.Number `json:"queue"`
	Prefill  report.Number `json:"prefill"`
	Outside  report.Number `json:"outside"`
}

// SelfCheck is the generator's account beside the server's.
type SelfCheck struct {
	// Comparable says the counts can agree exactly; Why says why not
	// where they cannot.
	Comparable bool   `json:"comparable"`
	Why        string `json:"why,omitempty"`
	// Requests and Tokens are over the whole run, warm-up included: the
	// requests the generator completed and the server's finished delta,
	// the output tokens it received and the server's generated delta.
	Requests Compare `json:"requests"`
	Tokens   Compare `json:"tokens"`
	// Concurrency is the generator's mean requests in flight at the
	// window's scrapes beside the server's mean running and waiting.
	Concurrency Compare `json:"concurrency"`
}

// Compare is one figure counted by both sides; null where a side has
// none.
type Compare struct {
	Client report.Number   `json:"client"`
	Server report.Number   `json:"server"`
	Agree  *bool           `json:"agree"`
	Colour report.Severity `json:"-"`
}

// Window is the server's side of the run.
type Window struct {
	// Seconds is the measured window's length, from its first scrape to
	// its last; Scrapes how many were read in it, FailedScrapes how many
	// failed over the run.
	Seconds       report.Number `json:"seconds"`
	Scrapes       int           `json:"scrapes"`
	FailedScrapes int           `json:"failed_scrapes"`
	// IntervalSeconds is the samples' interval.
	IntervalSeconds report.Number `json:"interval_seconds"`
	// Settled says how the warm-up ended where the bench ended it:
	// "settled", "limit" (its limit passed first); "" otherwise.
	Settled string `json:"settled,omitempty"`
	// Why says why there is no server report, where there is none.
	Why string `json:"why,omitempty"`
}

func num(v float64) report.Number { return report.Number(v) }

// offset is a time from the run's start in seconds; NaN (null) for one
// not reached (-1).
func offset(d time.Duration) report.Number {
	if d < 0 {
		return num(math.NaN())
	}
	return num(d.Seconds())
}

// report assembles the run's report once it has ended.
func (r *runner) report(sum load.Summary) *Report {
	cfg := r.cfg
	out := &Report{
		Schema: Schema, Kind: "bench", Version: cfg.Describe.Version,
		Target: cfg.Describe.Target, API: cfg.Describe.API, Model: cfg.Describe.Model,
		StartedAt: report.Time{Time: sum.Start}, Load: loadOf(cfg), Partial: sum.Partial,
		MeasuredFrom: offset(sum.MeasuredFrom), MeasuredTo: offset(sum.MeasuredTo), SentUntil: offset(sum.SendEnd),
		Metrics: cfg.Metrics,
	}
	if r.own != nil {
		out.Metrics = "bench"
	}
	out.Client = r.tally.finishUp(sum, cfg.Cores)
	out.Client.Warmup, out.Client.Dropped = sum.Warmup, sum.Dropped
	w := r.w
	out.Window = Window{FailedScrapes: w.failures, IntervalSeconds: num(cfg.Interval.Seconds()), Seconds: num(math.NaN())}
	if w.until != nil {
		out.Window.Settled = "settled"
		if w.unsettled {
			out.Window.Settled = "limit"
		}
	}
	var d *rates.Delta
	if w.first != nil && w.last != nil && w.last != w.first {
		out.Window.Scrapes = len(w.samples)
		out.Window.Seconds = num(w.samples[len(w.samples)-1].at.Sub(w.samples[0].at).Seconds())
		label := "the " + span(time.Duration(float64(out.Window.Seconds)*float64(time.Second))) + " of the run"
		rep := cfg.Build(w.last, w.last.ScrapedAt)
		out.Server, d = rates.Session(rep, w.hist, w.first, w.last, label)
		if r.own != nil {
			out.Server.SourceKind, out.Server.Dialect = "bench", ""
		}
	} else {
		out.Window.Why = "the server's metrics could not be read after the run"
		if w.lastErr != nil {
			out.Window.Why += ": " + w.lastErr.Error()
		}
	}
	in := r.benchRun(sum, out, d)
	j := analysis.JudgeBench(in)
	out.Verdict, out.ClientBound, out.Notes, out.rows = j.Verdict, j.ClientBound, j.Notes, j.Rows
	out.SelfCheck.Requests.Colour = j.Rows["self_check/requests"]
	out.SelfCheck.Tokens.Colour = j.Rows["self_check/tokens"]
	out.SelfCheck.Concurrency.Colour = j.Rows["self_check/concurrency"]
	return out
}

func loadOf(cfg Config) Load {
	p := cfg.Plan
	l := Load{Concurrency: p.Concurrency, Rate: num(math.NaN()), Burstiness: num(math.NaN()), Requests: p.Requests,
		Duration: num(math.NaN()), Warmup: cfg.Describe.Warmup, Drain: num(p.Drain.Seconds()), Workload: cfg.Describe.Workload,
		Made: cfg.Describe.WorkloadNote, Seed: p.Seed}
	switch {
	case p.Rate <= 0:
		l.Mode = "closed"
	case p.Concurrency > 0:
		l.Mode = "open, capped"
	default:
		l.Mode = "open"
	}
	if p.Rate > 0 {
		l.Rate = num(p.Rate)
		switch p.Arrival {
		case load.Poisson:
			l.Arrival = "poisson"
		case load.Gamma:
			l.Arrival = "gamma"
			b := p.Burstiness
			if b == 0 {
				b = 1
			}
			l.Burstiness = num(b)
		case load.Constant:
			l.Arrival = "constant"
		}
	}
	if p.Duration > 0 {
		l.Duration = num(p.Duration.Seconds())
	}
	return l
}

// benchRun gathers what the table judges the run by, and fills the
// report's self-check and TTFT split on the way.
func (r *runner) benchRun(sum load.Summary, out *Report, d *rates.Delta) analysis.BenchRun {
	c := out.Client
	in := analysis.BenchRun{
		FixedOutput: r.cfg.FixedOutput, EarlyStops: c.Stopped, ContextCut: c.Cut,
		Measured: c.Sent, Errors: c.Errors, Unsettled: r.w.unsettled, WarmupLimit: units.Duration(r.cfg.Settle),
		Partial: sum.Partial, Completed: c.Completed, StoppedAt: units.Seconds(sum.SendEnd.Seconds()),
		TokensFromEvents: c.TokenSource == "events", PrefixMeant: r.cfg.PrefixMeant,
	}
	if r.cfg.Plan.Rate > 0 && c.Lateness.Count > 0 {
		v := float64(c.Lateness.P99)
		in.LateP99 = &v
	}
	if v := float64(c.CPUShare); !math.IsNaN(v) {
		in.CPUShare = &v
	}
	if r.w.last != nil {
		in.Advice = r.w.last.Advice
	}
	flight := r.inFlight(sum.Start)
	var all []analysis.BenchSample
	if d != nil {
		first := r.w.samples[0]
		sendEnd := sum.Start.Add(sum.SendEnd)
		for i, s := range r.w.samples {
			out.Samples = append(out.Samples, sampleOf(s, flight[i], sum.Start, first.at))
			smp := analysis.BenchSample{
				Seconds: s.at.Sub(first.at).Seconds(), Running: s.running, Waiting: s.waiting, KV: s.kv,
				Generated: s.generated - first.generated, Finished: s.finished - first.finished, InFlight: flight[i],
			}
			all = append(all, smp)
			// The verdict judges the load while it was sent: the drain
			// after it empties the queue whatever the server is.
			if sum.Start.IsZero() || sum.SendEnd <= 0 || !s.at.After(sendEnd) {
				in.Samples = append(in.Samples, smp)
			}
		}
		in.Preemptions = counter(d, snapshot.ExtraPreemptions)
		in.PrefillSeconds = counter(d, snapshot.PromptSecondsTotal)
		in.DecodeSeconds = counter(d, snapshot.TokensPredictedSecondsTotal)
		in.ServerQueue = histMean(d, snapshot.RequestQueueTimeSeconds)
		in.ServerPrefill = histMean(d, snapshot.RequestPrefillTimeSeconds)
		if hits, queries := counter(d, snapshot.PrefixCacheHits), counter(d, snapshot.PrefixCacheQueries); hits != nil && queries != nil && *queries > 0 {
			v := *hits / *queries
			in.PrefixHit = &v
		}
	}
	if d != nil {
		// Like with like: the server's histograms count the requests that
		// finished in the window, so the client's mean is of those too.
		first, last := r.w.samples[0].at, r.w.samples[len(r.w.samples)-1].at
		if v, n := r.ttftFinishedIn(sum.Start, first, last); n > 0 {
			in.ClientTTFT = &v
			if in.ServerQueue != nil && in.ServerPrefill != nil {
				out.TTFTSplit = &TTFTSplit{Requests: n, Client: num(v), Queue: num(*in.ServerQueue), Prefill: num(*in.ServerPrefill),
					Outside: num(v - *in.ServerQueue - *in.ServerPrefill)}
			}
		}
	}
	in.Check = r.selfCheck(sum, out, all)
	return in
}

// selfCheck sets the report's self-check and returns the table's inputs:
// the whole run, baseline to last scrape, against what the generator
// counted.
func (r *runner) selfCheck(sum load.Summary, out *Report, samples []analysis.BenchSample) analysis.BenchCheck {
	sc := &out.SelfCheck
	nan := num(math.NaN())
	sc.Requests = Compare{Client: num(float64(r.whole.completed)), Server: nan}
	sc.Tokens = Compare{Client: nan, Server: nan}
	sc.Concurrency = Compare{Client: nan, Server: nan}
	if r.whole.tokensUsage {
		sc.Tokens.Client = num(float64(r.whole.tokens))
	}
	check := analysis.BenchCheck{ClientRequests: r.whole.completed, ClientTokens: r.whole.tokens, TokensFromUsage: r.whole.tokensUsage}
	if client, server, n := analysis.Concurrency(samples); n >= analysis.ConcurrencySamples {
		sc.Concurrency.Client, sc.Concurrency.Server = num(client), num(server)
	}
	switch {
	case r.own != nil:
		sc.Why = "the server publishes no metrics: the bench measured its own, with nothing to check them against"
		return check
	case r.w.last == nil:
		sc.Why = "the server's metrics could not be read after the run"
		return check
	}
	whole, ok := rates.Between(r.w.baseline, r.w.last)
	if !ok {
		sc.Why = "the server restarted during the run"
		return check
	}
	check.ServerRequests = counter(&whole, snapshot.RequestsTotal)
	check.ServerTokens = counter(&whole, snapshot.TokensPredictedTotal)
	if check.ServerRequests != nil {
		sc.Requests.Server = num(*check.ServerRequests)
	}
	if check.ServerTokens != nil {
		sc.Tokens.Server = num(*check.ServerTokens)
	}
	switch {
	case r.whole.stopped > 0:
		sc.Why = units.Integer(float64(r.whole.stopped)) + " requests were cut by the generator (a timeout, the drain): the server may or may not have counted them"
	case whole.Reset:
		sc.Why = "the server's counters were reset during the run"
	default:
		check.Comparable = true
		sc.Comparable = true
	}
	agree := func(c *Compare, exact bool) {
		if !sc.Comparable || math.IsNaN(float64(c.Client)) || math.IsNaN(float64(c.Server)) {
			return
		}
		ok := c.Client == c.Server
		if !exact {
			ok = math.Abs(float64(c.Client-c.Server)) < 1 || math.Abs(float64(c.Client-c.Server)) < 0.1*float64(c.Client)
		}
		c.Agree = &ok
	}
	agree(&sc.Requests, true)
	agree(&sc.Tokens, true)
	agree(&sc.Concurrency, false)
	return check
}

// sampleOf is a reading as the report keeps it: its time from the run's
// start (from the window's first scrape where the start is not known).
func sampleOf(s reading, inFlight float64, start, first time.Time) Sample {
	if start.IsZero() {
		start = first
	}
	return Sample{Seconds: num(s.at.Sub(start).Seconds()), Running: num(s.running), Waiting: num(s.waiting), KVUsage: num(s.kv), InFlight: num(inFlight)}
}

// counter is a window's increase of a counter; nil where not known.
func counter(d *rates.Delta, name string) *float64 {
	if v, ok := d.Counters[name]; ok {
		return &v
	}
	return nil
}

// histMean is the mean of a histogram's increase; nil where it has none.
func histMean(d *rates.Delta, name string) *float64 {
	h, ok := d.Hists[name]
	if !ok || h.Count <= 0 || h.NoSum {
		return nil
	}
	v := h.Sum / h.Count
	return &v
}
