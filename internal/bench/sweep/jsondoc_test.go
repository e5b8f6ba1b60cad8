package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/jsondoc"
	"github.com/inferscope/inferscope/internal/report"
)

// The field tables of docs/json.md's sweep and comparison sections: each
// heading to the JSON objects its table describes ("." between keys, "[]"
// for each element of an array).
var (
	sweepTables = map[string][]string{
		"Sweep: top level":        {""},
		"Sweep: `slo`":            {"slo"},
		"Sweep: each step":        {"steps[]"},
		"Sweep: each drain":       {"steps[].drains[]"},
		"Sweep: `summary`":        {"steps[].summary"},
		"Sweep: each spread":      spreadPaths("steps[].summary."),
		"Sweep: `ttft_histogram`": {"steps[].ttft_histogram"},
		"Sweep: a step's `slo`":   {"steps[].slo"},
		"Sweep: `knee`":           {"knee"},
	}
	compareTables = map[string][]string{
		"Compare: top level":   {""},
		"Compare: each side":   {"a", "b"},
		"Compare: each step":   {"steps[]"},
		"Compare: each figure": {"steps[].figures[]"},
		"Sweep: each spread":   {"steps[].figures[].a", "steps[].figures[].b"},
		"Compare: `knee`":      {"knee"},
		"Sweep: `knee`":        {"knee.a", "knee.b"},
	}
)

func spreadPaths(prefix string) []string {
	var out []string
	for _, f := range figures {
		out = append(out, prefix+strings.TrimPrefix(f.name, ""))
	}
	return out
}

// opaqueSweep are fields documented elsewhere or whose keys are data: the
// runs (the bench's report), the notes, the misses by limit.
var opaqueSweep = []string{"steps[].runs", "notes", "steps[].slo.missed"}

// checkDocumented holds v's JSON to the tables, and the tables to v.
func checkDocumented(t *testing.T, v any, docs map[string][]string, opaque []string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	jsondoc.Check(t, docs, top, opaque)
}

// fullResult is a sweep with every field set that can be.
func fullResult() *Result {
	sp := spread(1, 2)
	yes := true
	sum := Summary{Runs: 2, Sent: 4, Completed: 3, Failed: 1, RequestRate: sp, OutputRate: sp, GoodputRate: sp, GoodShare: sp,
		TTFTP50: sp, TTFTP99: sp, TPOTP50: sp, TPOTP99: sp, E2EP50: sp, E2EP99: sp, ITLP99: sp, Waiting: sp, KVPeak: sp, Queue: sp, Prefill: sp,
		Verdict: "mixed", Verdicts: []string{"bench_decode_bound", "bench_saturated"}, Notes: []string{"bench_saturated"}}
	st := Step{Index: 1, Phase: PhaseRefine, Mode: "open", Concurrency: 0, Rate: 5,
		Drains: []Drain{{Seconds: 0.5, Scrapes: 2, Idle: &yes, Running: 0, Waiting: 0}},
		Runs:   []*bench.Report{{Schema: bench.Schema, Kind: "bench"}}, Summary: sum,
		TTFT: Histogram{Bounds: []report.Number{0.001}, Counts: []int{1, 2}},
		SLO:  &StepSLO{Good: 3, Of: 4, Share: 0.75, Meets: false, Missed: map[string]int{"ttft": 1}}}
	return &Result{Schema: Schema, Kind: Kind, Version: "v1", Target: "http://h:8000", API: "chat_completions", Model: "m",
		StartedAt: report.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, Profile: ProfileKnee, Axis: AxisRate, Repeat: 2,
		SLO: &Target{Limits: "ttft=500ms", Share: 0.95}, Steps: []Step{st},
		Knee: &Knee{Axis: AxisRate, Load: 4, Step: 2, Broke: 5, BrokeStep: 1, Width: 1, Reason: ReasonQueue, Phase: "decode",
			Verdict: "bench_saturated", Why: "why"},
		Notes: report.List[report.Note]{{ID: "sweep_knee", Severity: report.Info, Text: "t"}}}
}

// Every field a sweep's JSON writes is in docs/json.md with its type, and
// every field documented there is written.
func TestSweepJSONDocumented(t *testing.T) {
	docs := jsondoc.Fields(t, jsondoc.Tables{Page: "../../../docs/json.md", Bases: sweepTables, Under: []string{"Sweep"}})
	if len(docs) < 50 {
		t.Fatalf("docs/json.md: %d sweep fields documented: the section moved", len(docs))
	}
	var b bytes.Buffer
	if err := JSON(&b, fullResult()); err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b.Bytes(), &v)
	checkDocumented(t, v, docs, opaqueSweep)
}

// The same for a comparison.
func TestCompareJSONDocumented(t *testing.T) {
	docs := jsondoc.Fields(t, jsondoc.Tables{Page: "../../../docs/json.md", Bases: compareTables, Under: []string{"Compare", "Sweep"}, Mine: []string{"Compare"}})
	a, b := fullResult(), fullResult()
	b.Steps[0].Summary.Notes = []string{"bench_errors"}
	c := Compare(a, b, "a.json", "b.json")
	c.OnlyA, c.OnlyB = []int{2}, []int{3}
	checkDocumented(t, c, docs, nil)
}
