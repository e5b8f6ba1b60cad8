package fleet

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// k8s groups instances as a Kubernetes fleet reads best: --by
// namespace,pod.
var k8s = []string{"namespace", "pod"}

// both reads a fleet twice, by the pushdown and by the rebuild, and fails
// t where their tables differ (Differences): the proof that the store's
// sums give the figures the dialect reads, run on every fleet test. It
// returns both readings, for the test's own checks on each.
func both(t *testing.T, api promapi.API, o Options) (push, whole *Fleet) {
	t.Helper()
	o.Read = Pushdown
	push, err := Run(context.Background(), api, o)
	if err != nil {
		t.Fatalf("pushdown: %v", err)
	}
	o.Read = Rebuild
	whole, err = Run(context.Background(), api, o)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	for _, d := range Differences(push, whole) {
		t.Errorf("the pushdown and the rebuild differ: %s", d)
	}
	if api.Backend().Kind == promapi.VictoriaMetrics {
		// The path the pushdown takes there (TestBounds) is the one held
		// to the rebuild.
		for _, q := range push.Queries {
			if strings.HasPrefix(q.Purpose, "pushdown: each") && strings.Contains(q.Text, "_bucket") && !strings.Contains(q.Text, `le="`) && !strings.Contains(q.Text, `le!~"`) {
				t.Errorf("VictoriaMetrics: buckets summed in one query (%s), want them read bound by bound", q.Text)
			}
		}
	}
	for _, in := range whole.Instances {
		if in.Read != Rebuild || in.Why != "" {
			t.Errorf("%s: read %s (%s) in a rebuild", in.ID, in.Read, in.Why)
		}
	}
	return push, whole
}

// pushed lists the instances the pushdown read from the store's sums.
func pushed(f *Fleet) map[string]bool {
	out := map[string]bool{}
	for _, in := range f.Instances {
		if in.Read == Pushdown {
			out[in.ID] = true
		}
	}
	return out
}

// On every fixture of every server, the pushdown's quantities are enough
// for the table: an instance whose every counter counted from zero over a
// 5-minute window, read as the pushdown reads it (the library's
// quantities, the TTFT buckets, the info series discovery keeps, taken
// here from the dialect's own reading, which internal/promql's tests hold
// the store's sums to) has the table's figures and the notes column of
// the same instance read whole. The stores' tests prove the sums; this one
// proves nothing the table shows is missed, on servers no store test
// holds.
func TestPushdownQuantitiesMakeTheTable(t *testing.T) {
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	o := Options{From: at.Add(-DefaultWindow), To: at}
	q := newQuerier(nil, o)
	checked := 0
	for _, fx := range fixtures.All(t, 40) {
		g := discovered(t, fx.Fams)
		if g == nil || len(fx.Snap.Invalid) > 0 {
			// Values that cannot be are found in the store and read
			// whole (TestPushdownReadsInvalidWhole), or left to the
			// rebuild to name (docs/fleet.md).
			continue
		}
		lib, err := promql.New(fx.Fams, fx.Snap.Dialect, promql.Options{By: DefaultBy(), AllSections: true})
		if err != nil {
			continue // nothing a store could sum: read whole
		}
		sh := &shape{groups: []*group{g}, lib: lib, rep: fx.Snap}
		end, _, _ := quantities(q, sh, nil)
		v := &values{scalars: map[string]float64{}, hists: map[string]*histogram.Histogram{}}
		var names []string
		for _, q := range end {
			if q.split != nil {
				names = append(names, slices.Collect(maps.Keys(q.split.Parts))...)
			} else {
				names = append(names, q.tag[2:])
			}
		}
		for _, name := range names {
			if x, ok := fx.Snap.Scalar(name); ok {
				v.scalars[name] = x
			} else if x, ok := fx.Snap.Extra[name]; ok {
				v.scalars[name] = x
			} else if h := fx.Snap.Hist(name); h != nil {
				c := *h
				c.Buckets = slices.Clone(h.Buckets)
				v.hists[name] = &c
			}
		}
		push := sh.snapshot(g, v, at, infoOf(g))
		if fx.Snap.Model != "" || !slices.Equal(fx.Snap.Models, g.served()) {
			continue // read whole: the models by another label
		}
		a, b := windowOf(o, g, push), windowOf(o, g, fx.Snap)
		for _, d := range figureDifferences(fx.Path, a.Figures, b.Figures) {
			t.Errorf("pushdown and rebuild differ: %s", d)
		}
		if n, m := noteSet(a), noteSet(b); n != m {
			t.Errorf("%s: notes %q from the pushdown's quantities, %q read whole", fx.Path, n, m)
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("only %d fixtures checked", checked)
	}
}

// discovered is the instance discovery finds in a scrape's series, as a
// store keeps them.
func discovered(t *testing.T, fams []*dto.MetricFamily) *group {
	t.Helper()
	d := newListing(Options{By: DefaultBy()})
	lim := &limits{maxInstances: 1, maxSeries: 1 << 20}
	for _, p := range promtool.Points(fams, promtool.Labels{"job": "j", "instance": "i:80"}) {
		if strings.HasSuffix(p.Labels["__name__"], "_bucket") {
			continue
		}
		m := model.Metric{}
		for k, v := range p.Labels {
			m[model.LabelName(k)] = model.LabelValue(v)
		}
		if err := d.add(m, lim); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range d.byID {
		g.dialect = majorityDialect(g.families)
		return g
	}
	return nil
}

// windowOf is an instance whose counters all counted from zero over the
// last 5 minutes, up to s.
func windowOf(o Options, g *group, s *snapshot.Snapshot) *Instance {
	in := &Instance{ID: g.id, State: Up, snap: s}
	in.delta = deltaOver([]boundary{{at: o.To, snap: s}}, true, o.From)
	in.Figures = figuresOf(s, nil, in.delta.Delta, false)
	in.Report = instanceReport(in, o)
	return in
}

// A split's quantities are what their Readings would have answered: the
// sum of every value; one value's; 0 where it is absent beside others
// ("or 0 *"), NaN where the others sum to NaN; nothing where the instance
// has none of the family.
func TestFromSplits(t *testing.T) {
	sp := &promql.Split{Label: "finished_reason", Parts: map[string]promql.SplitPart{
		"all": {All: true}, "error": {Value: "error", ZeroIfAbsent: true}, "abort": {Value: "abort"}}}
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		byValue map[string]float64
		want    map[string]float64
		invalid bool
	}{
		{"every value", map[string]float64{"stop": 5, "error": 2, "abort": 1, "": 0.5}, map[string]float64{"all": 8.5, "error": 2, "abort": 1}, false},
		{"no error yet", map[string]float64{"stop": 5}, map[string]float64{"all": 5, "error": 0}, false},
		{"none of the family", nil, map[string]float64{}, false},
		{"a NaN", map[string]float64{"stop": nan}, map[string]float64{"all": nan, "error": nan}, true},
	} {
		v := &values{scalars: map[string]float64{}}
		if tc.byValue != nil {
			v.splits = map[*promql.Split]map[string]float64{sp: tc.byValue}
		}
		v.fromSplits()
		if len(v.scalars) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, v.scalars, tc.want)
		}
		for q, x := range tc.want {
			if got, ok := v.scalars[q]; !ok || (got != x && !(math.IsNaN(got) && math.IsNaN(x))) {
				t.Errorf("%s: %s = %v (%v), want %v", tc.name, q, got, ok, x)
			}
		}
		if (v.invalid != "") != tc.invalid {
			t.Errorf("%s: invalid %q", tc.name, v.invalid)
		}
	}
}
