package cli

import (
	"math"
	"strings"
	"testing"
)

// Issue 18 on the servers recorded for it (testdata/real/README.md has the
// figures worked out by hand from the files).
func TestRealFigures(t *testing.T) {
	near := func(got any, want float64) bool {
		f, ok := got.(float64)
		return ok && math.Abs(f-want) <= 1e-9*math.Max(1, math.Abs(want))
	}
	sim := realJSON(t, "llm-d-inference-sim-eec055a")
	// 969 inter-token times all in (0, 10 ms], summing 2.907 s: never the
	// bucket's shape (5 · 9 · 9.9 ms), the bounds the count and sum give.
	for _, tt := range []struct {
		hist, q string
		value   float64
	}{
		{"inter_token_latency_seconds", "p50", 2.907 / 485},
		{"inter_token_latency_seconds", "p90", 0.01},
		{"inter_token_latency_seconds", "p99", 0.01},
		{"request_time_per_output_token_seconds", "p50", 0.19126735043402507 / 31},
		{"request_time_per_output_token_seconds", "p99", 0.01},
	} {
		st := at(sim, "histograms", tt.hist, "stated", tt.q)
		if at(st, "kind") != "at_most" || !near(at(st, "value"), tt.value) {
			t.Errorf("%s %s: %v, want at most %v", tt.hist, tt.q, st, tt.value)
		}
	}
	// Prompt tokens include the cache's hits; lookups less hits estimate
	// the computed ones: 3420 − 2832 = 588.
	if got := rowNote(sim, "throughput", "prompt_tokens"); got != "includes the prefix cache's 2.8K hits: ≈588 computed (looked up − hit)" {
		t.Errorf("prompt tokens note %q", got)
	}
	// Its request_success_total is labelled finish_reason (vLLM's is
	// finished_reason): read all the same, 53 stop and 7 length.
	if stop, length := at(sim, "extra", "finished_reason:stop"), at(sim, "extra", "finished_reason:length"); !near(stop, 53) || !near(length, 7) {
		t.Errorf("finished by reason: stop %v, length %v; want 53 and 7", stop, length)
	}
	// No process start: request time, no mean in flight, no utilization.
	if !near(at(sim, "figures", "request_seconds"), 1.233001333+3.229831616) || at(sim, "figures", "mean_in_flight") != nil || at(sim, "figures", "utilization") != nil {
		t.Errorf("request time %v, in flight %v, utilization %v", at(sim, "figures", "request_seconds"), at(sim, "figures", "mean_in_flight"), at(sim, "figures", "utilization"))
	}

	// llama.cpp b10309: its start header is a monotonic clock. A restart
	// is still seen (the header changed, the counters fell), and its time
	// is unknown, not "0 s before the later one".
	dir := realDir + "llama.cpp-b10309-restart/"
	out, errOut, code := runCLI(t, "", "--since", dir+"first-server.prom", dir+"restarted.prom", "--width", "200")
	if code != ExitOK || !strings.Contains(out, "server restarted between the two scrapes") ||
		!strings.Contains(out, "its start time is unknown") || strings.Contains(out, "before the later one") {
		t.Errorf("--since across llama.cpp's restart: exit %d\n%s%s", code, errOut, out)
	}
	ll := realJSON(t, "llama.cpp-b10309-tiny")
	if got := rowNote(ll, "phases", "request_time"); got != "start time unknown: no mean in flight" || !near(at(ll, "figures", "request_seconds"), 3.706+16.352) {
		t.Errorf("llama.cpp request time: %q, %v", got, at(ll, "figures", "request_seconds"))
	}
}

// rowNote is the note of a section's row in a decoded report, "" when the
// row is not there.
func rowNote(m map[string]any, section, id string) string {
	secs, _ := m["sections"].([]any)
	for _, s := range secs {
		if at(s, "id") != section {
			continue
		}
		rows, _ := at(s, "rows").([]any)
		for _, r := range rows {
			if at(r, "id") == id {
				n, _ := at(r, "note").(string)
				return n
			}
		}
	}
	return ""
}
