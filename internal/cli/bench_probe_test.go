package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/demo"
)

// A probe's bad flags are one error line and a hint, before anything is
// sent; so are --probe-file's.
func TestProbeRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prefillOnly := write("prefill.json", `{"schema":1,"kind":"probe","model":"m","prefill":{"points":[{"length":100,"client_tokens_per_second":{"median":900,"min":900,"max":900,"n":1},"ttft_seconds":{"median":0.1,"min":0.1,"max":0.1,"n":1}}]}}`)
	bench := write("bench.json", `{"schema":1,"kind":"bench"}`)
	tests := []struct {
		name string
		api  bool // against a server whose one model has a context of 600
		args []string
		want string
	}{
		{"kind", false, []string{"bench", "h:1", "--probe", "fast"}, `--probe "fast" is not a probe`},
		{"with a load's flag", false, []string{"bench", "h:1", "--probe", "prefill", "-c", "4"}, "--concurrency does not go with --probe"},
		{"with a rate", false, []string{"bench", "h:1", "--probe", "decode", "--rate", "5"}, "--rate does not go with --probe"},
		{"lengths alone", false, []string{"bench", "h:1", "--probe-lengths", "128"}, "--probe-lengths is the probe's"},
		{"lengths for decode", false, []string{"bench", "h:1", "--probe", "decode", "--probe-lengths", "128"}, "--probe-lengths are the prefill probe's"},
		{"batches for prefill", false, []string{"bench", "h:1", "--probe", "prefill", "--probe-batches", "4"}, "--probe-batches are the decode probe's"},
		{"a length of 0", false, []string{"bench", "h:1", "--probe", "prefill", "--probe-lengths", "0,128"}, `--probe-lengths: "0"`},
		{"a range backwards", false, []string{"bench", "h:1", "--probe", "decode", "--probe-batches", "8..1"}, `"8..1" is not a range`},
		{"repeat", false, []string{"bench", "h:1", "--probe", "decode", "--probe-repeat", "0"}, "--probe-repeat 0 is out of range"},
		{"output for prefill", false, []string{"bench", "h:1", "--probe", "prefill", "--output-tokens", "8"}, "are the decode probe's lengths"},
		{"one-token answers", false, []string{"bench", "h:1", "--probe", "decode", "--output-tokens", "1"}, "of two tokens or more"},
		{"a range of prompts", false, []string{"bench", "h:1", "--probe", "decode", "--prompt-tokens", "10..20"}, "a probe's prompts have one length"},
		{"past the context", true, []string{"--probe", "prefill", "--probe-lengths", "128,1000"}, "leaves no room for an answer in the model's context of 600"},
		{"decode past the context", true, []string{"--probe", "decode", "--output-tokens", "600"}, "more than the model's context of 600"},
		{"probe file missing", false, []string{"h:1", "--probe-file", filepath.Join(dir, "none.json")}, "cannot read --probe-file"},
		{"not a probe", false, []string{"h:1", "--probe-file", bench}, `its "kind" is not "probe"`},
		{"one phase only", false, []string{"h:1", "--probe-file", prefillOnly}, "no decode speeds: the trade needs both phases'"},
		{"the same phase twice", false, []string{"h:1", "--probe-file", prefillOnly, "--probe-file", prefillOnly}, "two probes give prefill speeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			var api *fakeAPI
			if tt.api {
				api = &fakeAPI{models: oneModel}
				srv := httptest.NewServer(api)
				defer srv.Close()
				args = append([]string{"bench", srv.URL}, args...)
			}
			_, errOut, code := runCLI(t, "", args...)
			if code != ExitError || !strings.Contains(errOut, "inferscope: error: ") || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "inferscope: hint: ") {
				t.Errorf("exit %d, stderr %q; want an error with %q and a hint", code, errOut, tt.want)
			}
			if api != nil && api.completion.Load() > 0 {
				t.Errorf("%d completions asked for before the refusal", api.completion.Load())
			}
		})
	}
}

// A probe through the command line against the simulator's API, written
// as JSON, then read back by --probe-file: the one-shot report and
// --since weigh the phase trade with it, and say so.
func TestProbeCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 10, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	records := filepath.Join(dir, "probe.jsonl")
	out, errOut, code := runCLI(t, "", "bench", srv.APIURL(), "--metrics-url", srv.URL(), "--probe", "prefill,decode",
		"--probe-lengths", "300,900", "--probe-batches", "1..2", "--probe-repeat", "1", "--output-tokens", "12", "-o", "json", "--records", records)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var res struct {
		Kind    string `json:"kind"`
		Prefill struct {
			Points []struct {
				Length   int `json:"length"`
				Requests int `json:"requests"`
			} `json:"points"`
		} `json:"prefill"`
		Decode struct {
			OutputTokens int `json:"output_tokens"`
			Points       []struct {
				Batch    int `json:"batch"`
				Requests int `json:"requests"`
			} `json:"points"`
		} `json:"decode"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Kind != "probe" || len(res.Prefill.Points) != 2 || res.Prefill.Points[1].Length != 900 || res.Prefill.Points[1].Requests != 1 ||
		res.Decode.OutputTokens != 12 || len(res.Decode.Points) != 2 || res.Decode.Points[1].Requests != 2 {
		t.Fatalf("probe %+v", res)
	}
	// Every request of the probe, the cold ones too: (1 + 1) × 2 prefill,
	// (1 + 1) × (1 + 2) decode.
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(b)), "\n") + 1; n != 4+6 {
		t.Errorf("%d records", n)
	}
	file := filepath.Join(dir, "probe.json")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "before.prom")
	if _, errOut, code := runCLI(t, "", srv.URL(), "--save", saved, "-o", "json"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{srv.URL()}, {"--since", saved, srv.URL()}} {
		out, errOut, code := runCLI(t, "", append(args, "--probe-file", file, "-o", "json")...)
		if code != ExitOK || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		var r struct {
			Figures struct {
				TradeBasis string `json:"trade_basis"`
				ProbeTrade *struct {
					Source string `json:"source"`
				} `json:"probe_trade"`
			} `json:"figures"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Figures.TradeBasis != "probe" || r.Figures.ProbeTrade == nil || !strings.HasPrefix(r.Figures.ProbeTrade.Source, "the probe of ") {
			t.Errorf("%v: %+v", args, r.Figures)
		}
		text, _, _ := runCLI(t, "", append(args, "--probe-file", file, "--width", "120")...)
		if !strings.Contains(text, "engine time, by the probe") || !strings.Contains(text, "by the probe: decode is") {
			t.Errorf("%v: the text does not say the trade is the probe's:\n%s", args, text)
		}
	}
}
