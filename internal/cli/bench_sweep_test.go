package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/demo"
)

// A sweep's flags, refused before anything is sent: one error line and a
// hint.
func TestBenchSweepRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"profile", []string{"--sweep", "fast"}, `--sweep "fast" is not a profile or a list`},
		{"kind", []string{"--sweep", "batch=1,2"}, `"batch" is not concurrency or rate`},
		{"empty list", []string{"--sweep", "rate="}, "an empty value"},
		{"fractional concurrency", []string{"--sweep", "concurrency=1,2.5"}, `"2.5" is not a concurrency`},
		{"zero rate", []string{"--sweep", "rate=1,0"}, `"0" is not a rate above 0`},
		{"list and rate", []string{"--sweep", "rate=1,2", "--rate", "3"}, "--sweep rate=… sets the load"},
		{"list and concurrency", []string{"--sweep", "c=1,2", "-c", "3"}, "--sweep concurrency=… sets the load"},
		{"auto and rate", []string{"--sweep", "auto", "--rate", "3"}, "--sweep auto and --rate"},
		{"steps without auto", []string{"--sweep", "rate=1", "--steps", "3"}, "--steps sets the automatic profile's steps"},
		{"steps range", []string{"--sweep", "auto", "--steps", "0"}, "--steps 0 is out of range"},
		{"repeat range", []string{"--repeat", "0"}, "--repeat 0 is out of range"},
		{"share without slo", []string{"--sweep", "auto", "--slo-share", "90%"}, "--slo-share is the share"},
		{"share", []string{"--sweep", "auto", "--slo", "ttft=1s", "--slo-share", "150%"}, "a share is above 0"},
		{"csv alone", []string{"--csv", "s.csv"}, "--csv writes a sweep's steps"},
		{"records", []string{"--sweep", "rate=1,2", "--records", "r.jsonl"}, "a sweep has many"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", append([]string{"bench", "h:1"}, tt.args...)...)
			if code != ExitError || !strings.Contains(errOut, "inferscope: error: ") || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "inferscope: hint: ") {
				t.Errorf("exit %d, stderr %q; want an error with %q and a hint", code, errOut, tt.want)
			}
		})
	}
}

// A sweep through the command line against the simulator's API: a
// concurrency list run twice a step, its JSON as docs/json.md describes
// it, its CSV a row a step, and two such sweeps compared.
func TestBenchSweepCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demo.Start(ctx, demo.Options{Scenario: "chat", Speed: 20, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		csvPath := filepath.Join(dir, "steps.csv")
		out, errOut, code := runCLI(t, "", "bench", srv.APIURL(), "--metrics-url", srv.URL(), "--sweep", "concurrency=1,4", "--repeat", "2", "-n", "8",
			"--prompt-tokens", "64", "--output-tokens", "8", "--interval", "200ms", "--slo", "ttft=5s", "-o", "json", "--csv", csvPath)
		if code != ExitOK || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var res struct {
			Kind  string `json:"kind"`
			Steps []struct {
				Concurrency int `json:"concurrency"`
				Runs        []struct {
					Kind string `json:"kind"`
				} `json:"runs"`
				Drains []struct {
					Idle *bool `json:"idle"`
				} `json:"drains"`
				Summary struct {
					Completed   int `json:"completed"`
					RequestRate struct {
						N int `json:"n"`
					} `json:"request_rate"`
				} `json:"summary"`
				SLO *struct {
					Meets bool `json:"meets"`
				} `json:"slo"`
			} `json:"steps"`
			Knee *struct {
				Step int `json:"step"`
			} `json:"knee"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if res.Kind != "bench_sweep" || len(res.Steps) != 2 || res.Steps[1].Concurrency != 4 || len(res.Steps[0].Runs) != 2 ||
			res.Steps[0].Runs[0].Kind != "bench" || res.Steps[1].Summary.Completed != 16 || res.Steps[1].Summary.RequestRate.N != 2 {
			t.Fatalf("sweep: %+v", res)
		}
		for _, s := range res.Steps {
			if len(s.Drains) != 2 || s.Drains[0].Idle == nil || !*s.Drains[0].Idle || s.SLO == nil || !s.SLO.Meets {
				t.Errorf("step %+v", s)
			}
		}
		if res.Knee == nil || res.Knee.Step != 2 {
			t.Errorf("knee %+v", res.Knee)
		}
		b, err := os.ReadFile(csvPath)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil || len(rows) != 3 || rows[0][0] != "step" || rows[2][3] != "4" {
			t.Errorf("CSV: %v\n%s", err, b)
		}
		name := filepath.Join(dir, []string{"a.json", "b.json"}[i])
		if err := os.WriteFile(name, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	out, errOut, code := runCLI(t, "", "bench", "compare", files[0], files[1], "--width", "100")
	if code != ExitOK || errOut != "" || !strings.Contains(out, "bench compare") || !strings.Contains(out, "4 in flight (A step 2, B step 2)") {
		t.Errorf("compare: exit %d, stderr %q\n%s", code, errOut, out)
	}
	_, errOut, code = runCLI(t, "", "bench", "compare", files[0], filepath.Join(dir, "steps.csv"))
	if code != ExitError || !strings.Contains(errOut, "not a report of inferscope bench") {
		t.Errorf("compare of a CSV: exit %d, stderr %q", code, errOut)
	}
}
