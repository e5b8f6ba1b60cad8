package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/storetest"
)

// The scale fixture: vLLM pods, each one engine of a current vLLM (every
// family of testdata/dialects/vllm-new.prom for one model and engine: 339
// series), scraped every 30 s for the 12 minutes before scaleEnd: enough
// for "now" (the last 5 minutes, and the lookback before them) and a past
// range of the last 5 minutes. INFERSCOPE_SCALE_PODS lists the sizes
// (200 unless set: backfilling 2,000 pods takes minutes and 3 GB of
// OpenMetrics on the way).
const (
	scaleInterval = 30 * time.Second
	scaleSpan     = 12 * time.Minute
)

var scaleT0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// scaleEnd is the last sample's time.
var scaleEnd = scaleT0.Add(scaleSpan)

// scaleSizes are the fleet sizes to measure: INFERSCOPE_SCALE_PODS
// ("200,1000,2000"), or def.
func scaleSizes(b *testing.B, env string, def int) []int {
	v := os.Getenv(env)
	if v == "" {
		return []int{def}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want pod counts such as 200,1000,2000", env, v)
		}
		out = append(out, n)
	}
	return out
}

// scaleData returns a Prometheus data directory holding the scale fixture
// of pods, backfilled once and kept under the system's temporary
// directory for later runs (remove it to rebuild).
func scaleData(b *testing.B, pods int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("inferscope-fleet-scale-v2-%d", pods))
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return dir
	}
	promtool := storetest.Need(b, "promtool", "prometheus")
	os.RemoveAll(dir)
	om := filepath.Join(b.TempDir(), "scale.om")
	f, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeScale(f, pods, openMetrics); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, dir).CombinedOutput()
	if err != nil {
		b.Fatalf("promtool: %v\n%s", err, out)
	}
	b.Logf("backfilled %d pods in %v", pods, time.Since(start))
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// scaleVM returns a VictoriaMetrics data directory holding the scale
// fixture of pods, imported once through its API (the text format, no file
// on the way) and kept for later runs.
func scaleVM(b *testing.B, pods int) *storetest.Store {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("inferscope-fleet-scale-vm-v2-%d", pods))
	ready := filepath.Join(dir, "ready")
	_, err := os.Stat(ready)
	imported := err == nil
	if !imported {
		os.RemoveAll(dir)
	}
	s := storetest.VictoriaMetrics(b, storetest.Config{DataDir: dir, Flags: vmScaleFlags})
	if imported {
		return s
	}
	start := time.Now()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeScale(pw, pods, promText)) }()
	resp, err := http.Post(s.URL+"/api/v1/import/prometheus", "text/plain", pr)
	if err != nil {
		b.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Fatalf("import: HTTP %d: %s", resp.StatusCode, msg)
	}
	s.Flush()
	b.Logf("imported %d pods in %v", pods, time.Since(start))
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return s
}

// vmScaleFlags are what a VictoriaMetrics holding 10,000 vLLM pods needs
// beside its defaults: /api/v1/series lists 30,000 series unless told
// (discovery lists about 45 a pod), and a query selects 300,000 at most
// (the pushdown's each select a few series of every pod; the rebuild's,
// every series of a batch of pods).
var vmScaleFlags = []string{"-search.maxSeries=2000000", "-search.maxUniqueTimeseries=5000000"}

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

// scaleFormat is how writeScale writes a sample: OpenMetrics for promtool
// (seconds, TYPE lines, # EOF), or the text format VictoriaMetrics
// imports (milliseconds).
type scaleFormat int

const (
	openMetrics scaleFormat = iota
	promText
)

// writeScale writes the scale fixture of pods: counters and histograms
// grow from their template values, gauges keep them.
func writeScale(out io.Writer, pods int, format scaleFormat) error {
	fams, err := templateFamilies()
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	steps := int(scaleSpan / scaleInterval)
	ts := make([]string, steps+1)
	for k := range ts {
		t := scaleT0.Add(time.Duration(k) * scaleInterval)
		if format == promText {
			ts[k] = strconv.FormatInt(t.UnixMilli(), 10)
		} else {
			ts[k] = strconv.FormatInt(t.Unix(), 10)
		}
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
		if format == openMetrics {
			fmt.Fprintf(w, "# TYPE %s %s\n", name, typ)
		}
		for pod := range pods {
			target := fmt.Sprintf(`job="vllm",instance="10.%d.%d.%d:8000",namespace="llm",pod="vllm-%05d"`, pod/65536, pod/256%256, pod%256, pod)
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
				series := func(sample, extra string, v float64, grows bool) {
					for k := range ts {
						fmt.Fprintf(w, "%s{%s%s} %s %s\n", sample, labels, extra, val(v, k, pod, grows), ts[k])
					}
				}
				switch fam.GetType() {
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					for _, bk := range h.GetBucket() {
						series(name+"_bucket", fmt.Sprintf(",le=%q", strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64)), float64(bk.GetCumulativeCount()), true)
					}
					if bs := h.GetBucket(); len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
						series(name+"_bucket", `,le="+Inf"`, float64(h.GetSampleCount()), true)
					}
					series(name+"_sum", "", h.GetSampleSum(), true)
					series(name+"_count", "", float64(h.GetSampleCount()), true)
				case dto.MetricType_COUNTER:
					series(name+"_total", "", m.GetCounter().GetValue(), true)
				default:
					v := m.GetGauge().GetValue()
					if m.Untyped != nil {
						v = m.GetUntyped().GetValue()
					}
					series(name, "", v, false)
				}
			}
		}
	}
	if format == openMetrics {
		fmt.Fprintln(w, "# EOF")
	}
	return w.Flush()
}

// BenchmarkScale reads backfilled vLLM fleets from a local Prometheus:
// now (the last 5 minutes) and a past range of the last 5 minutes (with
// its trends, as the command draws them), each by the pushdown (alone,
// and with the table or -o json written: text and json) and by the
// rebuild (--read-whole, --instance). It reports the
// queries each report sends, the store's CPU per report, and the heap the
// report holds once made (live-MB).
//
//	go test ./internal/fleet -run XXX -bench 'Scale$' -benchmem -benchtime 5x
//	INFERSCOPE_SCALE_PODS=200,1000,2000 go test ./internal/fleet -run XXX -bench 'Scale$' -benchtime 5x -timeout 1h
func BenchmarkScale(b *testing.B) {
	for _, pods := range scaleSizes(b, "INFERSCOPE_SCALE_PODS", 200) {
		s := storetest.Prometheus(b, storetest.Config{DataDir: scaleData(b, pods)})
		benchScale(b, s, pods)
	}
}

// BenchmarkScaleVictoriaMetrics is BenchmarkScale on VictoriaMetrics, the
// fleet imported through its API (INFERSCOPE_SCALE_VM_PODS, 200 unless
// set; 10,000 takes a few minutes and some 4 GB of the store's memory).
func BenchmarkScaleVictoriaMetrics(b *testing.B) {
	for _, pods := range scaleSizes(b, "INFERSCOPE_SCALE_VM_PODS", 200) {
		benchScale(b, scaleVM(b, pods), pods)
	}
}

func benchScale(b *testing.B, s *storetest.Store, pods int) {
	c := client(b, s)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"now", Options{From: scaleEnd.Add(-DefaultWindow), To: scaleEnd}},
		{"last-5m", Options{From: scaleEnd.Add(-5 * time.Minute), To: scaleEnd, Range: true, Trend: true}},
	} {
		// The table and -o json from the store's sums, each rendered as
		// the command writes it (text at 160 columns; JSON indented),
		// beside the two reads alone.
		for _, v := range []struct {
			name   string
			read   Read
			render func(*Fleet) error
		}{
			{"pushdown", Pushdown, nil},
			{"text", Pushdown, func(f *Fleet) error { return f.Text(io.Discard, TextOptions{Width: 160}) }},
			{"json", Pushdown, func(f *Fleet) error { return f.JSON(io.Discard, false) }},
			{"rebuild", Rebuild, nil},
		} {
			read := v.read
			o := tc.o
			o.Read = read
			if read == Rebuild {
				// --max-instances bounds what is read whole; the store's
				// sums need no flag, whatever the fleet.
				o.MaxInstances = max(pods, DefaultMaxInstances)
			}
			b.Run(fmt.Sprintf("%s/%d/%s/%s", s.Kind, pods, tc.name, v.name), func(b *testing.B) {
				b.ReportAllocs()
				var queries int
				var live float64
				cpu0, _ := s.CPU()
				for range b.N {
					f, err := Run(context.Background(), c, o)
					if err != nil {
						b.Fatal(err)
					}
					if v.render != nil {
						if err := v.render(f); err != nil {
							b.Fatal(err)
						}
					}
					if len(f.Instances) != pods {
						b.Fatalf("%d instances, want %d", len(f.Instances), pods)
					}
					if p := len(pushed(f)); read == Pushdown && p != pods {
						b.Fatalf("%d instances pushed down, want %d", p, pods)
					}
					queries = len(f.Queries)
					// The heap the report holds once made (what a watch
					// keeps between frames), outside the timing.
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					live = float64(ms.HeapAlloc) / 1e6
					runtime.KeepAlive(f)
					b.StartTimer()
				}
				cpu1, _ := s.CPU()
				b.ReportMetric(float64(queries), "queries/op")
				b.ReportMetric(live, "live-MB")
				b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "store-cpu-s/op")
			})
		}
	}
}

// scaleGPUData is scaleData's fleet with a GPU beside each pod: one
// dcgm-exporter GPU given to it (its pod mapping's namespace and pod),
// eight to a node, every family the fleet reads, scraped as the engines
// are. Backfilled once into a copy of scaleData's directory (Prometheus
// reads the overlapping blocks) and kept.
func scaleGPUData(b *testing.B, pods int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("inferscope-fleet-scale-gpu-v1-%d", pods))
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return dir
	}
	engines := scaleData(b, pods)
	os.RemoveAll(dir)
	if out, err := exec.Command("cp", "-r", engines, dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(dir, "ready"))
	om := filepath.Join(b.TempDir(), "gpus.om")
	f, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	steps := int(scaleSpan / scaleInterval)
	families := []struct {
		name  string
		value func(k, pod int) float64
	}{
		{"DCGM_FI_DEV_GPU_UTIL", func(k, pod int) float64 { return float64(50 + (k+pod)%50) }},
		{"DCGM_FI_PROF_SM_ACTIVE", func(k, pod int) float64 { return 0.6 }},
		{"DCGM_FI_PROF_DRAM_ACTIVE", func(k, pod int) float64 { return 0.8 }},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", func(k, pod int) float64 { return 0.3 }},
		{"DCGM_FI_DEV_POWER_USAGE", func(k, pod int) float64 { return 400 }},
		{"DCGM_FI_DEV_POWER_MGMT_LIMIT", func(k, pod int) float64 { return 700 }},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", func(k, pod int) float64 { return 4e8 + 400*1000*float64(k)*scaleInterval.Seconds() }},
		{"DCGM_FI_DEV_FB_USED", func(k, pod int) float64 { return 70000 }},
		{"DCGM_FI_DEV_FB_FREE", func(k, pod int) float64 { return 11000 }},
		{"DCGM_FI_DEV_SM_CLOCK", func(k, pod int) float64 { return 1980 }},
		{"DCGM_FI_DEV_MAX_SM_CLOCK", func(k, pod int) float64 { return 1980 }},
		{"DCGM_FI_DEV_GPU_TEMP", func(k, pod int) float64 { return 60 }},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", func(k, pod int) float64 { return 0 }},
		{"DCGM_FI_DEV_XID_ERRORS", func(k, pod int) float64 { return 0 }},
		{"DCGM_FI_PROF_PCIE_TX_BYTES", func(k, pod int) float64 { return 1e8 }},
		{"DCGM_FI_PROF_PCIE_RX_BYTES", func(k, pod int) float64 { return 1e8 }},
	}
	for _, fam := range families {
		fmt.Fprintf(w, "# TYPE %s gauge\n", fam.name)
		for pod := range pods {
			node := pod / 8
			labels := fmt.Sprintf(`job="dcgm-exporter",instance="10.200.%d.%d:9400",gpu="%d",UUID="GPU-%05d",modelName="NVIDIA H100 80GB HBM3",Hostname="node-%04d",container="vllm",namespace="llm",pod="vllm-%05d"`,
				node/256, node%256, pod%8, pod, node, pod)
			for k := range steps + 1 {
				fmt.Fprintf(w, "%s{%s} %s %d\n", fam.name, labels, strconv.FormatFloat(fam.value(k, pod), 'g', 10, 64), scaleT0.Add(time.Duration(k)*scaleInterval).Unix())
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	promtool := storetest.Need(b, "promtool", "prometheus")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, dir).CombinedOutput(); err != nil {
		b.Fatalf("promtool: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkScaleGPU is BenchmarkScale's "now" by the store's sums (the
// table and -o json) of a fleet with a GPU beside each pod, joined by pod:
// what the GPU columns cost beside BenchmarkScale's same reads without
// GPUs (INFERSCOPE_SCALE_PODS, 200 unless set).
//
//	INFERSCOPE_SCALE_PODS=2000 go test ./internal/fleet -run XXX -bench 'ScaleGPU$' -benchtime 5x -timeout 1h
func BenchmarkScaleGPU(b *testing.B) {
	for _, pods := range scaleSizes(b, "INFERSCOPE_SCALE_PODS", 200) {
		s := storetest.Prometheus(b, storetest.Config{DataDir: scaleGPUData(b, pods)})
		c := client(b, s)
		o := Options{From: scaleEnd.Add(-DefaultWindow), To: scaleEnd, Read: Pushdown}
		for _, v := range []struct {
			name   string
			render func(*Fleet) error
		}{
			{"text", func(f *Fleet) error { return f.Text(io.Discard, TextOptions{Width: 160}) }},
			{"json", func(f *Fleet) error { return f.JSON(io.Discard, false) }},
		} {
			b.Run(fmt.Sprintf("%s/%d/now-gpu/%s", s.Kind, pods, v.name), func(b *testing.B) {
				b.ReportAllocs()
				var queries int
				var live float64
				cpu0, _ := s.CPU()
				for range b.N {
					f, err := Run(context.Background(), c, o)
					if err != nil {
						b.Fatal(err)
					}
					if err := v.render(f); err != nil {
						b.Fatal(err)
					}
					joined := 0
					for _, in := range f.Instances {
						if in.Figures.GPU != nil && in.Figures.GPU.Watts != nil {
							joined++
						}
					}
					if len(f.Instances) != pods || joined != pods || len(pushed(f)) != pods {
						b.Fatalf("%d instances, %d with GPU watts, %d pushed down; want %d", len(f.Instances), joined, len(pushed(f)), pods)
					}
					queries = len(f.Queries)
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					live = float64(ms.HeapAlloc) / 1e6
					runtime.KeepAlive(f)
					b.StartTimer()
				}
				cpu1, _ := s.CPU()
				b.ReportMetric(float64(queries), "queries/op")
				b.ReportMetric(live, "live-MB")
				b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "store-cpu-s/op")
			})
		}
	}
}
