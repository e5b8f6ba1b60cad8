package promql_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	testdata "github.com/inferscope/inferscope/internal/fixtures"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// fixture is one exposition of the repository's testdata, read as the
// report reads it.
type fixture struct {
	path string
	fams []*dto.MetricFamily
	snap *snapshot.Snapshot
}

// fixtures reads every exposition a dialect recognises in testdata.
func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	for _, fx := range testdata.All(t, 40) {
		out = append(out, fixture{path: fx.Path, fams: fx.Fams, snap: fx.Snap})
	}
	return out
}

// expected is a canonical quantity's value in the dialect's snapshot: what
// the library's expression must return over a window from 0 to it.
func expected(s *snapshot.Snapshot, name string) (count, sum float64, ok bool) {
	if h := s.Hist(name); h != nil {
		return h.Total(), h.Sum, !h.NoTop
	}
	if v, ok := s.Scalar(name); ok {
		return v, 0, true
	}
	if v, ok := s.Extra[name]; ok && !math.IsNaN(v) {
		return v, 0, true
	}
	switch {
	case name == snapshot.ExtraFinishedReason+"error" || name == snapshot.ExtraFinishedReason+"abort":
		// A reason not yet published is 0 where others are.
		for k := range s.Extra {
			if strings.HasPrefix(k, snapshot.ExtraFinishedReason) {
				return 0, 0, true
			}
		}
	case name == snapshot.ExtraFailedReason+"*":
		total, any := 0.0, false
		for k, v := range s.Extra {
			if strings.HasPrefix(k, snapshot.ExtraFailedReason) {
				total, any = total+v, true
			}
		}
		return total, 0, any
	}
	return 0, 0, false
}

// unread are the snapshot quantities no windowed expression reads, with why.
var unread = map[string]string{
	snapshot.ProcessStartTimeSeconds:       "uptime: no window figure",
	snapshot.NTokensMax:                    "a lifetime peak",
	snapshot.TokensPredictedMax:            "a lifetime peak",
	snapshot.PredictedTokensSeconds:        "a lifetime average",
	snapshot.PromptTokensSeconds:           "a lifetime average",
	snapshot.SpecDecodeDraftAcceptanceRate: "a lifetime ratio: the window's comes from the counters",
	snapshot.SpecDecodeMeanAcceptedLength:  "a lifetime ratio: the window's comes from the counters",
	snapshot.SpecDecodeTokensPerStep:       "a lifetime ratio: the window's comes from the counters",
	snapshot.SpecDecodeRequestsTotal:       "no windowed figure",
	snapshot.KVCacheMaxTokens:              "vLLM's is a label of cache_config_info",
	snapshot.LiveStateAgeSeconds:           "the exporter's own health",
	snapshot.LiveStateFailuresTotal:        "the exporter's own health",
	snapshot.ExtraKVBlockSize:              "configuration (a label of cache_config_info, or SGLang's page_size), which the one-shot shows",
	snapshot.ExtraKVNumBlocks:              "configuration (a label of cache_config_info, or SGLang's num_pages), which the one-shot shows",
	snapshot.ExtraContextLength:            "configuration, which the one-shot shows",
	snapshot.ExtraLargestSequence:          "a lifetime peak",
	snapshot.ExtraSlotPrefillSpeed:         "a lifetime ratio",
	snapshot.ExtraSlotDecodeSpeed:          "a lifetime ratio",
	snapshot.ExtraBusySlotsPerDecode:       "a lifetime average",
	snapshot.ExtraDecodeCalls:              "no windowed figure",
	snapshot.ExtraCacheHitRateGauge:        "the last batch's, not a window's",
	snapshot.ExtraGenThroughputGauge:       "the last log interval's, not a window's",
	snapshot.SpecDecodeAcceptanceRate:      "a per-request distribution: the window's acceptance comes from the counters",
}

func unreadReason(name string) (string, bool) {
	if r, ok := unread[name]; ok {
		return r, true
	}
	for _, p := range []string{snapshot.ExtraFinishedReason, snapshot.ExtraFailedReason, snapshot.ExtraAcceptedPerPosition, snapshot.ExtraAdmissionRejectionsBy} {
		if strings.HasPrefix(name, p) {
			return "a reason or position the figures do not name", true
		}
	}
	for _, p := range []string{snapshot.ExtraRunningByPriority, snapshot.ExtraQueuedByPriority, snapshot.ExtraKVPoolUsage} {
		if strings.HasPrefix(name, p) {
			return "a part of the live state beside the totals the figures read (a priority's, a hybrid model's other pool)", true
		}
	}
	return "", false
}

// Every quantity the library reads from a fixture, evaluated by promtool
// over a window in which the fixture's counters rise from 0, is the value
// the dialect reads from the fixture: the two read the same series the
// same way, on every fixture of every server. And every quantity the
// dialect reads has an expression, or a reason it has none.
func TestQuantitiesMatchDialect(t *testing.T) {
	file := promtool.File{RuleFiles: []string{}}
	checked := 0
	for _, fx := range fixtures(t) {
		l, err := promql.New(fx.fams, fx.snap.Dialect, promql.Options{By: []string{}})
		if err != nil {
			t.Errorf("%s: %v", fx.path, err)
			continue
		}
		g := rampGroup(fx, l)
		tests := quantityTests(t, fx, l)
		g.ExprTests, checked = tests, checked+len(tests)
		everyReadHasExpression(t, fx, l)
		if len(g.ExprTests) > 0 {
			file.Tests = append(file.Tests, g)
		}
	}
	if checked < 400 {
		t.Errorf("only %d quantities checked over every fixture", checked)
	}
	runTests(t, file)
}

// rampGroup is a test group over a fixture whose counters rise from 0
// over one 5-minute interval.
func rampGroup(fx fixture, l *promql.Library) promtool.Group {
	counters := map[string]bool{}
	for _, n := range l.Counters() {
		counters[n] = true
	}
	pts := promtool.Points(fx.fams, promtool.Labels{"instance": "fixture:80", "job": "fixture"})
	return promtool.Group{Name: fx.path, Interval: "5m", InputSeries: promtool.Ramp(pts, func(p promtool.Point) bool {
		return counters[p.Labels["__name__"]]
	})}
}

// quantityTests hold each quantity the library reads to the dialect's
// value of it.
func quantityTests(t *testing.T, fx fixture, l *promql.Library) []promtool.ExprTest {
	var out []promtool.ExprTest
	pts := promtool.Points(fx.fams, nil)
	for _, q := range l.Quantities() {
		v, sum, ok := expected(fx.snap, q)
		switch {
		case !ok && (nanOnly(pts, l, q) || unpublished(pts, l, q) || cutHistogram(fx.fams, l, q) || invalid(fx.snap) || halfRatio(fx.snap, q)):
			continue // no value yet, or one the dialect left out for a reason it names
		case !ok:
			t.Errorf("%s: the library reads %s, which the dialect does not", fx.path, q)
			continue
		}
		e, _ := l.Quantity(q)
		out = append(out, closeTo(e, v))
		if s, ok := l.HistogramSum(q); ok {
			out = append(out, closeTo(s, sum))
		}
		// The reading at the window's end is the value read from the
		// scrape: the fleet's pushdown reads it at both ends.
		if h, ok := l.Histogram(q); ok {
			out = append(out, closeTo(h.Count, v), closeTo(h.Sum, sum))
			continue
		}
		r, _ := l.Reading(q)
		out = append(out, closeTo(r, v))
	}
	return out
}

// everyReadHasExpression checks that each quantity the dialect reads from
// a fixture has an expression, or a reason it has none.
func everyReadHasExpression(t *testing.T, fx fixture, l *promql.Library) {
	var names []string
	for name := range fx.snap.Scalars {
		names = append(names, name)
	}
	for name := range fx.snap.Histograms {
		names = append(names, name)
	}
	for name := range fx.snap.Extra {
		names = append(names, name)
	}
	for _, name := range names {
		if _, why := unreadReason(name); !why && !l.Has(name) {
			t.Errorf("%s: the dialect reads %s, which the library does not", fx.path, name)
		}
	}
}

// closeTo tests that e returns one series within a relative 1e-9 of v.
func closeTo(e string, v float64) promtool.ExprTest {
	tol := 1e-9 * math.Max(1, math.Abs(v))
	return promtool.ExprTest{
		Expr:     fmt.Sprintf("abs((%s) - %s) <= bool %s", e, promtool.Value(v), promtool.Value(tol)),
		EvalTime: "5m",
		Samples:  []promtool.Sample{{Labels: "{}", Value: 1}},
	}
}

// nanOnly reports a quantity whose every sample in the fixture is NaN (a
// gauge with no value yet), which PromQL returns as NaN and the dialect
// leaves out.
func nanOnly(pts []promtool.Point, l *promql.Library, q string) bool {
	e, _ := l.Quantity(q)
	seen := false
	for _, p := range pts {
		if strings.Contains(e, p.Labels["__name__"]+"{") || strings.Contains(e, p.Labels["__name__"]+")") {
			if !math.IsNaN(p.Value) {
				return false
			}
			seen = true
		}
	}
	return seen
}

// unpublished reports a quantity none of whose series the fixture has (a
// histogram's _count cut off a paste): the expression returns nothing, as
// the dialect reads nothing.
func unpublished(pts []promtool.Point, l *promql.Library, q string) bool {
	e, _ := l.Quantity(q)
	for _, p := range pts {
		if strings.Contains(e, p.Labels["__name__"]+"{") || strings.Contains(e, p.Labels["__name__"]+")") || strings.Contains(e, p.Labels["__name__"]+"[") {
			return false
		}
	}
	return true
}

// cutHistogram reports a quantity read from the _sum or _count of a
// histogram the fixture cut short (no _count): the dialect takes no
// figure from it, where the library's expression reads what is there.
func cutHistogram(fams []*dto.MetricFamily, l *promql.Library, q string) bool {
	e, _ := l.Quantity(q)
	for _, mf := range fams {
		if mf.GetType() != dto.MetricType_HISTOGRAM || !strings.Contains(e, mf.GetName()+"_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetHistogram().SampleCount == nil && m.GetHistogram().SampleCountFloat == nil {
				return true
			}
		}
	}
	return false
}

// invalid reports a snapshot that left out series the library still sees.
func invalid(s *snapshot.Snapshot) bool { return len(s.Invalid) > 0 }

// halfRatio reports a quantity the dialect dropped because the other half
// of its ratio is missing.
func halfRatio(s *snapshot.Snapshot, name string) bool {
	for _, m := range s.Missing {
		if strings.Contains(m, name) && strings.Contains(m, "but no") {
			return true
		}
	}
	return false
}

var failure = regexp.MustCompile(`(?m)^\s*(expr: .*|FAILED:.*|.*exp:.*|.*got:.*)$`)

// runTests writes file and runs promtool test rules on it.
func runTests(t *testing.T, file promtool.File) {
	t.Helper()
	tool := promtool.Require(t, "promtool")
	dir := t.TempDir()
	if _, err := promtool.Write(dir, "test.yml", file); err != nil {
		t.Fatal(err)
	}
	out, err := promtool.Run(dir, tool, "test", "rules", "test.yml")
	if err != nil {
		lines := failure.FindAllString(out, 60)
		t.Fatalf("%v\n%s", err, strings.Join(slices.Compact(lines), "\n"))
	}
}
