package surfaces_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/fleet"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/rules"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/storetest"
)

// newServerFixtures are issue 28's servers, each published as a server
// would over the half hour t0..end: its fixture's counters and histograms
// rising linearly from 0 at t0 to the fixture's at end, gauges held, its
// process started a day before t0.
var newServerFixtures = []string{
	"testdata/dialects/trtllm-1.2.prom",
	"testdata/dialects/trtllm-new.prom",
	"testdata/dialects/lmdeploy-0.12.prom",
	"testdata/dialects/lmdeploy-new.prom",
	"testdata/dialects/dynamo-frontend.prom",
	"testdata/real/dynamo-frontend-ce30a76.prom",
	"testdata/real/dynamo-trtllm-worker-ce30a76.prom",
}

// TestNewServersAgree reads each of issue 28's servers through the one-shot
// report, --since, a watch session, the fleet now on Prometheus and
// VictoriaMetrics (pushdown and rebuild) and its own rules under promtool:
// a figure two surfaces show is the same, notes the window makes are the
// same, and requests per second over the last 5 minutes are the fixture's
// count over the 1800 s its counters took to rise.
func TestNewServersAgree(t *testing.T) {
	t.Parallel()
	var servers []*server
	for i, path := range newServerFixtures {
		fx := fixtures.All(t, 1, path)[0]
		s := &server{pod: fmt.Sprintf("new-%d", i), instance: fmt.Sprintf("10.0.1.%d:8000", i+1)}
		for at := t0; !at.After(end); at = at.Add(step) {
			fams := ramp(fx.Fams, at.Sub(t0).Seconds()/end.Sub(t0).Seconds())
			snap, err := dialect.Map(fams, dialect.Options{})
			if err != nil {
				t.Fatalf("%s at %v: %v", path, at, err)
			}
			snap.ScrapedAt = at
			s.scrapes = append(s.scrapes, &reading{at: at, fams: fams, snap: snap})
		}
		if d := s.last().snap.Dialect; d != fx.Snap.Dialect {
			t.Fatalf("%s: read as %s, the fixture as %s", path, d, fx.Snap.Dialect)
		}
		servers = append(servers, s)
	}
	file := backfill(t, servers)
	for _, st := range []*storetest.Store{
		storetest.Prometheus(t, storetest.Config{Backfill: file}),
		storetest.VictoriaMetrics(t, storetest.Config{Backfill: file}),
	} {
		now := readFleet(t, client(t, st), fleet.Options{From: nowFrom, To: end, By: k8s})
		got := byID(now)
		for i, s := range servers {
			in := got[s.id()]
			if in == nil {
				t.Fatalf("%s: no %s (%s)", st.Kind, s.id(), newServerFixtures[i])
			}
			what := st.Kind + ": " + newServerFixtures[i]
			sr := since(s.at(nowFrom), s.last())
			same(t, what+": fleet now / --since", ofFleet(in), ofRates(sr.Rates[rates.KeySince]))
			watchWindow(t, s, session(s), 5*time.Minute, in)
			if a, b := noteKeys(in.Report), noteKeys(sr); !slices.Equal(a, b) {
				t.Errorf("%s: notes of fleet now %v, of --since %v", what, a, b)
			}
			req, _ := s.last().snap.Scalar(snapshot.RequestsTotal)
			if v := ofFleet(in)["requests"]; v == nil || !near(*v, req/1800, 1e-9) {
				t.Errorf("%s: requests %v/s, want %v / 1800 s", what, deref(v), req)
			}
		}
	}
	checkNewServerRules(t, servers)
}

// ramp is fams at share of their counters and histograms (gauges held),
// the process start a day before t0.
func ramp(fams []*dto.MetricFamily, share float64) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		c := proto.Clone(mf).(*dto.MetricFamily)
		for _, m := range c.GetMetric() {
			switch {
			case c.GetName() == "process_start_time_seconds" && m.Gauge != nil:
				m.Gauge.Value = proto.Float64(float64(t0.Add(-24 * time.Hour).Unix()))
			case m.Counter != nil:
				m.Counter.Value = proto.Float64(m.GetCounter().GetValue() * share)
			case m.Histogram != nil:
				h := m.Histogram
				n := (float64(h.GetSampleCount()) + h.GetSampleCountFloat()) * share
				h.SampleCount, h.SampleCountFloat = nil, proto.Float64(n)
				if h.SampleSum != nil {
					h.SampleSum = proto.Float64(h.GetSampleSum() * share)
				}
				for _, b := range h.Bucket {
					v := (float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat()) * share
					b.CumulativeCount, b.CumulativeCountFloat = nil, proto.Float64(v)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// checkNewServerRules runs each server's rules, written from its own
// scrape, under promtool over its scrapes: at the end every recorded
// figure of the rates table is --since's over the last 5 minutes
// (percentiles histogram_quantile's own, the estimate's plain
// interpolation).
func checkNewServerRules(t *testing.T, servers []*server) {
	tool := promtool.Require(t, "promtool")
	dir := t.TempDir()
	evalAt := promtool.Duration(int(end.Sub(t0).Seconds()))
	var tests []string
	checked := 0
	for _, s := range servers {
		var rec promtool.Recorder
		for _, sc := range s.scrapes {
			rec.Add(promtool.Points(sc.fams, s.labels()))
		}
		g := promtool.Group{Name: s.pod, Interval: "15s", InputSeries: rec.Inputs()}
		last := s.last()
		l, err := promql.New(last.fams, last.snap.Dialect, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Generate(l, rules.Options{Name: "surfaces-" + s.pod, Advice: last.snap.Advice})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := set.Write(&b, rules.Prometheus); err != nil {
			t.Fatal(err)
		}
		name := s.pod + ".yml"
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		record := map[string]string{}
		for i, fg := range l.Figures() {
			record[fg.ID] = set.Records[i].Record
		}
		exprs := recordedTests(t, s, record, evalAt)
		g.ExprTests = append(g.ExprTests, exprs...)
		checked += len(exprs)
		// A test file a server, each loading its own rules only: one file
		// for all would evaluate every server's rules in every group.
		// The rules read scraped series, never their own history, so
		// they are evaluated every 5 minutes, the last time at evalAt.
		test := s.pod + "_test.yml"
		if _, err := promtool.Write(dir, test, promtool.File{RuleFiles: []string{name}, EvaluationInterval: "5m", Tests: []promtool.Group{g}}); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, test)
	}
	t.Logf("%d recorded figures of %d servers held to --since", checked, len(servers))
	if checked < 4*len(servers) {
		t.Errorf("only %d figures held to the rules", checked)
	}
	if out, err := promtool.Run(dir, tool, append([]string{"test", "rules"}, tests...)...); err != nil {
		t.Errorf("%v\n%s", err, failures(out))
	}
}
