package rules

import (
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promqltest"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The example states behind --tests say what the report says: written with
// each dialect's newest names and read back by the dialect at the start
// and end of the last window, the report of that window makes the note
// exactly where the example is to fire its alert.
func TestExamplesAgreeWithReport(t *testing.T) {
	checked := 0
	for _, d := range promql.Dialects() {
		body, err := promql.NewestExposition(d)
		if err != nil {
			t.Fatal(err)
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			t.Fatal(err)
		}
		l, err := promql.New(fams, d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		labels, err := l.ExampleLabels(ExampleTarget)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Conditions() {
			if !c.Note {
				continue
			}
			pair, ok := examples[c.ID]
			if !ok {
				t.Errorf("no example for %s", c.ID)
				continue
			}
			for i, e := range pair {
				read := func(k int) *snapshot.Snapshot {
					fams, err := l.Families(e.at(k), labels)
					if err != nil {
						t.Fatal(err)
					}
					s, err := dialect.Map(fams, dialect.Options{Dialect: d})
					if err != nil {
						t.Fatalf("%s %s: %v", d, c.ID, err)
					}
					return s
				}
				o := promqltest.NewOracle(read(testMinutes-5), read(testMinutes), 300)
				if o.Noted(c.ID) != (i == 0) {
					t.Errorf("%s: %s example %d: the report's note fires: %v (notes %v)", d, c.ID, i, o.Noted(c.ID), o.R.Notes)
				}
				if i == 0 {
					if v, _, _ := o.Condition(c.ID); !near(v, e.value) {
						t.Errorf("%s: %s example's value is %g by hand, %g by the report", d, c.ID, e.value, v)
					}
				}
				checked++
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d examples checked", checked)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
