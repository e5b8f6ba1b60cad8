package exporter

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/histogram"
)

// exposed is one scrape read back through the inspector's own parser:
// scalars and histograms by unprefixed name.
type exposed struct {
	scalars map[string]float64
	types   map[string]dto.MetricType
	hists   map[string]*histogram.Histogram
	text    string
}

// scrape writes m's text exposition and parses it with internal/exposition.
func scrape(t testing.TB, m *Metrics) exposed {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	fams, err := exposition.Parse(buf.Bytes(), exposition.Text)
	if err != nil {
		t.Fatalf("parsing our own exposition: %v\n%s", err, buf.String())
	}
	e := familiesOf(t, fams, m.ns+":")
	e.text = buf.String()
	return e
}

func familiesOf(t testing.TB, fams []*dto.MetricFamily, prefix string) exposed {
	t.Helper()
	e := exposed{scalars: map[string]float64{}, types: map[string]dto.MetricType{}, hists: map[string]*histogram.Histogram{}}
	for _, mf := range fams {
		name, ok := strings.CutPrefix(mf.GetName(), prefix)
		if !ok {
			t.Errorf("family %q lacks the prefix %q", mf.GetName(), prefix)
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Errorf("%s: %d samples, want exactly one (the set has no labels)", name, len(mf.GetMetric()))
			continue
		}
		e.types[name] = mf.GetType()
		mt := mf.GetMetric()[0]
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			e.scalars[name] = mt.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			e.scalars[name] = mt.GetGauge().GetValue()
		case dto.MetricType_UNTYPED:
			e.scalars[name] = mt.GetUntyped().GetValue()
		case dto.MetricType_HISTOGRAM:
			h := &histogram.Histogram{Count: float64(mt.GetHistogram().GetSampleCount()), Sum: mt.GetHistogram().GetSampleSum()}
			for _, b := range mt.GetHistogram().GetBucket() {
				h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: b.GetUpperBound(), Count: float64(b.GetCumulativeCount())})
			}
			h.Normalize()
			e.hists[name] = h
		default:
			t.Errorf("%s: unexpected type %v", name, mf.GetType())
		}
	}
	return e
}

// check compares a parsed histogram with one computed by hand; every bound
// named in the want must exist.
func (h histWant) check(t *testing.T, name string, got *histogram.Histogram) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: histogram missing", name)
		return
	}
	if got.Count != h.count {
		t.Errorf("%s_count = %v, want %v", name, got.Count, h.count)
	}
	if got.Total() != got.Count {
		t.Errorf("%s: +Inf bucket %v != _count %v", name, got.Total(), got.Count)
	}
	if tol := max(h.tol, 1e-12); math.Abs(got.Sum-h.sum) > tol*math.Abs(h.sum) && got.Sum != h.sum {
		t.Errorf("%s_sum = %v, want %v", name, got.Sum, h.sum)
	}
	for le, want := range h.le {
		found := false
		for _, b := range got.Buckets {
			if b.UpperBound == le {
				found = true
				if b.Count != want {
					t.Errorf("%s_bucket{le=%g} = %v, want %v", name, le, b.Count, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no bucket le=%g (bounds %v)", name, le, bounds(got))
		}
	}
}

// histWant is a histogram computed by hand: count, sum, and the cumulative
// count at chosen bounds.
type histWant struct {
	count, sum float64
	le         map[float64]float64
	tol        float64 // relative tolerance of sum; 0 means 1e-12
}

func bounds(h *histogram.Histogram) []float64 {
	var out []float64
	for _, b := range h.Buckets {
		out = append(out, b.UpperBound)
	}
	return out
}

// near compares figures that went through float arithmetic: equal within a
// relative 1e-12, so a last-bit difference in a ratio does not fail a test.
func near(got, want float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= 1e-12*math.Max(math.Abs(got), math.Abs(want))
}

func checkScalars(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g, ok := got[n]
		if !ok {
			t.Errorf("%s: missing", n)
			continue
		}
		if !near(g, want[n]) {
			t.Errorf("%s = %v, want %v", n, g, want[n])
		}
	}
}

// patient is a LiveTimeout no fakeEngine that answers at once can reach,
// however busy the machine: tests that expect a fresh reading use it, so a
// scheduling delay cannot turn into a stale one.
const patient = time.Minute

// fakeEngine is an Engine whose reading, delay and failure the test sets.
type fakeEngine struct {
	mu    sync.Mutex
	live  Live
	gate  chan struct{} // when non-nil, Live blocks until it is closed
	panic bool
	calls int
}

func (e *fakeEngine) Live() Live {
	e.mu.Lock()
	e.calls++
	gate, p, v := e.gate, e.panic, e.live
	e.mu.Unlock()
	if gate != nil {
		<-gate
		e.mu.Lock()
		v = e.live
		e.mu.Unlock()
	}
	if p {
		panic("engine state unreadable")
	}
	return v
}

func (e *fakeEngine) set(f func(e *fakeEngine)) {
	e.mu.Lock()
	f(e)
	e.mu.Unlock()
}

// fakeClock is a settable clock for the live-state age.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// withClock installs a fake clock on m starting at the time of m's initial
// (empty) live reading, so ages are exact.
func withClock(m *Metrics) *fakeClock {
	c := &fakeClock{now: m.live.at}
	m.now = c.Now
	return c
}

// ms and sec build durations from literal figures.
func ms(v float64) time.Duration  { return time.Duration(v * float64(time.Millisecond)) }
func sec(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
