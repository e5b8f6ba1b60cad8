package analysis

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// scrapedAt is the time every fixture was written at (its first line says so).
var scrapedAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func load(t testing.TB, name string) *snapshot.Snapshot {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("../../testdata/tabbyapi", name+".prom"))
	if err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(body, exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Source, s.ScrapedAt = name, scrapedAt
	return s
}

func analyze(t testing.TB, name string) *report.Report {
	return Analyze(load(t, name), Options{Hist: true})
}

func row(t *testing.T, r *report.Report, section, id string) report.Row {
	t.Helper()
	for _, s := range r.Sections {
		if s.ID != section {
			continue
		}
		for _, rw := range s.Rows {
			if rw.ID == id {
				return rw
			}
		}
	}
	t.Fatalf("no row %s/%s", section, id)
	return report.Row{}
}

func hasSection(r *report.Report, id string) bool {
	return slices.ContainsFunc(r.Sections, func(s report.Section) bool { return s.ID == id })
}

// Worked examples, each figure worked out by hand from its fixture, as a
// person reads them.
func TestWorkedExamples(t *testing.T) {
	tests := []struct {
		fixture, section, id, field, want string
	}{
		// 93 s prefill, 7 s decode: 93/7 = 13.29 → "13.3%".
		{"split-93-7", "phases", "exchange_rate", "value", "1% prefill ≈ 13.3% decode"},
		{"split-93-7", "phases", "exchange_rate", "note", "prefill is 93.0% of request time: 1% less prefill time pays for 13.3% more decode time"},
		// At 2× prefill: floor = 0.07 / (1 − 0.93/2) = 0.1308; 1/floor = 7.64.
		{"split-93-7", "phases", "break_even_2", "note", "a layout that makes prefill 2× faster wins even if decode gets 7.6× slower"},
		// 50/50: 1% off one pays for exactly 1.0% onto the other.
		{"split-50-50", "phases", "exchange_rate", "value", "1% prefill ≈ 1.0% decode"},
		// 2× prefill at 50/50: floor = 0.5 / 0.75 = 66.7%, may fall 1/0.667 = 1.5x.
		{"split-50-50", "phases", "break_even_2", "value", "66.7% decode speed"},
		{"split-50-50", "phases", "break_even_2", "note", "a layout that makes prefill 2× faster wins even if decode gets 1.5× slower"},
		// 1.5× prefill at 50/50: floor = 0.5 / (1 − 0.5/1.5) = 0.75 → 1.3x.
		{"split-50-50", "phases", "break_even_1.5", "value", "75.0% decode speed"},
		{"split-50-50", "phases", "break_even_1.5", "note", "a layout that makes prefill 1.5× faster wins even if decode gets 1.3× slower"},
		{"prefill-only", "phases", "exchange_rate", "value", "prefill is all of it"},
		{"prefill-only", "phases", "exchange_rate", "note", "all request time is prefill: only prefill speed matters"},
		// 20 requests of 4 s in an hour: 80 s / 3600 s = 0.022 in flight
		// on average, so the engine was busy 2.2% of the time at most.
		{"utilization", "phases", "request_time", "note", "mean 0.02 in flight: busy at most 2.2%"},
		{"utilization", "phases", "request_time", "value", "1.3 min over 1.0 h up"},
		// 400 requests, 320 s of prefill and 12,000 s of decode in one
		// hour: 12,320 / 3600 = 3.42 in flight on average. No busy share.
		{"overlap", "phases", "request_time", "note", "mean 3.42 in flight: requests overlap, so no busy share"},
		{"overlap", "phases", "decode_share", "note", "3.3 h of request time"},
		{"busy", "live", "state", "value", "6 generating, 3 queued"},
		// Every drafter request waited 0 s: the sum bounds every quantile.
		{"drafter", "latency", "queue", "value", "0 s · 0 s · 0 s · 0 s"},
		{"idle", "live", "state", "value", "idle"},
		// 119 of 128 pages referenced: 92.97%, past the pressure threshold.
		{"busy", "live", "kv_cache", "value", "93.0%"},
		{"busy", "live", "kv_cache", "note", "30.5K / 32.8K tokens"},
		{"idle", "live", "largest_generation", "value", "8.0K tokens"},
		// Drafter: 4-token drafts; rows read from the counters, checked against truth below.
		{"offload-thrashing", "kv_offload", "traffic", "note", "0.12 read back: thrashing — raise sysmem_kv_cache"},
		{"offload-healthy", "kv_offload", "ram", "note", "14 stores pinned synchronously"},
		// 520 restores / 200 stores of the same slot size = 2.60.
		{"offload-healthy", "kv_offload", "traffic", "note", "2.60 read back"},
		// 500 restores / 4200 stores = 0.119.
		{"offload-thrashing", "kv_offload", "churn", "value", "4.2K stored, 2.2K evicted, 120 deduped"},
		// 31 prompts of 201000–205800 tokens among 100: p99 lies in the
		// (200000, 262144] bucket, whose top is lowered to the peak.
		{"long-context", "size", "prompt", "note", "n=100, peak 206K"},
		{"hybrid-raise", "recurrent", "evictions", "value", "420, 150 free"},
		{"hybrid-raise", "recurrent", "evictions", "note", "290 dropped live"},
		{"hybrid-kv-constraint", "recurrent", "stranded_by_kv", "note", "KV cache is the constraint"},
		{"hybrid-not-budget", "recurrent", "checkpoints", "value", "12 held"},
		{"hybrid-not-budget", "recurrent", "checkpoints", "note", "150 MiB each"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.id+"/"+tt.field, func(t *testing.T) {
			r := row(t, analyze(t, tt.fixture), tt.section, tt.id)
			got := r.Value
			if tt.field == "note" {
				got = r.Note
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The recurrent verdict of each hybrid fixture. Shares are worked from the
// fixture's own numbers: capped = kv-only pages × 256, hits = cached tokens.
func TestRecurrentVerdicts(t *testing.T) {
	tests := []struct {
		fixture, note string
		want          string
		sev           report.Severity
	}{
		{"hybrid-raise", "recurrent_raise_budget", "raise sysmem_recurrent_cache", report.Bad},
		{"hybrid-kv-constraint", "recurrent_kv_constraint", "KV cache is the constraint, not this one", report.None},
		{"hybrid-not-budget", "recurrent_not_budget", "no checkpoint covered them — not a budget problem", report.None},
		{"hybrid-negligible", "", "negligible", report.Good},
	}
	truth := truths(t)
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			rep := analyze(t, tt.fixture)
			r := row(t, rep, "recurrent", "capped")
			if !strings.Contains(r.Note, tt.want) || r.Severity != tt.sev {
				t.Errorf("capped row = %q (%s), want %q (%s)", r.Note, r.Severity, tt.want, tt.sev)
			}
			capped := float64(rep.Scalars["recurrent_capped_tokens_total"])
			hits := truth[tt.fixture]["cached"]
			want := capped / (capped + hits)
			if got := rep.Figures.RecurrentCappedShare; got == nil || math.Abs(float64(*got)-want) > 1e-12 {
				t.Errorf("capped share = %v, want %v", got, want)
			}
			if tt.note != "" && !hasNote(rep, tt.note) {
				t.Errorf("note %s did not fire: %v", tt.note, noteIDs(rep))
			}
		})
	}
}

func hasNote(r *report.Report, id string) bool {
	return slices.ContainsFunc(r.Notes, func(n report.Note) bool { return n.ID == id })
}

func noteIDs(r *report.Report) []string {
	var ids []string
	for _, n := range r.Notes {
		ids = append(ids, n.ID)
	}
	return ids
}

// Every note fires on the fixture made for it and nowhere it should not.
func TestNotes(t *testing.T) {
	tests := map[string][]string{
		"idle":                 nil,
		"no-requests":          {"no_requests_yet"},
		"busy":                 {"kv_cache_pressure"},
		"drafter":              nil,
		"offload-thrashing":    {"kv_offload_thrashing"},
		"offload-healthy":      {"kv_offload_cold_allocs"},
		"hybrid-raise":         {"recurrent_live_kv_evictions", "recurrent_raise_budget"},
		"hybrid-kv-constraint": {"recurrent_kv_constraint"},
		"hybrid-not-budget":    {"recurrent_not_budget"},
		"hybrid-negligible":    nil,
		"overlap":              nil,
		"prefill-only":         nil,
		"long-context":         nil,
		"split-93-7":           nil,
		"split-50-50":          nil,
		"utilization":          nil,
	}
	for fixture, want := range tests {
		t.Run(fixture, func(t *testing.T) {
			got := noteIDs(analyze(t, fixture))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("notes = %v, want %v", got, want)
			}
		})
	}
}

func truths(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile("../../testdata/tabbyapi/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Figures against the totals of the model that wrote the fixtures (an
// implementation of the metric set's rules, docs/metrics.md, independent of
// this code).
func TestFiguresAgainstTruth(t *testing.T) {
	for name, tr := range truths(t) {
		t.Run(name, func(t *testing.T) {
			f := analyze(t, name).Figures
			check := func(what string, got *report.Number, want float64, defined bool) {
				t.Helper()
				switch {
				case !defined && got != nil:
					t.Errorf("%s = %v, want null", what, *got)
				case defined && got == nil:
					t.Errorf("%s = null, want %v", what, want)
				case defined && math.Abs(float64(*got)-want) > 1e-9*math.Max(1, math.Abs(want)):
					t.Errorf("%s = %v, want %v", what, *got, want)
				}
			}
			q := tr["prompt"] + tr["cached"]
			check("prefix_cache_hit_ratio", f.PrefixCacheHitRatio, tr["cached"]/q, q > 0)
			e := tr["pseconds"] + tr["dseconds"]
			check("request_seconds", f.RequestSeconds, e, e > 0)
			check("prefill_share", f.PrefillShare, tr["pseconds"]/e, e > 0)
			check("spec_decode_acceptance", f.SpecDecodeAcceptance, tr["acc"]/tr["draft"], tr["draft"] > 0)
			check("spec_decode_tokens_per_step", f.SpecDecodeTokensPerStep, 1+tr["acc"]/tr["steps"], tr["steps"] > 0)
		})
	}
}

// A drafter with k = 4 and α = 0.75 accepts (α+α²+α³+α⁴)/4 = 0.513 of what it
// drafts; the fixture is one random draw of that process.
func TestDrafterNearTheory(t *testing.T) {
	f := analyze(t, "drafter").Figures
	if f.SpecDecodeAcceptance == nil || math.Abs(float64(*f.SpecDecodeAcceptance)-0.5127) > 0.03 {
		t.Fatalf("acceptance %v, want ≈ 0.513", f.SpecDecodeAcceptance)
	}
}

func TestAbsentSectionsAndNulls(t *testing.T) {
	r := analyze(t, "no-requests")
	for _, id := range []string{"throughput", "phases", "spec_decode", "prefix_cache", "kv_offload", "recurrent", "latency", "size"} {
		if hasSection(r, id) {
			t.Errorf("section %s present on a server with no requests", id)
		}
	}
	f := r.Figures
	if f.PrefixCacheHitRatio != nil || f.RequestSeconds != nil || f.MeanInFlight != nil || f.Utilization != nil || f.KVOffloadPayback != nil || f.BreakEven != nil {
		t.Errorf("figures must be null without data: %+v", f)
	}
	if !hasSection(r, "live") {
		t.Error("live section missing")
	}
	idle := analyze(t, "idle")
	for _, id := range []string{"spec_decode", "kv_offload", "recurrent"} {
		if hasSection(idle, id) {
			t.Errorf("idle chat server has a %s section", id)
		}
	}
}

// Size quantiles never exceed the observed peak; 31 prompts of ~203k tokens
// against a 262144 context.
func TestLongContextPeaks(t *testing.T) {
	r := analyze(t, "long-context")
	h := r.Histograms["request_prompt_tokens"]
	if h.Peak == nil || *h.Peak != 201000+30*160 {
		t.Fatalf("peak = %v", h.Peak)
	}
	if h.Capped == nil || h.Capped.P99 > *h.Peak || h.Capped.P90 > h.Capped.P99 || h.Capped.P50 > h.Capped.P90 {
		t.Fatalf("capped quantiles %+v exceed or disorder the peak %v", h.Capped, *h.Peak)
	}
	last := h.Buckets[len(h.Buckets)-2]
	if last.LE != "262144" {
		t.Fatalf("ladder ends at %s, want 262144", last.LE)
	}
	// The idle fixture's 8000-token completion: the p99 of 345 requests is
	// blind to it, the peak is not.
	idle := analyze(t, "idle").Histograms["request_generation_tokens"]
	if idle.Capped.P99 >= 8000 || *idle.Peak != 8000 {
		t.Fatalf("p99 %v, peak %v", idle.Capped.P99, *idle.Peak)
	}
}

func TestMissingStartTime(t *testing.T) {
	s := load(t, "utilization")
	delete(s.Scalars, "process_start_time_seconds")
	r := Analyze(s, Options{})
	if r.Figures.MeanInFlight != nil || r.Figures.BusyAtMost != nil {
		t.Fatal("requests in flight without a start time")
	}
	if got := row(t, r, "phases", "request_time").Note; got != "start time unknown: no mean in flight" {
		t.Fatalf("note %q", got)
	}
	// A start gauge that is no time of this process is unknown too, and
	// says why.
	s.Scalars["process_start_time_seconds"] = 1.2e9
	r = Analyze(s, Options{})
	if got := row(t, r, "phases", "request_time").Note; r.Figures.MeanInFlight != nil || got != "start time unknown (process_start_time_seconds is before 2015, so not a wall-clock time): no mean in flight" {
		t.Fatalf("a start in 2008: note %q, in flight %v", got, r.Figures.MeanInFlight)
	}
}

func BenchmarkAnalyze(b *testing.B) {
	s := load(b, "offload-healthy")
	for b.Loop() {
		Analyze(s, Options{Hist: true})
	}
}

func TestExactSeconds(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{0.001, "1 ms"}, {0.04, "40 ms"}, {0.25, "0.25 s"}, {2.5, "2.5 s"}, {160, "160 s"}, {120, "2 min"}, {7680, "128 min"}, {2560, "2560 s"},
		// TGI computes its bounds: float noise is cut, not printed.
		{0.00015000000000000002, "0.15 ms"}, {0.0656840835571289, "65.68 ms"}, {2.5251168294042348, "2.525 s"}} {
		if got := exactSeconds(tt.v); got != tt.want {
			t.Errorf("exactSeconds(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
