package exporter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/golden"
)

// The cross-check against the reference: tabbyAPI's common/metrics.py as
// of PR #443 (commit 5b73894). testdata/reference holds the inputs
// (cases.json), our driver that feeds them to the reference (driver.py)
// and the reference's output (reference.golden); README.md there says how
// the golden was produced. The reference's code is not in this repository:
// to run it, set TABBYAPI_METRICS_PY to that file.
const (
	refDir    = "testdata/reference"
	refEnv    = "TABBYAPI_METRICS_PY"
	refSHA256 = "d495326eb8679b34745917f4565db944e6af2eba54e096a77df6d7e146ef9fea"
)

type refCase struct {
	Name  string    `json:"name"`
	Start float64   `json:"start"`
	Steps []refStep `json:"steps"`
	Live  *Live     `json:"live"`
}

type refStep struct {
	Configure *int    `json:"configure"`
	Record    *refGen `json:"record"`
}

type refGen struct {
	Prompt, Cached, Generated int
	Queue, Prefill, Decode    float64
	Draft                     *DraftTally
	Repeat                    int
}

func loadCases(t testing.TB) []refCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(refDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []refCase }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	return f.Cases
}

// secs turns the cases' seconds into a Duration, to the nanosecond.
func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// metricsFor applies a case to a new Metrics, as driver.py applies it to
// the reference.
func metricsFor(c refCase) *Metrics {
	whole, frac := math.Modf(c.Start)
	opts := Options{StartTime: time.Unix(int64(whole), int64(math.Round(frac*1e9)))}
	if c.Live != nil {
		opts.Engine, opts.LiveTimeout = &fakeEngine{live: *c.Live}, patient
	}
	m := New(opts)
	for _, s := range c.Steps {
		if s.Configure != nil {
			m.ConfigureTokenBuckets(*s.Configure)
			continue
		}
		g := s.Record
		gen := Generation{PromptTokens: g.Prompt, CachedTokens: g.Cached, GeneratedTokens: g.Generated,
			Queue: secs(g.Queue), Prefill: secs(g.Prefill), Decode: secs(g.Decode), Draft: g.Draft}
		for range max(g.Repeat, 1) {
			m.RecordGeneration(gen)
		}
	}
	return m
}

// splitCases splits the driver's output into each case's exposition.
func splitCases(t testing.TB, out []byte) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	for _, part := range bytes.Split(out, []byte("# CASE "))[1:] {
		name, body, _ := bytes.Cut(part, []byte("\n"))
		cases[string(name)] = body
	}
	return cases
}

func parseText(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing: %v\n%s", err, body)
	}
	return fams
}

// Series the exporter adds to the reference's: the age and failures of
// the live reading (the reference reads live state on its event loop and
// cannot serve a stale one).
var exporterOnly = []string{"live_state_age_seconds", "live_state_failures_total"}

// float sums that may differ in the last digits: the reference adds float
// seconds in order, the exporter adds whole nanoseconds and divides once.
// Everything else must be equal exactly.
var secondsSums = []string{
	"prompt_seconds_total", "tokens_predicted_seconds_total", "predicted_tokens_seconds",
	"request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds",
	"time_to_first_token_seconds", "e2e_request_latency_seconds",
}

// compareWithReference reports every difference between the reference's
// exposition and ours: a family missing on either side, a type or help
// text, a value, a bucket.
func compareWithReference(t *testing.T, ref, got map[string]*dto.MetricFamily, prefix string) {
	t.Helper()
	names := make([]string, 0, len(ref))
	for n := range ref {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		r, g := ref[n], got[n]
		short := strings.TrimPrefix(n, prefix)
		if g == nil {
			t.Errorf("%s: published by the reference, missing here", n)
			continue
		}
		if r.GetType() != g.GetType() {
			t.Errorf("%s: type %v, reference %v", n, g.GetType(), r.GetType())
			continue
		}
		if r.GetHelp() != g.GetHelp() {
			t.Errorf("%s: help %q, reference %q", n, g.GetHelp(), r.GetHelp())
		}
		rm, gm := r.GetMetric()[0], g.GetMetric()[0]
		eq := func(what string, got, want float64) {
			if got == want {
				return
			}
			if slices.Contains(secondsSums, short) && math.Abs(got-want) <= 1e-12*math.Abs(want) {
				t.Logf("%s%s = %v, reference %v: equal within float rounding", n, what, got, want)
				return
			}
			t.Errorf("%s%s = %v, reference %v", n, what, got, want)
		}
		switch r.GetType() {
		case dto.MetricType_COUNTER:
			eq("", gm.GetCounter().GetValue(), rm.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			eq("", gm.GetGauge().GetValue(), rm.GetGauge().GetValue())
		case dto.MetricType_HISTOGRAM:
			rh, gh := rm.GetHistogram(), gm.GetHistogram()
			eq("_count", float64(gh.GetSampleCount()), float64(rh.GetSampleCount()))
			eq("_sum", gh.GetSampleSum(), rh.GetSampleSum())
			rb, gb := rh.GetBucket(), gh.GetBucket()
			if len(rb) != len(gb) {
				t.Errorf("%s: %d buckets, reference %d", n, len(gb), len(rb))
				continue
			}
			for i := range rb {
				if rb[i].GetUpperBound() != gb[i].GetUpperBound() {
					t.Errorf("%s: bucket %d le=%v, reference le=%v", n, i, gb[i].GetUpperBound(), rb[i].GetUpperBound())
					continue
				}
				if rb[i].GetCumulativeCount() != gb[i].GetCumulativeCount() {
					t.Errorf("%s_bucket{le=%q} = %d, reference %d", n, strconv.FormatFloat(rb[i].GetUpperBound(), 'g', -1, 64),
						gb[i].GetCumulativeCount(), rb[i].GetCumulativeCount())
				}
			}
		default:
			t.Errorf("%s: unexpected type %v", n, r.GetType())
		}
	}
	for n := range got {
		if ref[n] == nil && !slices.Contains(exporterOnly, strings.TrimPrefix(n, prefix)) {
			t.Errorf("%s: published here, not by the reference", n)
		}
	}
}

// TestMatchesReference: on every case, every series the reference
// publishes is published here with the same type, help text and value,
// against the reference's recorded output.
func TestMatchesReference(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join(refDir, "reference.golden"))
	if err != nil {
		t.Fatal(err)
	}
	refs := splitCases(t, golden)
	cases := loadCases(t)
	if len(refs) != len(cases) {
		t.Fatalf("reference.golden has %d cases, cases.json %d: rerun TestReferenceGolden with -update", len(refs), len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ref, ok := refs[c.Name]
			if !ok {
				t.Fatalf("no case %q in reference.golden", c.Name)
			}
			var buf bytes.Buffer
			if err := metricsFor(c).WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			compareWithReference(t, parseText(t, ref), parseText(t, buf.Bytes()), "tabbyapi:")
		})
	}
}

// referencePath returns the reference module and python3, or skips.
func referencePath(t testing.TB) (py, module string) {
	t.Helper()
	module = os.Getenv(refEnv)
	if module == "" {
		t.Skipf("%s not set: point it at common/metrics.py of tabbyAPI commit 5b73894 (PR #443) to run the reference", refEnv)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	f, err := os.Open(module)
	if err != nil {
		t.Fatalf("%s: %v", refEnv, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != refSHA256 {
		t.Fatalf("%s is %s with sha256 %s; the recorded reference is commit 5b73894's, sha256 %s", refEnv, module, sum, refSHA256)
	}
	return py, module
}

// TestReferenceGolden runs the reference on the cases and checks its
// output is the recorded golden (with -update, records it). It runs only
// where python3 and the reference module are available.
func TestReferenceGolden(t *testing.T) {
	py, module := referencePath(t)
	cmd := exec.Command(py, filepath.Join(refDir, "driver.py"), "render", module, filepath.Join(refDir, "cases.json"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("driver.py: %v\n%s", err, stderr.String())
	}
	golden.Check(t, "reference/reference.golden", out)
}

// BenchmarkReferenceRender times the reference's render_prometheus on the
// bench case (the state BenchmarkWriteText scrapes), in a python3 process
// started by the benchmark, and reports it as ns/op beside the exporter's
// figures, so both are measured in the same run.
func BenchmarkReferenceRender(b *testing.B) {
	py, module := referencePath(b)
	cmd := exec.Command(py, filepath.Join(refDir, "driver.py"), "bench", module, filepath.Join(refDir, "cases.json"), "bench", strconv.Itoa(b.N))
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("driver.py: %v", err)
	}
	var ns, size, lines float64
	if _, err := fmt.Sscan(string(out), &ns, &size, &lines); err != nil {
		b.Fatalf("driver.py printed %q: %v", out, err)
	}
	b.ReportMetric(ns, "ns/op")
	b.ReportMetric(size, "bytes/scrape")
	b.ReportMetric(lines, "lines/scrape")
}
