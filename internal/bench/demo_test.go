package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/benchtest"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/demo"
)

// The proof against the simulator, which knows each request's true queue,
// prefill and decode times: what the bench says of a run is checked
// against the simulator's own account, never against the bench's output.

// truth collects every generation the simulator finishes.
type truth struct {
	mu   sync.Mutex
	gens []exporter.Generation
}

func (t *truth) add(g exporter.Generation) {
	t.mu.Lock()
	t.gens = append(t.gens, g)
	t.mu.Unlock()
}

func (t *truth) all() []exporter.Generation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]exporter.Generation(nil), t.gens...)
}

// startDemo serves a scenario's engine behind the API at speed.
func startDemo(t *testing.T, scenario string, speed float64) (*demo.Server, *truth) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := &truth{}
	srv, err := demo.Start(ctx, demo.Options{Scenario: scenario, Speed: speed, Seed: 1, API: "127.0.0.1:0", Generation: tr.add})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return srv, tr
}

// chatSource asks for fixed answers of output tokens to prompts of about
// words words, each made unique by its first word so that no prompt is
// served from the cache.
type chatSource struct {
	words, output int
}

func (s chatSource) Next(i int) workload.Request {
	prompt := fmt.Sprintf("request%d %s", i, strings.Repeat("lorem ", s.words))
	b, _ := json.Marshal(map[string]any{"model": demo.DefaultModel, "stream": true, "max_tokens": s.output, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true}, "messages": []any{map[string]any{"role": "user", "content": prompt}}})
	return workload.Request{Body: b, PromptTokens: -1, OutputTokens: s.output, Fixed: true}
}

func demoConfig(t *testing.T, srv *demo.Server, p load.Plan, src workload.Source, interval time.Duration) Config {
	t.Helper()
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	p.Target = load.Target{Base: base, API: load.ChatCompletions, Model: demo.DefaultModel}
	p.Source = src
	return Config{Plan: p, Scrape: benchtest.Scrape(srv.URL()), Metrics: srv.URL(), Build: build, Interval: interval,
		Describe: Describe{Target: srv.APIURL(), API: "chat_completions", Model: demo.DefaultModel}}
}

// At the simulator's own pace (speed 1) one request at a time: each
// request's client TTFT is at least its true queue and prefill, and
// beyond them by less than one scrape interval; the server's split over
// the window is the simulator's; requests and tokens are exactly its
// totals, and the self-check says so.
func TestDemoTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator in real time")
	}
	srv, tr := startDemo(t, "chat", 1)
	const interval = 200 * time.Millisecond
	cfg := demoConfig(t, srv, load.Plan{Concurrency: 1, Requests: 12}, chatSource{words: 300, output: 8}, interval)
	var recs []load.Record
	var mu sync.Mutex
	rw := &recordTap{f: func(r load.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }}
	cfg.Generate = rw.wrap(load.Run)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	gens, tot := tr.all(), srv.Totals()
	if len(recs) != 12 || len(gens) != 12 || tot.Requests != 12 {
		t.Fatalf("%d records, %d generations, %d in the totals", len(recs), len(gens), tot.Requests)
	}
	// One at a time: the simulator finished them in the order sent.
	for i, r := range recs {
		g := gens[i]
		if r.Error != "" {
			t.Fatalf("request %d: %s %s", i, r.Error, r.ErrorDetail)
		}
		engine := g.Queue + g.Prefill
		if r.TTFT < engine {
			t.Errorf("request %d: client TTFT %v < the simulator's queue %v + prefill %v", i, r.TTFT, g.Queue, g.Prefill)
		}
		if r.TTFT-engine > interval {
			t.Errorf("request %d: client TTFT %v is %v beyond the simulator's queue and prefill", i, r.TTFT, r.TTFT-engine)
		}
		if r.OutputTokens != g.GeneratedTokens || r.PromptTokens != g.PromptTokens {
			t.Errorf("request %d: %d/%d tokens, the simulator %d/%d", i, r.PromptTokens, r.OutputTokens, g.PromptTokens, g.GeneratedTokens)
		}
	}
	c := rep.Client
	if c.Completed != int(tot.Requests) || c.OutputTokens != int(tot.GeneratedTokens) || *c.PromptTokens != int(tot.PromptTokens) {
		t.Errorf("client %d requests, %d+%d tokens; simulator %d, %d+%d", c.Completed, *c.PromptTokens, c.OutputTokens, tot.Requests, tot.PromptTokens, tot.GeneratedTokens)
	}
	sc := rep.SelfCheck
	if !sc.Comparable || float64(sc.Requests.Server) != float64(tot.Requests) || float64(sc.Tokens.Server) != float64(tot.GeneratedTokens) ||
		*sc.Requests.Agree != true || *sc.Tokens.Agree != true {
		t.Errorf("self-check %+v against %d requests, %d tokens", sc, tot.Requests, tot.GeneratedTokens)
	}
	// The window holds every request (no warm-up): its means are the
	// simulator's, to the exporter's float arithmetic.
	s := rep.TTFTSplit
	n := float64(tot.Requests)
	if s == nil || !closeTo(float64(s.Queue), tot.Queue.Seconds()/n, 1e-6) || !closeTo(float64(s.Prefill), tot.Prefill.Seconds()/n, 1e-6) {
		t.Errorf("split %+v, the simulator's queue %v prefill %v", s, tot.Queue.Seconds()/n, tot.Prefill.Seconds()/n)
	}
	if s != nil && !(float64(s.Outside) >= 0 && float64(s.Outside) < interval.Seconds()) {
		t.Errorf("outside the engine %v, want within [0, %v)", s.Outside, interval)
	}
	if rep.Verdict != analysis.VerdictDecodeBound && rep.Verdict != analysis.VerdictPrefillBound {
		t.Errorf("verdict %q", rep.Verdict)
	}
}

func closeTo(a, b, abs float64) bool { return a-b <= abs && b-a <= abs }

// recordTap sees every record the generator hands the bench.
type recordTap struct{ f func(load.Record) }

func (rt *recordTap) wrap(gen func(context.Context, load.Plan, func(load.Record), func(load.Progress)) (load.Summary, error)) func(context.Context, load.Plan, func(load.Record), func(load.Progress)) (load.Summary, error) {
	return func(ctx context.Context, p load.Plan, rec func(load.Record), prog func(load.Progress)) (load.Summary, error) {
		return gen(ctx, p, func(r load.Record) { rt.f(r); rec(r) }, prog)
	}
}

// Each verdict on a run built to show it: an open loop past the engine's
// capacity saturates its queue; prompts too long for the KV cache to hold
// a batch of them fill it; long prompts with one-token answers make
// prefill the bound. The simulator runs ten times faster than the wall
// clock: the verdict reads the server's own figures, which keep their
// proportions.
func TestDemoVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	tests := []struct {
		name, scenario string
		plan           load.Plan
		src            chatSource
		want           string
	}{
		// The chat engine runs 16 at once at 18 ms + 1.2 ms a job a step:
		// answers of 100 tokens take 3.7 s (simulated) at a full batch, so
		// it completes about 4.3 requests a (simulated) second, 43 a wall
		// second at ten times: of 80 a second, half queue up.
		{"saturated", "chat", load.Plan{Rate: 80, Arrival: load.Constant, Duration: 2 * time.Second, Warmup: load.Warmup{Duration: time.Second}},
			chatSource{words: 20, output: 100}, analysis.VerdictSaturated},
		// offload-healthy's engine holds 384 pages of 256 tokens: prompts of
		// about 15,000 tokens (59 pages with their answer) fit six at a
		// time in its batch of eight, filling 92% of the cache; the rest
		// wait for pages.
		{"kv-bound", "offload-healthy", load.Plan{Concurrency: 12, Duration: 3 * time.Second},
			chatSource{words: 9000, output: 40}, analysis.VerdictKVBound},
		// 4,000-token prompts (0.5 s of prefill each) for two-token answers.
		{"prefill-bound", "chat", load.Plan{Concurrency: 2, Requests: 30},
			chatSource{words: 2400, output: 2}, analysis.VerdictPrefillBound},
		{"decode-bound", "chat", load.Plan{Concurrency: 4, Requests: 16},
			chatSource{words: 20, output: 100}, analysis.VerdictDecodeBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := startDemo(t, tt.scenario, 10)
			rep, err := Run(context.Background(), demoConfig(t, srv, tt.plan, tt.src, 100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tt.want {
				t.Errorf("verdict %q, want %q; notes:", rep.Verdict, tt.want)
				for _, n := range rep.Notes {
					t.Logf("  %s: %s", n.ID, n.Text)
				}
			}
			if rep.Client.Failed > 0 {
				t.Errorf("%d failed: %v", rep.Client.Failed, rep.Client.Errors)
			}
			if sc := rep.SelfCheck; !sc.Comparable || sc.Requests.Agree == nil || !*sc.Requests.Agree || !*sc.Tokens.Agree {
				t.Errorf("self-check %+v", sc)
			}
		})
	}
}

// A server with no /metrics: Ollama's API on the simulator, measured by the
// bench itself (its own metric set counts exactly what the simulator
// finished), with Ollama's per-request durations as the server's split,
// which are the simulator's prefill and decode times.
func TestDemoOllamaOwnMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator in real time")
	}
	srv, _ := startDemo(t, "chat", 1)
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	src := &workload.Synthetic{Shape: workload.Shape{API: load.OllamaChat, Model: demo.DefaultModel}, Prompt: workload.Dist{Mean: 200, Min: 200, Max: 200},
		Output: workload.Dist{Mean: 12, Min: 12, Max: 12}, UniqueFirst: true, Seed: 1}
	cfg := Config{
		Plan:  load.Plan{Concurrency: 2, Requests: 16, Target: load.Target{Base: base, API: load.OllamaChat, Model: demo.DefaultModel}, Source: src},
		Build: build, Interval: 100 * time.Millisecond, Describe: Describe{Target: srv.APIURL(), API: "ollama_chat", Model: demo.DefaultModel},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tot := srv.Totals()
	if rep.Metrics != "bench" || rep.Server == nil || rep.Client.Completed != 16 || tot.Requests != 16 {
		t.Fatalf("metrics %q, %d completed, simulator %d", rep.Metrics, rep.Client.Completed, tot.Requests)
	}
	if got := float64(rep.Server.Scalars["requests_total"]); got != 16 {
		t.Errorf("own requests_total %v, want 16", got)
	}
	if got := float64(rep.Server.Scalars["tokens_predicted_total"]); got != float64(tot.GeneratedTokens) {
		t.Errorf("own tokens_predicted_total %v, the simulator %d", got, tot.GeneratedTokens)
	}
	s := rep.Client.Split
	n := float64(tot.Requests)
	if s == nil || s.Source != "ollama" || !closeTo(float64(s.Prefill), tot.Prefill.Seconds()/n, 1e-6) || !closeTo(float64(s.Decode), tot.Decode.Seconds()/n, 1e-6) {
		t.Errorf("split %+v, the simulator's prefill %v decode %v", s, tot.Prefill.Seconds()/n, tot.Decode.Seconds()/n)
	}
	if s != nil && !(float64(s.Beyond) >= tot.Queue.Seconds()/n) {
		t.Errorf("TTFT beyond the prefill %v, less than the simulator's mean queue %v", s.Beyond, tot.Queue.Seconds()/n)
	}
	if rep.Verdict != analysis.VerdictDecodeBound && rep.Verdict != analysis.VerdictPrefillBound {
		t.Errorf("verdict %q from the answers' own phase times", rep.Verdict)
	}
}
