package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/iostreams"
)

// fakeAPI is an OpenAI-compatible server that answers as told: its model
// list, and how it answers a completion (streamed or not, with usage or
// not). It counts the completions it was asked for.
type fakeAPI struct {
	models     string // the /v1/models body
	whole      bool   // answer all at once
	noUsage    bool
	completion atomic.Int64
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.models)
	case "/v1/chat/completions":
		f.completion.Add(1)
		if f.whole {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\" there\"},\"finish_reason\":\"length\"}]}\n\n")
		if !f.noUsage {
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		http.NotFound(w, r)
	}
}

const oneModel = `{"data":[{"id":"m1","max_model_len":600}]}`

// Bad input is one error line and a hint, before any load is sent where
// it can be known before (a server that answers whole, or without usage,
// is known from the one request that asks).
func TestBenchRefuses(t *testing.T) {
	dataset := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(dataset, []byte("{\"prompt\": \"one\"}\n{\"prompt\": \"two\"}\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	}()
	tests := []struct {
		name    string
		api     *fakeAPI // nil: the arguments alone refuse it
		args    []string
		want    string
		probing bool // the refusal needs the one request that asks
	}{
		{"no target", nil, nil, "bench needs a TARGET", false},
		{"two targets", nil, []string{"a:1", "b:2"}, "too many targets", false},
		{"rate 0", nil, []string{"h:1", "--rate", "0"}, "--rate 0: a rate must be above 0", false},
		{"negative duration", nil, []string{"h:1", "--duration", "-5s"}, "--duration -5s: a run lasts a positive time", false},
		{"no requests", nil, []string{"h:1", "-n", "0"}, "--requests 0", false},
		{"requests and duration", nil, []string{"h:1", "-n", "5", "-d", "1m"}, "do not go together", false},
		{"concurrency 0", nil, []string{"h:1", "-c", "0"}, "--concurrency 0 is out of range", false},
		{"arrival without rate", nil, []string{"h:1", "--arrival", "constant"}, "space --rate's arrivals", false},
		{"burstiness 0", nil, []string{"h:1", "--rate", "5", "--burstiness", "0"}, "--burstiness 0 must be above 0", false},
		{"constant and burstiness", nil, []string{"h:1", "--rate", "5", "--burstiness", "2", "--arrival", "constant"}, "--burstiness shapes gamma arrivals", false},
		{"slo", nil, []string{"h:1", "--slo", "ttft=fast"}, "--slo: ttft", false},
		{"records", nil, []string{"h:1", "--records", "run.txt"}, "the extension says the format", false},
		{"warmup", nil, []string{"h:1", "--warmup", "soon"}, "is not a count, a duration or settle", false},
		{"warmup-max alone", nil, []string{"h:1", "--warmup-max", "1m"}, "--warmup-max bounds --warmup settle", false},
		{"prompt length", nil, []string{"h:1", "--prompt-tokens", "10..5"}, "--prompt-tokens", false},
		{"prefix too long", nil, []string{"h:1", "--prompt-tokens", "100", "--prefix-tokens", "100"}, "leaves no room", false},
		{"dataset line", nil, []string{"h:1", "--dataset", dataset}, dataset + ":3:", false},
		{"endpoint", nil, []string{"h:1", "--endpoint", "embeddings"}, "--endpoint \"embeddings\"", false},
		{"scheme", nil, []string{"ftp://h:1"}, "is not an http:// or https:// URL", false},
		{"unreachable", nil, []string{closed}, "cannot reach " + closed, false},
		{"model absent", &fakeAPI{models: `{"data":[{"id":"m1"},{"id":"m2"}]}`}, []string{"--model", "m3"}, `does not serve the model "m3"`, false},
		{"model unsaid", &fakeAPI{models: `{"data":[{"id":"m1"},{"id":"m2"}]}`}, nil, "say which with --model", false},
		{"context", &fakeAPI{models: oneModel}, []string{"--prompt-tokens", "512", "--output-tokens", "128"}, "more than the model's context of 600", false},
		{"not streamed", &fakeAPI{models: oneModel, whole: true}, []string{"--prompt-tokens", "16"}, "answered a streamed request all at once", true},
		{"no usage", &fakeAPI{models: oneModel, noUsage: true}, []string{"--prompt-tokens", "16"}, "did not say how many tokens it generated", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench"}, tt.args...)
			if tt.api != nil {
				srv := httptest.NewServer(tt.api)
				defer srv.Close()
				args = append([]string{"bench", srv.URL}, tt.args...)
			}
			_, errOut, code := runCLI(t, "", args...)
			if code != ExitError || !strings.Contains(errOut, "inferscope: error: ") || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "inferscope: hint: ") {
				t.Errorf("exit %d, stderr %q; want an error with %q and a hint", code, errOut, tt.want)
			}
			if strings.Count(errOut, "inferscope: error: ") != 1 {
				t.Errorf("more than one error line: %q", errOut)
			}
			if tt.api != nil {
				// Calibrating from usage asks with probes; the refusals
				// known from the model list ask nothing.
				if n := tt.api.completion.Load(); !tt.probing && n > 0 || tt.probing && n > 3 {
					t.Errorf("%d completions asked for", n)
				}
			}
		})
	}
}

// A run through the command line against the simulator's API: the report
// in JSON with the figures docs/json.md promises, the records file in the
// format its extension says, and nothing on stderr when stdout is a pipe.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 1, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, ext := range []string{"jsonl", "csv"} {
		records := filepath.Join(dir, "run."+ext)
		out, errOut, code := runCLI(t, "", "bench", srv.APIURL(), "--metrics-url", srv.URL(), "-c", "2", "-n", "6",
			"--prompt-tokens", "64", "--output-tokens", "8", "--interval", "200ms", "--slo", "ttft=2s", "-o", "json", "--records", records)
		if code != ExitOK || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var rep struct {
			Kind    string `json:"kind"`
			Verdict string `json:"verdict"`
			Client  struct {
				Completed int `json:"completed"`
				TTFT      struct {
					Count int `json:"count"`
				} `json:"ttft_seconds"`
				Goodput struct {
					Of          int    `json:"of"`
					Denominator string `json:"denominator"`
				} `json:"goodput"`
			} `json:"client"`
			SelfCheck struct {
				Comparable bool `json:"comparable"`
				Requests   struct {
					Agree *bool `json:"agree"`
				} `json:"requests"`
			} `json:"self_check"`
			Server *struct {
				Rates map[string]map[string]*float64 `json:"rates"`
			} `json:"server"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if rep.Kind != "bench" || rep.Client.Completed != 6 || rep.Client.TTFT.Count != 6 || rep.Client.Goodput.Of != 6 ||
			rep.Client.Goodput.Denominator == "" || rep.Server == nil || rep.Server.Rates["since"] == nil || rep.Verdict == "" {
			t.Errorf("report: %+v", rep)
		}
		if !rep.SelfCheck.Comparable || rep.SelfCheck.Requests.Agree == nil || !*rep.SelfCheck.Requests.Agree {
			t.Errorf("self-check: %+v", rep.SelfCheck)
		}
		b, err := os.ReadFile(records)
		if err != nil {
			t.Fatal(err)
		}
		if ext == "csv" {
			rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
			if err != nil || len(rows) != 7 || rows[0][0] != "index" {
				t.Errorf("CSV: %d rows, %v\n%s", len(rows), err, b)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 6 {
			t.Fatalf("JSONL: %d lines\n%s", len(lines), b)
		}
		for _, l := range lines {
			var r map[string]any
			if err := json.Unmarshal([]byte(l), &r); err != nil || r["status"] != 200.0 || r["output_tokens"] != 8.0 {
				t.Errorf("record %s: %v", l, err)
			}
		}
	}
}

// On a terminal the progress line is drawn on stderr and cleared before
// the report; Ctrl-C stops sending and reports what completed, partial.
func TestBenchProgressAndInterrupt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 1, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	io, out, errb := iostreams.Test("", true, 120)
	run1, stop := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		stop() // Ctrl-C
	}()
	code := run(run1, []string{"bench", srv.APIURL(), "--metrics-url", srv.URL(), "-c", "2", "--duration", "1m",
		"--prompt-tokens", "64", "--output-tokens", "64", "--interval", "200ms", "--drain", "10s", "--no-color"}, io)
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
	if !strings.Contains(errb.String(), "\rsent ") || !strings.Contains(errb.String(), "in flight") {
		t.Errorf("no progress line on stderr: %q", errb.String())
	}
	if !strings.Contains(out.String(), "interrupted: what completed is reported (partial)") || !strings.Contains(out.String(), "the run was interrupted") {
		t.Errorf("report:\n%s", out.String())
	}
}

// -o html writes the run's page to stdout, one self-contained file; to a
// terminal it is refused before any request is sent.
func TestBenchHTML(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 1, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", srv.APIURL(), "--metrics-url", srv.URL(), "-c", "2", "-n", "6", "--prompt-tokens", "64", "--output-tokens", "8",
		"--interval", "200ms", "--slo", "ttft=2s", "-o", "html"}
	out, errOut, code := runCLI(t, "", args...)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"<!DOCTYPE html>", `<figure class="chart" id="ttft">`, `<figure class="chart" id="queue">`,
		`<figure class="chart" id="kv">`, `data-path="client.completed" data-value="6"`, "Content-Security-Policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	for _, never := range []string{"<script", "http://cdn", "https://", "<link", "@import", "url(http"} {
		if strings.Contains(out, never) {
			t.Errorf("the page has %s: it must read offline, alone", never)
		}
	}
	io, stdout, stderr := iostreams.Test("", true, 120)
	served := srv.Totals().Requests
	if code := run(context.Background(), args, io); code != ExitError || stdout.Len() > 0 ||
		!strings.Contains(stderr.String(), "-o html writes a page of HTML, not for a terminal") || srv.Totals().Requests != served {
		t.Errorf("to a terminal: exit %d, %d requests served, stderr %q", code, srv.Totals().Requests, stderr.String())
	}
	if _, errOut, code := runCLI(t, "", "bench", srv.APIURL(), "-o", "pdf"); code != ExitError || !strings.Contains(errOut, "-o html") {
		t.Errorf("-o pdf: exit %d, %q", code, errOut)
	}
	// Only the bench writes a page.
	if _, errOut, code := runCLI(t, "", srv.URL(), "-o", "html"); code != ExitError || !strings.Contains(errOut, "use -o text or -o json") {
		t.Errorf("the inspector's -o html: exit %d, %q", code, errOut)
	}
}

// -o html for a sweep and a probe: each its page, with its charts.
func TestBenchHTMLSweepAndProbe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 10, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		charts []string
	}{
		{"sweep", []string{"--interval", "200ms", "--sweep", "rate=10,20", "-d", "500ms", "--slo", "ttft=1s", "--prompt-tokens", "64", "--output-tokens", "8"},
			[]string{"ttft", "tpot", "throughput", "ttft_steps", "waiting", "kvpeak"}},
		{"probe", []string{"--probe", "prefill,decode", "--probe-lengths", "256,512", "--probe-batches", "1,2", "--probe-repeat", "1",
			"--prompt-tokens", "64", "--output-tokens", "8"},
			[]string{"prefill", "prefill_ttft", "decode", "decode_total"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench", srv.APIURL(), "--metrics-url", srv.URL(), "-o", "html"}, tt.args...)
			out, errOut, code := runCLI(t, "", args...)
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `<body data-kind="`+tt.name+`">`) {
				t.Errorf("not a %s's page:\n%.300s", tt.name, out)
			}
			for _, id := range tt.charts {
				if !strings.Contains(out, `<figure class="chart" id="`+id+`"><h3 id="`+id+`-title">`) || !strings.Contains(out, `data-chart="`+id+`"`) {
					t.Errorf("no chart %s drawn", id)
				}
			}
		})
	}
}
