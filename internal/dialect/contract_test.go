package dialect

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// checkDeclared fails for every key of s that package snapshot does not
// declare, or declares as another kind.
func checkDeclared(t *testing.T, what string, s *snapshot.Snapshot) {
	t.Helper()
	for k := range s.Scalars {
		if d, ok := snapshot.Declared(k); !ok || d.Extra || d.Kind == snapshot.Histogram {
			t.Errorf("%s: scalar %q is not a declared counter or gauge", what, k)
		}
	}
	for k := range s.Histograms {
		if d, ok := snapshot.Declared(k); !ok || d.Extra || d.Kind != snapshot.Histogram {
			t.Errorf("%s: histogram %q is not a declared histogram", what, k)
		}
	}
	for k := range s.Extra {
		if d, ok := snapshot.Declared(k); !ok || !d.Extra {
			t.Errorf("%s: Extra key %q is not declared", what, k)
		}
	}
}

// eachMapping maps every fixture (this package's, testdata/real and
// analysis's) with every dialect, detected and forced, and calls f with
// each snapshot a dialect reads; it fails when some dialect reads none.
func eachMapping(t *testing.T, f func(what string, s *snapshot.Snapshot)) {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../testdata/dialects/*.prom", "../../testdata/dialects/*/*.prom", "../../testdata/real/*.prom", "../../testdata/tabbyapi/*.prom"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 40 {
		t.Fatalf("found %d fixtures: the testdata moved", len(files))
	}
	mapped := map[string]int{} // snapshots read per dialect
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		format, err := exposition.DetectFormat("", body)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		fams, err := exposition.Parse(body, format)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, d := range append([]string{""}, Names()...) {
			s, err := Map(fams, Options{Dialect: d})
			if err != nil {
				continue // not this server's scrape
			}
			mapped[s.Dialect]++
			f(file+" as "+s.Dialect, s)
		}
	}
	for _, d := range Names() {
		if mapped[d] == 0 {
			t.Errorf("no fixture read as %s", d)
		}
	}
}

// Every dialect produces only the canonical names package snapshot
// declares, on every fixture: a name added to a dialect must be declared
// (with its unit and kind) first.
func TestOnlyDeclaredNames(t *testing.T) {
	eachMapping(t, func(what string, s *snapshot.Snapshot) { checkDeclared(t, what, s) })
}

// A dialect that reads the series a server-specific note rests on says
// that server's knobs for it: analysis has no server's wording of its own.
func TestAdviceCoversSeries(t *testing.T) {
	has := func(s *snapshot.Snapshot, names ...string) bool {
		for _, n := range names {
			if _, ok := s.Scalars[n]; ok {
				return true
			}
			if _, ok := s.Extra[n]; ok {
				return true
			}
		}
		return false
	}
	eachMapping(t, func(what string, s *snapshot.Snapshot) {
		a := s.Advice
		for _, need := range []struct {
			series []string
			field  string
			set    bool
		}{
			{[]string{snapshot.RequestsDeferred}, "QueueFix", a.QueueFix != ""},
			{[]string{snapshot.KVCacheUsageRatio, snapshot.KVCacheTokens}, "KVFix", a.KVFix != ""},
			{[]string{snapshot.ExtraPreemptions}, "Preempted, Preemptions and PreemptFix", a.Preempted != "" && a.Preemptions != "" && a.PreemptFix != ""},
			{[]string{snapshot.KVOffloadMaxTokens, snapshot.KVOffloadMaxBytes}, "OffloadBudget", a.OffloadBudget != ""},
			{[]string{snapshot.KVOffloadColdAllocsTotal}, "ColdAlloc", a.ColdAlloc != ""},
			{[]string{snapshot.RecurrentCacheMaxBytes, snapshot.RecurrentCappedTokensTotal}, "RecurrentBudget", a.RecurrentBudget != ""},
		} {
			if has(s, need.series...) && !need.set {
				t.Errorf("%s: reads %v but its Advice has no %s", what, need.series, need.field)
			}
		}
	})
}
