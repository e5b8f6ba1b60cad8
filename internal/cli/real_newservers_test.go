package cli

import (
	"math"
	"testing"
)

// NVIDIA Dynamo's real scrapes (testdata/real/README.md): its frontend and
// its TensorRT-LLM worker after the same run, against figures worked out by
// hand from the files.
func TestRealDynamoFacts(t *testing.T) {
	tests := []struct {
		file string
		path []string
		want any // a float64 (within rounding), a string, or nil for absent
	}{
		// The frontend: one chat completion of 33 prompt and 300 generated
		// tokens, every histogram n = 1 but the 299 inter-token latencies.
		{"dynamo-frontend-ce30a76", []string{"dialect"}, "dynamo"},
		{"dynamo-frontend-ce30a76", []string{"scalars", "requests_total"}, 1.0},
		{"dynamo-frontend-ce30a76", []string{"scalars", "tokens_predicted_total"}, 300.0},
		{"dynamo-frontend-ce30a76", []string{"histograms", "time_to_first_token_seconds", "stated", "p50", "value"}, 1.5625701570000001},
		{"dynamo-frontend-ce30a76", []string{"histograms", "time_to_first_token_seconds", "stated", "p50", "kind"}, "exact"},
		{"dynamo-frontend-ce30a76", []string{"histograms", "e2e_request_latency_seconds", "stated", "p50", "value"}, 2.177646729},
		{"dynamo-frontend-ce30a76", []string{"histograms", "request_prompt_tokens", "stated", "p50", "value"}, 33.0},
		{"dynamo-frontend-ce30a76", []string{"histograms", "inter_token_latency_seconds", "count"}, 299.0},
		{"dynamo-frontend-ce30a76", []string{"histograms", "inter_token_latency_seconds", "mean"}, 0.6126917290000005 / 299},
		{"dynamo-frontend-ce30a76", []string{"extra", "requests_in_flight"}, 0.0},
		// The model's card spelling, though the requests name it in lower case.
		{"dynamo-frontend-ce30a76", []string{"header", "0"}, "model Qwen/Qwen3-0.6B"},
		// No fleet KV figure at the frontend: absent, not 0.
		{"dynamo-frontend-ce30a76", []string{"scalars", "kv_cache_usage_ratio"}, nil},
		// The worker: TensorRT-LLM's five families under trtllm_, two
		// requests that hit max_tokens.
		{"dynamo-trtllm-worker-ce30a76", []string{"dialect"}, "trtllm"},
		{"dynamo-trtllm-worker-ce30a76", []string{"scalars", "requests_total"}, 2.0},
		{"dynamo-trtllm-worker-ce30a76", []string{"extra", "finished_reason:length"}, 2.0},
		{"dynamo-trtllm-worker-ce30a76", []string{"histograms", "time_to_first_token_seconds", "mean"}, 0.06795299984514713 / 2},
		{"dynamo-trtllm-worker-ce30a76", []string{"histograms", "request_time_per_output_token_seconds", "mean"}, 0.005558789299682629 / 2},
		{"dynamo-trtllm-worker-ce30a76", []string{"histograms", "request_queue_time_seconds", "mean"}, 0.01181500032544136 / 2},
		{"dynamo-trtllm-worker-ce30a76", []string{"histograms", "e2e_request_latency_seconds", "mean"}, 1.7300310004502535 / 2},
		// Dynamo's kvstats read 0 of 0 blocks for TensorRT-LLM: not
		// populated, so no KV use at all, never 0%.
		{"dynamo-trtllm-worker-ce30a76", []string{"scalars", "kv_cache_usage_ratio"}, nil},
		{"dynamo-trtllm-worker-ce30a76", []string{"scalars", "kv_cache_max_tokens"}, nil},
		{"dynamo-trtllm-worker-ce30a76", []string{"scalars", "tokens_predicted_total"}, nil},
	}
	for _, tt := range tests {
		path := tt.path
		first := path[len(path)-1] == "0" // a list's first element
		if first {
			path = path[:len(path)-1]
		}
		got := at(realJSON(t, tt.file), path...)
		if l, ok := got.([]any); ok && first && len(l) > 0 {
			got = l[0]
		}
		switch want := tt.want.(type) {
		case nil:
			if got != nil {
				t.Errorf("%s %v = %v, want absent", tt.file, tt.path, got)
			}
		case float64:
			f, ok := got.(float64)
			if !ok || math.Abs(f-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s %v = %v, want %v", tt.file, tt.path, got, want)
			}
		case string:
			if got != want {
				t.Errorf("%s %v = %v, want %q", tt.file, tt.path, got, want)
			}
		}
	}
}
