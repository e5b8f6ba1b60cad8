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
				checkExample(t, l, labels, c.ID, e, i == 0)
				checked++
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d examples checked", checked)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// checkExample writes an example with a library's names, reads it back
// with the dialect at both ends of the last window, and checks that the
// report makes the note exactly when the example fires (with its value).
func checkExample(t *testing.T, l *promql.Library, labels map[string]string, id string, e example, fires bool) {
	t.Helper()
	d := l.Dialect()
	read := func(k int) *snapshot.Snapshot {
		fams, err := l.Families(e.at(k), labels)
		if err != nil {
			t.Fatal(err)
		}
		s, err := dialect.Map(fams, dialect.Options{Dialect: d})
		if err != nil {
			t.Fatalf("%s %s: %v", d, id, err)
		}
		return s
	}
	o := promqltest.NewOracle(read(testMinutes-5), read(testMinutes), 300)
	if o.Noted(id) != fires {
		t.Errorf("%s: %s example (fires: %v): the report's note fires: %v (notes %v)", d, id, fires, o.Noted(id), o.R.Notes)
	}
	if v, _, _ := o.Condition(id); fires && !near(v, e.value) {
		t.Errorf("%s: %s example's value is %g by hand, %g by the report", d, id, e.value, v)
	}
}
