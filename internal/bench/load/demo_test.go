package load

import (
	"context"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/demo"
)

// TestAgainstSimulator: the generator against inferscope's own simulator
// API on every API: the requests and tokens it counts are exactly the
// simulator's own totals.
func TestAgainstSimulator(t *testing.T) {
	for _, c := range []struct {
		name string
		api  API
		plan Plan
	}{
		{"chat, closed loop", ChatCompletions, Plan{Concurrency: 4, Requests: 24}},
		{"completions, Poisson", Completions, Plan{Rate: 50, Requests: 20, Seed: 1}},
		{"Ollama chat, gamma with a cap", OllamaChat, Plan{Rate: 100, Arrival: Gamma, Burstiness: 0.5, Concurrency: 3, Requests: 20, Seed: 2}},
		{"Ollama generate, warm-up", OllamaGenerate, Plan{Concurrency: 2, Requests: 10, Warmup: Warmup{Requests: 4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: demo.MaxSpeed, Seed: 1, API: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			p := c.plan
			p.Target = Target{Base: mustURL(t, srv.APIURL()), API: c.api, Timeout: 30 * time.Second}
			p.Source = &workload.Synthetic{Shape: workload.Shape{API: c.api, Model: "sim"}, Seed: 5,
				Prompt: workload.Dist{Kind: workload.Uniform, Min: 20, Max: 200}, Output: workload.Dist{Kind: workload.Uniform, Min: 1, Max: 30}}
			sum, recs := collect(t, t.Context(), p)
			tokens, prompt, asked := 0, 0, 0
			for _, r := range recs {
				if r.Error != "" || r.TokenSource != "usage" || !r.Streamed {
					t.Fatalf("%+v", r)
				}
				tokens += r.OutputTokens
				prompt += r.PromptTokens
				asked += r.RequestedOutput
				if r.TTFT < 0 || r.E2E < r.TTFT || r.Done < r.E2E {
					t.Errorf("times %+v", r)
				}
			}
			truth := srv.Totals()
			if truth.Requests != int64(len(recs)) || truth.Requests != int64(sum.Sent+sum.Warmup) {
				t.Errorf("the simulator served %d requests; %d records, %d sent + %d warm-up", truth.Requests, len(recs), sum.Sent, sum.Warmup)
			}
			if truth.GeneratedTokens != int64(tokens) || tokens != asked {
				t.Errorf("the simulator generated %d tokens; the records count %d, asked %d", truth.GeneratedTokens, tokens, asked)
			}
			if truth.PromptTokens != int64(prompt) {
				t.Errorf("the simulator's prompts hold %d tokens; the records %d", truth.PromptTokens, prompt)
			}
		})
	}
}
