package probe

import (
	"context"
	"math"
	"net/url"
	"strconv"
	"testing"

	"github.com/inferscope/inferscope/internal/bench/benchtest"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/sim"
)

// The proof against the simulator: the probe's speeds are the engine's
// configured ones, worked out below by hand from sim.Config (the "chat"
// scenario's engine, sim/scenario.go), never from the probe's output.
//
// Prefill: a prompt of P tokens is computed in ceil(P/ChunkSize) chunks,
// each costing ChunkOverhead + its tokens / PrefillRate (sim.go, plan),
// and its first token comes with the last chunk. With ChunkSize 2048,
// PrefillRate 8,000 tok/s and ChunkOverhead 6 ms, a prompt of P tokens
// takes ceil(P/2048) × 6 ms + P/8000 s: 4,000 tokens 12 + 500 = 512 ms
// (7,813 tok/s), 6,000 tokens 18 + 750 = 768 ms (7,813 tok/s): 2.3% below
// the configured 8,000, the chunks' overhead. The lengths are
// clear of a chunk's boundary: the demo counts a prompt's tokens from its
// bytes, so prompts asked of one length differ by a few tokens.
//
// Decode: a step emits one token for every request decoding and takes
// DecodeBase + DecodePerJob × (requests decoding) = 18 ms + 1.2 ms × B,
// so one request decodes at 1/(0.018 + 0.0012 B) tok/s: 52.08 at B = 1,
// 43.86 at 4, 36.23 at 8; the batch at B times that: 52.08, 175.4, 289.9.
// Requests started together are prefilled one chunk at a time between
// decode steps (sim.go: prefill and decode alternate while both wait), so
// the first of a round decodes beside fewer and pauses for the others'
// chunks: with prompts of one chunk (64 tokens: 6 + 8 = 14 ms) and 128
// tokens out, that moves a request's speed by about 2% at B = 8.
func TestDemoSpeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator in real time")
	}
	c, err := sim.Scenario("chat", 1)
	if err != nil {
		t.Fatal(err)
	}
	prefillAt := func(p float64) float64 {
		chunks := math.Ceil(p / float64(c.ChunkSize))
		return p / (chunks*c.ChunkOverhead.Seconds() + p/c.PrefillRate)
	}
	decodeAt := func(b int) float64 { return 1 / (c.DecodeBase.Seconds() + c.DecodePerJob.Seconds()*float64(b)) }
	// The hand-worked figures above, from the configuration.
	for _, w := range []struct{ got, want float64 }{{prefillAt(4000), 7813}, {prefillAt(6000), 7813}, {decodeAt(1), 52.08}, {decodeAt(8), 36.23}} {
		if math.Abs(w.got-w.want) > 0.5 {
			t.Fatalf("the configuration gives %v, worked by hand %v: the scenario changed", w.got, w.want)
		}
	}
	within := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got/want-1) > 0.05 || math.IsNaN(got) {
			t.Errorf("%s: %.1f tok/s, the simulator's %.1f (%+.1f%%)", what, got, want, 100*(got/want-1))
		} else {
			t.Logf("%s: %.1f tok/s, the simulator's %.1f (%+.1f%%)", what, got, want, 100*(got/want-1))
		}
	}

	t.Run("prefill", func(t *testing.T) {
		t.Parallel()
		// At the simulator's own pace: the client's TTFT is wall time,
		// which a busy machine stretches now and then (the median of
		// three is the middle one).
		srv := startDemo(t, 1)
		res, err := Run(context.Background(), demoConfig(t, srv, Config{Probes: []string{Prefill}, Lengths: []int{4000, 6000}, Repeat: 3}))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Prefill.Points) != 2 {
			t.Fatalf("%d points", len(res.Prefill.Points))
		}
		for _, p := range res.Prefill.Points {
			if p.Requests != 3 || p.Failed != 0 || p.Cold == nil || p.Server == nil || p.ServerFrom != FromMetrics {
				t.Fatalf("%+v", p)
			}
			// The demo counts each request's prompt in its usage; the
			// engine computes exactly those tokens (no cache: first words
			// of its own).
			if p.CachedTokens != 0 {
				t.Errorf("%d tokens: %v cached", p.Length, p.CachedTokens)
			}
			want := prefillAt(float64(p.PromptTokens))
			within("prefill, client TTFT, "+itoa(p.Length), float64(p.Client.Median), want)
			// The server's own prefill time is the simulator's, exactly
			// (the prompts' lengths differ by a few tokens, which moves
			// the speed by less than 0.1%).
			if got := float64(p.Server.Median); math.Abs(got/want-1) > 1e-3 {
				t.Errorf("prefill, server, %d tokens: %v tok/s, the simulator's %v", p.Length, got, want)
			}
		}
	})
	t.Run("decode", func(t *testing.T) {
		t.Parallel()
		// Two simulated seconds a wall second: the client's speeds are
		// twice the engine's, the server's (simulated time) its own. (A
		// faster clock makes the demo's 5 ms ticks and the machine's
		// scheduling a larger part of a round.)
		const speed = 2
		srv := startDemo(t, speed)
		res, err := Run(context.Background(), demoConfig(t, srv, Config{Probes: []string{Decode}, Batches: []int{1, 8}, Repeat: 1,
			PromptTokens: 64, OutputTokens: 128}))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Decode.Points) != 2 {
			t.Fatalf("%d points", len(res.Decode.Points))
		}
		for _, p := range res.Decode.Points {
			if p.Rounds != 1 || p.Requests != p.Batch || p.Failed != 0 || p.Cold == nil || p.Server == nil {
				t.Fatalf("%+v", p)
			}
			want := decodeAt(p.Batch)
			within("decode per request, client, batch "+itoa(p.Batch), float64(p.PerRequest.Median)/speed, want)
			within("decode total, client, batch "+itoa(p.Batch), float64(p.Total.Median)/speed, want*float64(p.Batch))
			within("decode per request, server, batch "+itoa(p.Batch), float64(p.Server.Median), want)
			if !(float64(p.Overlap) > 0.8) {
				t.Errorf("batch %d: overlap %v", p.Batch, p.Overlap)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// startDemo serves the chat scenario's engine behind the API at speed.
func startDemo(t *testing.T, speed float64) *demo.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: speed, Seed: 1, API: "127.0.0.1:0", Listen: "127.0.0.1:0"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return srv
}

// demoConfig is c against the demo's API and /metrics, its prompts
// calibrated from the usage the demo reports (it has no /tokenize).
func demoConfig(t *testing.T, srv *demo.Server, c Config) Config {
	t.Helper()
	base, err := url.Parse(srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	c.Target = load.Target{Base: base, API: load.ChatCompletions, Model: demo.DefaultModel}
	usage := func(ctx context.Context, r workload.Request) (int, error) {
		rec, err := load.Probe(ctx, c.Target, r)
		return rec.PromptTokens, err
	}
	c.Calibration, err = workload.Calibrate(context.Background(), workload.Shape{API: load.ChatCompletions, Model: demo.DefaultModel}, nil, usage)
	if err != nil {
		t.Fatal(err)
	}
	c.Scrape, c.Metrics, c.Seed = benchtest.Scrape(srv.URL()), srv.URL(), 7
	return c
}
