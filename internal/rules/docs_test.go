package rules_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/rules"
)

// notesAlertsDoc is the alert column of docs/notes.md, written from the
// code: for each note a window decides (and each alert no note covers),
// its alert, severity, hold time, the servers whose series decide it, and
// its expression for tabbyAPI's and vLLM's newest names.
func notesAlertsDoc(t *testing.T) string {
	t.Helper()
	sets := map[string]*rules.Set{}
	for _, d := range promql.Dialects() {
		body, _ := promql.NewestExposition(d)
		fams, _ := exposition.Parse(body, exposition.Text)
		s, err := dialect.Map(fams, dialect.Options{Dialect: d})
		if err != nil {
			t.Fatal(err)
		}
		l, err := promql.Newest(d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sets[d], err = rules.Generate(l, rules.Options{Advice: s.Advice}); err != nil {
			t.Fatal(err)
		}
	}
	titles := map[string]string{}
	for i, n := range dialect.Names() {
		titles[n] = dialect.Titles()[i]
	}
	find := func(d, id string) (rules.Alert, bool) {
		for _, a := range sets[d].Alerts {
			if a.Condition.ID == id {
				return a, true
			}
		}
		return rules.Alert{}, false
	}
	var b strings.Builder
	b.WriteString(notesAlertsMarker + `

## Alerts

For each note a window decides, the alert
` + "`inferscope rules`" + ` writes, and the alerts incidents show are needed where no note says it. Each
alert's ` + "`runbook_url`" + ` points to its section below. Expressions are shown for tabbyAPI's and
vLLM's newest names with the default labels (` + "`--by`" + `) and window (5m); the rules for another
server, version or ` + "`--selector`" + ` are written from the names that server publishes.

| note | alert | severity | for | servers |
|---|---|---|---|---|
`)
	for _, id := range promql.ConditionIDs() {
		var servers []string
		var a rules.Alert
		for _, d := range promql.Dialects() {
			if x, ok := find(d, id); ok {
				servers, a = append(servers, titles[d]), x
			}
		}
		note := "`" + id + "`"
		if !promql.IsNote(id) {
			note = "— (" + strings.ReplaceAll(id, "_", " ") + ")"
		}
		hold := a.For
		if hold == "" {
			hold = "at once"
		}
		fmt.Fprintf(&b, "| %s | [`%s`](#%s) | %s | %s | %s |\n", note, a.Alert, id, a.Labels["severity"], hold, strings.Join(servers, ", "))
	}
	b.WriteString("\nThe notes no window decides make no alert:\n\n")
	for _, id := range sortedKeys(promql.Undecidable) {
		fmt.Fprintf(&b, "- `%s`: %s.\n", id, promql.Undecidable[id])
	}
	for _, id := range promql.ConditionIDs() {
		section(&b, id, find, titles)
	}
	return b.String()
}

// section writes one alert's section: its expression for tabbyAPI and
// vLLM where they have it (else the first server that does), and its
// description.
func section(b *strings.Builder, id string, find func(string, string) (rules.Alert, bool), titles map[string]string) {
	fmt.Fprintf(b, "\n### %s\n\n", id)
	var shown []rules.Alert
	for _, d := range []string{"tabbyapi", "vllm", "sglang", "tgi", "llamacpp"} {
		a, ok := find(d, id)
		if !ok || (d != "tabbyapi" && d != "vllm" && (len(shown) > 0 || hasEither(find, id))) {
			continue
		}
		fmt.Fprintf(b, "`%s` (%s):\n\n```promql\n%s\n```\n\n", a.Alert, titles[d], a.Expr)
		shown = append(shown, a)
	}
	fmt.Fprintf(b, "Description: `%s`\n", shown[len(shown)-1].Annotations["description"])
}

func hasEither(find func(string, string) (rules.Alert, bool), id string) bool {
	_, a := find("tabbyapi", id)
	_, b := find("vllm", id)
	return a || b
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// notesAlertsMarker starts the part of docs/notes.md the code writes: the
// alert of every note, each under its id, where runbook_url points.
const notesAlertsMarker = "<!-- Everything below is written by go test ./internal/rules -run TestNotesAlertsDoc -update: edit the code, not this. -->"

// docs/notes.md, from its marker on, is what the code writes (-update
// rewrites that part).
func TestNotesAlertsDoc(t *testing.T) {
	const path = "../../docs/notes.md"
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, found := strings.Cut(string(file), notesAlertsMarker)
	got := notesAlertsDoc(t)
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(path, []byte(strings.TrimRight(head, "\n")+"\n\n"+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !found {
		t.Fatalf("docs/notes.md has no line %q (go test ./internal/rules -run TestNotesAlertsDoc -update adds it and what follows)", notesAlertsMarker)
	}
	if want := notesAlertsMarker + tail; want != got {
		t.Errorf("docs/notes.md's alerts are not what the code writes (- file, + code):\n%s(go test ./internal/rules -run TestNotesAlertsDoc -update rewrites them)",
			golden.Diff(want, got))
	}
}
