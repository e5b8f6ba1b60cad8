package rules_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promqltest"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/rules"
	"github.com/inferscope/inferscope/sim"
)

// The simulated runs: every scenario, 30 simulated minutes scraped every
// 15 s, shared by the tests of this package.
const (
	simTotal = 30 * time.Minute
	simStep  = 15 * time.Second
	window   = 5 * time.Minute
	evalStep = time.Minute // promtool's default evaluation interval
)

var (
	runsOnce sync.Once
	runs     map[string]*promqltest.Run
	runsErr  error
)

func simulated(t *testing.T) map[string]*promqltest.Run {
	t.Helper()
	runsOnce.Do(func() {
		runs = map[string]*promqltest.Run{}
		for _, name := range sim.Scenarios() {
			r, err := promqltest.Simulate(name, 1, simTotal, simStep)
			if err != nil {
				runsErr = err
				return
			}
			runs[name] = r
		}
	})
	if runsErr != nil {
		t.Fatal(runsErr)
	}
	return runs
}

// oracle is the report's reading of the window ending at t.
func oracle(r *promqltest.Run, t time.Duration) *promqltest.Oracle {
	return promqltest.NewOracle(r.At(t-window), r.At(t), window.Seconds())
}

// render expands an annotation as Prometheus does.
func render(t *testing.T, text string, labels map[string]string, value float64) string {
	t.Helper()
	s, err := rules.Expand(text, labels, value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// near tests that e returns v (within a relative 1e-9) at t, under the
// labels given; NaN must come back NaN (0/0 is not 0).
func near(e string, v float64, at time.Duration, labels string) promtool.ExprTest {
	if math.IsNaN(v) {
		return promtool.ExprTest{Expr: "(" + e + ") != bool (" + e + ")", EvalTime: promtool.Duration(int(at.Seconds())),
			Samples: []promtool.Sample{{Labels: labels, Value: 1}}}
	}
	if math.IsInf(v, 0) {
		return promtool.ExprTest{Expr: "(" + e + ") == bool " + promtool.Value(v), EvalTime: promtool.Duration(int(at.Seconds())),
			Samples: []promtool.Sample{{Labels: labels, Value: 1}}}
	}
	tol := 1e-9 * math.Max(1, math.Abs(v))
	return promtool.ExprTest{
		Expr:     fmt.Sprintf("abs((%s) - %s) <= bool %s", e, promtool.Value(v), promtool.Value(tol)),
		EvalTime: promtool.Duration(int(at.Seconds())),
		Samples:  []promtool.Sample{{Labels: labels, Value: 1}},
	}
}

const instance = `{instance="sim:8000", job="inferscope-demo"}`

// holdSteps is how many evaluations an alert's condition must hold for.
func holdSteps(hold string) int {
	if hold == "" {
		return 0
	}
	d, err := time.ParseDuration(hold)
	if err != nil {
		panic(hold)
	}
	return int(d / evalStep)
}

// The rules written for tabbyAPI, run by promtool over each scenario's
// series: every figure is what the report computes from the same two
// scrapes; at every minute every condition holds exactly where the
// report's note fires (the property: note and alert agree at the window's
// end), with the note's value; and every alert fires, with its labels and
// rendered annotations, exactly where its condition has held for its
// hold time.
func TestScenarios(t *testing.T) {
	t.Parallel()
	tool := promtool.Require(t, "promtool")
	fired := map[string][]string{}
	for _, name := range sim.Scenarios() {
		r := simulated(t)[name]
		l, err := promql.New(r.Last, "tabbyapi", promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Generate(l, rules.Options{Advice: r.Snapshots[0].Advice})
		if err != nil {
			t.Fatal(err)
		}
		g := promtool.Group{Name: name, Interval: promtool.Duration(int(simStep.Seconds())), InputSeries: r.Inputs}
		g.ExprTests = figureTests(t, r, l)
		conds, holds := conditionTests(t, r, set)
		g.ExprTests = append(g.ExprTests, conds...)
		g.AlertTests, fired[name] = alertTests(t, r, set, holds)
		dir := t.TempDir()
		if err := writeRules(dir, set, rules.Prometheus); err != nil {
			t.Fatal(err)
		}
		if _, err := promtool.Write(dir, "test.yml", promtool.File{RuleFiles: []string{"rules.yml"}, EvaluationInterval: "1m", Tests: []promtool.Group{g}}); err != nil {
			t.Fatal(err)
		}
		if out, err := promtool.Run(dir, tool, "test", "rules", "test.yml"); err != nil {
			t.Errorf("%s: %v\n%s", name, err, failures(out))
		}
	}
	// What the scenarios are for: the pairs, and silence where
	// nothing is wrong.
	for scenario, alert := range map[string]string{
		"offload-thrash": "InferscopeKVOffloadThrashing",
		"hybrid":         "InferscopeRecurrentBudgetTooSmall",
	} {
		if !slices.ContainsFunc(fired[scenario], func(s string) bool { return strings.HasPrefix(s, alert+"@") }) {
			t.Errorf("%s: %s never fires (fired: %v)", scenario, alert, fired[scenario])
		}
	}
	for _, healthy := range []string{"chat", "agent", "offload-healthy"} {
		if len(fired[healthy]) > 0 {
			t.Errorf("%s is healthy, yet %v fire", healthy, fired[healthy])
		}
	}
	t.Logf("alerts fired: %v", fired)
}

// figureTests hold every figure, at 10, 20 and 30 minutes, to the
// report's value over the same window.
func figureTests(t *testing.T, r *promqltest.Run, l *promql.Library) []promtool.ExprTest {
	var out []promtool.ExprTest
	for _, at := range []time.Duration{10 * time.Minute, 20 * time.Minute, 30 * time.Minute} {
		o := oracle(r, at)
		for _, f := range l.Figures() {
			v, ok := o.Figure(f.ID)
			if !ok {
				t.Errorf("no oracle for figure %s", f.ID)
				continue
			}
			out = append(out, near(f.Expr, v, at, instance))
		}
	}
	return out
}

// conditionTests hold every alert's condition, at every minute from the
// first whole window on, to the report's note (its value where it fires),
// and return where each held.
func conditionTests(t *testing.T, r *promqltest.Run, set *rules.Set) ([]promtool.ExprTest, map[string][]bool) {
	var out []promtool.ExprTest
	holds := map[string][]bool{}
	for at := window; at <= simTotal; at += evalStep {
		o := oracle(r, at)
		for _, a := range set.Alerts {
			c := a.Condition
			v, ok, known := o.Condition(c.ID)
			if !known {
				t.Errorf("no oracle for condition %s", c.ID)
				continue
			}
			holds[c.ID] = append(holds[c.ID], ok)
			n := 0.0
			if ok {
				n = 1
				out = append(out, near(c.Expr, v, at, instance))
				if a.Clause != "" && !strings.Contains(o.NoteText(c.ID), a.Clause) {
					t.Errorf("%s: the report's note %q does not say %q, which the alert's description does", c.ID, o.NoteText(c.ID), a.Clause)
				}
			}
			out = append(out, promtool.ExprTest{Expr: "count(" + c.Expr + ") or vector(0)",
				EvalTime: promtool.Duration(int(at.Seconds())), Samples: []promtool.Sample{{Labels: "{}", Value: n}}})
		}
	}
	return out, holds
}

// alertTests say, every 5 minutes from 10, which alerts fire: those whose
// condition held at every evaluation of their hold time, with their
// annotations rendered from the report's value. They return what fires.
func alertTests(t *testing.T, r *promqltest.Run, set *rules.Set, holds map[string][]bool) ([]promtool.AlertTest, []string) {
	var out []promtool.AlertTest
	var fired []string
	for at := 2 * window; at <= simTotal; at += window {
		o := oracle(r, at)
		last := int((at - window) / evalStep)
		for _, a := range set.Alerts {
			test := promtool.AlertTest{EvalTime: promtool.Duration(int(at.Seconds())), Alertname: a.Alert, ExpAlerts: []promtool.Alert{}}
			if h := holds[a.Condition.ID]; !slices.Contains(h[last-holdSteps(a.For):last+1], false) {
				v, _, _ := o.Condition(a.Condition.ID)
				labels := map[string]string{"instance": "sim:8000", "job": "inferscope-demo", "severity": a.Labels["severity"], "note_id": a.Labels["note_id"]}
				ann := map[string]string{}
				for k, text := range a.Annotations {
					ann[k] = render(t, text, labels, v)
				}
				test.ExpAlerts = append(test.ExpAlerts, promtool.Alert{Labels: labels, Annotations: ann})
				fired = append(fired, a.Alert+"@"+promtool.Duration(int(at.Seconds())))
			}
			out = append(out, test)
		}
	}
	return out, fired
}

var failureLine = regexp.MustCompile(`(?m)^\s*(FAILED:|alertname:|expr:|exp:|got:|eval_time:).*$`)

// failures keeps promtool's lines that say what failed.
func failures(out string) string {
	lines := failureLine.FindAllString(out, 80)
	return strings.Join(lines, "\n")
}
