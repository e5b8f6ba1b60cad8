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
		if kind, ok := snapshot.Declared(k); !ok || kind == snapshot.Histogram {
			t.Errorf("%s: scalar %q is not a declared counter or gauge", what, k)
		}
	}
	for k := range s.Histograms {
		if kind, ok := snapshot.Declared(k); !ok || kind != snapshot.Histogram {
			t.Errorf("%s: histogram %q is not a declared histogram", what, k)
		}
	}
	for k := range s.Extra {
		if _, ok := snapshot.DeclaredExtra(k); !ok {
			t.Errorf("%s: Extra key %q is not declared", what, k)
		}
	}
}

// Every dialect, detected or forced, produces only the canonical names
// package snapshot declares, on every fixture: a name added to a dialect
// must be declared (with its unit and kind) first.
func TestOnlyDeclaredNames(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/*.prom", "testdata/*/*.prom", "../../testdata/real/*.prom", "../analysis/testdata/*.prom"} {
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
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format, err := exposition.DetectFormat("", body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fams, err := exposition.Parse(body, format)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range append([]string{""}, Names()...) {
			s, err := Map(fams, Options{Dialect: d})
			if err != nil {
				continue // not this server's scrape
			}
			mapped[s.Dialect]++
			checkDeclared(t, f+" as "+s.Dialect, s)
		}
	}
	for _, d := range Names() {
		if mapped[d] == 0 {
			t.Errorf("no fixture read as %s", d)
		}
	}
}
