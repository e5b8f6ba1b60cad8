package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
)

// realDir holds expositions real servers published (testdata/real/README.md
// says where each came from and lists facts checked by hand).
const realDir = "../../testdata/real/"

// realAt is the scrape time the real files are read at: none records one.
const realAt = "2026-01-01T00:00:00Z"

func realFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(realDir + "*.prom")
	if err != nil || len(files) < 15 {
		t.Fatalf("real expositions: %v, %d files", err, len(files))
	}
	return files
}

// Every real exposition through the command line, as text (with the
// distributions) and as JSON: what a user sees, kept as golden files. An
// exposition that cannot give a report keeps its error lines instead.
func TestGoldenReal(t *testing.T) {
	for _, file := range realFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".prom")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", file, "--at", realAt, "--width", "120", "--hist")
			golden.Check(t, "real/"+name+".txt", fmt.Sprintf("exit %d\n%s%s", code, errOut, out))
			if code != ExitOK {
				return
			}
			out, _, _ = runCLI(t, "", "--json", "--at", realAt, file)
			if !json.Valid([]byte(out)) {
				t.Fatal("invalid JSON")
			}
			golden.Check(t, "real/"+name+".json", out)
		})
	}
}

// realJSON is the report of one real exposition, decoded.
func realJSON(t *testing.T, name string, args ...string) map[string]any {
	t.Helper()
	args = append([]string{"--json", "--at", realAt, realDir + name + ".prom"}, args...)
	out, errOut, code := runCLI(t, "", args...)
	if code != ExitOK {
		t.Fatalf("%s: exit %d: %s", name, code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a decoded JSON document by keys.
func at(m any, path ...string) any {
	for _, k := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

func noteIDsOf(m map[string]any) []string {
	var ids []string
	notes, _ := m["notes"].([]any)
	for _, n := range notes {
		ids = append(ids, at(n, "id").(string))
	}
	return ids
}

// Each class of issue 9 on the real expositions that show it, against
// figures worked out by hand from the files (testdata/real/README.md).
func TestRealFacts(t *testing.T) {
	near := func(got any, want float64) bool {
		f, ok := got.(float64)
		return ok && math.Abs(f-want) <= 1e-9*math.Max(1, math.Abs(want))
	}
	tests := []struct {
		name, file string
		path       []string
		want       any // a float64 (compared within rounding), a string, or nil for JSON null
	}{
		// 9.1: SGLang 0.3.5 publishes no cached-token counter: no hit ratio,
		// no computed prompt tokens, the whole prompt count as published.
		{"no hit ratio without cached tokens", "sglang-0.3.5-docs-production-metrics", []string{"figures", "prefix_cache_hit_ratio"}, nil},
		{"no computed prompt tokens", "sglang-0.3.5-docs-production-metrics", []string{"scalars", "prompt_tokens_total"}, nil},
		{"every prompt token as published", "sglang-0.3.5-docs-production-metrics", []string{"scalars", "prompt_tokens_all_total"}, 506780.0},
		// 9.2: its cache_hit_rate 10.61 is a percent: 10.61%.
		{"percent gauge read as a fraction", "sglang-0.3.5-docs-production-metrics", []string{"extra", "cache_hit_rate_gauge"}, 0.1061},
		// 9.3: waiting_request_latency_seconds is queue time: 24885.007263183594 s over 2,104.
		{"old queue-time name", "sglang-0.3.5-docs-production-metrics", []string{"histograms", "request_queue_time_seconds", "mean"}, 24885.007263183594 / 2104},
		{"old prompt-size name", "sglang-0.3.5-docs-production-metrics", []string{"histograms", "request_prompt_tokens", "count"}, 2104.0},
		// 9.8: one request: every quantile is that request's value.
		{"n=1 is exact", "sglang-0.4.0-docs-production-metrics", []string{"histograms", "time_to_first_token_seconds", "stated", "p50", "value"}, 0.30457592010498047},
		{"n=1 is exact (kind)", "sglang-0.4.0-docs-production-metrics", []string{"histograms", "time_to_first_token_seconds", "stated", "p99", "kind"}, "exact"},
		{"one 5-token prompt", "vllm-0.5-datadog-fixture", []string{"histograms", "request_prompt_tokens", "stated", "p50", "value"}, 5.0},
		// 109 prompts in (5.11, 10.22], sum 662: 54·5.11 + 55·p50 ≤ 662.
		{"floor of the lowest occupied bucket", "tgi-3.x-datadog-fixture", []string{"histograms", "request_prompt_tokens", "stated", "p50", "value"}, (662 - 54*5.11) / 55},
		{"floor of the lowest occupied bucket (kind)", "tgi-3.x-datadog-fixture", []string{"histograms", "request_prompt_tokens", "stated", "p50", "kind"}, "at_most"},
		// Six prefills all ≤ 0.3 s summing 0.2140 s: p50, the 3rd, and the 3
		// above it can sum to no more: p50 ≤ 0.2140/4; p90 and p99 (the 6th)
		// ≤ the whole sum, and a bound, not an estimate.
		{"a bucket far wider than the data: p50", "vllm-mixed-v0-v1-datadog-fixture", []string{"histograms", "request_prefill_time_seconds", "stated", "p50", "value"}, 0.2140041133388877 / 4},
		{"a bucket far wider than the data: p99", "vllm-mixed-v0-v1-datadog-fixture", []string{"histograms", "request_prefill_time_seconds", "stated", "p99", "value"}, 0.2140041133388877},
		{"a bucket far wider than the data: kind", "vllm-mixed-v0-v1-datadog-fixture", []string{"histograms", "request_prefill_time_seconds", "stated", "p99", "kind"}, "at_most"},
		// 9.10: 8,495 of 11,008 TTFTs beyond 30 s: p50 is at least 30 s.
		{"most TTFTs beyond the buckets", "sglang-0.4.3-docs-production-metrics", []string{"histograms", "time_to_first_token_seconds", "stated", "p50", "kind"}, "at_least"},
		{"most TTFTs beyond the buckets (value)", "sglang-0.4.3-docs-production-metrics", []string{"histograms", "time_to_first_token_seconds", "stated", "p50", "value"}, 30.0},
		// 9.4: vLLM with prefix caching off: prompt_tokens_total is all computed.
		{"prefix caching off", "vllm-0.7-aibrix-docs-runtime-excerpt", []string{"scalars", "prompt_tokens_total"}, 148.0},
		// 9.7: a histogram published without _sum has no mean.
		{"no _sum, no mean", "vllm-v1-docs-design-metrics-excerpt", []string{"histograms", "time_to_first_token_seconds", "mean"}, nil},
		{"no _sum, no sum", "vllm-v1-docs-design-metrics-excerpt", []string{"histograms", "time_to_first_token_seconds", "sum"}, nil},
		// 9.5: Ray Serve's ray_vllm: series are vLLM's.
		{"ray_vllm read as vLLM", "ray-vllm-2.32-datadog-fixture-older", []string{"dialect"}, "vllm"},
		// 9.9: TGI's per-request mean time per token.
		{"TGI time per token", "tgi-3.x-datadog-fixture", []string{"histograms", "request_time_per_output_token_seconds", "count"}, 109.0},
		// 9.9: ik_llama.cpp still publishes its KV usage.
		{"old llama.cpp KV usage", "ik_llama.cpp-2025-08-pr695-comment", []string{"scalars", "kv_cache_usage_ratio"}, "present"},
		// Issue 28: one workload on b10309 and b10470 (six requests of 128
		// prompt tokens, 16 generated each): 353 computed, 415 cached, 96
		// generated on both; the cached counter and the engine's prefill
		// time on b10470 only, request prefill time on b10309 only.
		{"b10309 computed prompt tokens", "llama.cpp-b10309-workload", []string{"scalars", "prompt_tokens_total"}, 353.0},
		{"b10309 no cached count", "llama.cpp-b10309-workload", []string{"scalars", "cached_tokens_total"}, nil},
		{"b10309 no hit ratio", "llama.cpp-b10309-workload", []string{"figures", "prefix_cache_hit_ratio"}, nil},
		{"b10309 request prefill time", "llama.cpp-b10309-workload", []string{"scalars", "prompt_seconds_total"}, 0.037},
		{"b10309 no engine prefill", "llama.cpp-b10309-workload", []string{"scalars", "engine_prefill_seconds_total"}, nil},
		{"b10309 request time", "llama.cpp-b10309-workload", []string{"figures", "request_seconds"}, 0.037 + 0.061},
		{"b10309 generated", "llama.cpp-b10309-workload", []string{"scalars", "tokens_predicted_total"}, 96.0},
		{"b10470 computed prompt tokens", "llama.cpp-b10470-workload", []string{"scalars", "prompt_tokens_total"}, 353.0},
		{"b10470 cached", "llama.cpp-b10470-workload", []string{"scalars", "cached_tokens_total"}, 415.0},
		{"b10470 hit ratio", "llama.cpp-b10470-workload", []string{"figures", "prefix_cache_hit_ratio"}, 415.0 / 768},
		{"b10470 no request prefill time", "llama.cpp-b10470-workload", []string{"scalars", "prompt_seconds_total"}, nil},
		{"b10470 engine prefill", "llama.cpp-b10470-workload", []string{"scalars", "engine_prefill_seconds_total"}, 0.664555},
		{"b10470 no request time", "llama.cpp-b10470-workload", []string{"figures", "request_seconds"}, nil},
		{"b10470 generated", "llama.cpp-b10470-workload", []string{"scalars", "tokens_predicted_total"}, 96.0},
		{"b10470 decode seconds", "llama.cpp-b10470-workload", []string{"scalars", "tokens_predicted_seconds_total"}, 0.233186},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := realJSON(t, tt.file)
			got := at(m, tt.path...)
			switch want := tt.want.(type) {
			case nil:
				if got != nil {
					t.Errorf("%v = %v, want null or absent", tt.path, got)
				}
			case float64:
				if !near(got, want) {
					t.Errorf("%v = %v, want %v", tt.path, got, want)
				}
			case string:
				if want == "present" {
					if got == nil {
						t.Errorf("%v absent", tt.path)
					}
				} else if got != want {
					t.Errorf("%v = %v, want %q", tt.path, got, want)
				}
			}
		})
	}
}

// The notes each real exposition must (and must not) raise.
func TestRealNotes(t *testing.T) {
	tests := []struct {
		file      string
		want, not []string
	}{
		// 2,826 queued against 162 running; most TTFTs past 30 s.
		{"sglang-0.4.3-docs-production-metrics", []string{"queue_pressure", "latency_beyond_buckets"}, nil},
		// An idle server with no queue: nothing to advise.
		{"sglang-0.3.5-docs-production-metrics", nil, []string{"queue_pressure", "queue_stalled", "kv_cache_pressure"}},
		// A histogram published without its _sum is said to be incomplete.
		{"vllm-v1-docs-design-metrics-excerpt", []string{"histogram_incomplete"}, nil},
	}
	for _, tt := range tests {
		ids := noteIDsOf(realJSON(t, tt.file))
		for _, w := range tt.want {
			if !strings.Contains(strings.Join(ids, " "), w) {
				t.Errorf("%s: notes %v, want %s", tt.file, ids, w)
			}
		}
		for _, n := range tt.not {
			for _, id := range ids {
				if id == n {
					t.Errorf("%s: notes %v must not have %s", tt.file, ids, n)
				}
			}
		}
	}
}

// Issue 9 class 6: a real capture from June 2024 read from a file whose only
// time is its modification time, today: the header says so, and the report
// does not call the server idle.
func TestRealFileTime(t *testing.T) {
	body, err := os.ReadFile(realDir + "vllm-mixed-v0-v1-datadog-fixture.prom")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copied.prom")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", path, "--width", "120")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "file modified") || !strings.Contains(out, "taken as the scrape time") {
		t.Errorf("the header does not say the time is the file's:\n%s", out)
	}
	if strings.Contains(out, "% utilization") {
		t.Errorf("a utilization from a file time two years after the scrape:\n%s", out)
	}
	if !strings.Contains(out, "--at TIME") {
		t.Errorf("no note pointing to --at:\n%s", out)
	}
}
