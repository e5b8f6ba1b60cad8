package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/benchtest"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The knee against the simulator, whose engine's capacity follows from its
// configuration (sim/scenario.go, sim/sim.go) by hand. Each test runs the
// demo's API faster than the wall clock (the knee is a rate, which scales
// with the speed; the SLO's limits are wall-clock times) and sends a
// constant stream of arrivals, so that below the capacity no request
// waits (deterministic service, deterministic arrivals) and above it the
// backlog grows with every arrival: the truth is the capacity itself.

// fixedChat asks for answers of output tokens to a prompt the demo counts
// as exactly prompt tokens: the demo's API counts a message as a quarter
// of its bytes, rounded up, plus 4 (internal/demo/api.go). Each prompt
// starts with its index, so no prompt is served from the prefix cache.
type fixedChat struct {
	prompt, output int
}

func (f fixedChat) Next(i int) workload.Request {
	bytes := 4 * (f.prompt - 4)
	head := fmt.Sprintf("r%09d ", i)
	text := head + strings.Repeat("x", bytes-len(head))
	b, _ := json.Marshal(map[string]any{"model": demo.DefaultModel, "stream": true, "max_tokens": f.output, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true}, "messages": []any{map[string]any{"role": "user", "content": text}}})
	return workload.Request{Body: b, PromptTokens: f.prompt, OutputTokens: f.output, Fixed: true}
}

func build(s *snapshot.Snapshot, now time.Time) *report.Report {
	return analysis.Analyze(s, analysis.Options{Now: now, WithRates: true})
}

// demoBase is a run against the demo's API of scenario at speed: every
// step sends for per, constant arrivals.
func demoBase(t *testing.T, scenario string, speed float64, src workload.Source, per time.Duration, slo bench.SLO) bench.Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := demo.Start(ctx, demo.Options{Scenario: scenario, Speed: speed, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	return bench.Config{
		Plan: load.Plan{Duration: per, Arrival: load.Constant, Drain: 30 * time.Second, Source: src,
			Target: load.Target{Base: base, API: load.ChatCompletions, Model: demo.DefaultModel}},
		Scrape: benchtest.Scrape(srv.URL()), Metrics: srv.URL(), Build: build, Interval: 100 * time.Millisecond, SLO: slo,
		Describe: bench.Describe{Target: srv.APIURL(), API: "chat_completions", Model: demo.DefaultModel},
	}
}

// withinStep checks the knee is within one step (its bracket's width) of
// the truth, or of head above it: what a step that starts idle can carry
// beyond the steady state.
func withinStep(t *testing.T, k *Knee, truth, head float64) {
	t.Helper()
	lo, hi, w := float64(k.Load), float64(k.Broke), float64(k.Width)
	if math.IsNaN(w) || truth < lo-w-head || truth > hi+w {
		t.Errorf("knee between %.2f and %.2f req/s (width %.2f), the truth %.2f: not within one step", lo, hi, w, truth)
	}
}

func logSweep(t *testing.T, res *Result) {
	t.Helper()
	for _, s := range res.Steps {
		t.Logf("step %d %-11s %-6s c=%-3d rate=%6.2f  done %6.2f/s  ttft p50 %6.1f ms p99 %6.1f ms  good %5.1f%%  verdict %s  missed %v  queue %.3f prefill %.3f kv %.2f",
			s.Index, s.Phase, s.Mode, s.Concurrency, float64(s.Rate), float64(s.Summary.RequestRate.Mean),
			1000*float64(s.Summary.TTFTP50.Mean), 1000*float64(s.Summary.TTFTP99.Mean), 100*float64(s.SLO.Share), s.Summary.Verdict, s.SLO.Missed,
			float64(s.Summary.Queue.Mean), float64(s.Summary.Prefill.Mean), float64(s.Summary.KVPeak.Mean))
	}
	if k := res.Knee; k != nil {
		t.Logf("knee %.2f (step %d) .. %.2f (step %d): %s [%s, %s]", float64(k.Load), k.Step, float64(k.Broke), k.BrokeStep, k.Why, k.Reason, k.Phase)
	}
}

// A prefill-bound engine: the chat scenario's (sim/scenario.go engine():
// prefill at 8,000 tokens a second in chunks of 2,048 at 6 ms overhead
// each, a decode step of 18 ms + 1.2 ms a request, a batch of 16, a cache
// of 1,024 pages) given prompts of 4,000 tokens for answers of 2 tokens.
//
// By hand: a request's prompt is two chunks, 2,048 tokens (0.256 s + 6 ms)
// and 1,952 (0.244 s + 6 ms), its first token at the second's end; its
// second token takes one decode step, run right after (the engine
// alternates a chunk and a step while any request decodes: sim.plan), with
// it alone decoding: 18 + 1.2 ms. No step of one request overlaps
// another's (prefill is one chunk at a time, oldest first, and the one
// decode step comes before the next prompt's first chunk), so the engine
// spends 0.262 + 0.250 + 0.0192 = 0.5312 s on each request whatever the
// load: it completes 1/0.5312 = 1.8825 requests a simulated second, 28.24
// a wall second at speed 15. Below that, constant arrivals never wait;
// above it each arrival adds to a backlog that only grows.
//
// The limit: a request alone has its first token after 0.512 s simulated
// (34 ms of wall time) plus the API's 5 ms tick; ttft=125ms leaves some
// 85 ms (1.3 s simulated, under three requests' worth) of backlog before a
// request misses it: at a tenth above the capacity a step of 2 s (56
// arrivals) builds it within 25, and most of the rest miss; a few tens of
// milliseconds of a busy machine's scheduling do not. The bracket is
// halved to a tenth of the ceiling: one step. What grows is the time the backlog waits for its
// prefill: the simulator admits up to 16 requests at once and prefills
// them one at a time, so the waiting is prefill time, not queue: the
// reason is prefill.
func TestKneePrefillBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	const speed = 15
	truth := speed / 0.5312
	slo := bench.SLO{TTFT: 125 * time.Millisecond}
	cfg := Config{Base: demoBase(t, "chat", speed, fixedChat{prompt: 4000, output: 2}, 2*time.Second, slo),
		Profile: ProfileAuto, Ceiling: 32, Share: 0.9, Precision: 0.1}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	logSweep(t, res)
	dumpText(t, res)
	checkPromptTokens(t, res, 4000)
	k := res.Knee
	if k == nil || k.BrokeStep == 0 {
		t.Fatalf("no knee: %+v", k)
	}
	withinStep(t, k, truth, 0) // prefilled one at a time: an idle start gains nothing
	if k.Reason != ReasonPrefill || k.Phase != "prefill" {
		t.Errorf("reason %q, phase %q; want prefill, prefill", k.Reason, k.Phase)
	}
}

// A KV-bound engine: offload-healthy's (sim/scenario.go rag(): a cache of
// 384 pages of 256 tokens, a batch of 8) given prompts of 360 tokens for
// answers of 15,000: 15,360 tokens, 60 pages a request, of which the
// cache holds 6 (360 pages, 94%): the seventh waits for pages though the
// batch has room for two more.
//
// By hand: with 6 running, a decode step takes 18 + 6 × 1.2 = 25.2 ms and
// a request takes 14,999 of them after its first token (378.0 s). Each
// admission adds one prefill chunk of 360 tokens (45 ms + 6 ms) and the
// store of the 60 pages it evicts to RAM (32 MiB each at 25 GB/s: 1.3 ms,
// 80 ms a request); a request sees some 6 admissions in its life: 0.8 s.
// Six requests every 378.8 s: 0.01584 a simulated second, 15.84 a wall
// second at speed 1,000. Alone a request takes 14,999 steps of 19.2 ms,
// 288 s: the synchronous step completes 3.5 a wall second.
//
// The limit: a request's first token comes within the API's 5 ms tick;
// ttft=100ms leaves the backlog one and a half requests' worth (63 ms of
// wall time each at the capacity): at a tenth above the capacity a step
// of 2 s (35 arrivals) builds it within 15. Above the capacity the cache is full and
// requests wait for its pages: the verdict is KV-bound, and so the reason.
func TestKneeKVBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	const speed = 1000
	truth := speed * 6 / 378.8
	slo := bench.SLO{TTFT: 100 * time.Millisecond}
	cfg := Config{Base: demoBase(t, "offload-healthy", speed, fixedChat{prompt: 360, output: 15000}, 2*time.Second, slo),
		Profile: ProfileAuto, Ceiling: 32, Share: 0.9, Precision: 0.1}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	logSweep(t, res)
	checkPromptTokens(t, res, 360)
	k := res.Knee
	if k == nil || k.BrokeStep == 0 {
		t.Fatalf("no knee: %+v", k)
	}
	// Each step starts drained: its first six requests find the cache
	// empty, six more than the steady state admits over the step's 2 s,
	// so a step can meet the target up to 3 a second above the capacity.
	withinStep(t, k, truth, 6/2.0)
	if k.Reason != ReasonKVCache || k.Verdict != analysis.VerdictKVBound {
		t.Errorf("reason %q, verdict %q; want kv_cache, %s", k.Reason, k.Verdict, analysis.VerdictKVBound)
	}
}

// checkPromptTokens holds the hand's premise: the server counted every
// prompt as the lengths the truth was worked out for.
func checkPromptTokens(t *testing.T, res *Result, want int) {
	t.Helper()
	for _, s := range res.Steps {
		for _, r := range s.Runs {
			if l := r.Client.Lengths.Prompt; l.Count > 0 && (float64(l.Min) != float64(want) || float64(l.Max) != float64(want)) {
				t.Fatalf("step %d: prompts of %v to %v tokens, the truth is for %d", s.Index, l.Min, l.Max, want)
			}
		}
	}
}

func dumpText(t *testing.T, res *Result) {
	if os.Getenv("SWEEP_DUMP") == "" {
		return
	}
	var b strings.Builder
	if err := Text(&b, res, TextOptions{Render: render.Options{Width: 120}}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	f, _ := os.Create(os.Getenv("SWEEP_DUMP"))
	JSON(f, res)
	f.Close()
}
