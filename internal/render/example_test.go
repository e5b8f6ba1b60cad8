package render_test

import (
	"os"

	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

func ExampleText() {
	half, most := report.Number(0.5), report.Number(0.93)
	r := &report.Report{
		Source:  "http://127.0.0.1:5000/metrics",
		Dialect: "tabbyapi",
		Sections: []report.Section{{
			Title: "Live",
			Rows: []report.Row{
				{Label: "state", Value: "2 generating"},
				{Label: "KV cache", Bar: &most, Value: "93.0%", Note: "61.0K / 65.5K tokens", Severity: report.Bad},
				{Label: "KV offload", Bar: &half, Value: "50.0%", Note: "128K / 256K in RAM"},
			},
		}},
		Notes: []report.Note{{ID: "kv_cache_full", Severity: report.Bad, Text: "KV cache nearly full"}},
	}
	_ = render.Text(os.Stdout, r, render.Options{Width: 72})
	// Output:
	// inferscope · tabbyapi · http://127.0.0.1:5000/metrics
	//
	// Live
	//   state       2 generating
	//   KV cache    █████████▎ 93.0%  61.0K / 65.5K tokens
	//   KV offload  █████░░░░░ 50.0%  128K / 256K in RAM
	//
	// Notes
	//   ✗ KV cache nearly full
}

func ExampleJSONWith() {
	requests := 0.25
	r := &report.Report{Schema: 1, Source: "scrape.prom", Dialect: "tabbyapi", SourceKind: "server",
		Rates: report.Rates{"1m": {"requests": &requests, "prompt_computed": nil}}}
	_ = render.JSONWith(os.Stdout, r, render.JSONOptions{Compact: true})
	// Output:
	// {"schema":1,"source":"scrape.prom","dialect":"tabbyapi","source_kind":"server","scraped_at":null,"scrape_seconds":0,"header":[],"scalars":{},"histograms":{},"figures":{"prefix_cache_hit_ratio":null,"request_seconds":null,"mean_in_flight":null,"busy_at_most":null,"engine_busy_seconds":null,"utilization":null,"prefill_share":null,"decode_share":null,"dominant_phase":null,"exchange_rate":null,"break_even":[],"spec_decode_acceptance":null,"spec_decode_tokens_per_step":null,"kv_offload_hit_share":null,"kv_offload_payback":null,"recurrent_capped_share":null,"trade_basis":null,"probe_trade":null},"extra":{},"sections":[],"notes":[],"raw":[],"rates":{"1m":{"prompt_computed":null,"requests":0.25}}}
}
