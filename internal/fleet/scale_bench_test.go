package fleet

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/storetest"
)

// The scale fixture: 200 vLLM pods, each one engine of a current vLLM
// (every family of testdata/dialects/vllm-new.prom for one model and
// engine: 371 series), scraped every 30 s for 75 minutes.
const (
	scalePods     = 200
	scaleInterval = 30 * time.Second
	scaleSpan     = 75 * time.Minute
)

var scaleT0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// scaleData returns a Prometheus data directory holding the scale
// fixture, backfilled once and kept under the system's temporary
// directory for later runs (remove it to rebuild).
func scaleData(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "inferscope-fleet-scale-v1")
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return dir
	}
	promtool := storetest.Need(b, "promtool", "prometheus")
	os.RemoveAll(dir)
	om := filepath.Join(b.TempDir(), "scale.om")
	if err := writeScale(om); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, dir).CombinedOutput()
	if err != nil {
		b.Fatalf("promtool: %v\n%s", err, out)
	}
	b.Logf("backfilled %d pods in %v", scalePods, time.Since(start))
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// templateFamilies are one engine's families of a current vLLM.
func templateFamilies() ([]*dto.MetricFamily, error) {
	body, err := os.ReadFile("../../testdata/dialects/vllm-new.prom")
	if err != nil {
		return nil, err
	}
	fams, err := exposition.Parse(body, exposition.Text)
	if err != nil {
		return nil, err
	}
	var model string
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model_name" && (model == "" || l.GetValue() < model) {
					model = l.GetValue()
				}
			}
		}
	}
	keep := func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if (l.GetName() == "model_name" && l.GetValue() != model) || (l.GetName() == "engine" && l.GetValue() != "0") {
				return false
			}
		}
		return true
	}
	var out []*dto.MetricFamily
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "vllm:") {
			continue
		}
		c := &dto.MetricFamily{Name: f.Name, Type: f.Type, Help: f.Help}
		for _, m := range f.GetMetric() {
			if keep(m) {
				c.Metric = append(c.Metric, m)
			}
		}
		if len(c.Metric) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// writeScale writes the scale fixture: counters and histograms grow
// from their template values, gauges keep them.
func writeScale(path string) error {
	fams, err := templateFamilies()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	steps := int(scaleSpan / scaleInterval)
	ts := make([]string, steps+1)
	for k := range ts {
		ts[k] = strconv.FormatInt(scaleT0.Add(time.Duration(k)*scaleInterval).Unix(), 10)
	}
	val := func(v float64, k, pod int, grows bool) string {
		if grows {
			v = v * (1 + float64(k)/float64(steps)) * (1 + float64(pod%7)/10)
		}
		return strconv.FormatFloat(v, 'g', 10, 64)
	}
	for _, fam := range fams {
		name := strings.TrimSuffix(fam.GetName(), "_total")
		typ := strings.ToLower(fam.GetType().String())
		if typ == "untyped" {
			typ = "unknown"
		}
		fmt.Fprintf(w, "# TYPE %s %s\n", name, typ)
		for pod := range scalePods {
			target := fmt.Sprintf(`job="vllm",instance="10.0.%d.%d:8000",namespace="llm",pod="vllm-%03d"`, pod/250, pod%250, pod)
			for _, m := range fam.GetMetric() {
				labels := target
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				sort.Strings(ls)
				if len(ls) > 0 {
					labels += "," + strings.Join(ls, ",")
				}
				switch fam.GetType() {
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					for _, bk := range h.GetBucket() {
						le := strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64)
						for k := range ts {
							fmt.Fprintf(w, "%s_bucket{%s,le=%q} %s %s\n", name, labels, le, val(float64(bk.GetCumulativeCount()), k, pod, true), ts[k])
						}
					}
					if bs := h.GetBucket(); len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
						for k := range ts {
							fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %s %s\n", name, labels, val(float64(h.GetSampleCount()), k, pod, true), ts[k])
						}
					}
					for k := range ts {
						fmt.Fprintf(w, "%s_sum{%s} %s %s\n", name, labels, val(h.GetSampleSum(), k, pod, true), ts[k])
					}
					for k := range ts {
						fmt.Fprintf(w, "%s_count{%s} %s %s\n", name, labels, val(float64(h.GetSampleCount()), k, pod, true), ts[k])
					}
				case dto.MetricType_COUNTER:
					for k := range ts {
						fmt.Fprintf(w, "%s_total{%s} %s %s\n", name, labels, val(m.GetCounter().GetValue(), k, pod, true), ts[k])
					}
				default:
					v := m.GetGauge().GetValue()
					if m.Untyped != nil {
						v = m.GetUntyped().GetValue()
					}
					for k := range ts {
						fmt.Fprintf(w, "%s{%s} %s %s\n", name, labels, val(v, k, pod, false), ts[k])
					}
				}
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// BenchmarkScale reads the 200-pod fleet from a local Prometheus: now
// (the last 5 minutes) and over the last hour. It reports the queries
// each report sends.
//
//	go test ./internal/fleet -run XXX -bench Scale -benchmem -benchtime 10x
func BenchmarkScale(b *testing.B) {
	dir := scaleData(b)
	s := storetest.Prometheus(b, storetest.Config{DataDir: dir})
	c := client(b, s)
	end := scaleT0.Add(scaleSpan)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"now", Options{From: end.Add(-DefaultWindow), To: end}},
		{"1h", Options{From: end.Add(-time.Hour), To: end, Range: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var queries int
			for range b.N {
				f, err := Run(context.Background(), c, tc.o)
				if err != nil {
					b.Fatal(err)
				}
				if len(f.Instances) != scalePods {
					b.Fatalf("%d instances, want %d", len(f.Instances), scalePods)
				}
				queries = len(f.Queries)
			}
			b.ReportMetric(float64(queries), "queries/op")
		})
	}
}
