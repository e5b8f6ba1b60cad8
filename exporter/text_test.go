package exporter

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/golden"
)

// expfmtText encodes what the handler gathers with expfmt's text encoder:
// the text promhttp serves.
func expfmtText(t testing.TB, m *Metrics) []byte {
	t.Helper()
	fams, done, err := gatherer{m}.Gather()
	defer done()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func writeText(t testing.TB, m *Metrics) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTextMatchesExpfmt: WriteText's own encoder writes byte for byte what
// expfmt writes for the families the handler serves, on every state the
// tests build: the reference cases, the scenario, a namespace, a ladder
// change on a reused family set, and the caller's collectors merged in.
func TestTextMatchesExpfmt(t *testing.T) {
	states := map[string]func() *Metrics{
		"scenario": scenario,
		"namespace": func() *Metrics {
			m := New(Options{Namespace: "my-srv", Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
			m.RecordGeneration(benchGen)
			return m
		},
		"ladder change after a scrape": func() *Metrics {
			m := scenario()
			expfmtText(t, m) // the family set is now laid out for 65536
			m.ConfigureTokenBuckets(math.MaxInt)
			m.RecordGeneration(Generation{PromptTokens: math.MaxInt, GeneratedTokens: 999_999, Decode: 1})
			return m
		},
		"caller's collectors": func() *Metrics {
			m := scenario()
			first := prometheus.NewCounter(prometheus.CounterOpts{Name: "aaa_first_total", Help: "Sorts before the set."})
			first.Add(1.5)
			mid := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tabbyapi:m_between", Help: "Sorts inside the set."}, []string{"k"})
			mid.WithLabelValues(`a"b\c`).Set(-1)
			last := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "zzz_last", Help: "Sorts after the set.", Buckets: []float64{1, 2}})
			last.Observe(1.5)
			m.Registry().MustRegister(first, mid, last)
			return m
		},
	}
	for _, c := range loadCases(t) {
		states["reference case "+c.Name] = func() *Metrics { return metricsFor(c) }
	}
	for name, build := range states {
		t.Run(name, func(t *testing.T) {
			m := build()
			got, want := writeText(t, m), expfmtText(t, m)
			if !bytes.Equal(got, want) {
				t.Errorf("WriteText differs from expfmt:\n%s", golden.Diff(string(want), string(got)))
			}
		})
	}
}

// TestAppendFloat: numbers are written as expfmt writes them, including
// around the whole-number shortcut's edge at 10^6.
func TestAppendFloat(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, 1e-7, 999999, 999999.5, 1e6, 1e6 + 1, 1_200_000, 123456,
		1 << 53, 1<<53 + 2, math.MaxUint64, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		-5, -1e6, 0.1 + 0.2, 1767225600.25, 18853396480}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		values = append(values, float64(r.IntN(3_000_000)), r.Float64()*math.Pow(10, float64(r.IntN(40)-20)))
	}
	for _, v := range values {
		mf := &dto.MetricFamily{Name: proto.String("x"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		got := append([]byte("# TYPE x gauge\nx "), appendFloat(nil, v)...)
		got = append(got, '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendFloat(%v) = %q, expfmt %q", v, got, want.Bytes())
		}
	}
}

// TestScrapeAllocations: a scrape's allocations do not grow with the
// number of series. The longest possible token ladder (58 bounds in each
// of two histograms) costs the same allocations as the shortest (1 bound),
// and either costs at most 50. Counted, not timed.
func TestScrapeAllocations(t *testing.T) {
	allocs := func(maxSeqLen int) float64 {
		m := New(Options{MaxSeqLen: maxSeqLen, Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
		m.RecordGeneration(benchGen)
		writeText(t, m) // builds the ladder's text once
		var buf bytes.Buffer
		return testing.AllocsPerRun(200, func() {
			buf.Reset()
			if err := m.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
		})
	}
	short, long := allocs(1), allocs(math.MaxInt)
	if long > short+0.5 {
		t.Errorf("a scrape allocates %.1f times with 58-bound token histograms, %.1f with 1-bound ones: allocations grow with the series", long, short)
	}
	if long > 50 {
		t.Errorf("a scrape allocates %.1f times, want at most 50", long)
	}
	t.Logf("allocations per scrape: %.1f (1-bound ladder), %.1f (58-bound ladder)", short, long)
}
