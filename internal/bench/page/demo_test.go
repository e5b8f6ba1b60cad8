package page

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/benchtest"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/probe"
	"github.com/inferscope/inferscope/internal/bench/sweep"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The pages' reports come from real runs against the simulator's API, read
// by the same pipeline as the command line's, so that every chart has what
// a run gives it: a queue that grows, a KV cache that fills, a TTFT spread
// over decades.

// startDemo serves a scenario's engine behind the API at speed, until the
// test ends.
func startDemo(t *testing.T, scenario string, speed float64) *demo.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := demo.Start(ctx, demo.Options{Scenario: scenario, Speed: speed, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return srv
}

// demoConfig is plan against srv: prompts of about prompt tokens,
// answers of output, each prompt its own.
func demoConfig(t *testing.T, srv *demo.Server, plan load.Plan, prompt, output int, slo bench.SLO) bench.Config {
	t.Helper()
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	plan.Target = load.Target{Base: base, API: load.ChatCompletions, Model: demo.DefaultModel}
	plan.Source = &workload.Synthetic{Shape: workload.Shape{API: load.ChatCompletions, Model: demo.DefaultModel},
		Prompt: workload.Dist{Mean: prompt, Min: prompt, Max: prompt}, Output: workload.Dist{Mean: output, Min: output, Max: output},
		FixedOutput: true, UniqueFirst: true, Seed: 1}
	cfg := bench.Config{Plan: plan, Scrape: benchtest.Scrape(srv.URL()), Metrics: srv.URL(), Interval: 100 * time.Millisecond, SLO: slo,
		Build: func(s *snapshot.Snapshot, now time.Time) *report.Report {
			return analysis.Analyze(s, analysis.Options{Now: now, WithRates: true})
		},
		Describe: bench.Describe{Target: srv.APIURL(), API: "chat_completions", Model: demo.DefaultModel, Version: "test",
			Workload: "prompts of about " + itoa(prompt) + " tokens, answers of " + itoa(output)}}
	return cfg
}

// demoRun runs plan against srv.
func demoRun(t *testing.T, srv *demo.Server, plan load.Plan, prompt, output int, slo bench.SLO) *bench.Report {
	t.Helper()
	rep, err := bench.Run(context.Background(), demoConfig(t, srv, plan, prompt, output, slo))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func itoa(n int) string { return strconv.Itoa(n) }

// saturatedRun is an open loop past the chat engine's capacity (about
// 43 answers of 100 tokens a wall second at ten times its speed; 80 are
// sent): its queue grows, and TTFT spreads over decades.
func saturatedRun(t *testing.T) *bench.Report {
	srv := startDemo(t, "chat", 10)
	return demoRun(t, srv, load.Plan{Rate: 80, Arrival: load.Poisson, Duration: 2 * time.Second, Warmup: load.Warmup{Duration: 500 * time.Millisecond}, Seed: 1, Drain: 30 * time.Second},
		20, 100, bench.SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond})
}

// rateSweep is a list of rates across the chat engine's capacity (about
// 43 answers of 100 tokens a wall second at ten times its speed) under an
// SLO on TTFT: the steps below it meet the SLO, those above miss it, and
// the knee lies between.
func rateSweep(t *testing.T) *sweep.Result {
	srv := startDemo(t, "chat", 10)
	base := demoConfig(t, srv, load.Plan{Arrival: load.Constant, Duration: time.Second, Seed: 1, Drain: 30 * time.Second}, 20, 100,
		bench.SLO{TTFT: 400 * time.Millisecond})
	res, err := sweep.Run(context.Background(), sweep.Config{Base: base, Profile: sweep.ProfileRate, Loads: []float64{10, 25, 40, 55, 70}, Drain: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// bothProbes probes the chat engine's prefill at three prompt lengths and
// its decode at three batch sizes, at its own pace (so that the client's
// speeds and the server's are alike).
func bothProbes(t *testing.T) *probe.Result {
	srv := startDemo(t, "chat", 1)
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	c := probe.Config{Target: load.Target{Base: base, API: load.ChatCompletions, Model: demo.DefaultModel},
		Probes: []string{probe.Prefill, probe.Decode}, Lengths: []int{256, 1024, 4096}, Batches: []int{1, 2, 4}, Repeat: 2,
		PromptTokens: 64, OutputTokens: 16, Scrape: benchtest.Scrape(srv.URL()), Metrics: srv.URL(), Seed: 7,
		Describe: probe.Describe{Target: srv.APIURL(), API: "chat_completions", Model: demo.DefaultModel, Version: "test"}}
	usage := func(ctx context.Context, r workload.Request) (int, error) {
		rec, err := load.Probe(ctx, c.Target, r)
		return rec.PromptTokens, err
	}
	c.Calibration, err = workload.Calibrate(context.Background(), workload.Shape{API: load.ChatCompletions, Model: demo.DefaultModel}, nil, usage)
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
