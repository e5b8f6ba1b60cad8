package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/sim"
)

// startDemo serves the simulator's API (its own workload off) and returns
// it with a proxy in front.
func startDemo(t *testing.T, o Options) (*demo.Server, *Proxy, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 50, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	p, ps := start(t, srv.APIURL(), o)
	return srv, p, ps.URL
}

// drain sends one request and reads the whole answer.
func drain(t *testing.T, url, body string) string {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("%s: status %d, %v: %s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// concurrently sends n requests at once, the i-th built by body(i).
func concurrently(t *testing.T, n int, url string, body func(i int) string) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { drain(t, url, body(i)) })
	}
	wg.Wait()
}

// sum adds a family's series over every model.
func (p published) sum(name string) float64 {
	var s float64
	for _, v := range p.vals[name] {
		s += v
	}
	return s
}

func (p published) count(name string) float64 {
	var s float64
	for _, v := range p.counts[name] {
		s += v
	}
	return s
}

// TestTotalsEqualSimulator: through the proxy, the simulator's API
// publishes the simulator's own totals: requests, prompt, cached and
// generated tokens, and a TTFT observation per streamed request; with
// Ollama's durations, its prefill and decode time to the nanosecond.
func TestTotalsEqualSimulator(t *testing.T) {
	srv, p, base := startDemo(t, Options{})
	// A shared system prompt, so the prefix cache has something to hit.
	system := strings.Repeat("You are a careful assistant who answers in one line. ", 40)

	concurrently(t, 24, base+"/v1/chat/completions", func(i int) string {
		return fmt.Sprintf(`{"model":"oa","stream":true,"stream_options":{"include_usage":true},"max_tokens":%d,"messages":[{"role":"system","content":%q},{"role":"user","content":"question %d"}]}`, 5+i%7, system, i)
	})
	concurrently(t, 6, base+"/v1/completions", func(i int) string {
		return fmt.Sprintf(`{"model":"oa","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"prompt":"complete %d"}`, i)
	})
	waitIdle(t, p)
	truth := srv.Totals()
	pub := scrapeProxy(t, p)
	if truth.Requests != 30 || truth.CachedTokens == 0 {
		t.Fatalf("the simulator finished %d requests with %d cached tokens: want 30, some cached", truth.Requests, truth.CachedTokens)
	}
	for name, want := range map[string]int64{
		"requests_total":         truth.Requests,
		"prompt_tokens_total":    truth.PromptTokens - truth.CachedTokens,
		"cached_tokens_total":    truth.CachedTokens,
		"tokens_predicted_total": truth.GeneratedTokens,
	} {
		if got := pub.sum(name); got != float64(want) {
			t.Errorf("OpenAI: %s = %v, the simulator says %d", name, got, want)
		}
	}
	if got := pub.count("time_to_first_token_seconds"); got != float64(truth.Requests) {
		t.Errorf("OpenAI: TTFT count %v, want one per streamed request (%d)", got, truth.Requests)
	}

	// Ollama's API: counts and durations, no cached split.
	concurrently(t, 12, base+"/api/chat", func(i int) string {
		return fmt.Sprintf(`{"model":"ol","options":{"num_predict":%d},"messages":[{"role":"system","content":%q},{"role":"user","content":"q %d"}]}`, 3+i%5, system, i)
	})
	concurrently(t, 4, base+"/api/generate", func(i int) string {
		return fmt.Sprintf(`{"model":"ol","stream":false,"options":{"num_predict":6},"prompt":"p %d"}`, i)
	})
	waitIdle(t, p)
	after := srv.Totals()
	pub = scrapeProxy(t, p)
	ol := func(name string) float64 { return pub.vals[name]["ol"] }
	if got, want := ol("requests_total"), after.Requests-truth.Requests; got != float64(want) {
		t.Errorf("Ollama: requests_total %v, the simulator finished %d", got, want)
	}
	if got, want := ol("prompt_tokens_all_total"), after.PromptTokens-truth.PromptTokens; got != float64(want) {
		t.Errorf("Ollama: prompt_tokens_all_total %v, the simulator's prompts %d", got, want)
	}
	if got, want := ol("tokens_predicted_total"), after.GeneratedTokens-truth.GeneratedTokens; got != float64(want) {
		t.Errorf("Ollama: tokens_predicted_total %v, the simulator generated %d", got, want)
	}
	if got, want := ol("prompt_seconds_total"), (after.Prefill - truth.Prefill).Seconds(); !near(got, want) {
		t.Errorf("Ollama: prompt_seconds_total %v, the simulator's prefill %v", got, want)
	}
	if got, want := ol("tokens_predicted_seconds_total"), (after.Decode - truth.Decode).Seconds(); !near(got, want) {
		t.Errorf("Ollama: tokens_predicted_seconds_total %v, the simulator's decode %v", got, want)
	}
	if got := pub.counts["time_to_first_token_seconds"]["ol"]; got != 12 {
		t.Errorf("Ollama: TTFT count %v, want 12 (the streamed chats; generate did not stream)", got)
	}
	if _, ok := pub.vals["cached_tokens_total"]["ol"]; ok {
		t.Errorf("Ollama: cached_tokens_total published; its API does not say it")
	}
}

// TestAbortedAgainstSimulator: a client that hangs up mid-stream is an
// abort to the proxy and a cancelled request to the simulator, and no
// generation to either.
func TestAbortedAgainstSimulator(t *testing.T) {
	srv, p, base := startDemo(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/generate", strings.NewReader(`{"model":"m","prompt":"write a long story","options":{"num_predict":5000}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitIdle(t, p)
	var tot sim.Totals
	for i := 0; ; i++ {
		if tot = srv.Totals(); tot.Cancelled == 1 || i > 400 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	pub := scrapeProxy(t, p)
	if tot.Cancelled != 1 || tot.Requests != 0 {
		t.Errorf("the simulator: %d cancelled, %d finished; want 1 and 0", tot.Cancelled, tot.Requests)
	}
	if got := pub.outcome("ollama_generate", "aborted"); got != 1 {
		t.Errorf("the proxy: aborted %v, want 1", got)
	}
	if got := pub.sum("requests_total"); got != 0 {
		t.Errorf("the proxy recorded %v finished generations", got)
	}
}
