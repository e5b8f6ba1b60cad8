package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/histogram"
)

// The reference's bucket sets, written out again so the test checks them.
var (
	refLatency    = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	refTTFT       = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	refAcceptance = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
	ladder65536   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 65536}
)

// scenario is three generations on a hybrid model with offloading, a
// drafter on two of them, and a 65536-token context.
func scenario() *Metrics {
	m := New(Options{
		MaxSeqLen: 65536,
		Engine:    &fakeEngine{live: busyLive}, LiveTimeout: patient,
		StartTime: time.Unix(1700000000, 500_000_000),
	})
	m.RecordGeneration(Generation{PromptTokens: 1000, GeneratedTokens: 100, Queue: ms(500), Prefill: sec(2), Decode: sec(4)})
	m.RecordGeneration(Generation{PromptTokens: 1000, CachedTokens: 800, GeneratedTokens: 10, Prefill: ms(100), Decode: ms(200),
		Draft: &DraftTally{Accepted: 6, Rejected: 2}})
	m.RecordGeneration(Generation{PromptTokens: 40000, GeneratedTokens: 3000, Queue: ms(1250), Prefill: sec(8), Decode: sec(60),
		Draft: &DraftTally{Accepted: 1000, Rejected: 500}})
	return m
}

// scenarioScalars is every scalar series of scenario(), worked out by hand.
var scenarioScalars = overlay(busyWant, map[string]float64{
	"prompt_tokens_total":            1000 + 200 + 40000,
	"cached_tokens_total":            800,
	"prefix_cache_queries":           42000,
	"prefix_cache_hits":              800,
	"prompt_seconds_total":           10.1,
	"tokens_predicted_total":         3110,
	"tokens_predicted_seconds_total": 64.2,
	"requests_total":                 3,
	"n_tokens_max":                   40000,
	"tokens_predicted_max":           3000,
	"predicted_tokens_seconds":       3110 / 64.2,
	"process_start_time_seconds":     1700000000.5,

	"spec_decode_num_draft_tokens_total":    8 + 1500,
	"spec_decode_num_accepted_tokens_total": 1006,
	// max(10 − 6, 0) + max(3000 − 1000, 0)
	"spec_decode_num_decode_steps_total": 2004,
	"spec_decode_requests_total":         2,
	"spec_decode_draft_acceptance_rate":  1006.0 / 1508,
	"spec_decode_mean_accepted_length":   1006.0 / 2004,
	"spec_decode_tokens_per_step":        1 + 1006.0/2004,
})

// scenarioHists is every histogram of scenario(): the observations each
// generation makes, by hand, on the reference's bounds.
var scenarioHists = map[string]struct {
	bounds []float64
	obs    []float64
}{
	"request_queue_time_seconds":   {refLatency, []float64{0.5, 0, 1.25}},
	"request_prefill_time_seconds": {refLatency, []float64{2, 0.1, 8}},
	"request_decode_time_seconds":  {refLatency, []float64{4, 0.2, 60}},
	"time_to_first_token_seconds":  {refTTFT, []float64{2.5, 0.1, 9.25}},
	"e2e_request_latency_seconds":  {refLatency, []float64{6.5, 0.3, 69.25}},
	"request_prompt_tokens":        {ladder65536, []float64{1000, 1000, 40000}},
	"request_generation_tokens":    {ladder65536, []float64{100, 10, 3000}},
	"spec_decode_acceptance_rate":  {refAcceptance, []float64{0.75, 1000.0 / 1500}},
}

// checkScenario compares one reading of scenario() with the hand-worked
// figures: every series present, nothing else, every value equal.
func checkScenario(t *testing.T, scalars map[string]float64, hists map[string]*histogram.Histogram) {
	t.Helper()
	checkScalars(t, scalars, scenarioScalars)
	for name := range scalars {
		if _, ok := scenarioScalars[name]; !ok {
			t.Errorf("unexpected series %s", name)
		}
	}
	for name, want := range scenarioHists {
		h := hists[name]
		if h == nil {
			t.Errorf("%s: missing", name)
			continue
		}
		if got := bounds(h); !slices.Equal(got[:len(got)-1], want.bounds) {
			t.Errorf("%s: bounds %v, want %v", name, got, want.bounds)
			continue
		}
		sum := 0.0
		for _, o := range want.obs {
			sum += o
		}
		if h.Count != float64(len(want.obs)) || !near(h.Sum, sum) {
			t.Errorf("%s: count %v sum %v, want %d and %v", name, h.Count, h.Sum, len(want.obs), sum)
		}
		for _, b := range h.Buckets {
			n := 0.0
			for _, o := range want.obs {
				if o <= b.UpperBound {
					n++
				}
			}
			if b.Count != n {
				t.Errorf("%s_bucket{le=%g} = %v, want %v", name, b.UpperBound, b.Count, n)
			}
		}
	}
	for name := range hists {
		if _, ok := scenarioHists[name]; !ok {
			t.Errorf("unexpected histogram %s", name)
		}
	}
}

// TestRoundTripText: WriteText read back by the inspector's parser, and by
// its tabbyAPI dialect, reproduces every figure.
func TestRoundTripText(t *testing.T) {
	m := scenario()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := exposition.DetectFormat("", buf.Bytes())
	if err != nil || f != exposition.Text {
		t.Fatalf("DetectFormat = %v, %v; want text", f, err)
	}
	fams, err := exposition.Parse(buf.Bytes(), f)
	if err != nil {
		t.Fatal(err)
	}
	e := familiesOf(t, fams, "tabbyapi:")
	checkScenario(t, e.scalars, e.hists)

	s, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatalf("dialect.Map: %v", err)
	}
	if s.Dialect != "tabbyapi" {
		t.Errorf("dialect = %q, want tabbyapi", s.Dialect)
	}
	checkScenario(t, s.Scalars, s.Histograms)
}

// TestRoundTripOpenMetrics: the same through the handler in OpenMetrics.
// OpenMetrics names a counter's samples <name>_total, so the four counters
// whose names lack it go out as "unknown" (see docs/metrics.md); their
// values must still come back.
func TestRoundTripOpenMetrics(t *testing.T) {
	m := scenario()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")
	f, err := exposition.DetectFormat(ct, body)
	if err != nil || f != exposition.OpenMetrics {
		t.Fatalf("DetectFormat(%q) = %v, %v; want OpenMetrics", ct, f, err)
	}
	if !bytes.HasSuffix(body, []byte("# EOF\n")) {
		t.Errorf("OpenMetrics body does not end with # EOF")
	}
	fams, err := exposition.Parse(body, f)
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	e := familiesOf(t, fams, "tabbyapi:")
	checkScenario(t, e.scalars, e.hists)
	for _, name := range []string{"prefix_cache_queries", "prefix_cache_hits", "n_tokens_max", "tokens_predicted_max"} {
		if e.types[name] != dto.MetricType_UNTYPED {
			t.Errorf("%s: OpenMetrics type %v, want unknown", name, e.types[name])
		}
	}

	s, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatalf("dialect.Map: %v", err)
	}
	checkScenario(t, s.Scalars, s.Histograms)
}

// TestHandler checks negotiation, the start-time header, compression and
// methods.
func TestHandler(t *testing.T) {
	m := scenario()
	var text bytes.Buffer
	if err := m.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, accept, encoding string
		wantStatus                     int
		wantType, wantVersion          string
	}{
		{"plain GET", "GET", "", "", 200, "text/plain", "0.0.4"},
		{"Prometheus 2 scraper", "GET", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "", 200, "application/openmetrics-text", "1.0.0"},
		{"text only", "GET", "text/plain;version=0.0.4", "", 200, "text/plain", "0.0.4"},
		{"gzip", "GET", "", "gzip", 200, "text/plain", "0.0.4"},
		{"HEAD", "HEAD", "", "", 200, "text/plain", "0.0.4"},
		{"POST", "POST", "", "", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/metrics", nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			if tt.encoding != "" {
				req.Header.Set("Accept-Encoding", tt.encoding)
			}
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				if rec.Header().Get("Allow") != "GET, HEAD" {
					t.Errorf("Allow = %q", rec.Header().Get("Allow"))
				}
				return
			}
			if got := rec.Header().Get("Process-Start-Time-Unix"); got != "1700000000" {
				t.Errorf("Process-Start-Time-Unix = %q, want 1700000000", got)
			}
			mt, params, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
			if err != nil || mt != tt.wantType || params["version"] != tt.wantVersion {
				t.Errorf("Content-Type = %q, want %s version %s", rec.Header().Get("Content-Type"), tt.wantType, tt.wantVersion)
			}
			body := rec.Body.Bytes()
			if tt.encoding == "gzip" {
				if rec.Header().Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding = %q, want gzip", rec.Header().Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if tt.method == "GET" && tt.wantType == "text/plain" && string(body) != text.String() {
				t.Errorf("handler body differs from WriteText:\n%s\n---\n%s", body, text.String())
			}
		})
	}
}

// servedFamilies is how many families a server that knows every figure
// serves: all but prompt_tokens_all_total, which stands in for the prompt
// split only where the cached part is unknown.
const servedFamilies = numScalars + numHists - 1

// TestNoStandardCollectors: what is served is only the metric set.
func TestNoStandardCollectors(t *testing.T) {
	fams, done, err := gatherer{New(Options{})}.Gather()
	defer done()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		if strings.HasPrefix(mf.GetName(), "go_") || strings.HasPrefix(mf.GetName(), "process_") || strings.HasPrefix(mf.GetName(), "promhttp_") {
			t.Errorf("unexpected standard series %s", mf.GetName())
		}
	}
	if got, want := len(fams), servedFamilies; got != want {
		t.Errorf("%d families, want %d", got, want)
	}
}

// TestGatherMatchesRegistry: the prepared families the handler serves are
// exactly what a registry gathering *Metrics as a Collector holds, on the
// first use of a set and on its reuse after the token ladder changed.
func TestGatherMatchesRegistry(t *testing.T) {
	m := scenario()
	compareWithRegistry(t, m)
	m.ConfigureTokenBuckets(4096)
	m.RecordGeneration(Generation{PromptTokens: 3000, GeneratedTokens: 7})
	compareWithRegistry(t, m)
}

func compareWithRegistry(t *testing.T, m *Metrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	want, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, done, err := gatherer{m}.Gather()
	defer done()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d families, registry %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("family %d differs:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// TestPedantic: a pedantic registry finds every collected metric consistent
// with its description.
func TestPedantic(t *testing.T) {
	m := scenario()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(newCollector(m)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// justified reports whether a lint problem is one docs/metrics.md
// justifies: the colon every name carries (the reference's, llama.cpp's and
// vLLM's naming), and counters named without _total to keep llama.cpp's and
// vLLM's names.
func justified(metric, text string) bool {
	switch text {
	case "metric names should not contain ':'":
		return true
	case `counter metrics should have "_total" suffix`:
		name := metric[strings.IndexByte(metric, ':')+1:]
		return slices.Contains([]string{"prefix_cache_queries", "prefix_cache_hits", "n_tokens_max", "tokens_predicted_max"}, name)
	}
	return false
}

func TestLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(newCollector(scenario()))
	if err != nil {
		t.Fatal(err)
	}
	counters := 0
	for _, p := range problems {
		if !justified(p.Metric, p.Text) {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
		if strings.Contains(p.Text, "_total") {
			counters++
		}
	}
	if counters != 4 {
		t.Errorf("%d counters without _total flagged, want the 4 justified ones", counters)
	}
}

// TestPromtool runs `promtool check metrics` on the text exposition, as
// WriteText writes it and as the handler serves it (gzip-compressed, to
// VictoriaMetrics' Accept), when promtool is installed (CI installs it), and
// accepts only the justified problems. (promtool reads only the text
// format; the OpenMetrics the handler serves is read back by a real
// Prometheus in TestRealStoresScrape.)
func TestPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("INFERSCOPE_CI") != "" {
			t.Fatal("promtool not on PATH, and CI must not skip this (.ci/run installs Debian's prometheus)")
		}
		t.Skip("promtool not on PATH")
	}
	m := scenario()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"WriteText": buf.Bytes(),
		"Handler":   serve(t, m.Handler(), "/metrics", acceptOf("VictoriaMetrics"), "gzip").body,
	} {
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, _ := cmd.CombinedOutput() // exits non-zero on the justified problems too
		line := regexp.MustCompile(`^(\S+) (.+)$`)
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l == "" {
				continue
			}
			mm := line.FindStringSubmatch(l)
			if mm == nil || !justified(mm[1], mm[2]) {
				t.Errorf("%s: promtool: %s", name, l)
			}
			n++
		}
		if want := servedFamilies + 4; n != want {
			t.Errorf("%s: promtool reported %d problems, want %d (one colon per series, four counter names)\n%s", name, n, want, out)
		}
	}
}

// TestGolden pins the text exposition of scenario(): names, help texts,
// types, ordering and number formatting. The figures in it are checked
// independently by TestRoundTripText; run with -update to rewrite.
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := scenario().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "scenario.golden", buf.Bytes())
}

// TestRegistryAddsCallerCollectors: what the caller registers is served
// with the set, by the handler and WriteText alike.
func TestRegistryAddsCallerCollectors(t *testing.T) {
	m := New(Options{})
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "app_restarts_total", Help: "Restarts."})
	extra.Add(2)
	m.Registry().MustRegister(extra)
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(buf.Bytes(), exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range fams {
		if mf.GetName() == "app_restarts_total" {
			found = mf.GetMetric()[0].GetCounter().GetValue() == 2
		}
	}
	if !found || len(fams) != servedFamilies+1 {
		t.Errorf("app_restarts_total 2 not served with the %d series of the set:\n%s", servedFamilies, buf.String())
	}
}

// TestCallerRegistry: *Metrics registered on the caller's own registry,
// beside the caller's counter, serves through that registry's promhttp
// handler exactly the text Handler serves (in text and in OpenMetrics), plus
// the caller's series; and a stuck engine is waited on once, as through
// Handler.
func TestCallerRegistry(t *testing.T) {
	m := scenario()
	reg := prometheus.NewPedanticRegistry()
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "zz_app_restarts_total", Help: "Restarts."})
	own.Add(2)
	reg.MustRegister(own, m)
	theirs := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, EnableOpenMetricsTextCreatedSamples: true})
	for _, accept := range []string{"", "application/openmetrics-text; version=1.0.0; charset=utf-8"} {
		get := func(h http.Handler) string {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Body.String()
		}
		ours, got := get(m.Handler()), get(theirs)
		ownText := "# HELP zz_app_restarts_total Restarts.\n# TYPE zz_app_restarts_total counter\nzz_app_restarts_total 2\n"
		if accept != "" {
			// OpenMetrics: the counter's own lines, with its created time,
			// go just before # EOF.
			ours = strings.TrimSuffix(ours, "# EOF\n")
			i := strings.Index(got, "# HELP zz_app_restarts ")
			j := strings.Index(got, "# EOF\n")
			if i < 0 || j < i {
				t.Fatalf("OpenMetrics: the caller's counter is missing:\n%s", got)
			}
			ownText = got[i:j]
			if !strings.Contains(ownText, "zz_app_restarts_total 2.0\n") {
				t.Errorf("OpenMetrics: the caller's counter reads %q", ownText)
			}
			got = got[:i]
		} else if !strings.HasSuffix(got, ownText) {
			t.Fatalf("the caller's counter is missing:\n%s", got)
		} else {
			got = strings.TrimSuffix(got, ownText)
		}
		if got != ours {
			t.Errorf("Accept %q: the caller's registry serves the set differently from Handler:\n%s", accept, golden.Diff(ours, got))
		}
	}

	// A stuck engine through the caller's registry: the first gather waits
	// for the call it starts, the next answers with the last good reading
	// and starts no other call.
	eng := &fakeEngine{live: busyLive}
	m = New(Options{Engine: eng, LiveTimeout: 300 * time.Millisecond})
	reg = prometheus.NewRegistry()
	reg.MustRegister(m)
	gate := make(chan struct{})
	defer close(gate)
	eng.set(func(e *fakeEngine) { e.gate = gate })
	for i, wantFails := range []float64{1, 2} {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		e := familiesOf(t, fams, "tabbyapi:")
		checkScalars(t, e.scalars, map[string]float64{"live_state_failures_total": wantFails, "requests_processing": 0})
		if e.scalars["live_state_age_seconds"] <= 0 {
			t.Errorf("gather %d: live_state_age_seconds = %v, want the age of the exporter's idle reading", i, e.scalars["live_state_age_seconds"])
		}
	}
	eng.mu.Lock()
	calls := eng.calls
	eng.mu.Unlock()
	if calls != 1 {
		t.Errorf("Live called %d times, want 1: a gather must not start a call while one is outstanding", calls)
	}
}
