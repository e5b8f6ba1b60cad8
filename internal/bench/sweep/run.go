package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Defaults of a [Config].
const (
	// DefaultSteps is how many rates the automatic profile spreads
	// between its synchronous and throughput steps, and the most steps
	// the knee search takes after them: GuideLLM's sweep runs ten in all.
	DefaultSteps = 8
	// DefaultCeiling is the throughput step's requests in flight.
	DefaultCeiling = 64
	// DefaultShare is the share of a step's requests that must meet
	// every limit for the step to meet the SLO.
	DefaultShare = 0.95
	// DefaultPrecision is how narrow the knee search makes its bracket,
	// as a share of the ceiling.
	DefaultPrecision = 0.05
	// DefaultDrain bounds the wait for the server to be idle before a run.
	DefaultDrain = 30 * time.Second
)

// maxSteps bounds the steps of any sweep.
const maxSteps = 100

// Config is a sweep: the run every step varies, and how the steps are
// chosen.
type Config struct {
	// Base is the run each step varies: its plan's load (Concurrency,
	// Rate) is the step's, the rest (the target, the source, the length
	// of a run, the warm-up, the arrivals) every step's. Base.Records
	// must be nil: a record's times are its own run's.
	Base bench.Config
	// Profile chooses the steps (Profile*; not ProfileKnee, which Auto
	// with an SLO becomes).
	Profile string
	// Loads are a list's concurrencies or rates, in the order to run.
	Loads []float64
	// Cap is the open loops' cap on requests in flight (0: none).
	Cap int
	// Steps is the automatic profile's rates between, and the knee
	// search's most steps after the first two; 0 is DefaultSteps.
	Steps int
	// Ceiling is the throughput step's requests in flight; 0 is
	// DefaultCeiling.
	Ceiling int
	// Repeat is how many times each step runs; 0 is once.
	Repeat int
	// Share is what a step's good share must reach to meet Base.SLO; 0
	// is DefaultShare.
	Share float64
	// Precision is the knee's bracket as a share of the ceiling; 0 is
	// DefaultPrecision.
	Precision float64
	// Drain bounds the wait for idle before each run; 0 is DefaultDrain.
	Drain time.Duration
	// Progress is told each run as it starts; nil for none. It may set
	// Base.Progress's line for the run (the same function each run).
	Progress func(Status)
}

// Status is where a sweep is, for a progress line.
type Status struct {
	Step, Run, Runs int
	Phase           string
	Mode            string
	Concurrency     int
	Rate            float64
	// Draining says the sweep waits for the server to be idle.
	Draining bool
}

// Words says the status in a few words ("step 3, run 1 of 2: 12.5 req/s").
func (s Status) Words() string {
	load := fmt.Sprintf("%d in flight", s.Concurrency)
	if s.Rate > 0 {
		load = units.Count(s.Rate) + " req/s"
	}
	w := fmt.Sprintf("step %d (%s), %s", s.Step, s.Phase, load)
	if s.Runs > 1 {
		w += fmt.Sprintf(", run %d of %d", s.Run, s.Runs)
	}
	if s.Draining {
		w += ": waiting for the server to be idle"
	}
	return w
}

// Check refuses a configuration that cannot run.
func (c *Config) Check() error {
	switch c.Profile {
	case ProfileConcurrency:
		for _, v := range c.Loads {
			if v < 1 || v != math.Trunc(v) {
				return fmt.Errorf("sweep: concurrency %v is not a whole number of requests", v)
			}
		}
	case ProfileRate:
		for _, v := range c.Loads {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("sweep: rate %v is not above 0", v)
			}
		}
	case ProfileAuto, ProfileRepeat:
	default:
		return fmt.Errorf("sweep: unknown profile %q", c.Profile)
	}
	if (c.Profile == ProfileConcurrency || c.Profile == ProfileRate) && len(c.Loads) == 0 {
		return errors.New("sweep: a list with no loads")
	}
	if len(c.Loads) > maxSteps || c.Steps > maxSteps || c.Repeat > maxSteps {
		return fmt.Errorf("sweep: at most %d steps and %d repeats", maxSteps, maxSteps)
	}
	if c.Base.Records != nil {
		return errors.New("sweep: records are written by one run")
	}
	if c.Share < 0 || c.Share > 1 || c.Precision < 0 || c.Precision >= 1 {
		return errors.New("sweep: share and precision are between 0 and 1")
	}
	return nil
}

func (c *Config) defaults() {
	if c.Steps <= 0 {
		c.Steps = DefaultSteps
	}
	if c.Ceiling <= 0 {
		c.Ceiling = DefaultCeiling
	}
	if c.Repeat <= 0 {
		c.Repeat = 1
	}
	if c.Share <= 0 {
		c.Share = DefaultShare
	}
	if c.Precision <= 0 {
		c.Precision = DefaultPrecision
	}
	if c.Drain <= 0 {
		c.Drain = DefaultDrain
	}
	if c.Base.Interval <= 0 {
		c.Base.Interval = bench.DefaultInterval
	}
	if c.Base.Generate == nil {
		c.Base.Generate = load.Run
	}
}

// Run runs the sweep cfg describes. A cancelled ctx (Ctrl-C) ends the run
// in progress as bench.Run ends one (its report partial) and runs no
// more: the result holds the steps run, marked partial. It returns an
// error where the first run could not start (the server's metrics
// unreadable).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg.defaults()
	d := cfg.Base.Describe
	r := &runner{cfg: cfg, res: &Result{Schema: Schema, Kind: Kind, Version: d.Version, Target: d.Target, API: d.API, Model: d.Model,
		Profile: cfg.Profile, Axis: AxisRate, Repeat: cfg.Repeat, Notes: report.List[report.Note]{}}}
	if cfg.Profile == ProfileConcurrency {
		r.res.Axis = AxisConcurrency
	}
	if cfg.Base.SLO.Set() {
		r.res.SLO = &Target{Limits: cfg.Base.SLO.String(), Share: report.Number(cfg.Share)}
		if cfg.Profile == ProfileAuto {
			r.res.Profile = ProfileKnee
		}
	}
	if cfg.Profile == ProfileRepeat && cfg.Base.Plan.Rate <= 0 {
		r.res.Axis = AxisConcurrency
	}
	var err error
	switch r.res.Profile {
	case ProfileConcurrency, ProfileRate:
		err = r.list(ctx)
	case ProfileAuto:
		err = r.auto(ctx)
	case ProfileKnee:
		err = r.knee(ctx)
	case ProfileRepeat:
		p := cfg.Base.Plan
		_, err = r.step(ctx, PhaseList, p.Concurrency, p.Rate)
	}
	if err != nil && len(r.res.Steps) == 0 {
		return nil, err
	}
	if r.res.SLO != nil && r.res.Knee == nil {
		r.res.Knee = kneeOfList(r.res)
	}
	r.res.Notes = append(r.res.Notes, r.notes()...)
	return r.res, nil
}

// errStopped ends a sweep whose run was interrupted.
var errStopped = errors.New("sweep: interrupted")

// runner is a sweep in progress.
type runner struct {
	cfg  Config
	res  *Result
	next atomic.Int64 // the source's first index no run has used
	// notIdle are the steps a run of which started before the server
	// was idle.
	notIdle []int
	// ends are the synchronous and throughput steps' request rates;
	// noRoom says the second was no higher.
	endRates [2]float64
	noRoom   bool
}

// list runs the steps of a list in the order given.
func (r *runner) list(ctx context.Context) error {
	for _, v := range r.cfg.Loads {
		var err error
		if r.cfg.Profile == ProfileConcurrency {
			_, err = r.step(ctx, PhaseList, int(v), 0)
		} else {
			_, err = r.step(ctx, PhaseList, r.cfg.Cap, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// auto runs the automatic profile: one at a time, many at once, then
// rates spread evenly between the two steps' request rates.
func (r *runner) auto(ctx context.Context) error {
	lo, hi, err := r.ends(ctx)
	if err != nil {
		return err
	}
	if !(hi > lo) {
		r.noRoom = true
		return nil
	}
	n := r.cfg.Steps
	for k := 1; k <= n; k++ {
		if _, err := r.step(ctx, PhaseBetween, r.cfg.Cap, lo+(hi-lo)*float64(k)/float64(n+1)); err != nil {
			return err
		}
	}
	return nil
}

// ends runs the synchronous and throughput steps and returns their
// request rates (NaN where a step completed none).
func (r *runner) ends(ctx context.Context) (lo, hi float64, err error) {
	s, err := r.step(ctx, PhaseSynchronous, 1, 0)
	if err != nil {
		return 0, 0, err
	}
	t, err := r.step(ctx, PhaseThroughput, r.cfg.Ceiling, 0)
	if err != nil {
		return 0, 0, err
	}
	r.endRates = [2]float64{float64(s.Summary.RequestRate.Mean), float64(t.Summary.RequestRate.Mean)}
	return r.endRates[0], r.endRates[1], nil
}

// step runs one load Repeat times, a drain before each run, and appends
// the step to the result. A rate of 0 is a closed loop of concurrency.
func (r *runner) step(ctx context.Context, phase string, concurrency int, rate float64) (*Step, error) {
	st := Step{Index: len(r.res.Steps) + 1, Phase: phase, Concurrency: concurrency, Rate: report.Number(math.NaN()),
		Drains: []Drain{}, Runs: []*bench.Report{}}
	switch {
	case rate <= 0:
		st.Mode = "closed"
	case concurrency > 0:
		st.Mode, st.Rate = "open, capped", report.Number(rate)
	default:
		st.Mode, st.Rate = "open", report.Number(rate)
	}
	var taps []*tap
	var err error
	for i := range r.cfg.Repeat {
		status := Status{Step: st.Index, Run: i + 1, Runs: r.cfg.Repeat, Phase: phase, Mode: st.Mode, Concurrency: concurrency, Rate: rate}
		if ctx.Err() != nil {
			err = errStopped
			break
		}
		dr := r.drain(ctx, status)
		st.Drains = append(st.Drains, dr)
		if dr.Idle != nil && !*dr.Idle {
			r.notIdle = append(r.notIdle, st.Index)
		}
		if r.cfg.Progress != nil {
			r.cfg.Progress(status)
		}
		rep, t, runErr := r.once(ctx, concurrency, rate)
		if runErr != nil {
			err = runErr
			break
		}
		if r.res.StartedAt.IsZero() {
			r.res.StartedAt = rep.StartedAt
		}
		st.Runs = append(st.Runs, rep)
		taps = append(taps, t)
		if rep.Partial {
			r.res.Partial = true
			err = errStopped
			break
		}
	}
	if len(st.Runs) == 0 {
		if ctx.Err() != nil {
			r.res.Partial = true
		}
		return nil, err
	}
	st.Summary = summarize(st.Runs, taps)
	st.prefillSeconds, st.decodeSeconds = math.NaN(), math.NaN()
	for _, t := range taps {
		st.prefillSeconds = addKnown(st.prefillSeconds, t.prefillSeconds)
		st.decodeSeconds = addKnown(st.decodeSeconds, t.decodeSeconds)
	}
	st.TTFT = ttftHistogram(taps)
	if r.cfg.Base.SLO.Set() {
		st.SLO = stepSLO(st.Runs, taps, r.cfg.Share)
	}
	r.res.Steps = append(r.res.Steps, st)
	return &r.res.Steps[len(r.res.Steps)-1], err
}

// once is one run of a step's load, its requests from indices no run
// has used, its records and scrapes tapped.
func (r *runner) once(ctx context.Context, concurrency int, rate float64) (*bench.Report, *tap, error) {
	cfg := r.cfg.Base
	t := &tap{slo: cfg.SLO}
	p := cfg.Plan
	p.Concurrency, p.Rate = concurrency, rate
	src := &offsetSource{src: p.Source, from: int(r.next.Load())}
	p.Source = src
	cfg.Plan = p
	gen := cfg.Generate
	cfg.Generate = func(ctx context.Context, p load.Plan, rec func(load.Record), prog func(load.Progress)) (load.Summary, error) {
		return gen(ctx, p, func(x load.Record) { t.record(x); rec(x) }, prog)
	}
	if scrape := cfg.Scrape; scrape != nil {
		cfg.Scrape = func(ctx context.Context) (*snapshot.Snapshot, error) {
			at := time.Now()
			s, err := scrape(ctx)
			if err == nil {
				t.scraped(s, at)
			}
			return s, err
		}
	}
	rep, err := bench.Run(ctx, cfg)
	r.next.Store(int64(src.from + int(src.most.Load()) + 1))
	if err != nil {
		return nil, nil, err
	}
	t.finish(rep)
	return rep, t, nil
}

// addKnown adds v to sum where v is known, sum staying NaN until one is.
func addKnown(sum, v float64) float64 {
	switch {
	case math.IsNaN(v):
		return sum
	case math.IsNaN(sum):
		return v
	}
	return sum + v
}

// offsetSource is a source's requests from index from on: each run of a
// sweep sends requests no other run sent (with the workload's unique
// first words, prompts no other run's cache holds).
type offsetSource struct {
	src  workload.Source
	from int
	most atomic.Int64 // the highest index asked
}

func (o *offsetSource) Next(i int) workload.Request {
	for {
		m := o.most.Load()
		if int64(i) <= m || o.most.CompareAndSwap(m, int64(i)) {
			break
		}
	}
	return o.src.Next(o.from + i)
}

// drain reads the server every interval until its running and waiting
// requests are both zero, at most cfg.Drain.
func (r *runner) drain(ctx context.Context, status Status) Drain {
	nan := report.Number(math.NaN())
	d := Drain{Seconds: 0, Running: nan, Waiting: nan}
	scrape := r.cfg.Base.Scrape
	if scrape == nil {
		return d // the bench measures its own: nothing in flight once a run has ended
	}
	start := time.Now()
	told := false
	for {
		s, err := scrape(ctx)
		d.Scrapes++
		if err == nil {
			running, okR := s.Scalar(snapshot.RequestsProcessing)
			waiting, okW := s.Scalar(snapshot.RequestsDeferred)
			d.Running, d.Waiting = nan, nan
			if okR {
				d.Running = report.Number(running)
			}
			if okW {
				d.Waiting = report.Number(waiting)
			}
			if !okR && !okW {
				d.Seconds = report.Number(time.Since(start).Seconds())
				return d // nothing says: not known
			}
			idle := (!okR || running == 0) && (!okW || waiting == 0)
			if idle {
				d.Idle = &idle
				d.Seconds = report.Number(time.Since(start).Seconds())
				return d
			}
		}
		if time.Since(start) >= r.cfg.Drain || ctx.Err() != nil {
			if !math.IsNaN(float64(d.Running)) || !math.IsNaN(float64(d.Waiting)) {
				no := false
				d.Idle = &no
			}
			d.Seconds = report.Number(time.Since(start).Seconds())
			return d
		}
		if !told && r.cfg.Progress != nil {
			status.Draining = true
			r.cfg.Progress(status)
			told = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(max(min(r.cfg.Base.Interval, r.cfg.Drain/10), 10*time.Millisecond)):
		}
	}
}

// notes are the sweep's own notes once it has run, judged through the
// one table.
func (r *runner) notes() []report.Note {
	res := r.res
	in := analysis.SweepRun{NotIdle: slices.Compact(slices.Clone(r.notIdle)), DrainLimit: units.Duration(r.cfg.Drain)}
	if k := res.Knee; k != nil && res.SLO != nil {
		in.Knee = &analysis.SweepKnee{Target: res.SLO.Limits + " for " + units.Percent(float64(res.SLO.Share)) + " of requests", Why: k.Why}
		if k.Step > 0 {
			in.Knee.Met = fmt.Sprintf("%s (step %d)", res.sayLoad(float64(k.Load)), k.Step)
		}
		if k.BrokeStep > 0 {
			in.Knee.Broke = fmt.Sprintf("%s (step %d)", res.sayLoad(float64(k.Broke)), k.BrokeStep)
		}
	}
	in.NoRoom, in.Sync, in.Ceiling = r.noRoom, units.Count(r.endRates[0]), units.Count(r.endRates[1])
	for _, s := range res.Steps {
		sp := s.Summary.RequestRate
		in.Spreads = append(in.Spreads, analysis.SweepSpread{Step: s.Index, Runs: sp.N, Mean: float64(sp.Mean), Stdev: float64(sp.Stdev),
			Lowest: units.Count(float64(sp.Min)), Highest: units.Count(float64(sp.Max))})
	}
	return analysis.JudgeSweep(in)
}

// tap is what a sweep keeps of one run beside its report: the measured
// requests' latency against each limit and the scrapes the run read.
type tap struct {
	slo bench.SLO

	mu     sync.Mutex
	ttfts  []float64 // completed measured requests' TTFT, seconds
	good   int
	missed map[string]int
	scr    []scrapeAt

	// From the scrapes of the run's window, once finished.
	waiting, kvPeak, queue, prefill float64
	prefillSeconds, decodeSeconds   float64
}

type scrapeAt struct {
	s  *snapshot.Snapshot
	at time.Time
}

func (t *tap) record(r load.Record) {
	if r.Warmup || r.Sent < 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.missed == nil {
		t.missed = map[string]int{}
	}
	if r.Error != "" {
		t.missed["failed"]++
		return
	}
	if r.TTFT >= 0 {
		t.ttfts = append(t.ttfts, r.TTFT.Seconds())
	}
	if !t.slo.Set() {
		return
	}
	ok := true
	miss := func(name string) {
		t.missed[name]++
		ok = false
	}
	if l := t.slo.TTFT; l > 0 && (r.TTFT < 0 || r.TTFT > l) {
		miss("ttft")
	}
	if l := t.slo.E2E; l > 0 && (r.E2E < 0 || r.E2E > l) {
		miss("e2e")
	}
	// TPOT as the bench counts it: a single token meets a TPOT limit.
	if l := t.slo.TPOT; l > 0 && r.OutputTokens >= 2 && r.TTFT >= 0 && r.E2E >= 0 {
		if (r.E2E-r.TTFT).Seconds()/float64(r.OutputTokens-1) > l.Seconds() {
			miss("tpot")
		}
	}
	if ok {
		t.good++
	}
}

func (t *tap) scraped(s *snapshot.Snapshot, at time.Time) {
	t.mu.Lock()
	t.scr = append(t.scr, scrapeAt{s, at})
	t.mu.Unlock()
}
