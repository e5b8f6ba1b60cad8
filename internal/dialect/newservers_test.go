package dialect

import (
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// The servers issue 28 added, each figure worked by hand from the groups
// of observations the fixture's provenance lines give (every observation
// of a group is the group's value).
func init() { fixtureCases = append(fixtureCases, newServerCases...) }

var newServerCases = []fixtureCase{
	{
		// trtllm-serve 1.1/1.2: five unprefixed families, model "undefined".
		name: "trtllm-1.2", file: "trtllm-1.2.prom", dialect: "trtllm",
		scalars: map[string]float64{"requests_total": 40 + 8},
		hists: map[string]float64{
			"e2e_request_latency_seconds":           48,
			"time_to_first_token_seconds":           48,
			"request_time_per_output_token_seconds": 46, // two one-token answers
			"request_queue_time_seconds":            48,
		},
		extra:   map[string]float64{"finished_reason:stop": 40, "finished_reason:length": 8},
		missing: []string{"prefill and decode time", "requests running and waiting", "KV-cache usage", "prompt and generated tokens", "model", "inter-token latency", "largest prompt and generation", "uptime"},
	},
	{
		// TensorRT-LLM 2026: trtllm_ names, iteration gauges, token counters.
		name: "trtllm-new", file: "trtllm-new.prom", dialect: "trtllm", models: []string{"Qwen/Qwen3-8B"},
		scalars: map[string]float64{
			"requests_total":                        900 + 100,
			"prompt_seconds_total":                  300*0.02 + 500*0.05 + 150*0.1 + 50*0.4,       // 66
			"tokens_predicted_seconds_total":        100*1.0 + 300*1.6 + 350*2.0 + 200*3.6 + 50*7, // 2350
			"requests_processing":                   24,
			"requests_deferred":                     3,
			"kv_cache_usage_ratio":                  2540.0 / 4096,
			"kv_cache_max_tokens":                   4096 * 32,
			"tokens_predicted_total":                250000,
			"prompt_tokens_total":                   1200000 - 480000, // prompt_tokens_total includes the hits
			"cached_tokens_total":                   480000,
			"prefix_cache_queries":                  1200000,
			"prefix_cache_hits":                     480000,
			"spec_decode_num_draft_tokens_total":    30000,
			"spec_decode_num_accepted_tokens_total": 18000,
		},
		hists: map[string]float64{
			"e2e_request_latency_seconds":           1000,
			"time_to_first_token_seconds":           1000,
			"request_time_per_output_token_seconds": 990,
			"request_queue_time_seconds":            1000, // 700 of them 0 s, counted since PR #12545
			"request_prefill_time_seconds":          1000,
			"request_decode_time_seconds":           1000,
		},
		extra: map[string]float64{
			"finished_reason:stop": 900, "finished_reason:length": 100,
			"kv_block_size": 32, "kv_num_blocks": 4096,
		},
		missing: []string{"inter-token latency", "largest prompt and generation", "uptime"},
	},
	{
		// LMDeploy 0.12.3: no cached-token counter.
		name: "lmdeploy-0.12", file: "lmdeploy-0.12.prom", dialect: "lmdeploy", models: []string{"internlm/internlm3-8b-instruct"},
		scalars: map[string]float64{
			"requests_processing":            18,
			"requests_deferred":              2 + 5, // engine queue + waiting for a request handle
			"kv_cache_usage_ratio":           0.71,
			"tokens_predicted_total":         226500,
			"requests_total":                 640,                                   // FINISH only; the other reasons stay 0
			"prompt_seconds_total":           300*0.1 + 250*0.25 + 90*0.9,           // 173.5
			"tokens_predicted_seconds_total": 100*1.8 + 300*4.0 + 200*8.5 + 40*23.5, // 4020
			snapshot.PromptTokensAll:         1030000,                               // counted at first token, hits included
			"process_start_time_seconds":     1774951200.5,
		},
		hists:   lmdeployHists,
		missing: []string{"prompt tokens computed", "KV tokens in use and capacity", "largest prompt and generation"},
	},
	{
		// LMDeploy main: cached tokens, speculative decoding.
		name: "lmdeploy-new", file: "lmdeploy-new.prom", dialect: "lmdeploy", models: []string{"Qwen/Qwen3-32B"},
		scalars: map[string]float64{
			"requests_processing":            18,
			"requests_deferred":              2 + 5,
			"kv_cache_usage_ratio":           0.71,
			"tokens_predicted_total":         226500,
			"requests_total":                 640,
			"prompt_seconds_total":           173.5,
			"tokens_predicted_seconds_total": 4020,
			// request_prompt_tokens' sum (200×500 + 240×1200 + 160×2400 +
			// 40×6000 = 1,012,000) less cached_tokens_total (200×512 +
			// 140×2048 = 389,120): the same finished requests.
			"prompt_tokens_total":                   1012000 - 389120,
			"cached_tokens_total":                   389120,
			"prefix_cache_queries":                  1012000,
			"prefix_cache_hits":                     389120,
			"spec_decode_num_draft_tokens_total":    180000,
			"spec_decode_num_accepted_tokens_total": 99000,
			"process_start_time_seconds":            1796032800.25,
		},
		hists: lmdeployHists,
		extra: map[string]float64{
			"spec_decode_num_drafts_total":   60000,
			"spec_decode_accepted_per_pos:0": 45000,
			"spec_decode_accepted_per_pos:1": 33000,
			"spec_decode_accepted_per_pos:2": 21000,
		},
		missing: []string{"KV tokens in use and capacity", "largest prompt and generation"},
	},
	{
		// NVIDIA Dynamo's frontend.
		name: "dynamo-frontend", file: "dynamo-frontend.prom", dialect: "dynamo", models: []string{"Qwen/Qwen3-8B"}, // the card's spelling
		scalars: map[string]float64{
			"requests_total":         1180 + 20, // status="success"
			"tokens_predicted_total": 300000,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds": 1209,
			"inter_token_latency_seconds": 298791, // one a token
			"e2e_request_latency_seconds": 1200,
			"request_prompt_tokens":       1200,
			"request_generation_tokens":   1200,
		},
		extra: map[string]float64{
			"requests_in_flight":            14,
			"requests_awaiting_first_token": 5,
			"num_aborted_requests_total":    9, // cancelled
			"failed_reason:overload":        3,
			"failed_reason:validation":      2,
		},
		missing: []string{"requests running and waiting", "KV-cache usage", "prompt tokens computed and prefix-cache hit rate", "queue, prefill and decode time", "largest prompt and generation", "uptime"},
	},
}

var lmdeployHists = map[string]float64{
	"time_to_first_token_seconds":  658, // 640 finished and 18 in flight
	"inter_token_latency_seconds":  225842,
	"e2e_request_latency_seconds":  640,
	"request_queue_time_seconds":   640,
	"request_prefill_time_seconds": 640,
	"request_decode_time_seconds":  640,
	"request_prompt_tokens":        640,
	"request_generation_tokens":    640,
}

// trtllm-serve's first names have no prefix: the five families are
// TensorRT-LLM's under every name a store keeps them by, and nothing else
// unprefixed is.
func TestTRTLLMBareNames(t *testing.T) {
	for _, n := range []string{"request_success_total", "request_success", "request_success_created", "e2e_request_latency_seconds",
		"e2e_request_latency_seconds_bucket", "time_to_first_token_seconds_sum", "time_per_output_token_seconds_count",
		"request_queue_time_seconds", "trtllm_kv_cache_utilization"} {
		if got := Owner(n); got != "trtllm" {
			t.Errorf("Owner(%q) = %q, want trtllm", n, got)
		}
	}
	for _, n := range []string{"request_queue_time", "e2e_request_latency", "request_successes_total", "http_requests_total",
		"time_to_first_token", "dynamo_component_requests_total", "dynamo_frontend", "lmdeploy_x"} {
		if got := Owner(n); got != "" {
			t.Errorf("Owner(%q) = %q, want none", n, got)
		}
	}
}

// Dynamo's frontend names a model in two cases in one scrape: --model
// takes either, and the report names the model as its card does.
func TestDynamoModelCase(t *testing.T) {
	fams := parse(t, fixture(t, "dynamo-frontend.prom"))
	for _, asked := range []string{"qwen/qwen3-8b", "Qwen/Qwen3-8B"} {
		s, err := Map(fams, Options{Model: asked})
		if err != nil {
			t.Fatalf("--model %s: %v", asked, err)
		}
		if s.Model != "Qwen/Qwen3-8B" || s.Scalars[snapshot.RequestsTotal] != 1200 {
			t.Errorf("--model %s: model %q, %v requests, want Qwen/Qwen3-8B and 1200", asked, s.Model, s.Scalars[snapshot.RequestsTotal])
		}
	}
	_, err := Map(fams, Options{Model: "llama"})
	if err == nil || !strings.Contains(err.Error(), "Qwen/Qwen3-8B") {
		t.Errorf("--model llama: %v, want the models served", err)
	}
}

// Dynamo's workers re-export an engine's series with labels of their own
// (lib/runtime/src/metrics/prometheus_names.rs @04070c7: dynamo_namespace,
// dynamo_component, dynamo_endpoint, model, worker_type; model_name kept).
// A worker read so is the engine read alone, and two workers in one
// scrape are two engines: counters and histograms add, the KV fraction is
// their mean (SGLang's busy time too: each scheduler's share).
func TestDynamoWorkerLabels(t *testing.T) {
	for _, tc := range []struct{ file, dialect string }{
		{"vllm-new.prom", "vllm"}, {"sglang-new.prom", "sglang"}, {"trtllm-new.prom", "trtllm"},
	} {
		fams := parse(t, fixture(t, tc.file))
		alone, err := Map(fams, Options{})
		if err != nil {
			t.Fatal(err)
		}
		worker := func(id string) []*dto.MetricFamily {
			return relabel(fams, tc.dialect, map[string]string{
				"dynamo_namespace": "dynamo", "dynamo_component": "backend", "dynamo_endpoint": "generate",
				"model": "m", "worker_type": "aggregated", "worker_id": id,
			})
		}
		one, err := Map(worker("1"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if one.Dialect != tc.dialect {
			t.Errorf("%s through Dynamo: read as %s", tc.file, one.Dialect)
		}
		compareFigures(t, tc.file+" through Dynamo: Scalars", one.Scalars, alone.Scalars)
		two, err := Map(merge(worker("1"), worker("2")), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range alone.Scalars {
			want := 2 * v
			// A fraction, an engine's own busy time and the process start
			// are each engine's, averaged or the same.
			switch {
			case strings.HasSuffix(k, "_ratio"), k == snapshot.ProcessStartTimeSeconds,
				k == snapshot.EngineBusySecondsTotal, k == snapshot.EnginePrefillSecondsTotal, k == snapshot.EngineDecodeSecondsTotal:
				want = v
			}
			if g, ok := two.Scalars[k]; !ok || !near(g, want) {
				t.Errorf("%s, two workers: %s = %v, want %v", tc.file, k, g, want)
			}
		}
		for k, h := range alone.Histograms {
			if g := two.Histograms[k]; g == nil || !near(g.Count, 2*h.Count) {
				t.Errorf("%s, two workers: histogram %s, want %v observations", tc.file, k, 2*h.Count)
			}
		}
	}
}

// relabel copies fams, adding labels to every series of the dialect's
// families (an engine label a family already has is kept, as Dynamo keeps
// it).
func relabel(fams []*dto.MetricFamily, d string, labels map[string]string) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		c := proto.Clone(mf).(*dto.MetricFamily)
		if Owner(c.GetName()) == d {
			for _, m := range c.GetMetric() {
				for k, v := range labels {
					if _, ok := labelValue(m, k); !ok {
						m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)})
					}
				}
				slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			}
		}
		out = append(out, c)
	}
	return out
}

// merge joins two scrapes' families of one name into one family: the
// families of both workers, as one endpoint would publish them.
func merge(a, b []*dto.MetricFamily) []*dto.MetricFamily {
	byName := map[string]*dto.MetricFamily{}
	var out []*dto.MetricFamily
	for _, mf := range append(slices.Clone(a), b...) {
		if have := byName[mf.GetName()]; have != nil {
			if Owner(mf.GetName()) != "" {
				have.Metric = append(have.Metric, mf.Metric...)
			}
			continue
		}
		c := proto.Clone(mf).(*dto.MetricFamily)
		byName[mf.GetName()] = c
		out = append(out, c)
	}
	return out
}
