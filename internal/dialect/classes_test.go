package dialect

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// Each invalid kind (issue 15.5, 15.6, 9.2) is named with its series as
// published, and every figure from that series is absent; the valid series
// beside it still reads.
func TestInvalidSeries(t *testing.T) {
	const vllmSeries = `{engine="0",model_name="m"}`
	tests := []struct {
		file, series, reason string
		absent               []string // canonical scalars or histograms left out
		present              map[string]float64
	}{
		{"counter-negative.prom", "vllm:generation_tokens_total" + vllmSeries, "counter below zero (-208000)",
			[]string{"tokens_predicted_total"}, map[string]float64{"requests_processing": 2}},
		{"counter-nan.prom", "vllm:generation_tokens_total" + vllmSeries, "NaN in a counter",
			[]string{"tokens_predicted_total"}, map[string]float64{"requests_processing": 2}},
		{"counter-inf.prom", "vllm:generation_tokens_total" + vllmSeries, "+Inf in a counter",
			[]string{"tokens_predicted_total"}, map[string]float64{"requests_processing": 2}},
		{"gauge-inf.prom", "vllm:kv_cache_usage_perc" + vllmSeries, "-Inf in a gauge",
			[]string{"kv_cache_usage_ratio"}, map[string]float64{"requests_processing": 2}},
		{"hist-falling.prom", "vllm:e2e_request_latency_seconds" + vllmSeries, "cumulative bucket counts fall (le=1: 5, then le=2: 3)",
			[]string{"e2e_request_latency_seconds"}, map[string]float64{"requests_processing": 2}},
		{"hist-count-below.prom", "vllm:e2e_request_latency_seconds" + vllmSeries, "_count 6 is below its top finite bucket's 8 (le=2)",
			[]string{"e2e_request_latency_seconds"}, map[string]float64{"requests_processing": 2}},
		{"hist-negative-sum.prom", "vllm:e2e_request_latency_seconds" + vllmSeries, "negative _sum (-2.5) with no bucket below 0",
			[]string{"e2e_request_latency_seconds"}, map[string]float64{"requests_processing": 2}},
		{"sglang-hit-rate-above-1.prom", `sglang:cache_hit_rate{model_name="m"}`, "13.7 is impossible for a fraction (0 to 1)",
			nil, map[string]float64{"requests_processing": 4}},
		{"llamacpp-kv-ratio-above-1.prom", "llamacpp:kv_cache_usage_ratio", "1061 is impossible for a fraction (0 to 1)",
			[]string{"kv_cache_usage_ratio"}, map[string]float64{"requests_processing": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Map(parse(t, fixture(t, filepath.Join("invalid", tc.file))), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Invalid) != 1 || s.Invalid[0].Series != tc.series || s.Invalid[0].Reason != tc.reason {
				t.Fatalf("Invalid = %q\nwant [{%s %s}]", s.Invalid, tc.series, tc.reason)
			}
			for _, k := range tc.absent {
				if _, ok := s.Scalars[k]; ok {
					t.Errorf("Scalars[%q] = %v, want absent", k, s.Scalars[k])
				}
				if _, ok := s.Histograms[k]; ok {
					t.Errorf("Histograms[%q] present, want absent", k)
				}
			}
			if _, ok := s.Extra["cache_hit_rate_gauge"]; ok {
				t.Errorf("cache_hit_rate_gauge = %v, want absent", s.Extra["cache_hit_rate_gauge"])
			}
			for k, v := range tc.present {
				if s.Scalars[k] != v {
					t.Errorf("Scalars[%q] = %v, want %v", k, s.Scalars[k], v)
				}
			}
			if len(s.Raw) == 0 {
				t.Error("Raw lost the published families")
			}
		})
	}
}

// A NaN gauge has no value yet: absent, and not an invalid series.
func TestNaNGaugeIsNotInvalid(t *testing.T) {
	s, err := Map(parse(t, fixture(t, "invalid/gauge-nan.prom")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Invalid) != 0 {
		t.Errorf("Invalid = %q, want none", s.Invalid)
	}
	if v, ok := s.Scalar("kv_cache_usage_ratio"); ok {
		t.Errorf("kv_cache_usage_ratio = %v, want absent", v)
	}
}

// A server whose every series is invalid still reports (the notes say
// why), rather than "nothing recognisable".
func TestAllInvalidStillReports(t *testing.T) {
	s, err := Map(parse(t, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total -5\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Invalid) != 1 || len(s.Scalars) != 0 {
		t.Errorf("Invalid %q, Scalars %v", s.Invalid, s.Scalars)
	}
}

// The list stops at 20 series and says how many more there were.
func TestInvalidCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:generation_tokens_total counter\n")
	for i := range 25 {
		fmt.Fprintf(&b, "vllm:generation_tokens_total{engine=\"%d\"} -1\n", i)
	}
	b.WriteString("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n")
	s, err := Map(parse(t, b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Invalid) != 21 {
		t.Fatalf("%d problems, want 20 and a count", len(s.Invalid))
	}
	if last := s.Invalid[20]; last.Series != "5 more series" {
		t.Errorf("last = %+v", last)
	}
	if s.Invalid[0].Series != `vllm:generation_tokens_total{engine="0"}` {
		t.Errorf("first = %+v", s.Invalid[0])
	}
}

// A label value holding escape bytes is shown without them.
func TestInvalidSeriesTerminalSafe(t *testing.T) {
	s, err := Map(parse(t, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"a\x1b]0;pwned\x07b\"} -1\nvllm:num_requests_running 1\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Invalid) != 1 || strings.ContainsAny(s.Invalid[0].Series, "\x1b\x07") {
		t.Errorf("Invalid = %q", s.Invalid)
	}
}

// Issue 15.9: a known prefix with nothing that server publishes is an
// UnknownError naming what was seen, and no dialect is offered to force.
func TestKnownPrefixNothingRecognisable(t *testing.T) {
	for _, tc := range []struct{ file, dialect, seen string }{
		{"tabbyapi-foo.prom", "tabbyapi", "tabbyapi:foo"},
		{"vllm-bar.prom", "vllm", "vllm:bar"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Map(parse(t, fixture(t, filepath.Join("unknown", tc.file))), Options{})
			var ue *UnknownError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want *UnknownError", err)
			}
			if ue.Dialect != tc.dialect || strings.Join(ue.Seen, ",") != tc.seen || len(ue.Readable) != 0 {
				t.Errorf("UnknownError = %+v", ue)
			}
			if !strings.Contains(err.Error(), tc.seen) {
				t.Errorf("error %q does not name %s", err, tc.seen)
			}
		})
	}
}

// Issue 9.5: Readable lists only dialects that would find something.
func TestUnknownErrorReadable(t *testing.T) {
	tests := []struct {
		name, body, forced string
		readable           []string
	}{
		{"forced wrong dialect", fixture(t, "vllm-prefix-off.prom"), "tgi", []string{"vllm"}},
		{"forced wrong, two servers", fixture(t, "vllm-prefix-off.prom") + fixture(t, "llamacpp-fresh.prom"), "sglang", []string{"vllm", "llamacpp"}},
		{"unknown prefixes", "# TYPE ollama_requests gauge\nollama_requests 1\n", "", nil},
		{"unknown prefixes, forced", "# TYPE ollama_requests gauge\nollama_requests 1\n", "vllm", nil},
		{"known prefix, nothing known", "# TYPE vllm:bar gauge\nvllm:bar 1\n", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Map(parse(t, tc.body), Options{Dialect: tc.forced})
			var ue *UnknownError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want *UnknownError", err)
			}
			if strings.Join(ue.Readable, ",") != strings.Join(tc.readable, ",") {
				t.Errorf("Readable = %q, want %q", ue.Readable, tc.readable)
			}
		})
	}
}

// Issue 15.16: a model label holding control characters is listed cleaned,
// and the cleaned name typed back selects it; two that clean alike are
// ambiguous.
func TestModelControlCharacters(t *testing.T) {
	body := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{model_name=\"evil\x1b[31mred\"} 3\n" +
		"vllm:num_requests_running{model_name=\"plain\"} 5\n"
	fams := parse(t, body)
	_, err := Map(fams, Options{Model: "nope"})
	var me *ModelError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(me.Models, "|") != "evilred|plain" || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("ModelError = %+v: %q", me, err)
	}
	s, err := Map(fams, Options{Model: "evilred"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Scalars["requests_processing"] != 3 || s.Model != "evil\x1b[31mred" {
		t.Errorf("requests_processing %v, model %q", s.Scalars["requests_processing"], s.Model)
	}

	twin := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{model_name=\"a\x07b\"} 3\n" +
		"vllm:num_requests_running{model_name=\"a\x08b\"} 5\n"
	_, err = Map(parse(t, twin), Options{Model: "ab"})
	if !errors.As(err, &me) || me.Ambiguous != 2 {
		t.Errorf("err = %v, want an ambiguous ModelError", err)
	}
}

// A paste cut before _sum, _count or +Inf: what it lacks is unknown.
func TestCutHistogram(t *testing.T) {
	tests := []struct {
		name, body   string
		noSum, noTop bool
		count, sum   float64
	}{
		{"complete", "x_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 5\nx_sum 4\nx_count 5\n", false, false, 5, 4},
		{"no sum", "x_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 5\nx_count 5\n", true, false, 5, 0},
		// The +Inf bucket gives the total when _count is cut.
		{"no count", "x_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 5\nx_sum 4\n", false, false, 5, 4},
		// _count gives the total when +Inf is cut.
		{"no +Inf", "x_bucket{le=\"1\"} 3\nx_sum 4\nx_count 5\n", false, false, 5, 4},
		// Neither: at least the last bucket's 3, flagged.
		{"no top", "x_bucket{le=\"1\"} 3\nx_bucket{le=\"2\"} 3\n", true, true, 3, 0},
		{"NaN sum", "x_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 5\nx_sum NaN\nx_count 5\n", true, false, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fams := parse(t, "# TYPE x histogram\n"+tc.body)
			h := Hist(fams[0], nil)
			if h.NoSum != tc.noSum || h.NoTop != tc.noTop || h.Count != tc.count || h.Sum != tc.sum {
				t.Errorf("got NoSum %v NoTop %v Count %v Sum %v", h.NoSum, h.NoTop, h.Count, h.Sum)
			}
			if top := h.Buckets[len(h.Buckets)-1]; !math.IsInf(top.UpperBound, 1) || top.Count != tc.count {
				t.Errorf("+Inf bucket %+v", top)
			}
		})
	}
}

// A draft count without the accepted count (or the reverse) is no
// acceptance rate: neither half is set, and a Missing line says why.
func TestHalfRatioDropped(t *testing.T) {
	s, err := Map(parse(t, "# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total 100\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Scalars["spec_decode_num_draft_tokens_total"]; ok {
		t.Error("half a ratio kept")
	}
	found := false
	for _, l := range s.Missing {
		found = found || strings.HasPrefix(l, "draft acceptance: ")
	}
	if !found {
		t.Errorf("Missing = %q", s.Missing)
	}
}

// Each dialect names its own knobs; the preemption wording follows the
// server (vLLM preempts, SGLang retracts).
func TestAdvice(t *testing.T) {
	for _, tc := range []struct{ file, preempted, fixHas, slow string }{
		{"vllm-new.prom", "preempted", "max_num_seqs", ""},
		{"sglang-new.prom", "retracted", "--max-running-requests", ""},
		{"llamacpp-new.prom", "", "", "llama-server"},
		{"tgi.prom", "", "", ""},
	} {
		s, err := Map(parse(t, fixture(t, tc.file)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := s.Advice
		if a.Preempted != tc.preempted || !strings.Contains(a.PreemptFix, tc.fixHas) || !strings.Contains(a.SlowScrape, tc.slow) || (tc.slow == "") != (a.SlowScrape == "") {
			t.Errorf("%s: Advice = %+v", tc.file, a)
		}
		if a.QueueFix == "" {
			t.Errorf("%s: no QueueFix", tc.file)
		}
	}
	s, err := Map(parse(t, "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n"), Options{})
	if err != nil || !strings.Contains(s.Advice.SlowScrape, "tabbyAPI") {
		t.Errorf("tabbyapi Advice = %+v (%v)", s.Advice, err)
	}
}

// Every invalid fixture seeds the fuzzer; this keeps them parseable.
func TestInvalidFixturesParse(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/dialects/invalid/*.prom")
	if len(files) < 9 {
		t.Fatalf("%d invalid fixtures", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parse(t, string(b))
	}
}

// SGLang 0.4.9.post3 to 0.5.3 counted retractions in a gauge per
// scheduler, before the counter: data-parallel ranks add.
func TestSGLangRetractionGauge(t *testing.T) {
	body := `# TYPE sglang:total_retracted_reqs gauge
sglang:total_retracted_reqs{dp_rank="0",model_name="m",tp_rank="0"} 3.0
sglang:total_retracted_reqs{dp_rank="1",model_name="m",tp_rank="0"} 5.0
`
	s, err := Map(parse(t, body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Extra["num_preemptions_total"] != 3+5 {
		t.Errorf("num_preemptions_total = %v, want 8", s.Extra["num_preemptions_total"])
	}
}

// tabbyAPI's usage ratios are fractions: 13.7 cannot be one.
func TestTabbyRatioAboveOne(t *testing.T) {
	s, err := Map(parse(t, "# TYPE tabbyapi:kv_cache_usage_ratio gauge\ntabbyapi:kv_cache_usage_ratio 13.7\n# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Scalars["kv_cache_usage_ratio"]; ok || len(s.Invalid) != 1 || s.Invalid[0].Series != "tabbyapi:kv_cache_usage_ratio" {
		t.Errorf("Scalars %v, Invalid %q", s.Scalars, s.Invalid)
	}
}

// Buckets out of order are checked in le order.
func TestHistogramReasonUnsorted(t *testing.T) {
	b := func(le float64, n uint64) *dto.Bucket { return &dto.Bucket{UpperBound: &le, CumulativeCount: &n} }
	count := uint64(9)
	h := &dto.Histogram{SampleCount: &count, Bucket: []*dto.Bucket{b(2, 3), b(1, 5), b(math.NaN(), 1)}}
	if got, want := histogramReason(h), "cumulative bucket counts fall (le=1: 5, then le=2: 3)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	h = &dto.Histogram{SampleCount: &count, Bucket: []*dto.Bucket{b(2, 8), b(1, 5)}}
	if got := histogramReason(h); got != "" {
		t.Errorf("valid unsorted histogram: %q", got)
	}
}

// A server that counts cached prompt tokens is believed over a
// configuration that says prefix caching is off.
func TestVLLMCachedCounterOverConfig(t *testing.T) {
	body := fixture(t, "vllm-prefix-off.prom") + "# TYPE vllm:prompt_tokens_cached_total counter\nvllm:prompt_tokens_cached_total{engine=\"0\",model_name=\"m\"} 5000\n"
	s, err := Map(parse(t, body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Scalars["prompt_tokens_total"] != 40000-5000 || s.Scalars["cached_tokens_total"] != 5000 {
		t.Errorf("computed %v, cached %v", s.Scalars["prompt_tokens_total"], s.Scalars["cached_tokens_total"])
	}
}
