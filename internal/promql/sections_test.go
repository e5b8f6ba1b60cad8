package promql_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/promql"
)

// The library writes the sections the report has for the server: a
// llama-server without a drafter publishes its spec-decode counters at 0,
// and neither the report nor the library has that section (its figures
// would be NaN forever); --all-sections (Options.AllSections) writes it
// anyway, and a server whose drafter has served has it either way.
func TestSectionsFollowTheReport(t *testing.T) {
	body, err := os.ReadFile("../../testdata/dialects/llamacpp-new.prom")
	if err != nil {
		t.Fatal(err)
	}
	idle := regexp.MustCompile(`(?m)^(llamacpp:spec_decode_\S+(\{[^}]*\})?) \S+$`).ReplaceAll(body, []byte("$1 0"))
	real, err := os.ReadFile("../../testdata/real/llama-server/b10309-no-drafter.prom")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
		all  bool
		want bool // spec-decode figures and conditions written
	}{
		{"a drafter that has served", body, false, true},
		{"no drafter", idle, false, false},
		{"no drafter, every section asked for", idle, true, true},
		{"a real llama-server without a draft model", real, false, false},
		{"a real llama-server, every section asked for", real, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fams, err := exposition.Parse(tc.body, exposition.Text)
			if err != nil {
				t.Fatal(err)
			}
			l, err := promql.New(fams, "llamacpp", promql.Options{AllSections: tc.all})
			if err != nil {
				t.Fatal(err)
			}
			var figs, conds []string
			for _, f := range l.Figures() {
				if f.Section() == analysis.SectionSpecDecode {
					figs = append(figs, f.ID)
				}
			}
			for _, c := range l.Conditions() {
				if c.ID == "draft_acceptance_low" {
					conds = append(conds, c.ID)
				}
			}
			if got := len(figs) > 0 && len(conds) > 0; got != tc.want {
				t.Errorf("spec-decode figures %v, conditions %v; want them: %v", figs, conds, tc.want)
			}
			if left := l.Sections().Left(); slices.Contains(left, analysis.SectionSpecDecode) == tc.want {
				t.Errorf("sections left out: %v", left)
			}
			// llama.cpp publishes nothing of the other optional sections:
			// only the drafter's is left out of what it publishes.
			if left, want := l.LeftOut(), !tc.want; (len(left) == 1 && left[0] == analysis.SectionSpecDecode) != want || (!want && len(left) > 0) {
				t.Errorf("left out of what it publishes: %v", left)
			}
			// A dashboard's library (With) keeps the choice.
			w, err := l.With(promql.Options{Window: "$__rate_interval"})
			if err != nil {
				t.Fatal(err)
			}
			if w.Sections() != l.Sections() {
				t.Errorf("With changed the sections: %+v, was %+v", w.Sections(), l.Sections())
			}
			// The figures the library keeps are the other sections'.
			for _, f := range l.Figures() {
				if !tc.want && strings.HasPrefix(f.ID, "spec_decode/") {
					t.Errorf("figure %s written without a drafter", f.ID)
				}
			}
		})
	}
	// Written without a scrape, every section.
	l, err := promql.Newest("llamacpp", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Sections() != analysis.AllSections() {
		t.Errorf("newest names: sections %+v, want all", l.Sections())
	}
}

// The notes a windowed view judges on the window (analysis.WindowedNotes)
// are exactly those whose alert condition reads what happened in its
// window (an increase), not the state at its end.
func TestWindowedNotesAreIncreases(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range promql.Dialects() {
		l, err := promql.Newest(d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Conditions() {
			if !c.Note {
				continue
			}
			seen[c.ID] = true
			inc := strings.Contains(c.Expr, "increase(")
			if w := slices.Contains(analysis.WindowedNotes(), c.ID); w != inc {
				t.Errorf("%s (%s): judged on the window %v, its condition reads an increase %v: %s", c.ID, d, w, inc, c.Expr)
			}
		}
	}
	for _, id := range analysis.WindowedNotes() {
		if !seen[id] {
			t.Errorf("%s is judged on the window but no server's rules have it", id)
		}
	}
}
