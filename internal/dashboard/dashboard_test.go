package dashboard_test

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	testdata "github.com/inferscope/inferscope/internal/fixtures"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	gdash "github.com/grafana/grafana-foundation-sdk/go/dashboard"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dashboard"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promqltest"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/sim"
)

// built is one dashboard in one format, with the library it was written
// from and the queries it holds, read back from its output.
type built struct {
	lib     *promql.Library
	out     []byte
	queries []string
}

func build(t *testing.T, f dashboard.Format, fams []*dto.MetricFamily, d string, o promql.Options) built {
	t.Helper()
	by := o.By
	if by == nil {
		by = promql.DefaultBy(d)
	}
	lo := dashboard.LibraryOptions(f, by, o)
	var l *promql.Library
	var err error
	if fams == nil {
		l, err = promql.Newest(d, lo)
	} else {
		l, err = promql.New(fams, d, lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := built{lib: l}
	switch f {
	case dashboard.Grafana:
		b.out, err = dashboard.GrafanaJSON(l, o.Selector, dashboard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b.queries = grafanaQueries(t, b.out)
	case dashboard.Perses:
		p, err := dashboard.NewPerses(l, o.Selector, dashboard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b.out, err = dashboard.PersesYAML(p)
		if err != nil {
			t.Fatal(err)
		}
		b.queries = persesQueries(t, b.out)
	}
	return b
}

// grafanaQueries reads a Grafana dashboard back through the SDK's types
// and returns its queries in panel order.
func grafanaQueries(t *testing.T, out []byte) []string {
	t.Helper()
	plugins.RegisterDefaultPlugins()
	//lint:ignore SA1019 the classic model is the one written (grafana.go says why)
	var d gdash.Dashboard
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("the dashboard does not read back as Grafana's model: %v", err)
	}
	var raw struct {
		Panels []struct {
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Panels) != len(d.Panels) {
		t.Fatalf("%d panels, the model reads %d", len(raw.Panels), len(d.Panels))
	}
	var qs []string
	for i, p := range raw.Panels {
		if p.Type == "row" {
			if d.Panels[i].RowPanel == nil {
				t.Errorf("panel %d is a row the model does not read as one", i)
			}
			continue
		}
		if d.Panels[i].Panel == nil || len(d.Panels[i].Panel.Targets) != len(p.Targets) || len(p.Targets) == 0 {
			t.Errorf("panel %d: its targets do not read back", i)
		}
		for _, tg := range p.Targets {
			qs = append(qs, tg.Expr)
		}
	}
	return qs
}

// persesQueries reads a Perses dashboard back and returns its queries in
// layout order, checking that every layout item points to a panel.
func persesQueries(t *testing.T, out []byte) []string {
	t.Helper()
	var d dashboard.PersesDashboard
	dec := yaml.NewDecoder(strings.NewReader(string(out)))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("the dashboard does not read back: %v", err)
	}
	if d.Kind != "Dashboard" || d.Metadata.Name == "" || d.Metadata.Project == "" {
		t.Errorf("not a Perses Dashboard: %+v", d.Metadata)
	}
	var qs []string
	used := map[string]bool{}
	for _, grid := range d.Spec.Layouts {
		for _, it := range grid.Spec.Items {
			key := strings.TrimPrefix(it.Content["$ref"], "#/spec/panels/")
			p, ok := d.Spec.Panels[key]
			if !ok {
				t.Errorf("layout refers to %q, which is no panel", it.Content["$ref"])
				continue
			}
			used[key] = true
			if len(p.Spec.Queries) == 0 {
				t.Errorf("panel %s has no query", key)
			}
			for _, q := range p.Spec.Queries {
				if q.Kind != "TimeSeriesQuery" || q.Spec.Plugin.Kind != "PrometheusTimeSeriesQuery" {
					t.Errorf("panel %s: query %s/%s", key, q.Kind, q.Spec.Plugin.Kind)
				}
				qs = append(qs, q.Spec.Plugin.Spec["query"].(string))
			}
		}
	}
	if len(used) != len(d.Spec.Panels) {
		t.Errorf("%d panels, %d placed", len(d.Spec.Panels), len(used))
	}
	return qs
}

// figures are the library's figures in the order the dashboard shows
// them: the overview's stats and table, then the report's rows; heatmaps
// are the overview's heatmaps in a format that draws them (Grafana), which
// come between the two.
func figures(l *promql.Library, f dashboard.Format) (figs []promql.Figure, heatmaps []dashboard.Heatmap) {
	o := dashboard.NewOverview(l)
	if f == dashboard.Grafana {
		heatmaps = o.Heatmaps
	}
	return append(o.Figures(), rowFigures(l)...), heatmaps
}

// rowFigures are the figures of the report's rows, in order.
func rowFigures(l *promql.Library) []promql.Figure {
	var out []promql.Figure
	for _, r := range dashboard.Rows(l) {
		for _, p := range r.Panels {
			for _, q := range p.Queries {
				out = append(out, q.Figure)
			}
		}
	}
	return out
}

var variable = regexp.MustCompile(`\$\{?([a-zA-Z_]+)(:regex)?\}?`)

// substitute fills a query's variables as a dashboard would: the rate
// interval, and each variable's chosen value.
func substitute(t *testing.T, q, rate string, values map[string]string) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(q, func(v string) string {
		m := variable.FindStringSubmatch(v)
		if m[1] == "__rate_interval" {
			return rate
		}
		val, ok := values[m[1]]
		if !ok {
			t.Errorf("query uses $%s, which is no variable: %s", m[1], q)
		}
		return val
	})
}

// Every panel of every format, with the rate interval at 5 minutes and
// the instance chosen, returns on each simulated scenario what the report
// computes from the same two scrapes: no panel is empty, none is wrong.
func TestPanelsOnScenarios(t *testing.T) {
	t.Parallel()
	tool := promtool.Require(t, "promtool")
	const step = 15 * time.Second
	for _, name := range sim.Scenarios() {
		r, err := promqltest.Simulate(name, 1, 20*time.Minute, step)
		if err != nil {
			t.Fatal(err)
		}
		g := promtool.Group{Name: name, Interval: "15s", InputSeries: r.Inputs}
		for _, f := range dashboard.Formats {
			// Every section's panels, those the report leaves out for
			// this scenario too: each must still return what the report
			// would (NaN where it has nothing).
			b := build(t, f, r.Last, "tabbyapi", promql.Options{AllSections: true})
			figs, heatmaps := figures(b.lib, f)
			stats := len(dashboard.NewOverview(b.lib).Figures())
			queries := append(b.queries[:stats:stats], b.queries[stats+len(heatmaps):]...)
			if len(queries) != len(figs) || len(figs) < 40 || (f == dashboard.Grafana && len(heatmaps) != 2) {
				t.Fatalf("%s %s: %d queries for %d figures and %d heatmaps", name, f, len(b.queries), len(figs), len(heatmaps))
			}
			for _, at := range []time.Duration{10 * time.Minute, 20 * time.Minute} {
				o := promqltest.NewOracle(r.At(at-5*time.Minute), r.At(at), 300)
				for i, q := range queries {
					if q != figs[i].Expr {
						t.Fatalf("%s: query %d is not the library's figure %s", f, i, figs[i].ID)
					}
					v, ok := o.Figure(figs[i].ID)
					if !ok {
						t.Fatalf("no oracle for %s", figs[i].ID)
					}
					e := substitute(t, q, "5m", map[string]string{"job": "inferscope-demo", "instance": "sim:8000"})
					g.ExprTests = append(g.ExprTests, near(e, v, at))
				}
				for i, h := range heatmaps {
					if b.queries[stats+i] != h.Expr {
						t.Fatalf("%s: query %d is not the heatmap of %s", f, stats+i, h.ID)
					}
					g.ExprTests = append(g.ExprTests, bucketTests(t, o, h, at)...)
				}
			}
		}
		run(t, tool, g)
	}
}

// near tests that e returns v at t (NaN as NaN: 0/0 is not 0).
func near(e string, v float64, at time.Duration) promtool.ExprTest {
	when := promtool.Duration(int(at.Seconds()))
	one := []promtool.Sample{{Labels: `{instance="sim:8000", job="inferscope-demo"}`, Value: 1}}
	switch {
	case math.IsNaN(v):
		return promtool.ExprTest{Expr: "(" + e + ") != bool (" + e + ")", EvalTime: when, Samples: one}
	case math.IsInf(v, 0):
		return promtool.ExprTest{Expr: "(" + e + ") == bool " + promtool.Value(v), EvalTime: when, Samples: one}
	}
	tol := 1e-9 * math.Max(1, math.Abs(v))
	return promtool.ExprTest{Expr: fmt.Sprintf("abs((%s) - %s) <= bool %s", e, promtool.Value(v), promtool.Value(tol)), EvalTime: when, Samples: one}
}

// bucketTests test that a heatmap's query returns, for each bucket bound
// of the window's histogram, its cumulative count's increase over the
// window per second: the report's own reading of the window's buckets.
func bucketTests(t *testing.T, o *promqltest.Oracle, h dashboard.Heatmap, at time.Duration) []promtool.ExprTest {
	t.Helper()
	var hist string
	for _, r := range analysis.LatencyRows {
		if "latency/"+r.ID == h.ID {
			hist = r.Hist
		}
	}
	w := o.W.Hist(hist)
	if w == nil || len(w.Buckets) < 2 {
		t.Fatalf("the window has no %s histogram", hist)
	}
	e := substitute(t, h.Expr, "5m", map[string]string{"job": "inferscope-demo", "instance": "sim:8000"})
	var out []promtool.ExprTest
	for _, b := range w.Buckets {
		le := strconv.FormatFloat(b.UpperBound, 'g', -1, 64)
		if math.IsInf(b.UpperBound, 1) {
			le = "+Inf"
		}
		v := b.Count / o.Seconds
		pick := fmt.Sprintf(`sum((%s) and on (le) label_replace(vector(1), "le", %q, "", ""))`, e, le)
		out = append(out, promtool.ExprTest{Expr: fmt.Sprintf("abs(%s - %s) <= bool %s", pick, promtool.Value(v), promtool.Value(1e-9*math.Max(1, v))),
			EvalTime: promtool.Duration(int(at.Seconds())), Samples: []promtool.Sample{{Labels: "{}", Value: 1}}})
	}
	return out
}

func run(t *testing.T, tool string, groups ...promtool.Group) {
	t.Helper()
	dir := t.TempDir()
	if _, err := promtool.Write(dir, "test.yml", promtool.File{RuleFiles: []string{}, Tests: groups}); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "test", "rules", "test.yml"); err != nil {
		lines := regexp.MustCompile(`(?m)^\s*(expr:|exp:|got:).*$`).FindAllString(out, 30)
		t.Errorf("%v\n%s", err, strings.Join(lines, "\n"))
	}
}

// On every fixture of every server, with every variable at All, every
// panel of both formats returns a series: none shows "No data" where the
// server publishes what it reads.
func TestPanelsOnFixtures(t *testing.T) {
	t.Parallel()
	tool := promtool.Require(t, "promtool")
	var groups []promtool.Group
	for _, fx := range fixtures(t) {
		for _, f := range dashboard.Formats {
			b := build(t, f, fx.fams, fx.snap.Dialect, promql.Options{})
			counters := map[string]bool{}
			for _, n := range b.lib.Counters() {
				counters[n] = true
			}
			pts := promtool.Points(fx.fams, promtool.Labels{"instance": "fixture:80", "job": "fixture"})
			g := promtool.Group{Name: fx.path + " " + string(f), Interval: "5m", InputSeries: promtool.Ramp(pts, func(p promtool.Point) bool {
				return counters[p.Labels["__name__"]]
			})}
			all := map[string]string{}
			for _, v := range dashboard.Variables(b.lib.By()) {
				all[v.Name] = ".*"
			}
			for _, q := range b.queries {
				g.ExprTests = append(g.ExprTests, promtool.ExprTest{Expr: "count(" + substitute(t, q, "5m", all) + ") > bool 0", EvalTime: "5m",
					Samples: []promtool.Sample{{Labels: "{}", Value: 1}}})
			}
			groups = append(groups, g)
		}
	}
	run(t, tool, groups...)
}

// The dashboards for vLLM's newest names, as a person reads them
// (go test ./internal/dashboard -update rewrites them).
func TestGolden(t *testing.T) {
	g := build(t, dashboard.Grafana, nil, "vllm", promql.Options{})
	golden.Check(t, "vllm.grafana.json", g.out)
	p := build(t, dashboard.Perses, nil, "vllm", promql.Options{})
	golden.Check(t, "vllm.perses.yaml", p.out)
}

// The user's selector reaches every query and the variables' own query;
// the variables cover the labels aggregated by.
func TestSelectorAndVariables(t *testing.T) {
	sel, err := promql.ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	b := build(t, dashboard.Grafana, nil, "vllm", promql.Options{Selector: sel, By: []string{"namespace", "pod", "model_name"}})
	for _, q := range b.queries {
		if strings.Count(q, `namespace="llm"`) != strings.Count(q, "vllm:") || !strings.Contains(q, `pod=~"$pod"`) || !strings.Contains(q, `model_name=~"$model"`) {
			t.Errorf("query without the selector or the variables: %s", q)
		}
	}
	var d struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b.out, &d); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
		if q, ok := v.Query.(string); ok && v.Name != "datasource" && !strings.Contains(q, `{namespace="llm"}`) {
			t.Errorf("variable %s reads its values without the selector: %s", v.Name, q)
		}
	}
	if strings.Join(names, ",") != "datasource,namespace,pod,model" {
		t.Errorf("variables %v", names)
	}
}

type fixture struct {
	path string
	fams []*dto.MetricFamily
	snap *snapshot.Snapshot
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	for _, fx := range testdata.All(t, 20, "testdata/dialects", "testdata/real", "testdata/tabbyapi/busy.prom") {
		if len(fx.Snap.Invalid) == 0 {
			out = append(out, fixture{fx.Path, fx.Fams, fx.Snap})
		}
	}
	return out
}

// A dashboard has the report's sections for the server it is written
// from: the chat scenario has no drafter, no offload and no recurrent
// state, so neither has its dashboard, unless every section is asked for.
func TestRowsFollowTheReport(t *testing.T) {
	r, err := promqltest.Simulate("chat", 1, 2*time.Minute, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	optional := []string{analysis.SectionSpecDecode, analysis.SectionKVOffload, analysis.SectionRecurrent}
	for _, all := range []bool{false, true} {
		b := build(t, dashboard.Grafana, r.Last, "tabbyapi", promql.Options{AllSections: all})
		var got []string
		for _, row := range dashboard.Rows(b.lib) {
			if slices.Contains(optional, row.Section.ID) {
				got = append(got, row.Section.ID)
			}
			for _, p := range row.Panels {
				if p.ID == "live/kv_offload" {
					got = append(got, p.ID)
				}
			}
		}
		if want := 0; !all && len(got) != want {
			t.Errorf("chat's dashboard has %v, which its report leaves out", got)
		}
		if all && len(got) < len(optional) {
			t.Errorf("every section asked for, the dashboard has only %v", got)
		}
	}
}
