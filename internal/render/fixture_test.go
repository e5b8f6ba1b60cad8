package render

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/report"
)

func ptr[T any](v T) *T { return &v }

// num is a figure as the report holds it.
func num(v float64) *report.Number { return ptr(report.Number(v)) }

// fullReport is a hand-built report with every kind of row the renderer
// draws: bars at 0, a fraction, ½ and 1, each severity, labels and notes
// too long for a column, wide text (CJK, emoji, ·, —, ≤), a wide
// distribution section, a table section, header lines and notes of each
// severity.
func fullReport() *report.Report {
	nan := report.Number(math.NaN())
	return &report.Report{
		Schema:        1,
		Source:        "http://gpu-box:5000/metrics",
		Dialect:       "tabbyapi",
		SourceKind:    "proxy",
		Upstream:      "llamacpp",
		ScrapedAt:     report.Time{Time: time.Date(2025, 6, 1, 12, 0, 5, 250e6, time.UTC)},
		ScrapeSeconds: 0.012,
		Header: []string{
			"model Qwen3-27B-exl3 · max_seq_len 262144 · cache Q8",
			"server restarted 3.0 h ago",
		},
		Scalars: report.Map[report.Number]{
			"requests_processing":      2,
			"requests_deferred":        1,
			"kv_cache_usage_ratio":     0.66,
			"predicted_tokens_seconds": report.Number(math.NaN()),
		},
		Histograms: map[string]report.HistogramSummary{
			"request_prompt_tokens": {
				Count: 345, Sum: 4_243_500, Mean: 12300, P50: 8100, P90: 30200, P99: 241000,
				Capped: &report.Quantiles{P50: 8100, P90: 30200, P99: 198000},
				Peak:   num(206000.0),
				Buckets: []report.Bucket{
					{LE: "10000", Count: 200}, {LE: "100000", Count: 330},
					{LE: "200000", Count: 340}, {LE: "262144", Count: 345}, {LE: "+Inf", Count: 345},
				},
			},
			"time_to_first_token_seconds": {
				Count: 0, Sum: 0, Mean: nan, P50: nan, P90: nan, P99: nan,
				Buckets: []report.Bucket{{LE: "0.5", Count: 0}, {LE: "+Inf", Count: 0}},
			},
		},
		Figures: report.Figures{
			PrefixCacheHitRatio: num(0.21),
			RequestSeconds:      num(15120.0),
			MeanInFlight:        num(0.699),
			BusyAtMost:          num(0.699),
			EngineBusySeconds:   num(9800.0),
			Utilization:         num(0.453),
			PrefillShare:        num(0.133),
			DecodeShare:         num(0.867),
			DominantPhase:       ptr("decode"),
			ExchangeRate:        num(6.5),
			BreakEven:           []report.BreakEven{{Factor: 1.5, Floor: 0.3}, {Factor: 2, Floor: 0.23}},
			KVOffloadPayback:    num(math.Inf(1)),
		},
		Extra: report.Map[report.Number]{"num_preemptions": 3},
		Rates: map[string]map[string]*float64{
			"1m":  {"requests": ptr(0.03), "prompt_cached": nil},
			"now": {"requests": ptr(math.NaN())},
		},
		Sections: []report.Section{
			{ID: "live", Title: "Live", Rows: []report.Row{
				{ID: "state", Label: "state", Value: "2 generating, 1 queued"},
				{ID: "kv_cache", Label: "KV cache", Value: "66.0%", Bar: num(0.66), Note: "43.2K / 65.5K tokens", Severity: report.Good},
				{ID: "kv_offload", Label: "KV offload", Value: "50.0%", Bar: num(0.5), Note: "128K / 256K in RAM"},
				{ID: "largest_ctx", Label: "largest ctx seen", Value: "206.0K"},
				{ID: "largest_gen", Label: "largest generation", Value: "5.0K"},
			}},
			{ID: "throughput", Title: "Throughput (cumulative)", Rows: []report.Row{
				{Label: "prefill work", Value: "4.2M computed", Note: "over 33.5 min"},
				{Label: "decode work", Value: "1.1M generated", Note: "over 3.6 h"},
				{Label: "requests finished", Value: "345"},
			}},
			{ID: "time", Title: "Where the time goes", Rows: []report.Row{
				{Label: "engine busy", Value: "4.2 h of 6.0 h up", Note: "69.9% utilization"},
				{Label: "prefill", Value: "13.3%", Bar: num(0.133), Note: "33.5 min"},
				{Label: "decode", Value: "86.7%", Bar: num(0.867), Note: "3.6 h"},
				{Label: "queued behind others", Value: "12.0 min", Note: "not engine time", Severity: report.Dim},
				{Label: "exchange rate", Value: "1% off decode pays for 6.5% onto prefill", Note: "86.7% vs 13.3%"},
				{Label: "break-even 1.5×", Value: "prefill may fall 3.3x", Note: "floor 30.0%", Severity: report.Good},
				{Label: "break-even 2×", Value: "prefill cannot give up anything", Note: "floor ≥ 100%", Severity: report.Bad},
			}},
			{ID: "spec", Title: "Speculative decode", Rows: []report.Row{
				{Label: "draft acceptance", Value: "55.0%", Bar: num(0.55), Note: "1.2M / 2.2M", Severity: report.Warn},
				{Label: "tokens / step", Value: "2.650", Note: "+165% vs. no drafter"},
				{Label: "decode steps", Value: "415.1K", Note: "120 req w/ drafter"},
			}},
			{ID: "prefix", Title: "Prefix cache", Rows: []report.Row{
				{Label: "hit rate", Value: "100.0%", Bar: num(1.0), Note: "5.3M / 5.3M", Severity: report.Good},
				{Label: "prefilled", Value: "0", Note: "= queried − cached"},
			}},
			{ID: "offload", Title: "KV offload", Rows: []report.Row{
				{Label: "share of cache hits", Value: "0.0%", Bar: num(0.0), Note: "VRAM serves the working set"},
				{Label: "RAM in use", Value: "8.0 GiB / 16.0 GiB", Note: "12 stores pinned synchronously", Severity: report.Warn},
				{Label: "churn", Value: "9.1K stored, 8.7K evicted, 120 deduped"},
				{Label: "traffic", Value: "1.2 GiB read · 71.1 GiB written", Note: "thrashing — raise sysmem_kv_cache, pages written out are never read back", Severity: report.Bad},
			}},
			{ID: "recurrent", Title: "Recurrent state", Rows: []report.Row{
				{Label: "cache", Value: "92.0%", Bar: num(0.92), Note: "1.8 GiB / 2.0 GiB"},
				{Label: "checkpoints", Value: "104 held", Note: "17.7 MiB each"},
				{Label: "KV wasted by cap, tokens re-prefilled for lack of a recurrent checkpoint", Value: "31.2K", Note: "no checkpoint covered them — not a budget problem, raising sysmem_recurrent_cache cannot help", Severity: report.Dim},
			}},
			{ID: "latency", Title: "Latency · mean · p50 · p90 · p99", Rows: []report.Row{
				{Label: "time to first token", Value: "1.2 s · 850 ms · 2.1 s · 3.4 s", Note: "estimated"},
				{Label: "queue wait", Value: "—", Note: "no requests yet", Severity: report.Dim},
				{Label: "end-to-end", Value: "38.1 s · 31.0 s · 1.2 min · 2.0 min", Note: "estimated"},
				{Note: "estimated from buckets: latency histograms have no peak series to hold the quantiles to", Severity: report.Dim},
			}},
			{ID: "size", Title: "Size · mean · p50 · p90 · p99", Rows: []report.Row{
				{Label: "prompt size", Value: "12.3K · 8.1K · 30.2K · 198.0K", Note: "capped at peak"},
				{Label: "模型 名前 🚀", Value: "≤ 1.0K", Note: "wide text, 表示幅"},
			}},
			{ID: "dist", Title: "Distributions", Wide: true, Rows: []report.Row{
				{Label: "prompt size", Value: "n=345", Note: "mean 12.3K · p50 8.1K · p90 30.2K · p99 198.0K (capped at peak)"},
				{Label: "≤ 10.0K", Value: "200", Bar: num(1.0)},
				{Label: "≤ 100.0K", Value: "130", Bar: num(0.65)},
				{Label: "≤ 200.0K", Value: "10", Bar: num(0.05)},
				{Label: "≤ 262.1K", Value: "5", Bar: num(0.025)},
			}},
			{ID: "rates", Title: "Rates over staggered windows", Wide: true, Table: &report.Table{
				Header: []string{"", "now 2.0s", "30s", "1m", "5m", "15m", "1h", "~3.0h"},
				Rows: []report.TableRow{
					{ID: "prompt_computed", Label: "prompt computed tok/s", Cells: []string{"0", "1.2K", "1.1K", "980", "850", "812", "790"}},
					{ID: "prompt_cached", Label: "prompt cache hits tok/s", Cells: []string{"0", "<0.01", "3.25", "12.5", "", "", ""}},
					{ID: "requests", Label: "requests /s", Cells: []string{"0", "0.05", "0.04", "0.03", "0.03", "0.03", "0.03"}},
				},
			}},
		},
		Notes: []report.Note{
			{ID: "kv_offload_thrashing", Severity: report.Bad, Text: "KV offload is thrashing: 71.1 GiB written and 1.2 GiB read back (payback 0.02); raise sysmem_kv_cache so that pages written out are read back before they are evicted"},
			{ID: "kv_offload_cold_allocs", Severity: report.Warn, Text: "12 offload stores pinned memory synchronously on the generator's thread"},
			{ID: "layout_free", Severity: report.Good, Text: "prefill may fall 3.3x before a decode-favouring layout stops paying"},
			{ID: "latency_estimated", Severity: report.Dim, Text: "latency quantiles are estimated from buckets"},
			{ID: "scrape_slow", Severity: report.Info, Text: "an info caveat"},
			{ID: "plain", Text: "a note with no severity"},
		},
	}
}
