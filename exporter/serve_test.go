package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/golden"
)

// scrapeAccepts are Accept headers scrapers send: every default of a real
// Prometheus since 2.42 (the one this machine runs), its variants by
// configuration, and other clients'.
var scrapeAccepts = []struct{ name, accept string }{
	{"none (Go's http client)", ""},
	{"curl", "*/*"},
	// prometheus/prometheus v2.42.0, scrape/scrape.go: scrapeAcceptHeader
	// and scrapeAcceptHeaderWithProtobuf (native histograms on).
	{"Prometheus 2.42", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
	{"Prometheus 2.42 protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
	// v2.55.0, scrape/scrape.go acceptHeader over config.DefaultScrapeProtocols
	// with legacy validation (the 2.x default).
	{"Prometheus 2.55", "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	// v3.0.0, the same with UTF-8 validation (the 3.0 default) and with
	// legacy validation: escaping=allow-utf-8 after every protocol, twice
	// after text/plain 1.0.0, whose header carried it already.
	{"Prometheus 3.0", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;escaping=allow-utf-8;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;escaping=allow-utf-8;q=0.3,*/*;q=0.2"},
	{"Prometheus 3.0 legacy names", "application/openmetrics-text;version=1.0.0;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	// main at d15adb9 (3.x since v3.4.0), scrape/scrape.go acceptHeader:
	// the escaping scheme after OpenMetrics 1.0.0 and text 1.0.0 only;
	// allow-utf-8 by default, underscores with legacy validation, dots or
	// values when metric_name_escaping_scheme says so.
	{"Prometheus 3", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	{"Prometheus 3 underscores", "application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=underscores;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	{"Prometheus 3 dots", "application/openmetrics-text;version=1.0.0;escaping=dots;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=dots;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	{"Prometheus 3 values", "application/openmetrics-text;version=1.0.0;escaping=values;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=values;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
	// config.DefaultProtoFirstScrapeProtocols (scrape_native_histograms).
	{"Prometheus 3 protobuf first", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"},
	// scrape_protocols set to one protocol each.
	{"Prometheus 3 OpenMetrics 1.0.0 only", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,*/*;q=0.5"},
	{"Prometheus 3 OpenMetrics 0.0.1 only", "application/openmetrics-text;version=0.0.1;q=0.6,*/*;q=0.5"},
	{"Prometheus 3 text 1.0.0 only", "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.6,*/*;q=0.5"},
	{"Prometheus 3 text 0.0.4 only", "text/plain;version=0.0.4;q=0.6,*/*;q=0.5"},
	// VictoriaMetrics' promscrape, as Debian's 1.79.5 sends it
	// (TestRealStoresScrape records it).
	{"VictoriaMetrics", "text/plain;version=0.0.4;q=1,*/*;q=0.1"},
	// Others: the content types themselves, as clients copy them.
	{"OpenMetrics content type", "application/openmetrics-text; version=1.0.0; charset=utf-8"},
	{"text content type", "text/plain; version=0.0.4; charset=utf-8"},
	{"text, values escaping", "text/plain;version=0.0.4;escaping=values"},
	{"OpenMetrics 2.0", "application/openmetrics-text;version=2.0.0;escaping=allow-utf-8"},
	{"browser", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
	{"protobuf text", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"},
}

// acceptOf is the Accept header of scrapeAccepts named so.
func acceptOf(name string) string {
	for _, a := range scrapeAccepts {
		if a.name == name {
			return a.accept
		}
	}
	panic("no Accept header named " + name)
}

// scrapeEncodings are Accept-Encoding headers: Prometheus sends "gzip", or
// "identity" with enable_compression: false.
var scrapeEncodings = []string{"", "gzip", "identity", "gzip, deflate, br, zstd", "zstd", "gzip;q=0", "*", "gzip, *", "br"}

// served is one response, its body decompressed.
type served struct {
	status int
	header http.Header
	body   []byte
}

func serve(t testing.TB, h http.Handler, target, accept string, encodings ...string) served {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for _, e := range encodings {
		req.Header.Add("Accept-Encoding", e)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	s := served{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if s.header.Get("Content-Encoding") == "gzip" {
		s.body = gunzip(t, s.body)
	}
	return s
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	return out
}

// servedHeaders are the headers either path sets.
var servedHeaders = []string{"Content-Type", "Content-Encoding", "Vary", "Process-Start-Time-Unix", "Allow"}

// sameAnswer reports how the handler's answer differs from the general
// path's: status, headers and body once decompressed must be equal.
func sameAnswer(got, want served) string {
	var diffs []string
	if got.status != want.status {
		diffs = append(diffs, fmt.Sprintf("status %d, general path %d", got.status, want.status))
	}
	for _, h := range servedHeaders {
		if g, w := got.header.Values(h), want.header.Values(h); !slices.Equal(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s %q, general path %q", h, g, w))
		}
	}
	if !bytes.Equal(got.body, want.body) {
		diffs = append(diffs, "body:\n"+golden.Diff(string(want.body), string(got.body)))
	}
	return strings.Join(diffs, "\n")
}

// checkServed holds the handler to the general path (promhttp over the
// prepared families, the handler before it wrote text itself) for every
// Accept header above, each with one of the Accept-Encoding headers in
// turn (every pair with all). It scrapes m twice per pair, so m's series
// must not move between scrapes (an engine that answers in time, nothing
// recording).
func checkServed(t *testing.T, m *Metrics, all bool) {
	t.Helper()
	fast := 0
	for i, a := range scrapeAccepts {
		for j, e := range scrapeEncodings {
			if !all && j != i%len(scrapeEncodings) {
				continue
			}
			got, want := serve(t, m.Handler(), "/metrics", a.accept, e), serve(t, m.general, "/metrics", a.accept, e)
			if d := sameAnswer(got, want); d != "" {
				t.Errorf("%s, Accept-Encoding %q:\n%s", a.name, e, d)
			}
			if m.layoutFor(expfmt.Format(got.header.Get("Content-Type"))) != nil {
				fast++
			}
		}
	}
	if fast == 0 {
		t.Error("no answer was text or OpenMetrics")
	}
}

// TestServedMatchesGeneral: the handler answers every scraper exactly as
// the general path does, in text and OpenMetrics alike, on every state the
// tests build (the simulator's are in served_sim_test.go), every pair of
// Accept and Accept-Encoding headers on the scenario: the reference
// cases, the scenario, a namespace, models, unknown figures, a ladder
// change, and the caller's collectors, including names only UTF-8 allows,
// a family the set serves already, a collector that fails, exemplars, a
// summary and a native histogram.
func TestServedMatchesGeneral(t *testing.T) {
	states := map[string]func() *Metrics{
		"scenario": scenario,
		"namespace": func() *Metrics {
			m := New(Options{Namespace: "my-srv", Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
			m.RecordGeneration(benchGen)
			return m
		},
		"idle": func() *Metrics { return New(Options{}) },
		"ladder change after a scrape": func() *Metrics {
			m := scenario()
			serve(t, m.general, "/metrics", "application/openmetrics-text;version=1.0.0")
			m.ConfigureTokenBuckets(math.MaxInt)
			m.RecordGeneration(Generation{PromptTokens: math.MaxInt, GeneratedTokens: 999_999, Decode: 1})
			return m
		},
		"models": func() *Metrics {
			m := New(Options{PerModel: true, MaxModels: 3, Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
			for _, model := range []string{"llama", `a"b\c` + "\nd", "ünïcode", "qwen", "more"} {
				g := benchGen
				g.Model = model
				m.RecordGeneration(g)
			}
			m.RecordGeneration(Generation{Model: "llama", Unknown: UnknownDecode | UnknownDraft, PromptTokens: 5_000_000})
			return m
		},
		"proxy": func() *Metrics {
			m := New(Options{PerModel: true, Unknown: UnknownRunning | UnknownKVCache | UnknownOffload | UnknownRecurrent | UnknownQueue})
			m.RecordGeneration(Generation{Model: "m", PromptTokens: 10, GeneratedTokens: 3, TTFT: time.Second, E2E: 3 * time.Second,
				Unknown: UnknownCached | UnknownPrefill | UnknownDecode | UnknownDraft})
			return m
		},
		"caller's collectors": func() *Metrics {
			m := scenario()
			first := prometheus.NewCounter(prometheus.CounterOpts{Name: "aaa_first_total", Help: "Sorts before the set."})
			first.Add(1.5)
			mid := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tabbyapi:m_between", Help: "Sorts \"inside\" the set."}, []string{"k"})
			mid.WithLabelValues(`a"b\c`).Set(-1)
			last := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "zzz_last", Help: "Sorts after the set.", Buckets: []float64{1, 2}})
			last.Observe(1.5)
			utf8 := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "app.requests_total", Help: "A name only UTF-8 allows."}, []string{"route.name"})
			utf8.WithLabelValues("/a").Inc()
			ex := prometheus.NewCounter(prometheus.CounterOpts{Name: "app_exemplars_total", Help: "With an exemplar."})
			ex.(prometheus.ExemplarAdder).AddWithExemplar(2, prometheus.Labels{"trace_id": "abc"})
			sum := prometheus.NewSummary(prometheus.SummaryOpts{Name: "app_summary_seconds", Help: "A summary.", Objectives: map[float64]float64{0.5: 0.05}})
			sum.Observe(0.25)
			native := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "app_native_seconds", Help: "Native only.", NativeHistogramBucketFactor: 1.1})
			native.Observe(0.5)
			m.Registry().MustRegister(first, mid, last, utf8, ex, sum, native)
			return m
		},
		"caller's family the set serves": func() *Metrics {
			m := scenario()
			dup := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tabbyapi:requests_total", Help: "Taken."})
			other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tabbyapi:z_mine", Help: "Served."})
			m.Registry().MustRegister(dup, other)
			return m
		},
		"caller's collector fails": func() *Metrics {
			m := scenario()
			ok := prometheus.NewGauge(prometheus.GaugeOpts{Name: "app_ok", Help: "Served."})
			m.Registry().MustRegister(ok, failing{})
			return m
		},
	}
	for _, c := range loadCases(t) {
		states["reference case "+c.Name] = func() *Metrics { return metricsFor(c) }
	}
	for name, build := range states {
		t.Run(name, func(t *testing.T) { checkServed(t, build(), name == "scenario") })
	}
}

// failing is a collector whose metric cannot be written: the registry's
// Gather returns the rest with an error.
type failing struct{}

var failingDesc = prometheus.NewDesc("app_failing", "Fails.", nil, nil)

func (failing) Describe(ch chan<- *prometheus.Desc) { ch <- failingDesc }
func (failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(failingDesc, fmt.Errorf("broken"))
}

// TestServedRoutes: text and OpenMetrics are written by the handler, the
// rest by the general path, which serves what the handler does not.
func TestServedRoutes(t *testing.T) {
	m := scenario()
	for _, c := range []struct {
		name, target, accept, encoding string
		wantType                       string
	}{
		{"text", "/metrics", "", "gzip", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
		{"Prometheus 3", "/metrics", acceptOf("Prometheus 3"), "gzip", "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
		{"protobuf", "/metrics", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"},
		{"name[]", "/metrics?name[]=tabbyapi:requests_total", "", "", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, want := serve(t, m.Handler(), c.target, c.accept, c.encoding), serve(t, m.general, c.target, c.accept, c.encoding)
			if d := sameAnswer(got, want); d != "" {
				t.Error(d)
			}
			if ct := got.header.Get("Content-Type"); ct != c.wantType {
				t.Errorf("Content-Type %q, want %q", ct, c.wantType)
			}
		})
	}
	// name[] keeps only the families named.
	got := serve(t, m.Handler(), "/metrics?name[]=tabbyapi:requests_total", "")
	if want := "# HELP tabbyapi:requests_total Number of finished generation requests.\n# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n"; string(got.body) != want {
		t.Errorf("name[] filter: %q, want %q", got.body, want)
	}
}

// TestNegotiateEncoding: the content encoding chosen for Accept-Encoding
// headers, worked out by hand from gddo's rule (the highest quality an
// offer gets, the earlier offer on a tie, identity at 0) and the way it
// reads a header. FuzzNegotiation checks it against promhttp itself.
func TestNegotiateEncoding(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  encoding
	}{
		{nil, encIdentity},
		{[]string{""}, encIdentity},
		{[]string{"gzip"}, encGzip},
		{[]string{"identity"}, encIdentity},
		{[]string{"zstd"}, encZstd},
		{[]string{"gzip, zstd"}, encGzip},                                // a tie: the earlier offer
		{[]string{"gzip;q=0.5, zstd"}, encZstd},                          // zstd's 1 beats gzip's 0.5
		{[]string{"gzip;q=0"}, encIdentity},                              // gzip refused, identity not named
		{[]string{"*"}, encIdentity},                                     // "*" names identity first
		{[]string{"gzip, *"}, encIdentity},                               // likewise
		{[]string{"*;q=0.5, gzip"}, encGzip},                             // gzip's 1 beats "*"'s 0.5
		{[]string{"identity;q=0, gzip;q=0"}, encIdentity},                // the best quality is 0
		{[]string{"GZIP"}, encIdentity},                                  // names match case-sensitively
		{[]string{"br, gzip;q=0.8"}, encGzip},                            //
		{[]string{"gzip;level=9"}, encIdentity},                          // a parameter other than q drops the clause and the rest
		{[]string{"gzip;q=2"}, encIdentity},                              // a quality starting with neither 0 nor 1
		{[]string{"gzip;q=1.5"}, encGzip},                                // read as 1.5
		{[]string{"gzip;q=0.5x, zstd"}, encGzip},                         // "x" ends the line after the clause
		{[]string{"gzip ; q=0.3 , zstd;q=0.2"}, encGzip},                 // spaces around ; and ,
		{[]string{"deflate", "gzip"}, encGzip},                           // every line counts
		{[]string{"gzip;q=0." + strings.Repeat("0", 20) + "9"}, encGzip}, // 10^21 wraps to another positive int: a tiny quality
		{[]string{"gzip;q=1." + strings.Repeat("0", 64)}, encIdentity},   // 10^64 wraps to 0: 0/0, a NaN quality, never the best
		{[]string{"gzip;q=0." + strings.Repeat("0", 63) + "1"}, encGzip}, // 1/0: an infinite quality
		{[]string{"x/y, gzip"}, encGzip},                                 // a slash is part of a token
		{[]string{", gzip"}, encIdentity},                                // an empty first token ends the line
	} {
		h := http.Header{}
		for _, l := range c.lines {
			h.Add("Accept-Encoding", l)
		}
		if got := negotiateEncoding(h); got != c.want {
			t.Errorf("Accept-Encoding %q: %s, want %s", c.lines, offers[got], offers[c.want])
		}
	}
}

// FuzzNegotiation: for any Accept and Accept-Encoding headers, the handler
// answers as the general path does (status, headers, body decompressed):
// its own reading of Accept-Encoding agrees with promhttp's, and so does
// everything it writes. The seeds are scrapeAccepts × a few encodings.
func FuzzNegotiation(f *testing.F) {
	for i, a := range scrapeAccepts {
		f.Add(a.accept, scrapeEncodings[i%len(scrapeEncodings)], "")
	}
	f.Add("text/plain;q=0.5,application/openmetrics-text;q=0.5", "gzip;q=0.5, identity;q=0.5", "zstd;q=0.1")
	f.Add("application/openmetrics-text;version=0.0.1;escaping=dots", "gzip;q=0.000000000000000000009", "*;q=1.")
	f.Add("*/*;escaping=allow-utf-8", "gzip;q=1.0000000000000000000000000", "")
	m := scenario()
	f.Fuzz(func(t *testing.T, accept, enc1, enc2 string) {
		encodings := []string{enc1}
		if enc2 != "" {
			encodings = append(encodings, enc2)
		}
		got, want := serve(t, m.Handler(), "/metrics", accept, encodings...), serve(t, m.general, "/metrics", accept, encodings...)
		if d := sameAnswer(got, want); d != "" {
			t.Errorf("Accept %q, Accept-Encoding %q:\n%s", accept, encodings, d)
		}
	})
}

// TestOpenMetricsFloat: numbers are written as expfmt's OpenMetrics
// encoder writes them, around the whole-number shortcut's edge at 10^6
// too.
func TestOpenMetricsFloat(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, 1e-7, 999999, 999999.5, 1e6, 1e6 + 1, 1_200_000, 123456,
		1 << 53, 1<<53 + 2, 1e20, 1e21, 123456789012, math.MaxUint64, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), -5, -1e6, 0.1 + 0.2, 1767225600.25, 1767225600, 18853396480}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		values = append(values, float64(r.IntN(3_000_000)), r.Float64()*math.Pow(10, float64(r.IntN(40)-20)))
	}
	for _, v := range values {
		mf := &dto.MetricFamily{Name: proto.String("x"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToOpenMetrics(&want, mf); err != nil {
			t.Fatal(err)
		}
		got := append([]byte("# TYPE x gauge\nx "), appendOMFloat(nil, v)...)
		got = append(got, '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendOMFloat(%v) = %q, expfmt %q", v, got, want.Bytes())
		}
	}
}

// TestServeAllocations: a scrape through the handler, in OpenMetrics and
// gzip-compressed as Prometheus asks, allocates no more with the longest
// token ladder than with the shortest, and at most 60 times (the reading's
// 8, net/http's headers, the negotiation). Counted, not timed.
func TestServeAllocations(t *testing.T) {
	accept := acceptOf("Prometheus 3")
	allocs := func(maxSeqLen int) float64 {
		m := New(Options{MaxSeqLen: maxSeqLen, Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
		m.RecordGeneration(benchGen)
		h := m.Handler()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("Accept-Encoding", "gzip")
		w := &discardResponse{}
		h.ServeHTTP(w, req) // builds the ladder's text once
		return testing.AllocsPerRun(200, func() {
			clear(w.h)
			h.ServeHTTP(w, req)
		})
	}
	short, long := allocs(1), allocs(math.MaxInt)
	// A writer or buffer allocated per bound would be 57 more; under the
	// race detector a dropped pooled buffer regrows to the longer text.
	slack := 0.5
	if raceEnabled {
		slack = 2
	}
	if long > short+slack {
		t.Errorf("a scrape through the handler allocates %.1f times with 58-bound token histograms, %.1f with 1-bound ones", long, short)
	}
	if long > 60 {
		t.Errorf("a scrape through the handler allocates %.1f times, want at most 60", long)
	}
	t.Logf("allocations per scrape through the handler: %.1f (1-bound ladder), %.1f (58-bound ladder)", short, long)
}

// discardResponse is a ResponseWriter that keeps its headers and drops the
// body, so a benchmark counts the handler's own work.
type discardResponse struct{ h http.Header }

func (w *discardResponse) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (w *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardResponse) WriteHeader(int)             {}

// TestUnknownStart: a source whose clock is not the wall clock publishes no
// start, in the series or the header, on both paths alike.
func TestUnknownStart(t *testing.T) {
	m := New(Options{Unknown: UnknownStart, StartTime: time.Unix(1_700_000_000, 0)})
	checkServed(t, m, true)
	for _, a := range scrapeAccepts {
		got := serve(t, m.Handler(), "/metrics", a.accept, "")
		if h := got.header.Get("Process-Start-Time-Unix"); h != "" {
			t.Errorf("%s: Process-Start-Time-Unix %q", a.name, h)
		}
		if bytes.Contains(got.body, []byte("process_start_time_seconds")) {
			t.Errorf("%s: the start is published:\n%s", a.name, got.body)
		}
	}
	// Without it, the start is in both.
	m = New(Options{StartTime: time.Unix(1_700_000_000, 0)})
	got := serve(t, m.Handler(), "/metrics", "", "")
	if got.header.Get("Process-Start-Time-Unix") != "1700000000" || !bytes.Contains(got.body, []byte("tabbyapi:process_start_time_seconds 1.7e+09")) {
		t.Errorf("the start is missing: %q\n%s", got.header.Get("Process-Start-Time-Unix"), got.body)
	}
}
