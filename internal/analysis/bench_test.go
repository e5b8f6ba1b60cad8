package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func f(v float64) *float64 { return &v }

// samples builds a run's scrapes one second apart from the gauges given,
// generating tok tokens a second.
func samples(tok float64, waiting, running, kv []float64) []BenchSample {
	out := make([]BenchSample, len(waiting))
	for i := range waiting {
		out[i] = BenchSample{Seconds: float64(i), Waiting: waiting[i], Running: running[i], KV: kv[i], Generated: tok * float64(i), Finished: math.NaN(), InFlight: waiting[i] + running[i]}
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func ids(notes []report.Note) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.ID+":"+string(n.Severity))
	}
	return out
}

// Each verdict at and either side of its thresholds, worked by hand.
func TestJudgeBenchVerdict(t *testing.T) {
	nan := repeat(math.NaN(), 8)
	grow := []float64{0, 0, 1, 1, 2, 3, 3, 4} // halves average 0.5 and 3: rose 2.5
	slow := []float64{0, 0, 1, 1, 1, 2, 2, 2} // halves 0.5 and 1.75: rose 1.25
	tests := []struct {
		name string
		in   BenchRun
		want string
	}{
		{"nothing published", BenchRun{Samples: samples(100, nan, nan, nan)}, ""},
		{"decode-bound", BenchRun{Samples: samples(100, nan, nan, nan), PrefillSeconds: f(1), DecodeSeconds: f(3)}, VerdictDecodeBound},
		{"prefill-bound at exactly half", BenchRun{Samples: samples(100, nan, nan, nan), PrefillSeconds: f(2), DecodeSeconds: f(2)}, VerdictPrefillBound},
		{"no phase time", BenchRun{Samples: samples(100, nan, nan, nan), PrefillSeconds: f(0), DecodeSeconds: f(0)}, ""},
		{"queue grew, throughput flat", BenchRun{Samples: samples(100, grow, repeat(4, 8), repeat(0.5, 8)), PrefillSeconds: f(1), DecodeSeconds: f(3)}, VerdictSaturated},
		{"queue grew less than 2, waited in 6 of 8", BenchRun{Samples: samples(100, slow, repeat(4, 8), repeat(0.5, 8)), PrefillSeconds: f(1), DecodeSeconds: f(3)}, VerdictSaturated},
		{"waited in 4 of 8, mean 0.5", BenchRun{Samples: samples(100, []float64{0, 0, 0, 0, 1, 1, 1, 1}, repeat(4, 8), repeat(0.5, 8)), PrefillSeconds: f(1), DecodeSeconds: f(3)}, VerdictDecodeBound},
		{"KV full and waiting", BenchRun{Samples: samples(100, grow, repeat(4, 8), repeat(0.9, 8))}, VerdictKVBound},
		{"KV 0.89 and waiting: saturated, not KV", BenchRun{Samples: samples(100, grow, repeat(4, 8), repeat(0.89, 8))}, VerdictSaturated},
		{"KV full, preempted, none waiting", BenchRun{Samples: samples(100, repeat(0, 8), repeat(4, 8), repeat(0.95, 8)), Preemptions: f(3)}, VerdictKVBound},
		{"KV full, nothing waits or is preempted", BenchRun{Samples: samples(100, repeat(0, 8), repeat(4, 8), repeat(0.95, 8)), Preemptions: f(0), PrefillSeconds: f(1), DecodeSeconds: f(3)}, VerdictDecodeBound},
	}
	for _, tt := range tests {
		got := JudgeBench(tt.in)
		if got.Verdict != tt.want {
			t.Errorf("%s: verdict %q, want %q (notes %v)", tt.name, got.Verdict, tt.want, ids(got.Notes))
		}
		verdicts := 0
		for _, n := range got.Notes {
			if slices.Contains([]string{VerdictSaturated, VerdictKVBound, VerdictPrefillBound, VerdictDecodeBound}, n.ID) {
				verdicts++
			}
		}
		if want := min(1, len(tt.want)); verdicts != want {
			t.Errorf("%s: %d verdict notes", tt.name, verdicts)
		}
	}
}

// A generator that could not keep up is said beside the server's verdict,
// at and either side of its limits.
func TestJudgeBenchClientBound(t *testing.T) {
	grow := []float64{0, 0, 1, 1, 2, 3, 3, 4}
	tests := []struct {
		name    string
		late    *float64
		cpu     *float64
		bound   bool
		verdict string
	}{
		{"late", f(0.010), nil, true, VerdictKVBound},
		{"a little late", f(0.009), f(0.79), false, VerdictKVBound},
		{"busy", nil, f(0.8), true, VerdictKVBound},
	}
	for _, tt := range tests {
		got := JudgeBench(BenchRun{Samples: samples(100, grow, repeat(4, 8), repeat(0.95, 8)), LateP99: tt.late, CPUShare: tt.cpu})
		if got.ClientBound != tt.bound || got.Verdict != tt.verdict {
			t.Errorf("%s: client-bound %v verdict %q (notes %v)", tt.name, got.ClientBound, got.Verdict, ids(got.Notes))
		}
		if fired := slices.ContainsFunc(got.Notes, func(n report.Note) bool { return n.ID == NoteClientBound && n.Severity == report.Warn }); fired != tt.bound {
			t.Errorf("%s: note %v", tt.name, ids(got.Notes))
		}
	}
}

// The verdict's words carry the figures and the server's own knob.
func TestJudgeBenchWords(t *testing.T) {
	grow := []float64{0, 0, 1, 1, 2, 3, 3, 4}
	got := JudgeBench(BenchRun{Samples: samples(100, grow, repeat(4, 8), repeat(0.5, 8)), Advice: snapshot.Advice{QueueFix: "raise max_num_seqs"}})
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0].Text, "rose from 0.50 to 3.00") || !strings.Contains(got.Notes[0].Text, "100 tok/s") ||
		!strings.HasSuffix(got.Notes[0].Text, "raise max_num_seqs") {
		t.Errorf("saturated: %v", got.Notes)
	}
	got = JudgeBench(BenchRun{ClientTTFT: f(0.4), ServerQueue: f(0.1), ServerPrefill: f(0.2)})
	if len(got.Notes) != 1 || got.Notes[0].ID != "bench_outside_engine" || !strings.Contains(got.Notes[0].Text, "100 ms (25.0%) passed outside") {
		t.Errorf("outside: %v", got.Notes)
	}
}

// Time outside the engine at and either side of both limits.
func TestJudgeBenchOutside(t *testing.T) {
	tests := []struct {
		ttft, queue, prefill float64
		fires                bool
	}{
		{0.4, 0.1, 0.2, true},      // 0.1 s, 25%
		{0.4, 0.1, 0.2001, false},  // just under 25%
		{0.1, 0.02, 0.03, true},    // 0.05 s, 50%
		{0.1, 0.02, 0.0301, false}, // just under 50 ms
		{0.1, 0.2, 0.1, false},     // the server counts more than the client saw
	}
	for _, tt := range tests {
		got := JudgeBench(BenchRun{ClientTTFT: f(tt.ttft), ServerQueue: f(tt.queue), ServerPrefill: f(tt.prefill)})
		if fired := len(got.Notes) == 1; fired != tt.fires {
			t.Errorf("ttft %v queue %v prefill %v: notes %v", tt.ttft, tt.queue, tt.prefill, ids(got.Notes))
		}
	}
}

// The self-check: exact agreement colours the rows good, any difference
// bad with its note; an interrupted run is not judged; tokens counted
// from events are not held to agree.
func TestJudgeBenchSelfCheck(t *testing.T) {
	inflight := func(client, running, waiting float64) []BenchSample {
		out := make([]BenchSample, ConcurrencySamples)
		for i := range out {
			out[i] = BenchSample{InFlight: client, Running: running, Waiting: waiting}
		}
		return out
	}
	tests := []struct {
		name  string
		in    BenchRun
		rows  map[string]report.Severity
		notes []string
	}{
		{"all agree", BenchRun{Samples: inflight(8, 4, 4), Check: BenchCheck{Comparable: true, ClientRequests: 100, ServerRequests: f(100), ClientTokens: 5000, TokensFromUsage: true, ServerTokens: f(5000)}},
			map[string]report.Severity{"self_check/requests": report.Good, "self_check/tokens": report.Good, "self_check/concurrency": report.Good}, nil},
		{"one request more on the server", BenchRun{Check: BenchCheck{Comparable: true, ClientRequests: 100, ServerRequests: f(101)}},
			map[string]report.Severity{"self_check/requests": report.Bad}, []string{"bench_requests_disagree:bad"}},
		{"one token fewer on the server", BenchRun{Check: BenchCheck{Comparable: true, ServerRequests: nil, ClientTokens: 5000, TokensFromUsage: true, ServerTokens: f(4999)}},
			map[string]report.Severity{"self_check/tokens": report.Bad}, []string{"bench_tokens_disagree:bad"}},
		{"tokens from events", BenchRun{Check: BenchCheck{Comparable: true, ClientTokens: 5000, ServerTokens: f(4999)}},
			map[string]report.Severity{}, nil},
		{"interrupted", BenchRun{Check: BenchCheck{ClientRequests: 100, ServerRequests: f(101)}}, map[string]report.Severity{}, nil},
		{"concurrency 1 apart of 8", BenchRun{Samples: inflight(8, 4, 3), Check: BenchCheck{Comparable: true}},
			map[string]report.Severity{"self_check/concurrency": report.Warn}, []string{"bench_concurrency_disagree:warn"}},
		{"concurrency 1 apart of 12", BenchRun{Samples: inflight(12, 4, 7), Check: BenchCheck{Comparable: true}},
			map[string]report.Severity{"self_check/concurrency": report.Good}, nil},
		{"concurrency 0.9 apart of 2", BenchRun{Samples: inflight(2, 1.1, 0), Check: BenchCheck{Comparable: true}},
			map[string]report.Severity{"self_check/concurrency": report.Good}, nil},
		{"too few scrapes to compare", BenchRun{Samples: inflight(8, 4, 3)[:ConcurrencySamples-1], Check: BenchCheck{Comparable: true}},
			map[string]report.Severity{}, nil},
	}
	for _, tt := range tests {
		got := JudgeBench(tt.in)
		if !mapsEqual(got.Rows, tt.rows) {
			t.Errorf("%s: rows %v, want %v", tt.name, got.Rows, tt.rows)
		}
		// The queues built here saturate too: the self-check's notes only.
		got.Notes = slices.DeleteFunc(got.Notes, func(n report.Note) bool { return n.ID == VerdictSaturated })
		if !slices.Equal(ids(got.Notes), tt.notes) {
			t.Errorf("%s: notes %v, want %v", tt.name, ids(got.Notes), tt.notes)
		}
	}
}

func mapsEqual(a, b map[string]report.Severity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The validity flags, each at and beside its limit.
func TestJudgeBenchValidity(t *testing.T) {
	tests := []struct {
		name  string
		in    BenchRun
		notes []string
	}{
		{"prefix as meant", BenchRun{PrefixHit: f(0.5), PrefixMeant: f(0.4)}, nil},
		{"prefix beyond", BenchRun{PrefixHit: f(0.51), PrefixMeant: f(0.4)}, []string{"bench_prefix_unintended:warn"}},
		{"prefix of a dataset", BenchRun{PrefixHit: f(0.9)}, nil},
		{"early stops", BenchRun{FixedOutput: 128, EarlyStops: 3, Measured: 100}, []string{"bench_early_stops:warn"}},
		{"early stops with no fixed length", BenchRun{EarlyStops: 3, Measured: 100}, nil},
		{"unsettled", BenchRun{Unsettled: true, WarmupLimit: "2m"}, []string{"bench_warmup_unsettled:warn"}},
		{"context", BenchRun{ContextCut: 1}, []string{"bench_context_cut:warn"}},
		{"errors", BenchRun{Measured: 10, Errors: map[string]int{"timeout": 1, "HTTP 503": 2, "cut": 0}}, []string{"bench_errors:warn"}},
		{"partial", BenchRun{Partial: true, StoppedAt: "12s", Completed: 3}, []string{"bench_partial:info"}},
		{"events", BenchRun{TokensFromEvents: true}, []string{"bench_tokens_from_events:info"}},
	}
	for _, tt := range tests {
		got := JudgeBench(tt.in)
		if !slices.Equal(ids(got.Notes), tt.notes) {
			t.Errorf("%s: notes %v, want %v", tt.name, ids(got.Notes), tt.notes)
		}
	}
	got := JudgeBench(BenchRun{Measured: 10, Errors: map[string]int{"timeout": 1, "HTTP 503": 2, "cut": 0}})
	if want := "3 of 10 measured requests failed (2 HTTP 503, 1 timeout)"; !strings.HasPrefix(got.Notes[0].Text, want) {
		t.Errorf("errors: %q, want %q…", got.Notes[0].Text, want)
	}
}

// A warm-up settles when its last five readings sit near their mean.
func TestSettled(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name        string
		running, kv []float64
		want        bool
	}{
		{"too few", []float64{4, 4, 4, 4}, []float64{0.5, 0.5, 0.5, 0.5}, false},
		{"flat", []float64{0, 4, 4, 4, 4, 4}, []float64{0, 0.5, 0.5, 0.5, 0.5, 0.5}, true},
		{"running within 1", []float64{3, 4, 3, 4, 3}, []float64{0.5, 0.5, 0.5, 0.5, 0.5}, true},
		{"running ramps", []float64{1, 2, 3, 4, 5}, []float64{0.5, 0.5, 0.5, 0.5, 0.5}, false},
		{"running within 10% of 40", []float64{36, 40, 44, 40, 40}, []float64{0.5, 0.5, 0.5, 0.5, 0.5}, true},
		{"kv ramps", []float64{4, 4, 4, 4, 4}, []float64{0.40, 0.44, 0.48, 0.52, 0.56}, false},
		{"kv within 0.02", []float64{4, 4, 4, 4, 4}, []float64{0.50, 0.51, 0.52, 0.51, 0.50}, true},
		{"no KV gauge", []float64{4, 4, 4, 4, 4}, []float64{nan, nan, nan, nan, nan}, true},
		{"no gauges", []float64{nan, nan, nan, nan, nan}, []float64{nan, nan, nan, nan, nan}, false},
		{"a failed scrape among the last", []float64{4, 4, nan, 4, 4}, []float64{nan, nan, nan, nan, nan}, false},
	}
	for _, tt := range tests {
		if got := Settled(tt.running, tt.kv); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
