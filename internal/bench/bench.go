// Package bench runs one load test end to end and says what it found:
// `inferscope bench`.
//
// # One run
//
// [Run] reads the server's /metrics before any load (the baseline), hands
// the [load.Plan] to the generator (package load), and while it sends
// reads the server again at every Config.Interval: the watch's samples.
// The warm-up's requests are sent and recorded but no figure counts them;
// the measured window starts with a scrape as the warm-up ends (by count,
// by time, or once the server's running and KV gauges settle: the bench
// closes the channel the generator's warm-up waits on) and ends with one
// after the last request has drained. The window is read by package rates
// exactly as `--since` reads two scrapes (rates.Session: the same rows,
// resets, restarts, histograms' increases and notes judged on the window),
// the scrapes between counted for the sampled busy share; the one-shot
// sections are those of the window's last scrape.
//
// # What it says
//
// The client figures come from every measured request's Record: TTFB,
// TTFT, E2E, TPOT, per-request output rates with exact percentiles,
// the pooled inter-token gaps from the generator's histogram, throughputs
// over a stated window, errors by kind, goodput under an [SLO] over a
// stated denominator (client.go, slo.go; docs/bench.md defines each
// against vLLM's, GuideLLM's and AIPerf's). The run's verdict, the time
// spent outside the engine, the self-check of the generator against the
// server (requests and tokens over the whole run, from the baseline to the
// last scrape, and requests in flight at each scrape) and the validity
// flags are judged through the one table (analysis.JudgeBench).
//
// A server with no /metrics is measured by the bench itself: the proxy's
// metric set, fed from the Records and read back through the tabbyAPI
// dialect (own.go), with Ollama's and llama.cpp's per-request durations as
// the server's own split.
//
// Records stream to a file as they end ([RecordWriter]); the bench keeps
// only a few numbers a request, so a run of a million requests stays
// within some tens of megabytes.
package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// DefaultInterval is how often the server is read during a run: the
// watch's default interval.
const DefaultInterval = 2 * time.Second

// Config is one run.
type Config struct {
	// Plan is the load to send.
	Plan load.Plan
	// Generate sends it: load.Run, or a stand-in in tests.
	Generate func(context.Context, load.Plan, func(load.Record), func(load.Progress)) (load.Summary, error)
	// Scrape reads the server's metrics into a snapshot, as the one-shot
	// report reads them; nil when the server publishes none, and the
	// bench measures its own metric set. Metrics names where it reads.
	Scrape  func(context.Context) (*snapshot.Snapshot, error)
	Metrics string
	// Build makes the one-shot report of a snapshot scraped at now.
	Build func(s *snapshot.Snapshot, now time.Time) *report.Report
	// Interval is how often the server is read while the load runs; 0 is
	// DefaultInterval.
	Interval time.Duration
	// Settle, when positive, ends the warm-up once the server's running
	// and KV gauges settle (analysis.Settled), at most this long after
	// the run starts.
	Settle time.Duration
	// SLO is goodput's target; zero counts none.
	SLO SLO
	// Records receives every request's Record as it ends; nil keeps none.
	Records *RecordWriter
	// Progress is told the run's state about every 250 ms; nil for none.
	Progress func(Status)
	// PrefixMeant is the share of prompt tokens the workload shares on
	// purpose; nil where not known (a dataset).
	PrefixMeant *float64
	// FixedOutput is the output length every request asks to be held to
	// (0: none).
	FixedOutput int
	// Describe says what the run is, for the report.
	Describe Describe
	// Cores is how many cores the generator had (0: GOMAXPROCS).
	Cores int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Describe is what a run is, as the report names it.
type Describe struct {
	Target, API, Model string
	// Workload says what was sent ("prompts of 512 tokens, answers of
	// 128"), WorkloadNote how ("lengths aligned with the server's
	// /tokenize").
	Workload, WorkloadNote string
	// Warmup is the warm-up as given ("50 requests", "30s", "until the
	// server settles, at most 2m").
	Warmup  string
	Version string
}

// Status is the run's state, for a progress line.
type Status struct {
	load.Progress
	// Waiting and KV are the server's waiting requests and KV usage at
	// its last scrape; NaN where it has none.
	Waiting, KV float64
	// Requests and Duration are the plan's measured requests and time (0
	// where not set), for what is left; MeasuredDone counts the measured
	// requests ended, WarmupElapsed is when the warm-up ended.
	Requests      int
	Duration      time.Duration
	MeasuredDone  int
	WarmupElapsed time.Duration
}

// Run runs cfg's load and reports on it. It returns an error before any
// load is sent when the server's metrics cannot be read; once sending,
// a cancelled ctx (Ctrl-C) stops it, the requests in flight get the
// plan's drain, and the report is of what completed, marked partial.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r := newRunner(cfg)
	return r.run(ctx)
}

// runner is one run in progress.
type runner struct {
	cfg    Config
	now    func() time.Time
	scrape func(context.Context) (*snapshot.Snapshot, error)
	own    *own

	tally *clientTally
	whole wholeTally
	// spans are every request's send and end, in milliseconds from the
	// run's start (4 bytes each: a million requests keep 8 MB): the
	// generator's requests in flight at each scrape.
	sent, ended column[int32]
	// done are the completed requests' ends (ms from the run's start) and
	// TTFTs (seconds), warm-up included: the client's side of the server's
	// queue and prefill over the window, which count the requests that
	// finished in it, whatever part of the run sent them.
	done     column[int32]
	doneTTFT column[float64]
	recErr   error

	begin    chan struct{} // asks the sampler to start the measured window
	asked    atomic.Bool
	measured atomic.Int64 // measured requests ended
	warmEnd  atomic.Int64 // the elapsed time the warm-up ended at; -1 not yet

	w *window
}

// wholeTally is the generator's account of the whole run, warm-up
// included: the self-check's side.
type wholeTally struct {
	completed, tokens int
	tokensUsage       bool // every completed request's tokens from usage
	stopped           int  // requests the generator itself cut (timeout, canceled)
}

func newRunner(cfg Config) *runner {
	if cfg.Generate == nil {
		cfg.Generate = load.Run
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Cores <= 0 {
		cfg.Cores = runtime.GOMAXPROCS(0)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	r := &runner{cfg: cfg, now: now, tally: newClientTally(cfg.SLO), whole: wholeTally{tokensUsage: true},
		begin: make(chan struct{}, 1)}
	r.warmEnd.Store(-1)
	return r
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	r.scrape = r.cfg.Scrape
	if r.scrape == nil {
		r.own = newOwn(r.now(), r.now)
		r.scrape = r.own.scrape
	}
	r.w = &window{}
	base, at, err := r.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the server's metrics before the run: %w", err)
	}
	r.w.baseline, r.w.baselineAt = base, at
	plan := r.cfg.Plan
	warm := plan.Warmup.Requests > 0 || plan.Warmup.Duration > 0 || r.cfg.Settle > 0
	if r.cfg.Settle > 0 {
		until := make(chan struct{})
		plan.Warmup.Until = until
		r.w.until = until
	}
	if !warm {
		r.w.start(base, at)
		r.asked.Store(true)
		r.warmEnd.Store(0)
	}
	// The generator says when the measured part starts, before its first
	// request: the window's first scrape is taken then.
	plan.OnMeasure = func(at time.Duration) {
		r.warmEnd.CompareAndSwap(-1, int64(at))
		if !r.asked.Swap(true) {
			select {
			case r.begin <- struct{}{}:
			default:
			}
		}
	}
	sctx, stop := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Add(1)
	started := r.now()
	go func() {
		defer sampling.Done()
		r.sample(sctx, started)
	}()
	sum, genErr := r.cfg.Generate(ctx, plan, r.record, r.progress)
	stop()
	sampling.Wait()
	r.w.closeUntil() // a run that ended in its warm-up
	if genErr != nil && !sum.Partial {
		return nil, genErr
	}
	// The last scrape is taken even after Ctrl-C: the window ends here.
	last, lastAt, lastErr := r.read(context.WithoutCancel(ctx))
	if r.cfg.Records != nil {
		if err := r.cfg.Records.Flush(); err != nil && r.recErr == nil {
			r.recErr = err
		}
	}
	if r.recErr != nil {
		return nil, fmt.Errorf("writing the records: %w", r.recErr)
	}
	if lastErr == nil {
		r.w.end(last, lastAt)
	} else {
		r.w.lastErr = lastErr
	}
	return r.report(sum), nil
}

// read scrapes the server (or the bench's own metrics) and dates the
// reading at the middle of the scrape's round trip.
func (r *runner) read(ctx context.Context) (*snapshot.Snapshot, time.Time, error) {
	t0 := r.now()
	s, err := r.scrape(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	t1 := r.now()
	return s, t0.Add(t1.Sub(t0) / 2), nil
}

// record takes one Record as its request ends (the generator calls it
// from one goroutine at a time).
func (r *runner) record(rec load.Record) {
	if rec.Sent < 0 {
		return // never sent: nothing to count
	}
	if r.cfg.Records != nil && r.recErr == nil {
		r.recErr = r.cfg.Records.Write(rec)
	}
	end := rec.Sent + max(rec.Done, rec.E2E, rec.TTFB, 0)
	r.sent.add(millis(rec.Sent))
	r.ended.add(millis(end))
	switch rec.Error {
	case "":
		r.done.add(millis(end))
		r.doneTTFT.add(secondsOr(rec.TTFT))
		r.whole.completed++
		if rec.TokenSource == "usage" && rec.OutputTokens >= 0 {
			r.whole.tokens += rec.OutputTokens
		} else {
			r.whole.tokensUsage = false
		}
	case load.ErrTimeout, load.ErrCanceled, load.ErrCut:
		// The generator stopped reading: the server may count it or not.
		r.whole.stopped++
	}
	if r.own != nil {
		r.own.record(rec, r.cfg.Describe.Model)
	}
	if !rec.Warmup {
		r.tally.add(rec)
		r.measured.Add(1)
	}
}

// progress takes the generator's progress, for the progress line and the
// bench's own metric set.
func (r *runner) progress(p load.Progress) {
	if r.own != nil {
		r.own.inflight.Store(int64(p.InFlight))
	}
	if !p.Warmup && !r.asked.Swap(true) {
		// A generator that does not say when the measured part starts
		// (a stand-in): its progress does, a quarter of a second late.
		r.warmEnd.CompareAndSwap(-1, int64(p.Elapsed))
		select {
		case r.begin <- struct{}{}:
		default:
		}
	}
	if r.cfg.Progress != nil {
		waiting, kv := r.w.gauges()
		r.cfg.Progress(Status{Progress: p, Waiting: waiting, KV: kv, Requests: r.cfg.Plan.Requests, Duration: r.cfg.Plan.Duration,
			MeasuredDone: int(r.measured.Load()), WarmupElapsed: time.Duration(max(r.warmEnd.Load(), 0))})
	}
}

// sample reads the server every interval until ctx ends, and starts the
// measured window when asked (or once the warm-up's gauges settle).
func (r *runner) sample(ctx context.Context, started time.Time) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.begin:
			r.startWindow(ctx)
		case <-t.C:
			s, at, err := r.read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.w.failed(at)
				continue
			}
			r.w.add(s, at)
			if r.w.settling() {
				settled := r.w.settled()
				if settled || r.now().Sub(started) >= r.cfg.Settle {
					r.w.unsettled = !settled
					r.w.closeUntil()
					r.asked.Store(true)
					r.startWindow(ctx)
				}
			}
		}
	}
}

// startWindow starts the measured window with a scrape now.
func (r *runner) startWindow(ctx context.Context) {
	if r.w.started() {
		return
	}
	s, at, err := r.read(ctx)
	if err != nil {
		r.w.failed(at)
		return // the next sample starts it
	}
	r.w.start(s, at)
}

// window is the server's side of a run: the baseline, the measured
// window's scrapes, the warm-up's gauges.
type window struct {
	mu         sync.Mutex
	baseline   *snapshot.Snapshot
	baselineAt time.Time
	until      chan struct{} // the warm-up's channel, when the bench ends it
	untilShut  bool
	unsettled  bool
	warmRun    []float64 // the warm-up's running and KV gauges, scrape by scrape
	warmKV     []float64

	hist        *rates.History // the measured window's, from its first scrape
	first, last *snapshot.Snapshot
	samples     []reading
	failures    int
	lastErr     error
	// waiting and kv are the last scrape's gauges, for the progress line.
	waiting, kv float64
}

// reading is what the window keeps of one scrape: its time and the
// gauges and counters the verdict reads.
type reading struct {
	at                   time.Time
	running, waiting, kv float64
	generated, finished  float64 // raw counters; NaN where absent
}

func readingOf(s *snapshot.Snapshot, at time.Time) reading {
	g := func(name string) float64 {
		if v, ok := s.Scalar(name); ok {
			return v
		}
		return math.NaN()
	}
	return reading{at: at, running: g(snapshot.RequestsProcessing), waiting: g(snapshot.RequestsDeferred), kv: kvUsage(s),
		generated: g(snapshot.TokensPredictedTotal), finished: g(snapshot.RequestsTotal)}
}

// kvUsage is the KV cache's usage as the report's KV cache row gives it,
// NaN where s has none.
func kvUsage(s *snapshot.Snapshot) float64 {
	if v, ok := analysis.KVUsage(s); ok {
		return v
	}
	return math.NaN()
}

func (w *window) gauges() (waiting, kv float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.baseline == nil {
		return math.NaN(), math.NaN()
	}
	return w.waiting, w.kv
}

func (w *window) started() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first != nil
}

func (w *window) settling() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.until != nil && !w.untilShut
}

func (w *window) settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return analysis.Settled(w.warmRun, w.warmKV)
}

func (w *window) closeUntil() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.until != nil && !w.untilShut {
		close(w.until)
		w.untilShut = true
	}
}

// start begins the measured window at scrape s.
func (w *window) start(s *snapshot.Snapshot, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.first, w.last = s, s
	w.hist = rates.NewHistory(0)
	w.hist.Add(s, at)
	rd := readingOf(s, at)
	w.samples = append(w.samples, rd)
	w.waiting, w.kv = rd.waiting, rd.kv
}

// add takes a scrape during the run: a sample of the measured window, or
// of the warm-up's gauges before it.
func (w *window) add(s *snapshot.Snapshot, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rd := readingOf(s, at)
	w.waiting, w.kv = rd.waiting, rd.kv
	if w.first == nil {
		w.warmRun = append(w.warmRun, rd.running)
		w.warmKV = append(w.warmKV, rd.kv)
		return
	}
	w.hist.Add(s, at)
	w.samples = append(w.samples, rd)
	w.last = s
}

// failed counts a scrape that failed: a gap among the samples, and for
// the warm-up's settling a reading that settles nothing.
func (w *window) failed(time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures++
	if w.first == nil {
		w.warmRun = append(w.warmRun, math.NaN())
		w.warmKV = append(w.warmKV, math.NaN())
	}
}

// end takes the scrape after the run: the window's last.
func (w *window) end(s *snapshot.Snapshot, at time.Time) {
	if !w.started() {
		// The run ended before its warm-up did: the window is the whole run.
		w.start(w.baseline, w.baselineAt)
	}
	w.add(s, at)
}

// inFlight counts the generator's requests in flight at each sample: sent
// at or before it, not yet ended. start is the run's start on the same
// clock as the samples' times.
func (r *runner) inFlight(start time.Time) []float64 {
	out := make([]float64, len(r.w.samples))
	if start.IsZero() {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	at := make([]int32, len(r.w.samples))
	for i, s := range r.w.samples {
		at[i] = millis(s.at.Sub(start))
	}
	for i := range r.sent.n {
		sent, end := r.sent.at(i), r.ended.at(i)
		j, _ := slices.BinarySearch(at, sent)
		for ; j < len(at) && at[j] < end; j++ {
			out[j]++
		}
	}
	return out
}

// ttftFinishedIn is the mean client TTFT of the requests that completed
// after from and by to (the window's first and last scrapes), and how many
// had one.
func (r *runner) ttftFinishedIn(start, from, to time.Time) (float64, int) {
	if start.IsZero() {
		return math.NaN(), 0
	}
	lo, hi := millis(from.Sub(start)), millis(to.Sub(start))
	sum, n := 0.0, 0
	for i := range r.done.n {
		if end, ttft := r.done.at(i), r.doneTTFT.at(i); end > lo && end <= hi && !math.IsNaN(ttft) {
			sum += ttft
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// millis is d in whole milliseconds, rounded down, within int32 (24 days).
func millis(d time.Duration) int32 {
	return int32(min(max(d/time.Millisecond, math.MinInt32), math.MaxInt32))
}

// span labels a window's length for the notes ("the 1m2s of the run").
func span(d time.Duration) string {
	return units.Duration(d.Round(time.Second))
}
