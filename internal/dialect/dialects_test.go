package dialect

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// parse reads an exposition the way the inspector does.
func parse(t testing.TB, body string) []*dto.MetricFamily {
	t.Helper()
	f, err := exposition.DetectFormat("text/plain; version=0.0.4; charset=utf-8", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse([]byte(body), f)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../testdata/dialects", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dropLines removes every line containing any of subs.
func dropLines(subs ...string) func(string) string {
	return func(body string) string {
		var out []string
	lines:
		for _, l := range strings.Split(body, "\n") {
			for _, s := range subs {
				if strings.Contains(l, s) {
					continue lines
				}
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
}

// with returns a copy of m with the changes applied; a NaN value deletes.
func with(m map[string]float64, changes map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		if math.IsNaN(v) {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

var del = math.NaN()

type fixtureCase struct {
	name    string
	file    string
	edit    func(string) string
	opts    Options
	dialect string
	models  []string
	scalars map[string]float64
	hists   map[string]float64 // canonical histogram → observations
	extra   map[string]float64
	missing []string // each Missing line's quantity (the part before ": ")
	prefix  string   // Snapshot.PrefixCaching
}

const (
	llama8B   = "meta-llama/Llama-3.1-8B-Instruct"
	llama70B  = "meta-llama/Llama-3.3-70B-Instruct"
	qwenNext  = "Qwen/Qwen3-Next-80B-A3B-Instruct"
	qwen30B   = "Qwen/Qwen3-30B-A3B"
	qwen30B25 = "Qwen/Qwen3-30B-A3B-Instruct-2507"
)

// vLLM 0.10: data parallel 2 (engines "0" and "1"), one model.
var vllm010Scalars = map[string]float64{
	"requests_processing":            5 + 4,
	"requests_deferred":              2 + 0,
	"kv_cache_usage_ratio":           (0.42 + 0.38) / 2, // mean over engines: 0.40
	"tokens_predicted_total":         310500 + 305700,   // 616,200
	"requests_total":                 1500 + 1485,       // (1400+95+5) + (1380+102+3)
	"prefix_cache_queries":           1204224 + 1190016, // 2,394,240 tokens
	"prefix_cache_hits":              602112 + 583680,   // 1,185,792 tokens
	"prompt_seconds_total":           310.5 + 298.25,    // prefill histogram sums: 608.75
	"tokens_predicted_seconds_total": 9120.0 + 9034.5,   // decode histogram sums: 18,154.5
	"kv_cache_max_tokens":            2 * 35482 * 16,    // two engines × blocks × block size: 1,135,424
	"process_start_time_seconds":     1754380790.07,     // process_start_time_seconds
	snapshot.PromptTokensAll:         1150000 + 1130000, // no cached-token counter: every prompt token
}

var vllm010Hists = map[string]float64{
	"time_to_first_token_seconds":  1505 + 1489,     // finished + running that had a first token
	"inter_token_latency_seconds":  308995 + 304211, // old time_per_output_token_seconds
	"e2e_request_latency_seconds":  2985,
	"request_queue_time_seconds":   2985,
	"request_prefill_time_seconds": 2985,
	"request_decode_time_seconds":  2985,
	"request_prompt_tokens":        2985,
	"request_generation_tokens":    2985,
}

var vllm010Extra = map[string]float64{
	"finished_reason:stop":   1400 + 1380,
	"finished_reason:length": 95 + 102,
	"finished_reason:abort":  5 + 3,
	"num_preemptions_total":  0 + 7,
	"kv_block_size":          16,
	"kv_num_blocks":          2 * 35482,
	// iteration_tokens_total's _sum and _count over the two engines
	"engine_step_tokens_total": 1.4605e6 + 1.4357e6, // 2,896,200 tokens
	"engine_steps_total":       61002 + 60311,       // 121,313 steps
}

// vLLM newest: two models (L = Llama 70B, Q = Qwen3-Next) × engines 0 and 1,
// in the order L0, L1, Q0, Q1 below.
var vllmNewScalars = map[string]float64{
	"requests_processing":  12 + 10 + 4 + 6,
	"requests_deferred":    3 + 1 + 0 + 2,
	"kv_cache_usage_ratio": (0.81 + 0.77 + 0.25 + 0.31) / 4, // 0.535
	// by_source local_compute, not prompt_tokens_total (which holds cached too)
	"prompt_tokens_total": 2150000 + 2050000 + 880000 + 910000, // 5,990,000
	// prompt_tokens_cached_total = local_cache_hit + external (0)
	"cached_tokens_total":                   1350000 + 1420000 + 2112000 + 2006400,  // 6,888,400
	"prefix_cache_queries":                  3512000 + 3470400 + 2992000 + 2917000,  // 12,891,400
	"prefix_cache_hits":                     1351200 + 1420000 + 2112000 + 2006400,  // 6,889,600
	"tokens_predicted_total":                820000 + 801500 + 655000 + 671250,      // 2,947,750
	"requests_total":                        4343 + 4274 + 3462 + 3521,              // 15,600
	"prompt_seconds_total":                  1302.5 + 1250.25 + 401.0 + 415.75,      // 3,369.5
	"tokens_predicted_seconds_total":        38950.0 + 37800.5 + 14200.25 + 14650.0, // 105,600.75
	"spec_decode_num_draft_tokens_total":    630000 + 645000,                        // Q only
	"spec_decode_num_accepted_tokens_total": 392000 + 401000,
	// kv_cache_size_tokens per engine: L 393,216 (24576 × 16); Q 1,253,316
	// (the engine's own figure, a little under 1190 × 1056 = 1,256,640)
	"kv_cache_max_tokens":        2*393216 + 2*1253316, // 3,293,064
	"process_start_time_seconds": 1780012790.5,
}

var vllmNewHists = map[string]float64{
	"time_to_first_token_seconds":           4355 + 4284 + 3466 + 3527,         // 15,632
	"inter_token_latency_seconds":           815645 + 797216 + 300000 + 310000, // 2,222,861
	"request_time_per_output_token_seconds": 4343 + 4274 + 3462 + 3521,         // 15,600
	"e2e_request_latency_seconds":           15600,
	"request_queue_time_seconds":            15600,
	"request_prefill_time_seconds":          15600,
	"request_decode_time_seconds":           15600,
	"request_prompt_tokens":                 15600,
	"request_generation_tokens":             15600,
}

var vllmNewExtra = map[string]float64{
	"finished_reason:stop":           4100 + 4050 + 3300 + 3350, // 14,800
	"finished_reason:length":         230 + 215 + 140 + 150,     // 735
	"finished_reason:abort":          12 + 9 + 20 + 18,          // 59
	"finished_reason:error":          1 + 0 + 0 + 2,
	"finished_reason:repetition":     0 + 0 + 2 + 1,
	"num_preemptions_total":          14 + 9 + 0 + 3,
	"spec_decode_num_drafts_total":   210000 + 215000,
	"spec_decode_accepted_per_pos:0": 168000 + 172000,
	"spec_decode_accepted_per_pos:1": 131000 + 134000,
	"spec_decode_accepted_per_pos:2": 93000 + 95000,
	"kv_block_size":                  1056, // the larger of 16 and 1056
	"kv_num_blocks":                  2*24576 + 2*1190,
	// waiting by reason: L1 defers one request (a LoRA budget or a KV
	// transfer); the other five of requests_deferred wait for capacity
	"requests_waiting_deferred": 0 + 1 + 0 + 0,
	// every engine awake, none asleep at either level
	"engine_sleep_state:awake":             1 + 1 + 1 + 1,
	"engine_sleep_state:weights_offloaded": 0,
	"engine_sleep_state:discard_all":       0,
	"engine_step_tokens_total":             5.641e6 + 5.5745e6 + 3.859e6 + 3.89235e6, // 18,966,850
	"engine_steps_total":                   160211 + 158733 + 98012 + 101374,         // 518,330
}

// SGLang newest: two DP ranks (dp_rank/tp_rank 0 and 1), one model.
var sglangNewScalars = map[string]float64{
	// realtime_tokens_total, summed over the two DP ranks
	"prompt_tokens_total":  5400000 + 5250000, // prefill_compute: 10,650,000
	"cached_tokens_total":  8100000 + 8350000, // prefill_cache: 16,450,000
	"prefix_cache_queries": 10650000 + 16450000,
	"prefix_cache_hits":    16450000,
	// tokenizer side, is_streaming false + true
	"tokens_predicted_total": 1900000 + 6950000,
	"requests_total":         2700 + 9800,
	"requests_processing":    37 + 41,
	"requests_deferred":      5 + 0,
	"kv_cache_usage_ratio":   (0.2457 + 0.2883) / 2, // 0.267
	"kv_cache_tokens":        101234 + 118766,
	"kv_cache_max_tokens":    412000 + 412000,
	// gpu_execution_seconds_total: each DP scheduler's forward modes
	// added, the two schedulers averaged (issue 18).
	"engine_busy_seconds_total": ((2210.5 + 8800.25) + (2150.75 + 9010.5)) / 2,
	// forward_extend and forward_decode on their own, averaged alike.
	"engine_prefill_seconds_total": (2210.5 + 2150.75) / 2,
	"engine_decode_seconds_total":  (8800.25 + 9010.5) / 2,
	"kv_cache_evictable_tokens":    120756 + 122232,
	"kv_cache_free_tokens":         190010 + 171002,
}

var sglangNewHists = map[string]float64{
	"time_to_first_token_seconds": 2705 + 9830,
	"e2e_request_latency_seconds": 2700 + 9800,
	"request_queue_time_seconds":  6300 + 6250,
	"inter_token_latency_seconds": 8837465, // counts tokens, not steps
	"request_prompt_tokens":       12500,
	"request_generation_tokens":   12500,
}

var sglangNewExtra = map[string]float64{
	"cache_hit_rate_gauge":       (0.61 + 0.55) / 2,
	"gen_throughput_gauge":       1520.5 + 1610.25,
	"num_aborted_requests_total": 42,
	"num_preemptions_total":      3 + 5, // num_retracted_requests_total
	"kv_block_size":              1,
	"kv_num_blocks":              412000 + 412000,
	// num_retracted_{input,output}_tokens_total
	"retracted_prompt_tokens_total":    24576 + 40960,
	"retracted_generated_tokens_total": 1510 + 2766,
}

// vLLM with prefix caching off: computed = vllm:prompt_tokens_total.
var vllmOffScalars = map[string]float64{
	"requests_processing": 2, "requests_deferred": 0, "kv_cache_usage_ratio": 0.1,
	"tokens_predicted_total": 9000, "requests_total": 30 + 10,
	"prompt_tokens_total": 40000, "cached_tokens_total": 0,
	"prefix_cache_queries": 0, "prefix_cache_hits": 0,
	"kv_cache_max_tokens": 10000 * 16,
}

// Ray Serve: replicas r1 and r2.
var rayScalars = map[string]float64{
	"requests_processing":    3 + 5,
	"requests_deferred":      1 + 0,
	"kv_cache_usage_ratio":   (0.2 + 0.4) / 2,
	snapshot.PromptTokensAll: 1000 + 3000,
	"tokens_predicted_total": 500 + 700,
	"prefix_cache_queries":   1200 + 3100,
	"prefix_cache_hits":      600 + 1000,
	"requests_total":         4 + 6,
}

// sglangTPOT is the per-token histogram SGLang published until 0.4.4.post3.
const sglangTPOT = `# TYPE sglang:time_per_output_token_seconds histogram
sglang:time_per_output_token_seconds_sum{model_name="Qwen/Qwen2.5-7B-Instruct"} 30.0
sglang:time_per_output_token_seconds_bucket{le="0.02",model_name="Qwen/Qwen2.5-7B-Instruct"} 2988.0
sglang:time_per_output_token_seconds_bucket{le="+Inf",model_name="Qwen/Qwen2.5-7B-Instruct"} 2988.0
sglang:time_per_output_token_seconds_count{model_name="Qwen/Qwen2.5-7B-Instruct"} 2988.0
`

// addLines appends lines to a body.
func addLines(more string) func(string) string {
	return func(body string) string { return body + "\n" + more }
}

// The workload of vllm-0.32.prom, vllm-0.15.prom and aphrodite.prom: one
// engine of Qwen3-8B; 1000 finished requests (2,400,000 prompt tokens of
// which 900,000 cached, 360,000 generated) and 64 running whose prefills
// are done (150,000 prompt tokens, 50,000 cached, 20,000 generated).
const qwen8B = "Qwen/Qwen3-8B"

// bytesPerToken is Qwen3-8B's KV per token: 36 layers × K and V × 8 KV
// heads × 128 dimensions × 2 bytes.
const bytesPerToken = 36 * 2 * 8 * 128 * 2 // 147,456

var workloadScalars = map[string]float64{
	"requests_processing":  64,
	"requests_deferred":    16,
	"kv_cache_usage_ratio": 0.9734,
	// by_source local_compute: finished (2,400,000 − 900,000) + running
	// (150,000 − 50,000)
	"prompt_tokens_total": 1500000 + 100000,
	// local_cache_hit 830,000 + external_kv_transfer 120,000 (loaded from
	// the CPU offload)
	"cached_tokens_total":            830000 + 120000,
	"prefix_cache_queries":           2600000,
	"prefix_cache_hits":              830000, // the GPU cache's own; the external ones are the connector's
	"tokens_predicted_total":         360000 + 20000,
	"requests_total":                 900 + 78 + 17 + 3 + 2,
	"prompt_seconds_total":           216.6668, // the prefill histogram's sum
	"tokens_predicted_seconds_total": 11160.0,  // the decode histogram's sum
	"kv_cache_max_tokens":            458752,   // kv_cache_size_tokens = 28,672 blocks × 16
	"process_start_time_seconds":     1796367582.75,
	// The connector: 120,000 tokens loaded back in 600 loads, 1,000,000
	// stored in 2,500 stores.
	"kv_offload_read_bytes_total":    120000 * bytesPerToken, // 17,694,720,000
	"kv_offload_written_bytes_total": 1000000 * bytesPerToken,
}

var workloadHists = map[string]float64{
	"time_to_first_token_seconds":           1000 + 64,                      // the running ones have their first token
	"inter_token_latency_seconds":           (360000 - 1000) + (20000 - 64), // one a decode step after the first token
	"request_time_per_output_token_seconds": 1000,
	"e2e_request_latency_seconds":           1000,
	"request_queue_time_seconds":            1000,
	"request_prefill_time_seconds":          1000,
	"request_decode_time_seconds":           1000,
	"request_prompt_tokens":                 1000,
	"request_generation_tokens":             1000,
}

var workloadExtra = map[string]float64{
	"finished_reason:stop": 900, "finished_reason:length": 78, "finished_reason:abort": 17,
	"finished_reason:error": 3, "finished_reason:repetition": 2,
	"num_preemptions_total": 37,
	"kv_block_size":         16,
	"kv_num_blocks":         28672,
	// 290 by the request cap, 22 by the prompt-token cap
	"admission_rejections_total":                 290 + 22,
	"admission_rejections:max_num_queued_reqs":   290,
	"admission_rejections:max_num_queued_tokens": 22,
	"requests_waiting_deferred":                  4, // of the 16 waiting
	"engine_sleep_state:awake":                   1,
	"engine_sleep_state:weights_offloaded":       0,
	"engine_sleep_state:discard_all":             0,
	// every prompt and generated token, over the 45,000 steps that
	// emitted one
	"engine_step_tokens_total":       (2400000 + 150000) + (360000 + 20000),
	"engine_steps_total":             45000,
	"kv_offload_load_seconds_total":  1.42,
	"kv_offload_store_seconds_total": 12.3,
}

// TGI 3.3 (tgi-3.3.prom): 200 finished, 3 running, 2 failed.
var tgi33Scalars = map[string]float64{
	"requests_total":         200,
	"requests_processing":    3,
	"requests_deferred":      0,
	"tokens_predicted_total": 42836, // tgi_request_generated_tokens_sum
	// 149 prefill calls of 0.3 s + 9,000 decode calls of 0.02 s, one after
	// another
	"engine_busy_seconds_total": 149*0.3 + 9000*0.02, // 224.7
	// each method's calls: 149 prefills of 0.3 s, 9,000 decodes of 0.02 s
	"engine_prefill_seconds_total": 149 * 0.3,
	"engine_decode_seconds_total":  9000 * 0.02,
}

var tgi33Hists = map[string]float64{
	"e2e_request_latency_seconds":           200,
	"request_queue_time_seconds":            200,
	"request_prompt_tokens":                 202, // observed at validation: the two failures too
	"request_generation_tokens":             200,
	"request_time_per_output_token_seconds": 200,
}

var tgi33Extra = map[string]float64{
	"failed_reason:validation":     1,
	"failed_reason:generation":     1,
	"request_count_total":          200 + 2 + 3, // finished, failed and running, all through /generate
	"token_budget_reserved_tokens": 6144,
	// the summary's _sum over its _count: 12,000 speculated tokens in
	// 30,000 request-steps
	"speculated_tokens_total":      12000,
	"speculated_token_steps_total": 30000,
}

var fixtureCases = []fixtureCase{
	{
		name: "vllm 0.32 at its admission limit", file: "vllm-0.32.prom", dialect: "vllm", prefix: "on", models: []string{qwen8B},
		scalars: workloadScalars, hists: workloadHists, extra: workloadExtra,
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		// The flat offload names gone: the deprecated transfer_type ones
		// say the same.
		name: "vllm 0.32, offload by transfer_type", file: "vllm-0.32.prom", edit: dropLines("kv_offload_load_", "kv_offload_store_"),
		dialect: "vllm", prefix: "on", models: []string{qwen8B},
		scalars: workloadScalars, hists: workloadHists, extra: workloadExtra,
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		// A store not yet published beside the loads: none yet.
		name: "vllm 0.32, no store yet", file: "vllm-0.32.prom", edit: dropLines("kv_offload_store_", "kv_offload_total_"),
		dialect: "vllm", prefix: "on", models: []string{qwen8B},
		scalars: with(workloadScalars, map[string]float64{"kv_offload_written_bytes_total": 0}),
		hists:   workloadHists,
		extra:   with(workloadExtra, map[string]float64{"kv_offload_store_seconds_total": 0}),
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		// 0.13 to 0.15: computed prompt tokens from the finished requests'
		// request_prefill_kv_computed_tokens sum, so without the running
		// requests' 100,000; no cached count, no deferred queue, no
		// admission limit, no error or repetition reason.
		name: "vllm 0.15", file: "vllm-0.15.prom", dialect: "vllm", prefix: "on", models: []string{qwen8B},
		scalars: with(workloadScalars, map[string]float64{"prompt_tokens_total": 2400000 - 900000, "cached_tokens_total": del}),
		hists:   workloadHists,
		extra: with(workloadExtra, map[string]float64{
			"finished_reason:stop": 900 + 3 + 2, "finished_reason:error": del, "finished_reason:repetition": del,
			"admission_rejections_total": del, "admission_rejections:max_num_queued_reqs": del,
			"admission_rejections:max_num_queued_tokens": del, "requests_waiting_deferred": del,
		}),
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		// Without the kv-computed histogram either: vLLM's lump sum only.
		name: "vllm 0.12-like", file: "vllm-0.15.prom", edit: dropLines("request_prefill_kv_computed_tokens"),
		dialect: "vllm", prefix: "on", models: []string{qwen8B},
		scalars: with(workloadScalars, map[string]float64{"prompt_tokens_total": del, "cached_tokens_total": del,
			snapshot.PromptTokensAll: 2400000 + 150000}),
		hists: workloadHists,
		extra: with(workloadExtra, map[string]float64{
			"finished_reason:stop": 905, "finished_reason:error": del, "finished_reason:repetition": del,
			"admission_rejections_total": del, "admission_rejections:max_num_queued_reqs": del,
			"admission_rejections:max_num_queued_tokens": del, "requests_waiting_deferred": del,
		}),
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "aphrodite", file: "aphrodite.prom", dialect: "aphrodite", prefix: "on", models: []string{qwen8B},
		scalars: workloadScalars, hists: workloadHists,
		extra: with(workloadExtra, map[string]float64{"admission_rejections_total": del,
			"admission_rejections:max_num_queued_reqs": del, "admission_rejections:max_num_queued_tokens": del}),
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "vllm asleep", file: "vllm-asleep.prom", dialect: "vllm", models: []string{"m"},
		scalars: map[string]float64{
			"requests_processing": 0, "requests_deferred": 0, "kv_cache_usage_ratio": 0,
			"prompt_tokens_total": 52000 - 12000, "cached_tokens_total": 12000,
			"tokens_predicted_total": 9000, "requests_total": 30 + 10,
		},
		extra: map[string]float64{
			"finished_reason:stop": 30, "finished_reason:length": 10, "requests_waiting_deferred": 0,
			// level 1: awake 0, weights offloaded 1
			"engine_sleep_state:awake": 0, "engine_sleep_state:weights_offloaded": 1, "engine_sleep_state:discard_all": 0,
		},
		missing: []string{"KV capacity", "KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		name: "vllm 0.8", file: "vllm-0.8.prom", dialect: "vllm", prefix: "on", models: []string{llama8B},
		scalars: map[string]float64{
			"requests_processing":                   3,
			"requests_deferred":                     1,
			"kv_cache_usage_ratio":                  0.3125, // gpu_cache_usage_perc, a fraction
			"tokens_predicted_total":                18944,
			"requests_total":                        118 + 9 + 1,
			"prompt_seconds_total":                  21.76,
			"tokens_predicted_seconds_total":        912.4,
			"spec_decode_num_draft_tokens_total":    0, // published, zero: no drafter configured
			"spec_decode_num_accepted_tokens_total": 0,
			"kv_cache_max_tokens":                   27264 * 16, // 436,224
			"process_start_time_seconds":            1743301795.42,
			// no prompt_tokens_total (includes cached, no cached counter) and
			// no prefix_cache_* (blocks, not tokens): vLLM's own count of
			// every prompt token instead
			snapshot.PromptTokensAll: 52480,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds":  131,
			"inter_token_latency_seconds":  18813, // time_per_output_token_seconds
			"e2e_request_latency_seconds":  128,
			"request_queue_time_seconds":   128,
			"request_prefill_time_seconds": 128,
			"request_decode_time_seconds":  128,
			"request_prompt_tokens":        128,
			"request_generation_tokens":    128,
		},
		extra: map[string]float64{
			"finished_reason:stop":     118,
			"finished_reason:length":   9,
			"finished_reason:abort":    1,
			"num_preemptions_total":    2,
			"kv_block_size":            16,
			"kv_num_blocks":            27264,
			"engine_step_tokens_total": 71424, // iteration_tokens_total_sum
			"engine_steps_total":       19102, // its _count
		},
		missing: []string{"prompt tokens computed", "prefix-cache hit rate", "KV tokens in use", "largest prompt and generation"},
	},
	{
		// Without HELP lines the block unit is inferred: 3072 lookups
		// against 52,480 prompt tokens can only be blocks.
		name: "vllm 0.8 without HELP", file: "vllm-0.8.prom", edit: dropLines("# HELP"), dialect: "vllm", prefix: "on", models: []string{llama8B},
		scalars: map[string]float64{
			"requests_processing": 3, "requests_deferred": 1, "kv_cache_usage_ratio": 0.3125,
			"tokens_predicted_total": 18944, "requests_total": 128, "prompt_seconds_total": 21.76,
			"tokens_predicted_seconds_total": 912.4, "spec_decode_num_draft_tokens_total": 0,
			"spec_decode_num_accepted_tokens_total": 0, "kv_cache_max_tokens": 436224,
			"process_start_time_seconds": 1743301795.42, snapshot.PromptTokensAll: 52480,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds": 131, "inter_token_latency_seconds": 18813, "e2e_request_latency_seconds": 128,
			"request_queue_time_seconds": 128, "request_prefill_time_seconds": 128, "request_decode_time_seconds": 128,
			"request_prompt_tokens": 128, "request_generation_tokens": 128,
		},
		extra: map[string]float64{
			"finished_reason:stop": 118, "finished_reason:length": 9, "finished_reason:abort": 1,
			"num_preemptions_total": 2, "kv_block_size": 16, "kv_num_blocks": 27264,
			"engine_step_tokens_total": 71424, "engine_steps_total": 19102,
		},
		missing: []string{"prompt tokens computed", "prefix-cache hit rate", "KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "vllm 0.10", file: "vllm-0.10.prom", dialect: "vllm", prefix: "on", models: []string{qwen30B},
		scalars: vllm010Scalars, hists: vllm010Hists, extra: vllm010Extra,
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation"},
	},
	{
		// The deprecated names alone (as 0.9.x had them): tokens by their HELP text.
		name: "vllm 0.10 deprecated names only", file: "vllm-0.10.prom",
		edit:    dropLines("vllm:prefix_cache_", "vllm:kv_cache_usage_perc"),
		dialect: "vllm", prefix: "on", models: []string{qwen30B},
		scalars: vllm010Scalars, hists: vllm010Hists, extra: vllm010Extra,
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "vllm 0.10 multiprocess", file: "vllm-0.10.prom", edit: dropLines("process_start_time_seconds"),
		dialect: "vllm", prefix: "on", models: []string{qwen30B},
		scalars: with(vllm010Scalars, map[string]float64{"process_start_time_seconds": del}),
		hists:   vllm010Hists, extra: vllm010Extra,
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		name: "vllm newest, all models", file: "vllm-new.prom", dialect: "vllm", prefix: "on", models: []string{qwenNext, llama70B},
		scalars: vllmNewScalars, hists: vllmNewHists, extra: vllmNewExtra,
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		// Without by_source, computed = prompt_tokens_total − cached: that is
		// local_compute − recomputed, 295 tokens (120+80+40+55) less.
		name: "vllm newest without by_source", file: "vllm-new.prom", edit: dropLines("prompt_tokens_by_source"),
		dialect: "vllm", prefix: "on", models: []string{qwenNext, llama70B},
		scalars: with(vllmNewScalars, map[string]float64{
			// (3,499,880 + 3,469,920 + 2,991,960 + 2,916,345) − 6,888,400
			"prompt_tokens_total": 12878105 - 6888400, // 5,989,705
		}),
		hists: vllmNewHists, extra: vllmNewExtra,
		missing: []string{"KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "vllm newest, --model Llama", file: "vllm-new.prom", opts: Options{Model: llama70B},
		dialect: "vllm", prefix: "on", models: []string{qwenNext, llama70B},
		scalars: map[string]float64{
			"requests_processing":            12 + 10,
			"requests_deferred":              3 + 1,
			"kv_cache_usage_ratio":           (0.81 + 0.77) / 2,
			"prompt_tokens_total":            2150000 + 2050000,
			"cached_tokens_total":            1350000 + 1420000,
			"prefix_cache_queries":           3512000 + 3470400,
			"prefix_cache_hits":              1351200 + 1420000,
			"tokens_predicted_total":         820000 + 801500,
			"requests_total":                 4343 + 4274,
			"prompt_seconds_total":           1302.5 + 1250.25,
			"tokens_predicted_seconds_total": 38950.0 + 37800.5,
			"process_start_time_seconds":     1780012790.5,
			// no spec decode (no drafter on this model) and no KV capacity
			// (cache_config_info names no model)
		},
		hists: map[string]float64{
			"time_to_first_token_seconds":           4355 + 4284,
			"inter_token_latency_seconds":           815645 + 797216,
			"request_time_per_output_token_seconds": 4343 + 4274,
			"e2e_request_latency_seconds":           8617,
			"request_queue_time_seconds":            8617,
			"request_prefill_time_seconds":          8617,
			"request_decode_time_seconds":           8617,
			"request_prompt_tokens":                 8617,
			"request_generation_tokens":             8617,
		},
		extra: map[string]float64{
			"finished_reason:stop":       4100 + 4050,
			"finished_reason:length":     230 + 215,
			"finished_reason:abort":      12 + 9,
			"finished_reason:error":      1 + 0,
			"finished_reason:repetition": 0, // published, zero
			"num_preemptions_total":      14 + 9,
			"requests_waiting_deferred":  0 + 1,
			"engine_sleep_state:awake":   1 + 1,
			// published, zero
			"engine_sleep_state:weights_offloaded": 0,
			"engine_sleep_state:discard_all":       0,
			"engine_step_tokens_total":             5.641e6 + 5.5745e6, // 11,215,500
			"engine_steps_total":                   160211 + 158733,    // 318,944
		},
		missing: []string{"KV capacity", "KV tokens in use", "largest prompt and generation"},
	},
	{
		name: "llama.cpp old", file: "llamacpp-old.prom", dialect: "llamacpp",
		scalars: map[string]float64{
			"prompt_tokens_total":            48213,
			"prompt_seconds_total":           31.415,
			"tokens_predicted_total":         1234570, // printed "1.23457e+06": six significant digits
			"tokens_predicted_seconds_total": 25123.6,
			"requests_processing":            3,
			"requests_deferred":              0,
			"kv_cache_usage_ratio":           0.4375,
			"kv_cache_tokens":                14336,
		},
		extra: map[string]float64{
			"n_decode_total":          402117,
			"n_busy_slots_per_decode": 3.07,
			"largest_sequence_tokens": 7168, // n_past_max
			// per-slot speeds from the counters, not the tokens/s gauges
			"slot_prefill_tokens_per_second": 48213 / 31.415,    // 1,534.7
			"slot_decode_tokens_per_second":  1234570 / 25123.6, // 49.14
		},
		missing: []string{"prompt cache reuse", "time to first token", "end-to-end latency", "prompt and generation sizes",
			"requests finished", "largest prompt", "uptime"},
	},
	{
		name: "llama.cpp newest", file: "llamacpp-new.prom", dialect: "llamacpp",
		scalars: map[string]float64{
			"prompt_tokens_total":                   812345,
			"cached_tokens_total":                   655360,
			"prefix_cache_queries":                  812345 + 655360, // 1,467,705
			"prefix_cache_hits":                     655360,
			"prompt_seconds_total":                  402.117,
			"tokens_predicted_total":                298765,
			"tokens_predicted_seconds_total":        6123.45,
			"requests_processing":                   2,
			"requests_deferred":                     1,
			"spec_decode_num_draft_tokens_total":    489872,
			"spec_decode_num_accepted_tokens_total": 301230,
		},
		extra: map[string]float64{
			"n_decode_total":                 187654,
			"n_busy_slots_per_decode":        1.84,
			"largest_sequence_tokens":        40960,            // n_tokens_max: prompt + generation
			"slot_prefill_tokens_per_second": 812345 / 402.117, // 2,020.2
			"slot_decode_tokens_per_second":  298765 / 6123.45, // 48.79
			"spec_decode_num_drafts_total":   61234,
			"spec_decode_accepted_per_pos:0": 55000,
			"spec_decode_accepted_per_pos:1": 48000,
			"spec_decode_accepted_per_pos:2": 42000,
			"spec_decode_accepted_per_pos:3": 37000,
			"spec_decode_accepted_per_pos:4": 33000,
			"spec_decode_accepted_per_pos:5": 31000,
			"spec_decode_accepted_per_pos:6": 28500,
			"spec_decode_accepted_per_pos:7": 26730,
		},
		missing: []string{"KV-cache usage", "time to first token", "end-to-end latency", "prompt and generation sizes",
			"requests finished", "largest prompt", "uptime"},
	},
	{
		name: "sglang old", file: "sglang-old.prom", dialect: "sglang", models: []string{llama8B},
		scalars: map[string]float64{
			"prompt_tokens_total":    8128902 - 1920512, // prompt (cached included) − cached: 6,208,390
			"cached_tokens_total":    1920512,
			"prefix_cache_queries":   8128902,
			"prefix_cache_hits":      1920512,
			"tokens_predicted_total": 7557572,
			"requests_total":         11228,
			"requests_processing":    162,
			"requests_deferred":      2826,
			"kv_cache_usage_ratio":   0.28,
			"kv_cache_tokens":        123859,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds": 11008,
			"e2e_request_latency_seconds": 11228,
			"inter_token_latency_seconds": 7400757, // time_per_output_token_seconds
		},
		extra: map[string]float64{
			"cache_hit_rate_gauge": 0.007507552643049313,
			"gen_throughput_gauge": 86.50814177726902,
		},
		missing: []string{"prefill and decode time", "queue time", "prompt and generation sizes", "KV capacity",
			"largest prompt and generation", "uptime"},
	},
	{
		name: "sglang newest", file: "sglang-new.prom", dialect: "sglang", models: []string{qwen30B25},
		scalars: sglangNewScalars, hists: sglangNewHists, extra: sglangNewExtra,
		missing: []string{"prefill and decode time", "largest prompt and generation", "uptime"},
	},
	{
		name: "sglang newest, sglang_ prefix", file: "sglang-new.prom",
		edit:    func(s string) string { return strings.ReplaceAll(s, "sglang:", "sglang_") },
		dialect: "sglang", models: []string{qwen30B25},
		scalars: sglangNewScalars, hists: sglangNewHists, extra: sglangNewExtra,
		missing: []string{"prefill and decode time", "largest prompt and generation", "uptime"},
	},
	{
		// Without realtime_tokens_total: tokenizer-side prompt − cached, the
		// cached counter summed over cache_source device + host.
		name: "sglang newest without realtime counters", file: "sglang-new.prom", edit: dropLines("realtime_tokens"),
		dialect: "sglang", models: []string{qwen30B25},
		scalars: with(sglangNewScalars, map[string]float64{
			"prompt_tokens_total":  (6050000 + 20900000) - (15200000 + 1050000), // 10,700,000
			"cached_tokens_total":  15200000 + 1050000,                          // 16,250,000
			"prefix_cache_queries": 6050000 + 20900000,                          // 26,950,000
			"prefix_cache_hits":    15200000 + 1050000,
		}),
		hists: sglangNewHists, extra: sglangNewExtra,
		missing: []string{"prefill and decode time", "largest prompt and generation", "uptime"},
	},
	{
		// Issue 9 classes 1-3: the first metrics' names, name= labels, a
		// percent hit-rate gauge and no cached-token counter.
		name: "sglang first metrics", file: "sglang-0.3-first.prom", dialect: "sglang", models: []string{"google/gemma-2-9b-it"},
		scalars: map[string]float64{
			snapshot.PromptTokensAll: 500000, // cached share unknown: not "computed"
			"tokens_predicted_total": 420000,
			"requests_processing":    3, // num_requests_running
			"requests_deferred":      7, // num_requests_waiting
			"kv_cache_usage_ratio":   0.25,
			"kv_cache_max_tokens":    160000,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds": 2000,
			"inter_token_latency_seconds": 400000, // time_per_output_token_seconds
			"e2e_request_latency_seconds": 2000,
			"request_queue_time_seconds":  2000, // waiting_request_latency_seconds
			"request_prompt_tokens":       2000,
			"request_generation_tokens":   2000,
		},
		extra: map[string]float64{
			"cache_hit_rate_gauge": 0.125, // 12.5 percent
			"gen_throughput_gauge": 250,
		},
		missing: []string{"prefix-cache hit rate and computed prompt tokens", "prefill and decode time", "largest prompt and generation", "uptime"},
	},
	{
		name: "sglang first metrics, --model by name=", file: "sglang-0.3-first.prom", opts: Options{Model: "google/gemma-2-9b-it"},
		dialect: "sglang", models: []string{"google/gemma-2-9b-it"},
		scalars: map[string]float64{
			snapshot.PromptTokensAll: 500000, "tokens_predicted_total": 420000, "requests_processing": 3,
			"requests_deferred": 7, "kv_cache_usage_ratio": 0.25, "kv_cache_max_tokens": 160000,
		},
		hists: map[string]float64{
			"time_to_first_token_seconds": 2000, "inter_token_latency_seconds": 400000, "e2e_request_latency_seconds": 2000,
			"request_queue_time_seconds": 2000, "request_prompt_tokens": 2000, "request_generation_tokens": 2000,
		},
		extra:   map[string]float64{"cache_hit_rate_gauge": 0.125, "gen_throughput_gauge": 250},
		missing: []string{"prefix-cache hit rate and computed prompt tokens", "prefill and decode time", "largest prompt and generation", "uptime"},
	},
	{
		// 0.4.4.post4 on: inter_token_latency_seconds without
		// time_per_output_token_seconds, so the absent cached counter is 0.
		name: "sglang lazy cached counter", file: "sglang-0.4-lazy.prom", dialect: "sglang", models: []string{"Qwen/Qwen2.5-7B-Instruct"},
		scalars: map[string]float64{
			"prompt_tokens_total": 12000, "cached_tokens_total": 0, "prefix_cache_queries": 12000, "prefix_cache_hits": 0,
			"tokens_predicted_total": 3000, "requests_total": 12, "requests_processing": 4, "requests_deferred": 0,
			"kv_cache_usage_ratio": 0.04, "kv_cache_tokens": 8000,
		},
		hists:   map[string]float64{"time_to_first_token_seconds": 12, "inter_token_latency_seconds": 2988, "e2e_request_latency_seconds": 12},
		extra:   map[string]float64{"cache_hit_rate_gauge": 0, "gen_throughput_gauge": 400},
		missing: []string{"prefill and decode time", "queue time", "prompt and generation sizes", "KV capacity", "largest prompt and generation", "uptime"},
	},
	{
		// With time_per_output_token_seconds too it is 0.4.3.post3 or
		// older: no cached counter at all, so the cached share is unknown.
		name: "sglang before the cached counter", file: "sglang-0.4-lazy.prom", edit: addLines(sglangTPOT),
		dialect: "sglang", models: []string{"Qwen/Qwen2.5-7B-Instruct"},
		scalars: map[string]float64{
			snapshot.PromptTokensAll: 12000,
			"tokens_predicted_total": 3000, "requests_total": 12, "requests_processing": 4, "requests_deferred": 0,
			"kv_cache_usage_ratio": 0.04, "kv_cache_tokens": 8000,
		},
		hists: map[string]float64{"time_to_first_token_seconds": 12, "inter_token_latency_seconds": 2988, "e2e_request_latency_seconds": 12},
		extra: map[string]float64{"cache_hit_rate_gauge": 0, "gen_throughput_gauge": 400},
		missing: []string{"prefix-cache hit rate and computed prompt tokens", "prefill and decode time", "queue time", "prompt and generation sizes",
			"KV capacity", "largest prompt and generation", "uptime"},
	},
	{
		// Issue 9 class 4: every prompt token is computed.
		name: "vllm prefix caching off", file: "vllm-prefix-off.prom", dialect: "vllm", models: []string{"m"}, prefix: "off",
		scalars: vllmOffScalars,
		extra:   map[string]float64{"finished_reason:stop": 30, "finished_reason:length": 10, "kv_block_size": 16, "kv_num_blocks": 10000},
		missing: []string{"KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		name: "vllm prefix caching None", file: "vllm-prefix-off.prom", dialect: "vllm", models: []string{"m"}, prefix: "off",
		edit: func(s string) string {
			return strings.ReplaceAll(s, `enable_prefix_caching="False"`, `enable_prefix_caching="None"`)
		},
		scalars: vllmOffScalars,
		extra:   map[string]float64{"finished_reason:stop": 30, "finished_reason:length": 10, "kv_block_size": 16, "kv_num_blocks": 10000},
		missing: []string{"KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		name: "vllm prefix caching on, no cached counter", file: "vllm-prefix-off.prom", dialect: "vllm", models: []string{"m"}, prefix: "on",
		edit: func(s string) string {
			return strings.ReplaceAll(s, `enable_prefix_caching="False"`, `enable_prefix_caching="True"`)
		},
		scalars: with(vllmOffScalars, map[string]float64{
			"prompt_tokens_total": del, "cached_tokens_total": del, snapshot.PromptTokensAll: 40000,
		}),
		extra:   map[string]float64{"finished_reason:stop": 30, "finished_reason:length": 10, "kv_block_size": 16, "kv_num_blocks": 10000},
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		// Queries without hits (a cut 0.10 excerpt): no half of a ratio.
		name: "vllm 0.10 queries without hits", file: "vllm-0.10.prom", edit: dropLines("prefix_cache_hits"),
		dialect: "vllm", models: []string{qwen30B}, prefix: "on",
		scalars: with(vllm010Scalars, map[string]float64{"prefix_cache_queries": del, "prefix_cache_hits": del}),
		hists:   vllm010Hists, extra: vllm010Extra,
		missing: []string{"prompt tokens computed", "KV tokens in use", "largest prompt and generation", "prefix-cache hit rate"},
	},
	{
		// Issue 9 class 5: Ray Serve LLM, two replicas summed as engines.
		name: "ray serve ray_vllm_", file: "ray-vllm.prom", dialect: "vllm", models: []string{"m"},
		scalars: rayScalars, hists: map[string]float64{"e2e_request_latency_seconds": 4 + 6},
		extra:   map[string]float64{"finished_reason:stop": 4 + 6},
		missing: []string{"KV capacity", "prompt tokens computed", "KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		name: "ray serve ray_vllm:", file: "ray-vllm.prom", dialect: "vllm", models: []string{"m"},
		edit:    func(s string) string { return strings.ReplaceAll(s, "ray_vllm_", "ray_vllm:") },
		scalars: rayScalars, hists: map[string]float64{"e2e_request_latency_seconds": 4 + 6},
		extra:   map[string]float64{"finished_reason:stop": 4 + 6},
		missing: []string{"KV capacity", "prompt tokens computed", "KV tokens in use", "largest prompt and generation", "uptime"},
	},
	{
		// Issue 9 class 14: no decode call yet, so no batch occupancy and
		// no per-slot speed (0/0 is not 0).
		name: "llama.cpp fresh", file: "llamacpp-fresh.prom", dialect: "llamacpp",
		scalars: map[string]float64{
			"prompt_tokens_total": 0, "prompt_seconds_total": 0, "tokens_predicted_total": 0,
			"tokens_predicted_seconds_total": 0, "requests_processing": 0, "requests_deferred": 0,
		},
		extra: map[string]float64{"n_decode_total": 0, "largest_sequence_tokens": 0},
		missing: []string{"KV-cache usage", "prompt cache reuse", "time to first token", "end-to-end latency", "prompt and generation sizes",
			"requests finished", "largest prompt", "uptime"},
	},
	{
		name: "tgi 3.3 with speculation", file: "tgi-3.3.prom", dialect: "tgi",
		scalars: tgi33Scalars, hists: tgi33Hists, extra: tgi33Extra,
		missing: []string{"token budget", "time to first token", "prefill and decode time per request", "prompt tokens computed", "KV-cache usage",
			"prefix cache", "inter-token latency", "largest prompt and generation", "uptime"},
	},
	{
		// A build that publishes the budget (a stock router sets it before
		// its recorder exists): the reserved tokens' share of it.
		name: "tgi 3.3 with its budget", file: "tgi-3.3.prom", edit: addLines("# TYPE tgi_batch_max_total_tokens gauge\ntgi_batch_max_total_tokens 98304"),
		dialect: "tgi", scalars: tgi33Scalars, hists: tgi33Hists,
		extra: with(tgi33Extra, map[string]float64{"token_budget_max_tokens": 98304}),
		missing: []string{"time to first token", "prefill and decode time per request", "prompt tokens computed", "KV-cache usage",
			"prefix cache", "inter-token latency", "largest prompt and generation", "uptime"},
	},
	{
		name: "tgi", file: "tgi.prom", dialect: "tgi",
		scalars: map[string]float64{
			"requests_total":         5120,
			"requests_processing":    12,
			"requests_deferred":      4,
			"tokens_predicted_total": 1433600, // tgi_request_generated_tokens_sum
			// tgi_batch_inference_duration_sum, decode + prefill: one
			// batching task runs the calls one at a time
			"engine_busy_seconds_total":    16410.2 + 1301.6, // 17,711.8
			"engine_prefill_seconds_total": 1301.6,
			"engine_decode_seconds_total":  16410.2,
		},
		hists: map[string]float64{
			"e2e_request_latency_seconds": 5120,
			"request_queue_time_seconds":  5120,
			"request_prompt_tokens":       5169, // observed at validation, so failures after it count too
			"request_generation_tokens":   5120,
			// tgi_request_mean_time_per_token_duration
			"request_time_per_output_token_seconds": 5120,
		},
		extra: map[string]float64{
			"failed_reason:generation": 2,
			"failed_reason:overloaded": 35,
			"failed_reason:validation": 61,
			// entries into the generation routes, failures included
			"request_count_total":          5230,
			"token_budget_reserved_tokens": 98304, // tgi_batch_current_max_tokens
		},
		missing: []string{"token budget", "time to first token", "prefill and decode time per request", "prompt tokens computed", "KV-cache usage",
			"prefix cache", "inter-token latency", "largest prompt and generation", "uptime"},
	},
}

func near(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// compareFigures checks got against want key for key, both ways.
func compareFigures(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s[%q] missing, want %v", what, k, w)
		case !near(g, w):
			t.Errorf("%s[%q] = %v, want %v", what, k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s[%q] = %v, not expected", what, k, g)
		}
	}
}

func TestFixtures(t *testing.T) {
	for _, tc := range fixtureCases {
		t.Run(tc.name, func(t *testing.T) {
			body := fixture(t, tc.file)
			if tc.edit != nil {
				body = tc.edit(body)
			}
			s, err := Map(parse(t, body), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.Dialect != tc.dialect {
				t.Errorf("dialect = %q, want %q", s.Dialect, tc.dialect)
			}
			if strings.Join(s.Models, "|") != strings.Join(tc.models, "|") {
				t.Errorf("models = %q, want %q", s.Models, tc.models)
			}
			if s.Model != tc.opts.Model {
				t.Errorf("model = %q, want %q", s.Model, tc.opts.Model)
			}
			if s.PrefixCaching != tc.prefix {
				t.Errorf("PrefixCaching = %q, want %q", s.PrefixCaching, tc.prefix)
			}
			if len(s.Invalid) > 0 {
				t.Errorf("Invalid = %q, want none", s.Invalid)
			}
			compareFigures(t, "Scalars", s.Scalars, tc.scalars)
			counts := map[string]float64{}
			for k, h := range s.Histograms {
				counts[k] = h.Count
				if h.Total() != h.Count {
					t.Errorf("histogram %q: +Inf bucket %v ≠ count %v", k, h.Total(), h.Count)
				}
			}
			compareFigures(t, "Histograms", counts, tc.hists)
			compareFigures(t, "Extra", s.Extra, tc.extra)
			var quantities []string
			for _, line := range s.Missing {
				q, why, ok := strings.Cut(line, ": ")
				if !ok || why == "" {
					t.Errorf("Missing line %q is not `quantity: why`", line)
				}
				quantities = append(quantities, q)
			}
			if strings.Join(quantities, "|") != strings.Join(tc.missing, "|") {
				t.Errorf("Missing = %q\nwant quantities %q", s.Missing, tc.missing)
			}
			if len(s.Raw) == 0 {
				t.Error("Raw is empty")
			}
		})
	}
}

// The block hit rate survives in the Missing line: 1288 of 3072 blocks.
func TestVLLMBlockHitRateLine(t *testing.T) {
	s, err := Map(parse(t, fixture(t, "vllm-0.8.prom")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "block hit rate 41.9%, 1288 of 3072 blocks" // 1288/3072 = 0.41927
	for _, l := range s.Missing {
		if strings.Contains(l, want) {
			return
		}
	}
	t.Errorf("no Missing line contains %q: %q", want, s.Missing)
}

// Two models' prompt-length ladders differ (32768 vs 131072 context): the
// merge keeps every bound and counts the shorter ladder at its top bound.
func TestVLLMMergedLadders(t *testing.T) {
	s, err := Map(parse(t, fixture(t, "vllm-new.prom")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Histograms["request_prompt_tokens"]
	if h == nil {
		t.Fatal("no request_prompt_tokens")
	}
	// Cumulative counts per series at 20000: L0 4313, L1 4240, Q0 3361, Q1 3422.
	// Q at 50000: 3441 and 3492; at 100000: 3460 and 3517. L stops at 20000.
	want := map[float64]float64{
		20000:       4313 + 4240 + 3361 + 3422, // 15,336
		50000:       4313 + 4240 + 3441 + 3492, // 15,486
		100000:      4313 + 4240 + 3460 + 3517, // 15,530
		math.Inf(1): 15600,
		10:          3 + 2 + 1 + 2,
		1:           0,
	}
	got := map[float64]float64{}
	for _, b := range h.Buckets {
		got[b.UpperBound] = b.Count
	}
	for ub, w := range want {
		if got[ub] != w {
			t.Errorf("bucket le=%v = %v, want %v", ub, got[ub], w)
		}
	}
	if n := len(h.Buckets); n != 17 { // 1,2,5,…,50000,100000 and +Inf
		t.Errorf("%d buckets, want 17", n)
	}
}

// Ranks that differ only in tp_rank replicate one scheduler: their values
// are not added.
func TestSGLangReplicatedRanks(t *testing.T) {
	const body = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 12.0
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 12.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 3.0
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 2.0
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 5000.0
sglang:num_used_tokens{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 5000.0
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.5
sglang:token_usage{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 0.5
# TYPE sglang:queue_time_seconds histogram
sglang:queue_time_seconds_bucket{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0",le="1.0"} 8.0
sglang:queue_time_seconds_bucket{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0",le="+Inf"} 10.0
sglang:queue_time_seconds_count{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 10.0
sglang:queue_time_seconds_sum{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 4.5
sglang:queue_time_seconds_bucket{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1",le="1.0"} 7.0
sglang:queue_time_seconds_bucket{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1",le="+Inf"} 9.0
sglang:queue_time_seconds_count{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 9.0
sglang:queue_time_seconds_sum{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 4.0
# TYPE sglang:gpu_execution_seconds_total counter
sglang:gpu_execution_seconds_total{category="forward_extend",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 30.0
sglang:gpu_execution_seconds_total{category="forward_extend",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 29.5
sglang:gpu_execution_seconds_total{category="forward_decode",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 90.0
sglang:gpu_execution_seconds_total{category="forward_decode",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 90.5
`
	s, err := Map(parse(t, body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	compareFigures(t, "Scalars", s.Scalars, map[string]float64{
		"requests_processing":  12,   // not 24
		"requests_deferred":    3,    // the later of two readings of one queue: the larger
		"kv_cache_tokens":      5000, // not 10,000
		"kv_cache_usage_ratio": 0.5,
		// One scheduler's busy time, read by both its ranks: each mode's
		// larger reading, added (30 + 90.5), never the ranks' sum.
		"engine_busy_seconds_total":    120.5,
		"engine_prefill_seconds_total": 30,
		"engine_decode_seconds_total":  90.5,
	})
	if h := s.Histograms["request_queue_time_seconds"]; h == nil || h.Count != 10 || h.Sum != 4.5 {
		t.Errorf("queue histogram = %+v, want the fuller replica (10 observations, sum 4.5)", h)
	}
}

func TestDetection(t *testing.T) {
	// A scrape with both llama.cpp (16 families) and TGI (21) series.
	mixed := fixture(t, "llamacpp-new.prom") + "\n" + fixture(t, "tgi.prom")
	unrelated := `# TYPE go_goroutines gauge
go_goroutines 12
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e+09
# TYPE http_requests_total counter
http_requests_total{code="200"} 5
# TYPE python_info gauge
python_info{version="3.12.1"} 1
`
	tests := []struct {
		name    string
		body    string
		dialect string // forced
		want    string
		check   func(*testing.T, *snapshot.Snapshot)
		err     func(error) bool
	}{
		{name: "majority wins", body: mixed, want: "tgi"},
		{name: "--dialect overrides", body: mixed, dialect: "llamacpp", want: "llamacpp",
			check: func(t *testing.T, s *snapshot.Snapshot) {
				if s.Scalars["prompt_tokens_total"] != 812345 {
					t.Errorf("prompt_tokens_total = %v, want llama.cpp's 812345", s.Scalars["prompt_tokens_total"])
				}
			}},
		{name: "unrelated families only", body: unrelated, err: func(err error) bool {
			var u *UnknownError
			return errors.As(err, &u) && strings.Join(u.Prefixes, " ") == "go_ http_ process_ python_"
		}},
		{name: "unrelated families do not outvote", body: unrelated + fixture(t, "llamacpp-old.prom"), want: "llamacpp"},
		{name: "unknown --dialect", body: mixed, dialect: "ollama", err: func(err error) bool {
			return errors.Is(err, ErrUnknownDialect) && strings.Contains(err.Error(), "vllm")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Map(parse(t, tc.body), Options{Dialect: tc.dialect})
			if tc.err != nil {
				if err == nil || !tc.err(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Dialect != tc.want {
				t.Errorf("dialect = %q, want %q", s.Dialect, tc.want)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestModelErrors(t *testing.T) {
	tests := []struct {
		file, model string
		models      []string
	}{
		{"vllm-new.prom", "gpt-4o", []string{qwenNext, llama70B}},
		{"sglang-new.prom", "llama", []string{qwen30B25}},
		{"llamacpp-new.prom", "any", nil},
		{"tgi.prom", "any", nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Map(parse(t, fixture(t, tc.file)), Options{Model: tc.model})
			var me *ModelError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *ModelError", err)
			}
			if me.Model != tc.model || strings.Join(me.Models, "|") != strings.Join(tc.models, "|") {
				t.Errorf("ModelError = %+v", me)
			}
			for _, m := range tc.models {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not list %q", err, m)
				}
			}
		})
	}
}

// Every fixture maps under its own dialect when forced, and a forced wrong
// dialect is an UnknownError naming it (never an empty report).
func TestForcedDialects(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("../../testdata/dialects", "*.prom"))
	if err != nil || len(files) == 0 {
		t.Fatal("no fixtures", err)
	}
	for _, f := range files {
		fams := parse(t, fixture(t, filepath.Base(f)))
		own, err := Map(fams, Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range Names() {
			s, err := Map(fams, Options{Dialect: d})
			if d == own.Dialect {
				if err != nil || s.Dialect != d {
					t.Errorf("%s as %s: %v", f, d, err)
				}
				continue
			}
			var ue *UnknownError
			if !errors.As(err, &ue) || ue.Wanted != d {
				t.Errorf("%s as %s: err = %v, want UnknownError", f, d, err)
			}
		}
	}
	if got := strings.Join(Names(), " "); got != "tabbyapi vllm aphrodite llamacpp sglang tgi trtllm dynamo lmdeploy" {
		t.Errorf("Names() = %q", got)
	}
}

// No dialect says the same thing twice about what it lacks.
func TestMissingUnique(t *testing.T) {
	for _, tc := range fixtureCases {
		body := fixture(t, tc.file)
		if tc.edit != nil {
			body = tc.edit(body)
		}
		s, err := Map(parse(t, body), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		lines := append([]string(nil), s.Missing...)
		sort.Strings(lines)
		for i := 1; i < len(lines); i++ {
			if lines[i] == lines[i-1] {
				t.Errorf("%s: Missing repeats %q", tc.name, lines[i])
			}
		}
	}
}

func FuzzMap(f *testing.F) {
	// Each fixture's head: whole fixtures (up to 200 KB) make mutation slow,
	// and TestForcedDialects maps them in full already.
	files, _ := filepath.Glob(filepath.Join("../../testdata/dialects", "*.prom"))
	more, _ := filepath.Glob(filepath.Join("../../testdata/dialects", "*", "*.prom"))
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		f.Add([]byte(strings.Join(lines[:min(len(lines), 120)], "")))
	}
	f.Add([]byte("sglang:cache_config_info{page_size=\"NaN\",num_pages=\"-1\"} 1\n"))
	f.Add([]byte("vllm:cache_config_info{block_size=\"1e400\",num_gpu_blocks=\"None\"} 1\nvllm:gpu_prefix_cache_queries_total 0\n"))
	f.Add([]byte("# TYPE vllm:x histogram\nvllm:x_bucket{le=\"NaN\"} 1\nvllm:x_bucket{le=\"1\"} -5\nvllm:x_count 1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		format, err := exposition.DetectFormat("", body)
		if err != nil {
			return
		}
		fams, err := exposition.Parse(body, format)
		if err != nil {
			return
		}
		for _, o := range []Options{{}, {Model: "m"}, {Dialect: "vllm"}, {Dialect: "llamacpp"}, {Dialect: "sglang"}, {Dialect: "tgi"}, {Dialect: "sglang", Model: "m"}} {
			s, err := Map(fams, o)
			if err != nil {
				continue
			}
			for k, h := range s.Histograms {
				if h == nil || len(h.Buckets) == 0 {
					t.Fatalf("histogram %q empty", k)
				}
				if h.Sum < 0 && h.Buckets[0].UpperBound >= 0 || math.IsInf(h.Sum, 0) || math.IsNaN(h.Sum) {
					t.Fatalf("histogram %q: sum %v passed validation", k, h.Sum)
				}
			}
			for k, v := range s.Scalars {
				if math.IsInf(v, 0) {
					t.Fatalf("scalar %q = %v passed validation", k, v)
				}
			}
			if len(s.Invalid) > maxProblems+1 {
				t.Fatalf("%d problems listed", len(s.Invalid))
			}
		}
	})
}

// BenchmarkMap maps the largest fixture (two models × two engines, about
// 1,700 lines), parsed once.
func BenchmarkMap(b *testing.B) {
	for _, file := range []string{"vllm-new.prom", "sglang-new.prom", "llamacpp-new.prom"} {
		b.Run(file, func(b *testing.B) {
			fams := parse(b, fixture(b, file))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Map(fams, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Only a server whose start header is a wall-clock time passes it on:
// llama.cpp's is a monotonic clock under the same name.
func TestStartHeader(t *testing.T) {
	for _, tt := range []struct {
		file string
		want float64
	}{{"llamacpp-new.prom", 0}} {
		s, err := Map(parse(t, fixture(t, tt.file)), Options{StartHeader: 1.7e9})
		if err != nil || s.HeaderStart != tt.want {
			t.Errorf("%s: HeaderStart %v (%v), want %v", tt.file, s.HeaderStart, err, tt.want)
		}
	}
	tabby := parse(t, "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n")
	if s, err := Map(tabby, Options{StartHeader: 1.7e9}); err != nil || s.HeaderStart != 1.7e9 {
		t.Errorf("tabbyapi: HeaderStart %v (%v), want 1.7e9", s.HeaderStart, err)
	}
}
