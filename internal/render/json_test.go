package render

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/report"
)

func renderJSON(t testing.TB, r *report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	return m
}

// at walks decoded JSON by keys and array indexes.
func at(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", path, k)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: no key %q", path, k)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no index %d", path, k)
			}
			v = a[k]
		}
	}
	return v
}

func TestJSONGolden(t *testing.T) {
	golden.Check(t, "full.json.golden", renderJSON(t, fullReport()))
}

func TestJSONShape(t *testing.T) {
	b := renderJSON(t, fullReport())
	if !bytes.HasPrefix(b, []byte("{\n  \"schema\": 1,\n  \"source\": ")) || !bytes.HasSuffix(b, []byte("\n}\n")) {
		t.Errorf("not one object indented by two spaces, schema first:\n%.80s", b)
	}
	m := decode(t, b)
	tests := []struct {
		path []any
		want any
	}{
		{[]any{"schema"}, 1.0},
		{[]any{"dialect"}, "tabbyapi"},
		{[]any{"scraped_at"}, "2025-06-01T12:00:05.25Z"},
		{[]any{"scrape_seconds"}, 0.012},
		{[]any{"header", 1}, "server restarted 3.0 h ago"},
		{[]any{"scalars", "kv_cache_usage_ratio"}, 0.66},
		{[]any{"scalars", "predicted_tokens_seconds"}, nil}, // NaN ("-nan") is null, not 0
		{[]any{"histograms", "request_prompt_tokens", "p99"}, 241000.0},
		{[]any{"histograms", "request_prompt_tokens", "capped", "p99"}, 198000.0},
		{[]any{"histograms", "request_prompt_tokens", "peak"}, 206000.0},
		{[]any{"histograms", "request_prompt_tokens", "buckets", 4, "le"}, "+Inf"},
		{[]any{"histograms", "request_prompt_tokens", "buckets", 4, "count"}, 345.0},
		{[]any{"histograms", "time_to_first_token_seconds", "mean"}, nil},
		{[]any{"histograms", "time_to_first_token_seconds", "p50"}, nil},
		{[]any{"histograms", "time_to_first_token_seconds", "capped"}, nil},
		{[]any{"histograms", "time_to_first_token_seconds", "peak"}, nil},
		{[]any{"figures", "prefill_share"}, 0.133},
		{[]any{"figures", "mean_in_flight"}, 0.699},
		{[]any{"source_kind"}, "proxy"},
		{[]any{"upstream"}, "llamacpp"},
		{[]any{"figures", "dominant_phase"}, "decode"},
		{[]any{"figures", "break_even", 1, "floor"}, 0.23},
		{[]any{"figures", "spec_decode_acceptance"}, nil}, // nil pointer
		{[]any{"figures", "kv_offload_payback"}, nil},     // +Inf
		{[]any{"extra", "num_preemptions"}, 3.0},
		{[]any{"sections", 0, "id"}, "live"},
		{[]any{"sections", 0, "rows", 1, "label"}, "KV cache"},
		{[]any{"sections", 0, "rows", 1, "value"}, "66.0%"},
		{[]any{"sections", 0, "rows", 1, "note"}, "43.2K / 65.5K tokens"},
		{[]any{"sections", 0, "rows", 1, "severity"}, "good"},
		{[]any{"sections", 0, "rows", 0, "severity"}, ""},
		{[]any{"sections", 10, "table", "rows", 1, "cells", 1}, "<0.01"},
		{[]any{"notes", 0, "id"}, "kv_offload_thrashing"},
		{[]any{"notes", 0, "severity"}, "bad"},
		{[]any{"notes", 4, "severity"}, "info"},
		{[]any{"rates", "1m", "requests"}, 0.03},
		{[]any{"rates", "1m", "prompt_cached"}, nil}, // nil pointer
		{[]any{"rates", "now", "requests"}, nil},     // NaN
	}
	for _, tt := range tests {
		if got := at(t, m, tt.path...); got != tt.want {
			t.Errorf("%v = %#v, want %#v", tt.path, got, tt.want)
		}
	}
	if bytes.Contains(b, []byte(`\u003c`)) {
		t.Error("HTML escaping in output: <0.01 should read as it is")
	}
}

func TestJSONEmptyReport(t *testing.T) {
	// Missing lists are [] and missing maps {}, never null; an unknown
	// scrape time is null rather than year 1.
	b := renderJSON(t, &report.Report{Schema: 1, ScrapeSeconds: report.Number(math.NaN()),
		Sections:   []report.Section{{ID: "s"}},
		Histograms: map[string]report.HistogramSummary{"h": {Mean: report.Number(math.NaN()), Capped: &report.Quantiles{P50: report.Number(math.Inf(-1))}}}})
	m := decode(t, b)
	if _, ok := m["rates"]; ok {
		t.Error("rates present without Report.Rates")
	}
	for _, k := range []string{"header", "sections", "notes"} {
		if a, ok := m[k].([]any); !ok || (k != "sections" && len(a) != 0) {
			t.Errorf("%s = %#v, want an array", k, m[k])
		}
	}
	for _, k := range []string{"scalars", "histograms", "extra"} {
		if _, ok := m[k].(map[string]any); !ok {
			t.Errorf("%s = %#v, want an object", k, m[k])
		}
	}
	for _, p := range [][]any{
		{"sections", 0, "rows"},
		{"figures", "break_even"},
		{"histograms", "h", "buckets"},
	} {
		if a, ok := at(t, m, p...).([]any); !ok || len(a) != 0 {
			t.Errorf("%v = %#v, want []", p, at(t, m, p...))
		}
	}
	for _, p := range [][]any{
		{"scraped_at"}, {"scrape_seconds"}, {"figures", "utilization"},
		{"histograms", "h", "mean"}, {"histograms", "h", "capped", "p50"},
	} {
		if v := at(t, m, p...); v != nil {
			t.Errorf("%v = %#v, want null", p, v)
		}
	}
}

func TestJSONNonFiniteAnywhere(t *testing.T) {
	// encoding/json fails on NaN and ±Inf; every float field of the
	// report must come out null instead.
	for _, v := range []report.Number{report.Number(math.NaN()), report.Number(math.Inf(1)), report.Number(math.Inf(-1))} {
		r := &report.Report{
			ScrapeSeconds: v,
			Scalars:       map[string]report.Number{"a": v},
			Extra:         map[string]report.Number{"b": v},
			Histograms: map[string]report.HistogramSummary{"h": {
				Count: v, Sum: v, Mean: v, P50: v, P90: v, P99: v,
				Capped: &report.Quantiles{P50: v, P90: v, P99: v}, Peak: &v,
				Stated:  map[string]report.Stated{"p50": {Value: v, Kind: "exact", Lo: v, Hi: v}},
				Buckets: []report.Bucket{{LE: "+Inf", Count: v}},
			}},
			Figures: report.Figures{
				PrefixCacheHitRatio: &v, RequestSeconds: &v, MeanInFlight: &v, BusyAtMost: &v, EngineBusySeconds: &v,
				PrefillShare: &v, DecodeShare: &v, Utilization: &v, ExchangeRate: &v, BreakEven: []report.BreakEven{{Factor: v, Floor: v}},
				SpecDecodeAcceptance: &v, SpecDecodeTokensPerStep: &v, KVOffloadHitShare: &v,
				KVOffloadPayback: &v, RecurrentCappedShare: &v,
				ProbeTrade: &report.ProbeTrade{PromptTokens: v, PromptLength: v, PrefillTokensPerSecond: v, GeneratedTokens: v,
					ServerPerRequest: v, DecodeBatch: v, DecodeTokensPerSecond: v, PrefillSeconds: v, DecodeSeconds: v, PrefillShare: v, DecodeShare: v},
			},
			Sections: []report.Section{{Rows: []report.Row{{Bar: &v}}}},
		}
		b := renderJSON(t, r)
		m := decode(t, b)
		delete(m, "schema") // the one integer field
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case float64:
				t.Errorf("%v: %s = %v, want null", r.ScrapeSeconds, path, v)
			case map[string]any:
				for k, e := range v {
					walk(path+"."+k, e)
				}
			case []any:
				for _, e := range v {
					walk(path+"[]", e)
				}
			}
		}
		walk("", m)
		// By hand: scraped_at, scrape_seconds, scalars.a, extra.b; the
		// histogram's count, sum, mean, p50, p90, p99, capped ×3, stated
		// value, lo and hi, peak, one bucket count (14); figures: 16
		// numbers (break_even has two), dominant_phase and trade_basis
		// (18), probe_trade's 11 numbers; the row's bar.
		if n := bytes.Count(b, []byte("null")); n != 4+14+18+11+1 {
			t.Errorf("%v: %d nulls, want 48:\n%s", v, n, b)
		}
	}
}

func TestJSONControlCharacters(t *testing.T) {
	// Hostile text stays lossless in JSON (a program gets the server's
	// exact string back) but no byte of it can drive a terminal.
	r := hostileReport()
	b := renderJSON(t, r)
	for i, c := range string(b) {
		if (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) {
			t.Fatalf("control %U at byte %d of JSON output", c, i)
		}
	}
	var back struct {
		Source   string
		Sections []struct{ Rows []struct{ Label string } }
		Scalars  map[string]float64
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// Only invalid UTF-8 cannot come back: encoding/json writes U+FFFD.
	want := strings.ToValidUTF8(r.Source, "\uFFFD")
	if back.Source != want {
		t.Errorf("source came back as %q, want %q", back.Source, want)
	}
	if got := back.Sections[0].Rows[0].Label; got != strings.ToValidUTF8(r.Sections[0].Rows[0].Label, "\uFFFD") {
		t.Errorf("label came back as %q", got)
	}
}

func TestEscapeControls(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"a"`, `"a"`},
		{"\"a\u009bb\"", `"a\u009bb"`},
		{"\"\x7f\u0080\u009f\u00a0\"", "\"\\u007f\\u0080\\u009f\u00a0\""},
		// Bidi controls, each escaped; their neighbours U+202F, U+2065,
		// U+206A and U+200D are kept as they are.
		{"\"a\u202ab\u202ec\u2066d\u2069e\u200ef\u200fg\u061ch\"", `"a\u202ab\u202ec\u2066d\u2069e\u200ef\u200fg\u061ch"`},
		{"\"\u202f\u2065\u206a\u200d\"", "\"\u202f\u2065\u206a\u200d\""},
	}
	for _, tt := range tests {
		if got := string(escapeControls([]byte(tt.in))); got != tt.want {
			t.Errorf("escapeControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Bidi controls from a server are escaped wherever they stand (the source,
// a label, a header line, a note) and decode back to themselves.
func TestJSONEscapesBidi(t *testing.T) {
	const evil = "gpt\u202eevil\u2066x\u2069\u200f\u061c"
	r := &report.Report{Schema: 1, Source: evil, Header: []string{evil},
		Sections: []report.Section{{ID: "s", Title: evil, Rows: []report.Row{{Label: evil, Value: "1"}}}},
		Notes:    []report.Note{{ID: "n", Text: evil}}}
	var b bytes.Buffer
	if err := JSONWith(&b, r, JSONOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []rune{0x202e, 0x2066, 0x2069, 0x200f, 0x061c} {
		if strings.ContainsRune(b.String(), c) {
			t.Errorf("JSON holds U+%04X unescaped", c)
		}
	}
	if n := strings.Count(b.String(), `gpt\u202eevil\u2066x\u2069\u200f\u061c`); n != 5 {
		t.Errorf("%d escaped copies, want 5:\n%s", n, b.String())
	}
	var back struct {
		Source string
		Notes  []struct{ Text string }
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Source != evil || len(back.Notes) != 1 || back.Notes[0].Text != evil {
		t.Errorf("decoded %q %v (%v)", back.Source, back.Notes, err)
	}
}

func TestJSONWith(t *testing.T) {
	r := &report.Report{Schema: 1, Source: "s", Dialect: "tabbyapi", ScrapedAt: report.Time{Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		Rates: report.Rates{"1m": {"requests": ptr(0.5), "prompt_computed": nil}}}
	var b bytes.Buffer
	if err := JSONWith(&b, r, JSONOptions{Compact: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
		t.Errorf("compact output is not one line: %q", out)
	}
	if !strings.HasSuffix(out, `,"rates":{"1m":{"prompt_computed":null,"requests":0.5}}}`+"\n") {
		t.Errorf("rates not last with null for nil: %q", out)
	}
	m := decode(t, b.Bytes())
	if got := at(t, m, "scraped_at"); got != "2025-01-02T03:04:05Z" {
		t.Errorf("scraped_at = %v", got)
	}
	// An empty rates map is written ({}: every line of a watch stream has
	// one); only a nil one is left out.
	b.Reset()
	r.Rates = report.Rates{}
	if err := JSONWith(&b, r, JSONOptions{Compact: true}); err != nil || !strings.HasSuffix(b.String(), `,"rates":{}}`+"\n") {
		t.Errorf("empty rates: %q (%v)", b.String(), err)
	}
	b.Reset()
	r.Rates = nil
	if err := JSONWith(&b, r, JSONOptions{Compact: true}); err != nil || strings.Contains(b.String(), `"rates"`) {
		t.Errorf("nil rates written: %q (%v)", b.String(), err)
	}
	if err := JSON(&b, nil); err == nil {
		t.Error("nil report accepted")
	}
}

func TestReportMarshalJSONDirect(t *testing.T) {
	// json.Marshal on the report types is safe on its own, without
	// render: NaN in a scalar does not fail the encoding.
	r := report.Report{Scalars: map[string]report.Number{"x": report.Number(math.NaN())}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"scalars":{"x":null}`)) {
		t.Errorf("got %s", b)
	}
}

func TestJSONNumbersAsEncodingJSON(t *testing.T) {
	// Finite numbers are written exactly as encoding/json writes a
	// float64, exponent form included.
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 1e-7, -3e-9, 1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		var b bytes.Buffer
		if err := JSONWith(&b, &report.Report{Scalars: map[string]report.Number{"v": report.Number(v)}}, JSONOptions{Compact: true}); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		if !strings.Contains(b.String(), `"scalars":{"v":`+string(want)+`}`) {
			t.Errorf("%v: want %s in %s", v, want, b.String())
		}
	}
}
