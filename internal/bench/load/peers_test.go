package load

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// TestPeers runs the generator against real servers, with their
// /metrics as the judge: the requests and tokens it counts are exactly
// the deltas of the server's own counters. It needs the peers built by
// shared/tools/peers_setup.sh: INFERSCOPE_PEERS=/tmp/peers go test -run
// TestPeers ./internal/bench/load. It starts each server on a free port,
// and stops it.
func TestPeers(t *testing.T) {
	dir := os.Getenv("INFERSCOPE_PEERS")
	if dir == "" {
		t.Skip("INFERSCOPE_PEERS is not set (the directory of llama-server, tiny-llama.gguf and llm-d-inference-sim)")
	}
	t.Run("llama-server", func(t *testing.T) {
		port := freePort(t)
		base := start(t, port, filepath.Join(dir, "llama-server"), "-m", filepath.Join(dir, "tiny-llama.gguf"), "--metrics",
			"--port", port, "-np", "4", "-c", "4096")
		shape := workload.Shape{API: ChatCompletions, Model: "tiny"}
		tok, err := workload.FindTokenizer(t.Context(), Client(Target{Base: mustURL(t, base)}), mustURL(t, base), "tiny")
		if err != nil || tok.Form != "llama.cpp" {
			t.Fatalf("llama.cpp's /tokenize: %+v %v", tok, err)
		}
		// The model's vocabulary is tiny: few words are one token, so
		// the tokens a word are measured, and the lengths are near.
		cal, err := workload.Calibrate(t.Context(), shape, tok, probeUsage(t, base))
		if err != nil || cal.PerWord <= 1 {
			t.Fatalf("calibration %+v %v", cal, err)
		}
		before := scrapeSums(t, base)
		recs := runPeer(t, base, Plan{Concurrency: 4, Requests: 12}, &workload.Synthetic{Shape: shape, Seed: 1, Calibration: cal,
			Prompt: workload.Dist{Kind: workload.Uniform, Min: 40, Max: 120}, Output: workload.Dist{Kind: workload.Fixed, Mean: 6}, FixedOutput: true})
		after := scrapeSums(t, base)
		out, prompt, cached, resent := 0, 0, 0, 0
		for _, r := range recs {
			if r.Resent {
				resent++
			}
			t.Logf("request %d: asked a prompt of %d tokens, the server counted %d", r.Index, r.RequestedPrompt, r.PromptTokens)
			out += r.OutputTokens
			prompt += r.PromptTokens
			cached += r.CachedTokens
			if r.OutputTokens != 6 || r.Finish != "length" || r.Split == nil || r.Split.Source != "llama.cpp" {
				t.Errorf("%+v %+v", r, r.Split)
			}
		}
		if d := after["llamacpp:tokens_predicted_total"] - before["llamacpp:tokens_predicted_total"]; d != float64(out) {
			t.Errorf("llama.cpp predicted %v tokens; the generator received %d", d, out)
		}
		t.Logf("%d of %d requests were sent again after llama.cpp closed their connection; calibration %v tokens a word, %d added", resent, len(recs), cal.PerWord, cal.Overhead)
		// llama.cpp counts the prompt tokens it evaluated: not those it
		// found in a slot's cache.
		if d := after["llamacpp:prompt_tokens_total"] - before["llamacpp:prompt_tokens_total"]; d != float64(prompt-cached) {
			t.Errorf("llama.cpp evaluated %v prompt tokens; the generator's usage says %d less %d cached", d, prompt, cached)
		}
	})
	t.Run("llm-d-inference-sim", func(t *testing.T) {
		port := freePort(t)
		base := start(t, port, filepath.Join(dir, "llm-d-inference-sim"), "--model", "tiny", "--port", port, "--max-num-seqs", "8")
		shape := workload.Shape{API: ChatCompletions, Model: "tiny"}
		tok, err := workload.FindTokenizer(t.Context(), Client(Target{Base: mustURL(t, base)}), mustURL(t, base), "tiny")
		if err != nil || tok.Form != "vllm" {
			t.Fatalf("the simulator's /tokenize: %+v %v", tok, err)
		}
		cal, err := workload.Calibrate(t.Context(), shape, tok, probeUsage(t, base))
		if err != nil || cal.Method != "tokenize" {
			t.Fatalf("calibration %+v %v", cal, err)
		}
		src := &workload.Synthetic{Shape: shape, Seed: 2, Prompt: workload.Dist{Kind: workload.Uniform, Min: 30, Max: 200},
			Output: workload.Dist{Kind: workload.Uniform, Min: 1, Max: 10}, FixedOutput: true, Calibration: cal}
		before := scrapeSums(t, base)
		recs := runPeer(t, base, Plan{Rate: 40, Concurrency: 6, Requests: 60, Seed: 3}, src)
		after := scrapeSums(t, base)
		out, prompt := 0, 0
		for _, r := range recs {
			out += r.OutputTokens
			prompt += r.PromptTokens
			if r.PromptTokens != r.RequestedPrompt || r.OutputTokens != r.RequestedOutput {
				t.Errorf("asked %d prompt and %d output tokens, the server reports %d and %d", r.RequestedPrompt, r.RequestedOutput, r.PromptTokens, r.OutputTokens)
			}
		}
		for name, want := range map[string]int{"vllm:request_success_total": len(recs), "vllm:generation_tokens_total": out, "vllm:prompt_tokens_total": prompt} {
			if d := after[name] - before[name]; d != float64(want) {
				t.Errorf("%s grew by %v; the generator counts %d", name, d, want)
			}
		}
	})
}

// probeUsage is a calibration's probe: one request, the prompt tokens
// its usage reports.
func probeUsage(t *testing.T, base string) workload.UsageFunc {
	return func(ctx context.Context, w workload.Request) (int, error) {
		r, err := Probe(ctx, Target{Base: mustURL(t, base), API: ChatCompletions}, w)
		if err == nil && r.Error != "" {
			err = fmt.Errorf("%s: %s", r.Error, r.ErrorDetail)
		}
		return r.PromptTokens, err
	}
}

func runPeer(t *testing.T, base string, p Plan, src workload.Source) []Record {
	t.Helper()
	p.Target = Target{Base: mustURL(t, base), API: ChatCompletions, Timeout: time.Minute}
	p.Source = src
	sum, recs := collect(t, t.Context(), p)
	for _, r := range recs {
		if r.Error != "" {
			t.Logf("request %d: %s: %s", r.Index, r.Error, r.ErrorDetail)
		}
	}
	if sum.Errors != 0 || sum.Completed != p.Requests || len(recs) != p.Requests {
		t.Fatalf("%d completed, %d errors, %d records: %+v", sum.Completed, sum.Errors, len(recs), recs[0])
	}
	return recs
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// start runs a server until the test ends, once its /metrics answers.
func start(t *testing.T, port string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
	}
	t.Fatalf("%s did not come up", name)
	return ""
}

// scrapeSums reads base's /metrics: each family's samples summed.
func scrapeSums(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				sums[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				sums[name] += m.Gauge.GetValue()
			case m.Untyped != nil:
				sums[name] += m.Untyped.GetValue()
			}
		}
	}
	return sums
}
