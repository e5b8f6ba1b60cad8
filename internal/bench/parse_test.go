package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// --slo as written, and what is refused.
func TestParseSLO(t *testing.T) {
	tests := []struct {
		in   string
		want SLO
		err  string
	}{
		{"ttft=500ms,tpot=50ms,e2e=10s", SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond, E2E: 10 * time.Second}, ""},
		{" TTFT = 0.5 ", SLO{TTFT: 500 * time.Millisecond}, ""},
		{"e2e=1m30s", SLO{E2E: 90 * time.Second}, ""},
		{"ttft", SLO{}, "not name=duration"},
		{"ttft=fast", SLO{}, "ttft: "},
		{"ttft=0s", SLO{}, "must be positive"},
		{"ttft=-1s", SLO{}, "must be positive"},
		{"ttft=1s,ttft=2s", SLO{}, "given twice"},
		{"itl=1s", SLO{}, `unknown limit "itl"`},
		{"", SLO{}, "not name=duration"},
	}
	for _, tt := range tests {
		got, err := ParseSLO(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%q: %+v, %v; want %+v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: %v, want an error with %q", tt.in, err, tt.err)
		}
	}
	if s := (SLO{TTFT: 500 * time.Millisecond, E2E: 10 * time.Second}).String(); s != "ttft=500ms,e2e=10s" {
		t.Errorf("String %q", s)
	}
}

// A ParseSLO result written back reads the same.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft=500ms,tpot=50ms,e2e=10s", "ttft=1", "e2e=1h", "tpot=0.05", "x=y", ",", "ttft=1e300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO(s)
		if err != nil {
			return
		}
		back, err := ParseSLO(slo.String())
		if err != nil || back != slo {
			t.Errorf("%q → %q → %+v, %v", s, slo.String(), back, err)
		}
	})
}

// Model lists as the servers write them, by hand.
func TestParseModels(t *testing.T) {
	tests := []struct {
		name, body string
		want       []Model
	}{
		{"vLLM", `{"object":"list","data":[{"id":"tiny","max_model_len":1024}]}`, []Model{{"tiny", 1024}}},
		{"llama.cpp both ways", `{"models":[{"name":"m.gguf"}],"data":[{"id":"m.gguf","meta":{"n_ctx":1024}}]}`, []Model{{"m.gguf", 1024}}},
		{"Ollama", `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest"},{"model":"qwen"}]}`, []Model{{"llama3.2:latest", 0}, {"qwen", 0}}},
		{"context not a count", `{"data":[{"id":"a","max_model_len":-5},{"id":"b","max_model_len":"big"},{"id":"c","max_model_len":1.5}]}`,
			[]Model{{"a", 0}, {"b", 0}, {"c", 0}}},
		{"not a list", `<html>`, nil},
		{"an SSE answer", "data: {}\n\n", nil},
	}
	for _, tt := range tests {
		if got := parseModels([]byte(tt.body)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	m, err := ChooseModel("llama3.2", []Model{{"llama3.2:latest", 0}})
	if err != nil || m.ID != "llama3.2:latest" {
		t.Errorf("Ollama's :latest: %v %v", m, err)
	}
}

// A model list is outside input: anything reads as a list or as none,
// with no context that is not a count.
func FuzzParseModels(f *testing.F) {
	for _, s := range []string{`{"data":[{"id":"tiny","max_model_len":1024}]}`, `{"models":[{"name":"x"}]}`,
		`{"data":[{"id":"m","meta":{"n_ctx":1e99}}]}`, `{"data":null}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range parseModels(b) {
			if m.Context < 0 {
				t.Errorf("context %d from %q", m.Context, b)
			}
		}
	})
}

// Each record is one JSON object a line, or one CSV row, with unknowns
// empty.
func TestRecordWriter(t *testing.T) {
	r := request(1, 2, 3, 4)
	r.Index, r.Sent, r.Scheduled = 7, 1500*time.Microsecond, time.Millisecond
	failed := r
	failed.Index, failed.TTFT, failed.E2E, failed.OutputTokens, failed.Status = 8, -1, -1, -1, 503
	failed.Error, failed.ErrorDetail, failed.Finish, failed.TokenSource = "http", "busy \"now\"\n", "", ""
	for _, f := range []RecordFormat{JSONL, CSV} {
		var b strings.Builder
		w := NewRecordWriter(&b, f)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(failed); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if f == CSV {
			if len(lines) != 4 || lines[0] != strings.Join(recordFields, ",") ||
				!strings.HasPrefix(lines[1], "7,false,0.001000,0.001500,0.000000,0.001000,0.002000,0.003000,0.003000,4,100,4,0,usage,100,4,200,,,length,false") {
				t.Errorf("CSV:\n%s", b.String())
			}
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
			t.Fatal(err)
		}
		if got["ttft"] != nil || got["status"] != 503.0 || got["error_detail"] != "busy \"now\"\n" || got["resent"] != false || len(got) != len(recordFields) {
			t.Errorf("JSON: %s", lines[1])
		}
	}
}
