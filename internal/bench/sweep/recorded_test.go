package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A sweep recorded against a real server (testdata/recorded/*: the
// sweep's JSON as `bench --sweep -o json` wrote it, and the server's own
// /metrics and /slots read every 500 ms by a poller of its own while the
// sweep ran, with how both were recorded in its README.md). Each run's
// verdict is held to what the server itself said over that run's
// measured part, read here from the raw series and slot states, not
// through the bench: a run the bench calls saturated had requests
// deferred at most polls, every slot busy at nearly all of them (the two
// are read a moment apart: a slot can free between them); a run it
// calls prefill- or decode-bound had none deferred, and that phase took
// the larger share of the server's own prefill and decode seconds; the
// knee's reason, the queue, is the step where requests were first
// deferred. /metrics and /slots agree with each other on the requests
// processing.
func TestRecordedSweepAgrees(t *testing.T) {
	dirs, err := filepath.Glob("testdata/recorded/*/sweep.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sweep: %v", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := Read(f)
			if err != nil {
				t.Fatal(err)
			}
			polls := readPolls(t, filepath.Join(dir, "server.jsonl"))
			slots := polls[0].slotsTotal
			agreeSlots := 0
			for _, p := range polls {
				if p.busy == int(p.gauge["requests_processing"]) {
					agreeSlots++
				}
			}
			// Two requests a poll apart: a request may start or end
			// between them.
			if agreeSlots < len(polls)*9/10 {
				t.Errorf("/slots busy and /metrics processing agree at %d of %d polls", agreeSlots, len(polls))
			}
			deferredAt := map[int]bool{} // steps with requests deferred
			for _, s := range res.Steps {
				for i, run := range s.Runs {
					start := run.StartedAt.Add(seconds(float64(run.MeasuredFrom)))
					end := run.StartedAt.Add(seconds(float64(run.MeasuredTo)))
					in := pollsBetween(polls, start, end)
					if len(in) < 4 {
						t.Fatalf("step %d run %d: %d polls in its measured part", s.Index, i+1, len(in))
					}
					deferred, full, maxBusy := 0, 0, 0
					for _, p := range in {
						maxBusy = max(maxBusy, p.busy)
						if p.gauge["requests_deferred"] > 0 {
							deferred++
							if p.busy == slots {
								full++
							}
						}
					}
					fullWhenDeferred := full*10 >= deferred*9
					if deferred > 0 {
						deferredAt[s.Index] = true
					}
					if maxBusy > min(s.Concurrency, slots) {
						t.Errorf("step %d run %d: %d slots busy with %d requests in flight", s.Index, i+1, maxBusy, s.Concurrency)
					}
					first, last := in[0], in[len(in)-1]
					prefill := last.counter["prompt_seconds_total"] - first.counter["prompt_seconds_total"]
					decode := last.counter["tokens_predicted_seconds_total"] - first.counter["tokens_predicted_seconds_total"]
					t.Logf("step %d (c=%d) run %d: verdict %s; %d polls, deferred at %d, every slot busy at %d of those, most busy %d; prefill %.2f s, decode %.2f s",
						s.Index, s.Concurrency, i+1, run.Verdict, len(in), deferred, full, maxBusy, prefill, decode)
					switch run.Verdict {
					case "bench_saturated":
						if deferred*2 < len(in) || !fullWhenDeferred {
							t.Errorf("step %d run %d: saturated, but requests were deferred at %d of %d polls, every slot busy at %d of those", s.Index, i+1, deferred, len(in), full)
						}
					case "bench_decode_bound", "bench_prefill_bound":
						if deferred > len(in)/10 {
							t.Errorf("step %d run %d: %s, but requests were deferred at %d of %d polls", s.Index, i+1, run.Verdict, deferred, len(in))
						}
						want := "bench_decode_bound"
						if prefill >= decode {
							want = "bench_prefill_bound"
						}
						if run.Verdict != want {
							t.Errorf("step %d run %d: %s, the server's own seconds say %s", s.Index, i+1, run.Verdict, want)
						}
					default:
						t.Errorf("step %d run %d: verdict %q", s.Index, i+1, run.Verdict)
					}
				}
			}
			k := res.Knee
			if k == nil || k.BrokeStep == 0 {
				t.Fatalf("knee %+v", k)
			}
			if k.Reason != ReasonQueue || !deferredAt[k.BrokeStep] || deferredAt[k.Step] {
				t.Errorf("knee between steps %d and %d, reason %s; requests deferred at steps %v", k.Step, k.BrokeStep, k.Reason, deferredAt)
			}
		})
	}
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// poll is one reading of the server: its series by name (the llamacpp:
// prefix dropped), its slots.
type poll struct {
	at               time.Time
	gauge, counter   map[string]float64
	busy, slotsTotal int
}

// readPolls reads the poller's lines: the series of each /metrics answer
// read as text, line by line, and each slot's is_processing.
func readPolls(t *testing.T, path string) []poll {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []poll
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Provenance []string `json:"provenance"`
			At         float64  `json:"at"`
			Metrics    string   `json:"metrics"`
			Slots      []struct {
				IsProcessing bool `json:"is_processing"`
			} `json:"slots"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Provenance != nil {
			continue
		}
		p := poll{at: time.Unix(0, int64(line.At*1e9)), gauge: map[string]float64{}, counter: map[string]float64{}, slotsTotal: len(line.Slots)}
		for _, s := range line.Slots {
			if s.IsProcessing {
				p.busy++
			}
		}
		for _, l := range strings.Split(line.Metrics, "\n") {
			name, val, ok := strings.Cut(strings.TrimPrefix(l, "llamacpp:"), " ")
			if !ok || strings.HasPrefix(l, "#") {
				continue
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatalf("%s: %q", path, l)
			}
			if strings.HasSuffix(name, "_total") {
				p.counter[name] = v
			} else {
				p.gauge[name] = v
			}
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no polls")
	}
	return out
}

func pollsBetween(ps []poll, from, to time.Time) []poll {
	var out []poll
	for _, p := range ps {
		if !p.at.Before(from) && !p.at.After(to) {
			out = append(out, p)
		}
	}
	return out
}

// TestPollServer is the recording's poller: it reads a llama.cpp
// server's /metrics and /slots every 500 ms, one line each time, for as
// long as it is told: the series of /metrics (its comment lines dropped)
// and each slot's state (its sampling parameters, the same for every
// request, dropped). It runs only when asked:
//
//	INFERSCOPE_POLL='base-url out.jsonl seconds provenance…' go test ./internal/bench/sweep -run TestPollServer -v
func TestPollServer(t *testing.T) {
	spec := os.Getenv("INFERSCOPE_POLL")
	if spec == "" {
		t.Skip("records only when INFERSCOPE_POLL says where")
	}
	parts := strings.SplitN(spec, " ", 4)
	if len(parts) < 3 {
		t.Fatal("INFERSCOPE_POLL='base-url out.jsonl seconds [provenance]'")
	}
	base, out := strings.TrimSuffix(parts[0], "/"), parts[1]
	secs, err := strconv.ParseFloat(parts[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	enc := json.NewEncoder(w)
	prov := []string{"polled every 500 ms by TestPollServer (internal/bench/sweep/recorded_test.go): " + base + "/metrics (its series, the comment lines dropped) and " + base + "/slots (each slot's params dropped)"}
	if len(parts) == 4 {
		prov = append(prov, strings.Split(parts[3], ";")...)
	}
	if err := enc.Encode(map[string]any{"provenance": prov}); err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, path string) []byte {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	stop := time.Now().Add(seconds(secs))
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for now := range tick.C {
		if now.After(stop) {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		at := time.Now()
		m := get(ctx, "/metrics")
		s := get(ctx, "/slots")
		cancel()
		var series []string
		for _, l := range strings.Split(string(m), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				series = append(series, l)
			}
		}
		var slots []map[string]any
		if json.Unmarshal(s, &slots) == nil {
			for _, sl := range slots {
				delete(sl, "params")
			}
		}
		if err := enc.Encode(map[string]any{"at": json.Number(fmt.Sprintf("%.6f", float64(at.UnixNano())/1e9)), "metrics": strings.Join(series, "\n"), "slots": slots}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("%d polls to %s", n, out)
}
