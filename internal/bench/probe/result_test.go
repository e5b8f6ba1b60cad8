package probe

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/jsondoc"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// fullResult is a probe with every field set that can be.
func fullResult() *Result {
	sp := func(med, lo, hi float64, n int) Spread {
		return Spread{Median: report.Number(med), Min: report.Number(lo), Max: report.Number(hi), N: n}
	}
	srv := sp(7750, 7700, 7800, 2)
	dsrv := sp(36, 35.9, 36.1, 2)
	return &Result{Schema: Schema, Kind: "probe", Version: "v1.2.3", Target: "http://h:8000", API: "chat_completions", Model: "m",
		StartedAt: report.Time{Time: time.Date(2026, 12, 6, 8, 7, 0, 0, time.UTC)}, Metrics: "http://h:8000/metrics", Dialect: "vllm",
		Made: "lengths aligned with the server's /tokenize", Seed: 42, Repeat: 2,
		Prefill: &PrefillProbe{Points: report.List[PrefillPoint]{
			{Length: 3000, PromptTokens: 3002, CachedTokens: 0, Requests: 2, Cold: &PrefillSample{TTFT: 0.41, Client: 7320, Server: 7400},
				TTFT: sp(0.39, 0.388, 0.392, 2), Client: sp(7700, 7650, 7750, 2), Server: &srv, ServerFrom: FromMetrics},
			{Length: 6000, PromptTokens: 6001, CachedTokens: 13, Requests: 1, Failed: 1,
				TTFT: sp(0.77, 0.77, 0.77, 1), Client: sp(7790, 7790, 7790, 1), ServerFrom: ""},
		}},
		Decode: &DecodeProbe{PromptTokens: 64, OutputTokens: 128, Points: report.List[DecodePoint]{
			{Batch: 1, Rounds: 2, Requests: 2, Cold: &DecodeSample{PerRequest: 51, Total: 51, Server: report.Number(math.NaN())},
				PerRequest: sp(52, 51.9, 52.1, 2), Total: sp(52, 51.9, 52.1, 2), Overlap: 1, Server: &dsrv, ServerFrom: FromTimings},
			{Batch: 8, Rounds: 1, Requests: 15, Failed: 1, EarlyStops: 2,
				PerRequest: sp(36, 35, 37, 15), Total: sp(288, 288, 288, 1), Overlap: 0.93},
		}},
		Notes: report.List[report.Note]{{ID: "probe_cold_slow", Severity: report.Info, Text: "the cold request was slower"}},
	}
}

// The probe drawn as text at two widths and as JSON; go test
// ./internal/bench/probe -update rewrites the goldens (read the diff).
func TestRenderGolden(t *testing.T) {
	r := fullResult()
	for _, tt := range []struct {
		name  string
		width int
	}{{"probe-160.txt", 160}, {"probe-100.txt", 100}} {
		var b bytes.Buffer
		if err := Text(&b, r, render.Options{Width: tt.width}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tt.name, b.String())
	}
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "probe.json", b.String())
}

// What JSON writes, Read reads back: the same result, unknown figures
// unknown (null read as NaN, never 0).
func TestReadBack(t *testing.T) {
	want := fullResult()
	var b bytes.Buffer
	if err := JSON(&b, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(got.Decode.Points[0].Cold.Server)) {
		t.Errorf("null read as %v", got.Decode.Points[0].Cold.Server)
	}
	// NaN is not NaN: compare their JSON.
	var again bytes.Buffer
	if err := JSON(&again, got); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	JSON(&w, want)
	if again.String() != w.String() {
		t.Errorf("read back differs:\n%s\nwant\n%s", again.String(), w.String())
	}
	if !reflect.DeepEqual(got.StartedAt.Time.UTC(), want.StartedAt.Time) {
		t.Errorf("started %v, want %v", got.StartedAt, want.StartedAt)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"schema": 1, "kind": "bench"}`, `not a probe's JSON: its "kind" is not "probe"`},
		{`{"schema": 9, "kind": "probe"}`, "a probe of schema 9"},
		{`[1, 2]`, "not a probe's JSON"},
		{`{"schema": 1, "kind": "probe", "repeat": "x"}`, "not a probe's JSON"},
	} {
		if _, err := Read(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Read(%s): %v, want %q", bad.in, err, bad.want)
		}
	}
}

// The speeds the analysis weighs: the server's where every point has
// them, else the client's; lengths as the server counted them.
func TestSpeeds(t *testing.T) {
	s := fullResult().Speeds()
	if s.PrefillFrom != "timed by the client's TTFT" || len(s.Prefill) != 2 || s.Prefill[0].Length != 3002 || s.Prefill[0].TokensPerSecond != 7700 {
		t.Errorf("prefill %+v from %s: one point has no server figure, so the client's", s.Prefill, s.PrefillFrom)
	}
	if s.DecodeFrom != "timed by the client" || s.Decode[1].PerRequest != 36 {
		t.Errorf("decode %+v from %s", s.Decode, s.DecodeFrom)
	}
	r := fullResult()
	r.Prefill.Points = r.Prefill.Points[:1]
	r.Decode.Points = r.Decode.Points[:1]
	if s := r.Speeds(); s.PrefillFrom != "timed by the server" || s.Prefill[0].TokensPerSecond != 7750 || s.Decode[0].PerRequest != 36 {
		t.Errorf("%+v", s)
	}
	if s.Source != "the probe of 2026-12-06 08:07 UTC" || s.Model != "m" {
		t.Errorf("source %q, model %q", s.Source, s.Model)
	}
}

// docTables maps each "Probe: …" heading of docs/json.md to the JSON
// objects its field table describes ("." between keys, "[]" an array's
// elements).
var docTables = map[string][]string{
	"Probe: top level":                {""},
	"Probe: `prefill`":                {"prefill"},
	"Probe: each prefill point":       {"prefill.points[]"},
	"Probe: a prefill point's `cold`": {"prefill.points[].cold"},
	"Probe: `decode`":                 {"decode"},
	"Probe: each decode point":        {"decode.points[]"},
	"Probe: a decode point's `cold`":  {"decode.points[].cold"},
	"Probe: each spread": {"prefill.points[].ttft_seconds", "prefill.points[].client_tokens_per_second", "prefill.points[].server_tokens_per_second",
		"decode.points[].client_tokens_per_second", "decode.points[].client_total_tokens_per_second", "decode.points[].server_tokens_per_second"},
}

// Every field the probe's JSON writes is in docs/json.md with its type,
// and every field documented there is written.
func TestJSONDocumented(t *testing.T) {
	docs := jsondoc.Fields(t, jsondoc.Tables{Page: "../../../docs/json.md", Bases: docTables, Under: []string{"Probe"}})
	if len(docs) < 40 {
		t.Fatalf("docs/json.md: %d probe fields documented: the section moved", len(docs))
	}
	var b bytes.Buffer
	if err := JSON(&b, fullResult()); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	// The notes are the report's, documented with them.
	jsondoc.Check(t, docs, v, []string{"notes"})
}

// FuzzRead: a probe file is the user's; whatever it holds, Read returns a
// result or an error, and never panics; what it accepts it writes back.
func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	JSON(&b, fullResult())
	f.Add(b.String())
	f.Add(`{"schema": 1, "kind": "probe", "prefill": {"points": [{"length": 1, "client_tokens_per_second": {"median": null}}]}}`)
	f.Add(`{"schema": 1, "kind": "probe", "decode": null, "started_at": "not a time"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := JSON(&out, r); err != nil {
			t.Fatalf("read, but not written back: %v", err)
		}
		r.Speeds()
	})
}
