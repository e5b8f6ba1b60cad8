package dialect

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// SGLang at 016d860 (testdata/dialects/sglang-2026.prom): two DP ranks,
// priority scheduling, a hybrid model, the hierarchical cache. Every value
// is worked out from the fixture's lines by hand.
var sglang2026Scalars = map[string]float64{
	// The priority="" series alone: 30 + 26 running, 12 + 7 waiting (the
	// priorities' series beside them would make 112 and 38).
	"requests_processing": 30 + 26,
	"requests_deferred":   12 + 7,
	// prefill_effective_tokens_total: input; device + host + storage hits.
	"prompt_tokens_total":       5000000 + 4750000,
	"cached_tokens_total":       (6900000 + 700000) + (7400000 + 550000),
	"prefix_cache_queries":      (5000000 + 6900000 + 700000) + (4750000 + 7400000 + 550000),
	"prefix_cache_hits":         (6900000 + 700000) + (7400000 + 550000),
	"prefix_cache_host_hits":    700000 + 550000,
	"prefix_cache_storage_hits": 0,
	"tokens_predicted_total":    2100000 + 15800000,
	"requests_total":            2000 + 9800,
	// The full-attention pool: full_token_usage (not token_usage, the SWA
	// pool's 0.62 and 0.71 here), kv_used_tokens (not num_used_tokens,
	// 186,000 + 213,000, the SWA pool's use).
	"kv_cache_usage_ratio":      (0.38 + 0.40) / 2,
	"kv_cache_tokens":           150000 + 160000,
	"kv_cache_max_tokens":       400000 + 400000,
	"kv_cache_evictable_tokens": 12000 + 18000,
	"kv_cache_free_tokens":      236000 + 222000,
	// forward_execution_seconds_total: each scheduler's modes added
	// (dp0 2400 + 9600 + 1200 + 30 = 13,230; dp1 2200 + 9900 + 1100 + 70
	// = 13,270), averaged; extend and decode alone, averaged.
	"engine_busy_seconds_total":    (13230 + 13270) / 2,
	"engine_prefill_seconds_total": (2400 + 2200) / 2,
	"engine_decode_seconds_total":  (9600 + 9900) / 2,
}

var sglang2026Extra = map[string]float64{
	"cache_hit_rate_gauge":             (0.58 + 0.63) / 2,
	"gen_throughput_gauge":             1800.5 + 1750.25,
	"num_aborted_requests_total":       35,
	"num_preemptions_total":            4 + 9,
	"retracted_prompt_tokens_total":    300000 + 420000,
	"retracted_generated_tokens_total": 40000 + 60000,
	"paused_requests":                  0 + 3,
	"running_priority:0":               20 + 18,
	"running_priority:10":              10 + 8,
	"queued_priority:0":                2 + 0,
	"queued_priority:10":               10 + 7,
	"kv_pool_usage:swa":                (0.62 + 0.71) / 2,
	"kv_block_size":                    16,
	"kv_num_blocks":                    25000 + 25000,
	"context_length":                   131072,
}

func TestSGLang2026(t *testing.T) {
	s := readFixture(t, "../../testdata/dialects/sglang-2026.prom", Options{})
	compareFigures(t, "Scalars", s.Scalars, sglang2026Scalars)
	compareFigures(t, "Extra", s.Extra, sglang2026Extra)
	for name, count := range map[string]float64{
		"time_to_first_token_seconds": 2000 + 9800, "e2e_request_latency_seconds": 2000 + 9800,
		"request_queue_time_seconds": 5950 + 5850, "inter_token_latency_seconds": 17888200,
		"request_prompt_tokens": 11800, "request_generation_tokens": 11800,
	} {
		if h := s.Hist(name); h == nil || h.Count != count {
			t.Errorf("%s = %+v, want %v observations", name, h, count)
		}
	}
	for _, m := range s.Missing {
		if strings.Contains(m, "full-attention") || strings.Contains(m, "page count") {
			t.Errorf("a missing line the 2026 names answer: %q", m)
		}
	}
	// The speculative fixture: one scheduler, EAGLE3.
	spec := readFixture(t, "../../testdata/dialects/sglang-2026-spec.prom", Options{})
	compareFigures(t, "spec Scalars", only(spec.Scalars, "engine_busy_seconds_total", "engine_prefill_seconds_total", "engine_decode_seconds_total", "tokens_predicted_total"),
		map[string]float64{
			"engine_busy_seconds_total":    120 + 300 + 900 + 180, // draft_extend is busy time of neither phase
			"engine_prefill_seconds_total": 120,
			"engine_decode_seconds_total":  300 + 900, // decode (the drafter's steps) and target_verify
			"tokens_predicted_total":       220000 + 800000,
		})
	compareFigures(t, "spec Extra", only(spec.Extra, "spec_decode_verify_calls_total", "context_length", "kv_block_size", "kv_num_blocks"),
		map[string]float64{"spec_decode_verify_calls_total": 300000, "context_length": 32768, "kv_block_size": 1, "kv_num_blocks": 200000})
	if !slices.ContainsFunc(spec.Missing, func(m string) bool { return strings.Contains(m, "verify passes") }) {
		t.Errorf("spec: missing lines %q do not say what SGLang counts of its drafts", spec.Missing)
	}
}

// only is m cut to the keys given that it has.
func only(m map[string]float64, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// One server state in two versions' names (sglang-44cedc2.prom, the names
// of late 2025 to early 2026; sglang-2026.prom, those of 016d860): each
// canonical figure is the same in both, or absent in the older with the
// reason, or differs for a reason the table gives.
func TestSGLangVersionsSideBySide(t *testing.T) {
	old := readFixture(t, "../../testdata/dialects/sglang-44cedc2.prom", Options{})
	cur := readFixture(t, "../../testdata/dialects/sglang-2026.prom", Options{})
	absent := math.NaN()
	for _, c := range []struct {
		name     string
		old, cur float64 // NaN: absent
		why      string  // where they differ
	}{
		// The same.
		{snapshot.RequestsProcessing, 56, 56, ""},
		{snapshot.RequestsDeferred, 19, 19, ""},
		{snapshot.EngineBusySecondsTotal, 13250, 13250, "forward_extend → extend, gpu_ → forward_execution"},
		{snapshot.EnginePrefillSecondsTotal, 2300, 2300, ""},
		{snapshot.EngineDecodeSecondsTotal, 9750, 9750, ""},
		{snapshot.KVCacheMaxTokens, 800000, 800000, ""},
		{snapshot.TokensPredictedTotal, 17900000, 17900000, "is_streaming added"},
		{snapshot.RequestsTotal, 11800, 11800, ""},
		{snapshot.ExtraPreemptions, 13, 13, ""},
		{snapshot.ExtraRetractedPromptTokens, 720000, 720000, ""},
		{snapshot.ExtraRetractedGeneratedTokens, 100000, 100000, ""},
		{snapshot.ExtraPausedRequests, 3, 3, ""},
		{snapshot.ExtraKVBlockSize, 16, 16, "cache_config_info's label → page_size"},
		// Absent in the older names, said.
		{snapshot.ExtraKVNumBlocks, absent, 50000, "cache_config_info has no rank label: one scheduler's 25,000 of two"},
		{snapshot.KVCacheTokens, absent, 310000, "num_used_tokens is the SWA pool's (399,000) for this hybrid model; kv_used_tokens is new"},
		{snapshot.KVCacheEvictableTokens, absent, 30000, "kv_evictable_tokens is new"},
		{snapshot.KVCacheFreeTokens, absent, 458000, "kv_available_tokens is new"},
		{snapshot.PrefixCacheHostHits, absent, 1250000, "prefill_effective_tokens_total is new"},
		{snapshot.ExtraContextLength, absent, 131072, "context_len is new"},
		{snapshot.ExtraRunningByPriority + "0", absent, 38, "no priority label before"},
		{snapshot.ExtraKVPoolUsage + "swa", absent, 0.665, "beside the full-attention pool only, which the older names lack"},
		// Different, by what each version counts.
		{snapshot.KVCacheUsageRatio, 0.665, 0.39, "token_usage, the fuller pool (said in Missing), against full_token_usage"},
		{snapshot.PromptTokensTotal, 10100000, 9750000, "realtime prefill_compute counts a retracted request's 350,000 tokens again; effective input does not"},
		{snapshot.PrefixCacheQueries, 26000000, 25300000, "the re-counts again, computed and cached"},
		{snapshot.PrefixCacheHits, 15900000, 15550000, "the re-counts of cached tokens"},
	} {
		got := func(s *snapshot.Snapshot) float64 {
			if v, ok := s.Scalar(c.name); ok {
				return v
			}
			if v, ok := s.Extra[c.name]; ok {
				return v
			}
			return absent
		}
		for _, side := range []struct {
			label string
			s     *snapshot.Snapshot
			want  float64
		}{{"44cedc2", old, c.old}, {"2026", cur, c.cur}} {
			v := got(side.s)
			switch {
			case math.IsNaN(side.want) && !math.IsNaN(v):
				t.Errorf("%s: %s = %v, want absent (%s)", side.label, c.name, v, c.why)
			case !math.IsNaN(side.want) && !near(v, side.want):
				t.Errorf("%s: %s = %v, want %v (%s)", side.label, c.name, v, side.want, c.why)
			}
		}
	}
	for _, want := range []string{"token_usage, the fuller", "cache_config_info is one scheduler's"} {
		if !slices.ContainsFunc(old.Missing, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("44cedc2: missing lines %q lack %q", old.Missing, want)
		}
	}
}

// With priority scheduling the queues' total is the priority="" series;
// the priorities' own are parts of it, never added in, and an
// unconfigured default priority ("None") is a priority like the others.
func TestSGLangPriorityTotals(t *testing.T) {
	const body = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"} 5.0
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="None",tp_rank="0"} 2.0
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="1",tp_rank="0"} 3.0
sglang:num_running_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="1"} 5.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"} 4.0
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",priority="1",tp_rank="0"} 4.0
`
	s, err := Map(parse(t, body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// tp_rank 0 and 1 replicate one scheduler: its total once, 5, not 10
	// and not 5 + 2 + 3.
	compareFigures(t, "Scalars", s.Scalars, map[string]float64{"requests_processing": 5, "requests_deferred": 4})
	compareFigures(t, "Extra", s.Extra, map[string]float64{"running_priority:None": 2, "running_priority:1": 3, "queued_priority:1": 4})
}

// A hybrid model's scrape with only token_usage reads it as the KV cache's
// use, says it is the fuller pool's, and leaves num_used_tokens (the SWA
// pool's use where that is larger) out; a model without an SWA pool keeps
// it.
func TestSGLangHybridWithoutFullUsage(t *testing.T) {
	const head = `# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",tp_rank="0"} 0.8
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{model_name="m",tp_rank="0"} 240.0
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{model_name="m",tp_rank="0"} 1000.0
# TYPE sglang:swa_token_usage gauge
`
	for _, c := range []struct {
		swa     string
		tokens  float64 // NaN: absent
		missing bool
	}{
		{`sglang:swa_token_usage{model_name="m",tp_rank="0"} 0.8`, math.NaN(), true},
		{`sglang:swa_token_usage{model_name="m",tp_rank="0"} 0.0`, 240, false},
	} {
		s, err := Map(parse(t, head+c.swa+"\n"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := s.Scalar(snapshot.KVCacheTokens)
		if ok != !math.IsNaN(c.tokens) || ok && v != c.tokens {
			t.Errorf("%s: KV tokens %v (%v), want %v", c.swa, v, ok, c.tokens)
		}
		if r := s.Scalars[snapshot.KVCacheUsageRatio]; r != 0.8 {
			t.Errorf("%s: KV ratio %v, want token_usage's 0.8", c.swa, r)
		}
		said := slices.ContainsFunc(s.Missing, func(m string) bool { return strings.Contains(m, "the fuller of this hybrid model's pools") })
		if said != c.missing {
			t.Errorf("%s: missing lines %q", c.swa, s.Missing)
		}
		if _, ok := s.Extra[snapshot.ExtraKVPoolUsage+"swa"]; ok {
			t.Errorf("%s: a pool row beside a KV figure that is not the full-attention pool's", c.swa)
		}
	}
}
