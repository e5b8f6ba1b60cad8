package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/jsondoc"
	"github.com/inferscope/inferscope/internal/report"
)

// docTables maps each "Bench: …" heading of docs/json.md to the JSON
// objects its field table describes ("." between keys).
var docTables = map[string][]string{
	"Bench: top level":          {""},
	"Bench: `load`":             {"load"},
	"Bench: `client`":           {"client"},
	"Bench: each distribution":  {"client.ttfb_seconds", "client.ttft_seconds", "client.e2e_seconds", "client.tpot_seconds", "client.output_tokens_per_second", "client.lengths.prompt", "client.lengths.output"},
	"Bench: `lengths`":          {"client.lengths"},
	"Bench: `itl_seconds`":      {"client.itl_seconds"},
	"Bench: `lateness_seconds`": {"client.lateness_seconds", "client.slot_wait_seconds"},
	"Bench: `server_split`":     {"client.server_split"},
	"Bench: `goodput`":          {"client.goodput"},
	"Bench: `ttft_split`":       {"ttft_split"},
	"Bench: `self_check`":       {"self_check"},
	"Bench: each comparison":    {"self_check.requests", "self_check.tokens", "self_check.concurrency"},
	"Bench: `window`":           {"window"},
	"Bench: `ttft_histogram`":   {"client.ttft_histogram"},
	"Bench: each sample":        {"samples[]"},
}

// opaque are the fields documented elsewhere or whose keys are data: the
// server's report (the inspector's own tables), the notes, the errors by
// kind.
var opaque = []string{"server", "notes", "client.errors"}

// fullReport is a bench report with every field set that can be.
func fullReport() *Report {
	n := func(v float64) report.Number { return report.Number(v) }
	d := Dist{Count: 3, Mean: 0.2, Min: 0.1, P50: 0.2, P90: 0.3, P95: 0.3, P99: 0.3, Max: 0.3}
	late := Lateness{Count: 3, Mean: 0.001, P50: 0.001, P99: 0.002, Max: 0.002, Late: 1}
	yes := true
	prompt, cached := 300, 100
	return &Report{
		Schema: Schema, Kind: "bench", Version: "v1.2.3", Target: "http://h:8000", API: "chat_completions", Model: "m",
		StartedAt: report.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		Load: Load{Mode: "open, capped", Concurrency: 8, Rate: 5, Arrival: "gamma", Burstiness: 0.5, Requests: 3, Duration: n(math.NaN()),
			Warmup: "2 requests", Drain: 30, Workload: "prompts of 100 tokens, answers of 10", Made: "lengths aligned with the server's /tokenize", Seed: 1},
		MeasuredFrom: 1, MeasuredTo: 4,
		Client: Client{Sent: 4, Completed: 3, Failed: 1, Errors: map[string]int{"timeout": 1}, Warmup: 2, Dropped: 0,
			WindowSeconds: 3, RequestRate: 1, OutputRate: 10, PromptRate: 100, TokenSource: "usage", OutputTokens: 30,
			PromptTokens: &prompt, CachedTokens: &cached,
			Lengths: Lengths{PromptAsked: 100, OutputAsked: 10, Prompt: d, Output: d},
			TTFB:    d, TTFT: d, E2E: d, TPOT: d, RequestRates: d,
			ITL:      ITL{Count: 27, Mean: 0.01, P50: 0.01, P90: 0.02, P99: 0.03, Max: 0.04, RelativeError: 0.001},
			Lateness: late, SlotWait: &late, CPUSeconds: 0.5, CPUShare: 0.1,
			Split:   &Split{Source: "ollama", Requests: 3, Load: 0, Prefill: 0.05, Decode: 0.1, Beyond: 0.01},
			Goodput: &Goodput{SLO: "ttft=500ms", Good: 2, Of: 4, Denominator: Denominator, Share: 0.5, Rate: 0.7},
			Stopped: 1, Cut: 0,
			TTFTHistogram: &Histogram{Scale: "linear", Edges: report.List[report.Number]{0.1, 0.2, 0.3, 0.4}, Counts: report.List[int]{1, 1, 1}}},
		TTFTSplit: &TTFTSplit{Requests: 3, Client: 0.2, Queue: 0.05, Prefill: 0.1, Outside: 0.05},
		SelfCheck: SelfCheck{Comparable: false, Why: "why",
			Requests: Compare{Client: 5, Server: 5, Agree: &yes}, Tokens: Compare{Client: 50, Server: 50, Agree: &yes},
			Concurrency: Compare{Client: 2, Server: 2, Agree: &yes}},
		Verdict: "bench_decode_bound", ClientBound: true, Metrics: "http://h:8000/metrics",
		Window:    Window{Seconds: 3, Scrapes: 4, FailedScrapes: 1, IntervalSeconds: 1, Settled: "limit", Why: "why"},
		Server:    &report.Report{Schema: 2},
		Notes:     report.List[report.Note]{{ID: "bench_decode_bound", Severity: report.Info, Text: "t"}},
		SentUntil: 3.5,
		Samples:   report.List[Sample]{{Seconds: 1, Running: 2, Waiting: 0, KVUsage: 0.1, InFlight: 2}},
	}
}

// Every field the bench's JSON writes is in docs/json.md with its type, and
// every field documented there is written.
func TestJSONDocumented(t *testing.T) {
	docs := jsondoc.Fields(t, jsondoc.Tables{Page: "../../docs/json.md", Bases: docTables, Under: []string{"Bench"}})
	if len(docs) < 80 {
		t.Fatalf("docs/json.md: %d bench fields documented: the section moved", len(docs))
	}
	var b bytes.Buffer
	if err := JSON(&b, fullReport()); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	jsondoc.Check(t, docs, v, opaque)
}
