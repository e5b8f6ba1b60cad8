package sweep

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/spark"
)

// model is a server of known capacity, answered at once: a request alone
// takes service; the server completes capacity requests a second at most.
// An open loop at a rate above it builds a backlog that every arrival
// waits behind (deterministic arrivals, deterministic service); a closed
// loop of c requests completes min(c/service, capacity) a second, each
// waiting (c − capacity·service)/capacity beyond its service where c is
// more than the server runs. The server counts what it finished; its
// gauges say idle after idle scrapes of busy.
type model struct {
	capacity float64
	service  time.Duration
	tokens   int

	mu        sync.Mutex
	finished  float64
	generated float64
	busyFor   int // scrapes that still read busy
	drains    int // scrapes read while busy
	indices   [][2]int
	runs      int
	sprd      float64 // each run's rate this much higher than the last's
	// failAfter, when set, fails every scrape once that many runs ran.
	failAfter int
}

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (m *model) run(ctx context.Context, p load.Plan, rec func(load.Record), prog func(load.Progress)) (load.Summary, error) {
	n := p.Requests
	m.mu.Lock()
	m.runs++
	capacity := m.capacity * (1 + m.sprd*float64(m.runs-1))
	m.mu.Unlock()
	lo, hi := math.MaxInt, -1
	s := m.service.Seconds()
	var gap, wait func(i int) float64
	if p.Rate > 0 {
		gap = func(int) float64 { return 1 / p.Rate }
		over := math.Max(0, 1/capacity-1/p.Rate)
		wait = func(i int) float64 { return float64(i) * over }
	} else {
		rate := math.Min(float64(p.Concurrency)/s, capacity)
		gap = func(int) float64 { return 1 / rate }
		q := math.Max(0, (float64(p.Concurrency)-capacity*s)/capacity)
		wait = func(int) float64 { return q }
	}
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	sum := load.Summary{Start: epoch, MeasuredFrom: 0, Sent: n, Scheduled: n, Completed: n}
	if p.OnMeasure != nil {
		p.OnMeasure(0)
	}
	at := 0.0
	for i := range n {
		req := p.Source.Next(i)
		_ = req
		lo, hi = min(lo, i), max(hi, i)
		ttft := 0.05 + wait(i)
		r := load.Record{Index: i, Scheduled: sec(at), Sent: sec(at), TTFB: sec(ttft), TTFT: sec(ttft), E2E: sec(ttft + s - 0.05), Done: sec(ttft + s - 0.05),
			ContentEvents: m.tokens, PromptTokens: 10, OutputTokens: m.tokens, CachedTokens: -1, TokenSource: "usage", RequestedPrompt: 10,
			RequestedOutput: m.tokens, Status: 200, Finish: "length", Streamed: true}
		m.mu.Lock()
		m.finished++
		m.generated += float64(m.tokens)
		m.mu.Unlock()
		rec(r)
		at += gap(i)
		sum.MeasuredTo = max(sum.MeasuredTo, r.Sent+r.E2E)
	}
	sum.SendEnd = sec(at)
	m.mu.Lock()
	m.indices = append(m.indices, [2]int{lo, hi})
	m.busyFor = 2
	m.mu.Unlock()
	return sum, nil
}

func (m *model) scrape(context.Context) (*snapshot.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAfter > 0 && m.runs >= m.failAfter {
		return nil, errors.New("connection refused")
	}
	running := 0.0
	if m.busyFor > 0 {
		m.busyFor--
		m.drains++
		running = 1
	}
	bounds := []float64{0.1, 1, math.Inf(1)}
	h := histogram.Histogram{}
	for _, b := range bounds {
		h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: b})
	}
	return &snapshot.Snapshot{Dialect: "tabbyapi", Source: "model", ScrapedAt: time.Now(), TimeSource: "scrape",
		Scalars: map[string]float64{
			snapshot.RequestsTotal: m.finished, snapshot.TokensPredictedTotal: m.generated,
			snapshot.RequestsProcessing: running, snapshot.RequestsDeferred: 0, snapshot.KVCacheUsageRatio: 0.5,
		},
		Histograms: map[string]*histogram.Histogram{},
	}, nil
}

// index counts the request indices a source is asked for.
type index struct{}

func (index) Next(int) workload.Request { return workload.Request{PromptTokens: 10} }

func modelConfig(m *model, slo bench.SLO) Config {
	return Config{Base: bench.Config{
		Plan: load.Plan{Requests: 100, Source: index{}}, Generate: m.run, Scrape: m.scrape, Metrics: "http://model/metrics",
		Build: build, Interval: time.Hour, SLO: slo, // no scrape while a run (instant) runs
		Describe: bench.Describe{Target: "http://model:8000", API: "chat_completions", Model: "m", Workload: "prompts of 10 tokens"},
	}, Drain: 200 * time.Millisecond}
}

// The knee search on a server of 10 requests a second whose requests
// wait 50 ms alone: under ttft=100ms for 90% of 100 requests, a rate r
// above 10 makes request i wait i·(0.1 − 1/r) s, which passes 50 ms for
// the last tenth of them at r = 10.05 (by hand: i = 90 waits 90 × 0.0005
// = 45 ms, 91 45.5 ms…: 50 ms at i = 100; so 10.05 just meets it, 10.06
// does not). The truth is 10.05 req/s; the search starts from one at a
// time (5 a second, a request taking 0.2 s) and the ceiling (10).
func TestKneeSearch(t *testing.T) {
	m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 10}
	cfg := modelConfig(m, bench.SLO{TTFT: 100 * time.Millisecond})
	cfg.Profile, cfg.Share = ProfileAuto, 0.9
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Profile != ProfileKnee || res.Axis != AxisRate {
		t.Fatalf("profile %q axis %q", res.Profile, res.Axis)
	}
	phases := []string{}
	for _, s := range res.Steps {
		phases = append(phases, s.Phase)
	}
	if phases[0] != PhaseSynchronous || phases[1] != PhaseThroughput || phases[2] != PhaseBracket {
		t.Errorf("phases %v", phases)
	}
	if got := float64(res.Steps[0].Summary.RequestRate.Mean); math.Abs(got-5) > 0.1 {
		t.Errorf("synchronous step %v req/s, want 5", got)
	}
	k := res.Knee
	if k == nil {
		t.Fatal("no knee")
	}
	withinStep(t, k, 10.05, 0)
	if !(float64(k.Width) <= DefaultPrecision*10+1e-9) {
		t.Errorf("bracket %v wider than the precision", k.Width)
	}
	if k.Reason != ReasonUnknown && k.Reason != ReasonQueue {
		t.Errorf("reason %q", k.Reason)
	}
	// Every completed request is in the step's TTFT histogram: one at a
	// time each waits 50 ms alone, at or below the 50 ms bound.
	for _, s := range res.Steps {
		n := 0
		for _, c := range s.TTFT.Counts {
			n += c
		}
		if n != s.Summary.Completed {
			t.Errorf("step %d: %d in the TTFT histogram, %d completed", s.Index, n, s.Summary.Completed)
		}
	}
	if h := res.Steps[0].TTFT; h.Counts[5] != res.Steps[0].Summary.Completed || float64(h.Bounds[5]) != 0.05 {
		t.Errorf("one at a time: %v under %v", h.Counts, h.Bounds)
	}
	// Each step's SLO is the bench's own goodput, counted apart.
	for _, s := range res.Steps {
		g := s.Runs[0].Client.Goodput
		if g == nil || g.Good != s.SLO.Good || g.Of != s.SLO.Of {
			t.Errorf("step %d: the sweep counts %d of %d good, the bench %+v", s.Index, s.SLO.Good, s.SLO.Of, g)
		}
	}
	// No two runs sent the same request: each run's indices start past
	// the last run's.
	if len(m.indices) != len(res.Steps) {
		t.Fatalf("%d runs, %d steps", len(m.indices), len(res.Steps))
	}
	for i := 1; i < len(m.indices); i++ {
		if m.indices[i][0] != 0 {
			t.Errorf("run %d asked for index %d first: the source is offset, not the plan", i+1, m.indices[i][0])
		}
	}
	if len(res.Notes) == 0 || res.Notes[0].ID != "sweep_knee" {
		t.Errorf("notes %v", res.Notes)
	}
}

// The source's indices: each run starts where the last stopped.
func TestOffsets(t *testing.T) {
	var asked []int
	var mu sync.Mutex
	src := sourceFunc(func(i int) workload.Request {
		mu.Lock()
		asked = append(asked, i)
		mu.Unlock()
		return workload.Request{}
	})
	m := &model{capacity: 10, service: 100 * time.Millisecond, tokens: 2}
	cfg := modelConfig(m, bench.SLO{})
	cfg.Base.Plan.Requests, cfg.Base.Plan.Source = 3, src
	cfg.Profile, cfg.Loads, cfg.Repeat = ProfileConcurrency, []float64{1, 2}, 2
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(asked, want) {
		t.Errorf("indices %v, want %v", asked, want)
	}
}

type sourceFunc func(int) workload.Request

func (f sourceFunc) Next(i int) workload.Request { return f(i) }

// Before each run the sweep reads the server until idle: the model reads
// busy for two scrapes after each run.
func TestDrain(t *testing.T) {
	m := &model{capacity: 10, service: 100 * time.Millisecond, tokens: 2}
	cfg := modelConfig(m, bench.SLO{})
	cfg.Base.Plan.Requests = 5
	cfg.Profile, cfg.Loads = ProfileRate, []float64{2, 4}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Steps[1].Drains[0]
	if d.Idle == nil || !*d.Idle || d.Scrapes < 2 {
		t.Errorf("drain before step 2: %+v (idle %v)", d, d.Idle)
	}
	for _, n := range res.Notes {
		if n.ID == "sweep_not_idle" {
			t.Errorf("note %s", n.Text)
		}
	}
	// A server busy beyond the drain's limit: the run starts anyway, and
	// the note says so.
	m.busyFor = 1 << 20
	cfg.Drain = 20 * time.Millisecond
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Steps[0].Drains[0]; d.Idle == nil || *d.Idle || float64(d.Running) != 1 {
		t.Errorf("drain of a busy server: %+v", d)
	}
	if !slices.ContainsFunc(res.Notes, func(n report.Note) bool { return n.ID == "sweep_not_idle" }) {
		t.Errorf("no sweep_not_idle note: %v", res.Notes)
	}
}

// Repeats: each figure's mean and spread over the runs, by hand; a spread
// of a tenth of the mean or more is flagged.
func TestRepeatSpread(t *testing.T) {
	// Three runs of a closed loop of 4 whose capacity grows 10% a run:
	// 4/0.2 = 20 a second is above every capacity, so each run completes
	// its capacity: 10, 11, 12 req/s. Mean 11, sample stdev 1 (9.1%); by
	// 20% a run, 10, 12, 14: stdev 2 (16.7% of 12): flagged.
	for _, tt := range []struct {
		step     float64
		mean, sd float64
		flagged  bool
	}{{0.1, 11, 1, false}, {0.2, 12, 2, true}} {
		m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 5, sprd: tt.step}
		cfg := modelConfig(m, bench.SLO{})
		cfg.Profile, cfg.Loads, cfg.Repeat = ProfileConcurrency, []float64{4}, 3
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sp := res.Steps[0].Summary.RequestRate
		// The client's window runs from the first send to the last end:
		// 99 gaps and one request's time, so a little under the rate.
		if sp.N != 3 || math.Abs(float64(sp.Mean)-tt.mean)/tt.mean > 0.03 || math.Abs(float64(sp.Stdev)-tt.sd)/tt.sd > 0.05 {
			t.Errorf("step %v: spread %+v, want mean %v stdev %v", tt.step, sp, tt.mean, tt.sd)
		}
		got := slices.ContainsFunc(res.Notes, func(n report.Note) bool { return n.ID == "sweep_spread_wide" })
		if got != tt.flagged {
			t.Errorf("step %v: flagged %v, want %v (%v)", tt.step, got, tt.flagged, res.Notes)
		}
	}
}

// A list under an SLO: the knee is the highest load met below the lowest
// missed, whatever order the list ran in; the reason at a closed loop's
// break is the queue where the server publishes a waiting gauge of 0 and
// no histograms: unknown.
func TestListKnee(t *testing.T) {
	m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 5}
	cfg := modelConfig(m, bench.SLO{TTFT: 100 * time.Millisecond})
	// Closed loops of c: c ≤ 2 runs without waiting (10 × 0.2); c = 3
	// waits (3 − 2)/10 = 100 ms beyond 50: missed.
	cfg.Profile, cfg.Loads, cfg.Share = ProfileConcurrency, []float64{4, 1, 2, 3}, 0.9
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := res.Knee
	if k == nil || k.Axis != AxisConcurrency || float64(k.Load) != 2 || float64(k.Broke) != 3 || k.Step != 3 || k.BrokeStep != 4 {
		t.Fatalf("knee %+v", k)
	}
}

// The text report of a sweep, and its block chart in ASCII; go test
// ./internal/bench/sweep -update rewrites the goldens (read the diff).
func TestTextGolden(t *testing.T) {
	m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 10}
	cfg := modelConfig(m, bench.SLO{TTFT: 100 * time.Millisecond})
	cfg.Profile, cfg.Share, cfg.Repeat = ProfileAuto, 0.9, 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		width int
		g     spark.Glyphs
	}{{"sweep-120.txt", 120, spark.Blocks}, {"sweep-100-ascii.txt", 100, spark.ASCII}} {
		var b bytes.Buffer
		if err := Text(&b, res, TextOptions{Render: render.Options{Width: tt.width, Glyphs: tt.g}}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tt.name, b.String())
	}
	var b bytes.Buffer
	if err := CSV(&b, res); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sweep.csv", b.String())
}

// A server gone in the middle of a sweep: the steps run are kept, with the
// error that stopped the rest.
func TestStoppedByError(t *testing.T) {
	m := &model{capacity: 10, service: 100 * time.Millisecond, tokens: 2, failAfter: 2}
	cfg := modelConfig(m, bench.SLO{})
	cfg.Base.Plan.Requests = 5
	cfg.Profile, cfg.Loads = ProfileRate, []float64{1, 2, 3}
	res, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "the sweep stopped after step 2") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	if res == nil || len(res.Steps) != 2 || res.Partial {
		t.Fatalf("result %+v", res)
	}
}

// Ctrl-C: the run in progress ends as bench.Run ends one, no more run,
// and the steps run are reported, partial.
func TestInterrupted(t *testing.T) {
	m := &model{capacity: 10, service: 100 * time.Millisecond, tokens: 2}
	cfg := modelConfig(m, bench.SLO{})
	cfg.Base.Plan.Requests = 5
	cfg.Profile, cfg.Loads = ProfileRate, []float64{1, 2, 3, 4}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Progress = func(s Status) {
		if s.Step == 2 && !s.Draining {
			cancel()
		}
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || len(res.Steps) != 2 {
		t.Errorf("partial %v, %d steps", res.Partial, len(res.Steps))
	}
}
