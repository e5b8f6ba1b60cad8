package rules_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	testdata "github.com/inferscope/inferscope/internal/fixtures"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/rules"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// source is something rules are written from: a dialect's newest names or
// a fixture's.
type source struct {
	name    string
	dialect string
	fams    []*dto.MetricFamily // nil for the newest names
	advice  snapshot.Advice
}

// sources are every dialect's newest names and every fixture of testdata.
func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	for _, d := range promql.Dialects() {
		body, err := promql.NewestExposition(d)
		if err != nil {
			t.Fatal(err)
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			t.Fatal(err)
		}
		s, err := dialect.Map(fams, dialect.Options{Dialect: d})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, source{name: "newest-" + d, dialect: d, advice: s.Advice})
	}
	for _, fx := range testdata.All(t, 40) {
		out = append(out, source{name: fx.Path, dialect: fx.Snap.Dialect, fams: fx.Fams, advice: fx.Snap.Advice})
	}
	return out
}

// library is the source's library under options o.
func (s source) library(t *testing.T, o promql.Options) *promql.Library {
	t.Helper()
	var l *promql.Library
	var err error
	if s.fams == nil {
		l, err = promql.Newest(s.dialect, o)
	} else {
		l, err = promql.New(s.fams, s.dialect, o)
	}
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return l
}

func (s source) set(t *testing.T, o promql.Options, ro rules.Options) *rules.Set {
	t.Helper()
	l := s.library(t, o)
	ro.Advice = s.advice
	set, err := rules.Generate(l, ro)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return set
}

// Every output of every dialect and fixture passes promtool check rules
// (the operator's spec as a rule file), and vmalert -dryRun accepts the
// vmalert format: with the default labels, and with a selector and other
// labels to aggregate by.
func TestRulesCheck(t *testing.T) {
	t.Parallel()
	tool := promtool.Require(t, "promtool")
	vmalert := promtool.Require(t, "vmalert")
	sel, err := promql.ParseSelector(`{namespace="llm", pod=~"vllm-.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files, vmFiles []string
	for i, src := range sources(t) {
		for j, o := range []promql.Options{{}, {Selector: sel, By: []string{"namespace", "pod"}, Window: "10m"}} {
			set := src.set(t, o, rules.Options{RunbookBase: "https://runbooks.example/llm"})
			for _, f := range rules.Formats {
				var b bytes.Buffer
				if err := set.Write(&b, f); err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(dir, strings.Join([]string{string(f), itoa(i), itoa(j)}, "-")+".yml")
				body := b.Bytes()
				if f == rules.Operator {
					body = operatorSpec(t, body)
				}
				if err := os.WriteFile(name, body, 0o644); err != nil {
					t.Fatal(err)
				}
				if f == rules.VMAlert {
					vmFiles = append(vmFiles, name)
				} else {
					files = append(files, name)
				}
			}
		}
	}
	if out, err := promtool.Run(dir, tool, append([]string{"check", "rules"}, files...)...); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, lastLines(out, 30))
	}
	for _, f := range vmFiles {
		if out, err := promtool.Run(dir, vmalert, "-dryRun", "-rule="+f); err != nil {
			t.Errorf("vmalert -dryRun %s: %v\n%s", f, err, lastLines(out, 20))
		}
	}
}

// operatorSpec returns a PrometheusRule's spec as a rule file, after
// checking the resource's own fields.
func operatorSpec(t *testing.T, body []byte) []byte {
	t.Helper()
	var pr rules.PrometheusRule
	if err := yaml.Unmarshal(body, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" || len(pr.Spec.Groups) != 2 {
		t.Fatalf("not a PrometheusRule: %+v", pr.Metadata)
	}
	out, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	alertName  = regexp.MustCompile(`^` + rules.Prefix + `[A-Z][A-Za-z0-9]*$`)
)

// Names follow the conventions: records level:metric:operations, unique;
// alerts CamelCase under the prefix, unique, severity from the note
// (bad → critical, warn → warning), the note's id, a runbook link to it.
func TestNamesAndLabels(t *testing.T) {
	for _, src := range sources(t) {
		set := src.set(t, promql.Options{}, rules.Options{RunbookBase: "https://runbooks.example/notes.html#"})
		records := map[string]bool{}
		for _, r := range set.Records {
			parts := strings.Split(r.Record, ":")
			if len(parts) != 3 || !metricName.MatchString(r.Record) || parts[1] == "" || records[r.Record] {
				t.Errorf("%s: record %q is not a unique level:metric:operations", src.name, r.Record)
			}
			records[r.Record] = true
		}
		alerts := map[string]bool{}
		for _, a := range set.Alerts {
			if !alertName.MatchString(a.Alert) || alerts[a.Alert] {
				t.Errorf("%s: alert %q is not a unique CamelCase name under %s", src.name, a.Alert, rules.Prefix)
			}
			alerts[a.Alert] = true
			if err := checkAlert(a, "https://runbooks.example/notes.html#"); err != nil {
				t.Errorf("%s: %v", src.name, err)
			}
		}
	}
}

// checkAlert checks an alert's labels and annotations.
func checkAlert(a rules.Alert, runbooks string) error {
	id := a.Labels["note_id"]
	sev := a.Labels["severity"]
	b, banded := analysis.NoteBand(id)
	want := map[report.Severity]string{report.Warn: "warning", report.Bad: "critical"}
	switch {
	case id != a.Condition.ID:
		return fmt.Errorf("%s has note_id %q", a.Alert, id)
	case a.Condition.Note && !banded:
		return fmt.Errorf("%s claims note %s, which no band makes", a.Alert, id)
	case a.Condition.Note && sev != want[b.Severity]:
		return fmt.Errorf("%s (note %s) has severity %q", a.Alert, b.Severity, sev)
	case sev != "critical" && sev != "warning":
		return fmt.Errorf("%s has severity %q", a.Alert, sev)
	case a.Annotations["runbook_url"] != runbooks+id:
		return fmt.Errorf("%s runbook %q", a.Alert, a.Annotations["runbook_url"])
	case a.Annotations["summary"] == "" || a.Annotations["description"] == "":
		return fmt.Errorf("%s without summary or description", a.Alert)
	}
	return nil
}

// Each dialect's newest names give the alerts its series can decide, and
// the notes no dialect can decide make none.
func TestAlertsPerDialect(t *testing.T) {
	want := map[string][]string{
		"tabbyapi": {"kv_cache_over_capacity", "kv_cache_pressure", "queue_pressure", "kv_offload_over_capacity", "kv_offload_cold_allocs",
			"kv_offload_thrashing", "recurrent_over_budget", "recurrent_live_kv_evictions", "recurrent_raise_budget", "draft_acceptance_low",
			"admission_stalled", "queue_time_high", "target_down"},
		"vllm": {"kv_cache_pressure", "queue_pressure", "preemptions", "requests_errored", "draft_acceptance_low", "requests_refused",
			"admission_stalled", "queue_time_high", "requests_aborted", "target_down"},
		// vLLM's names before the admission limit.
		"aphrodite": {"kv_cache_pressure", "queue_pressure", "preemptions", "requests_errored", "draft_acceptance_low",
			"admission_stalled", "queue_time_high", "requests_aborted", "target_down"},
		"llamacpp": {"queue_pressure", "draft_acceptance_low", "admission_stalled", "target_down"},
		"sglang": {"kv_cache_over_capacity", "kv_cache_pressure", "queue_pressure", "preemptions", "retracted_work",
			"admission_stalled", "queue_time_high", "target_down"},
		"tgi":    {"queue_pressure", "admission_stalled", "queue_time_high", "requests_failed", "target_down"},
		"trtllm": {"kv_cache_pressure", "queue_pressure", "draft_acceptance_low", "admission_stalled", "queue_time_high", "target_down"},
		// The frontend has no engine's queue or cache: its failures and its
		// being down are what it can decide.
		"dynamo":   {"requests_failed", "target_down"},
		"lmdeploy": {"kv_cache_pressure", "queue_pressure", "draft_acceptance_low", "admission_stalled", "queue_time_high", "target_down"},
	}
	for _, d := range promql.Dialects() {
		l, err := promql.Newest(d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Generate(l, rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range set.Alerts {
			got = append(got, a.Condition.ID)
			if b, ok := analysis.NoteBand(a.Condition.ID); ok && b.Severity == report.Info {
				t.Errorf("%s: info note %s makes an alert", d, a.Condition.ID)
			}
		}
		if !slices.Equal(got, want[d]) {
			t.Errorf("%s: alerts %v\nwant %v", d, got, want[d])
		}
	}
}

// The rules for each dialect's newest names, in every format, as a person
// reads them (go test ./internal/rules -update rewrites them).
func TestGolden(t *testing.T) {
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
		set, err := rules.Generate(l, rules.Options{Advice: s.Advice})
		if err != nil {
			t.Fatal(err)
		}
		formats := []rules.Format{rules.Prometheus}
		if d == "vllm" {
			formats = rules.Formats
		}
		for _, f := range formats {
			var b bytes.Buffer
			if err := set.Write(&b, f); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, d+"."+string(f)+".yml", b.String())
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	l, err := promql.Newest("vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Generate(l, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(&bytes.Buffer{}, "thanos"); err == nil || !strings.Contains(err.Error(), "prometheus, operator, vmalert") {
		t.Errorf("unknown format: %v", err)
	}
}

// The unit tests --tests writes pass under promtool against the rules
// they were written with, for every dialect's newest names and every
// fixture, with and without a selector and other labels.
func TestGeneratedTests(t *testing.T) {
	t.Parallel()
	tool := promtool.Require(t, "promtool")
	sel, err := promql.ParseSelector(`{namespace="llm", pod=~"vllm-.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, src := range sources(t) {
		for j, o := range []promql.Options{{}, {Selector: sel, By: []string{"namespace", "pod"}}} {
			if j > 0 && src.fams != nil {
				continue // the selector's part is the same for every fixture
			}
			l := src.library(t, o)
			set, err := rules.Generate(l, rules.Options{Advice: src.advice})
			if err != nil {
				t.Fatal(err)
			}
			file, err := set.Tests(l, "rules.yml")
			if err != nil {
				t.Fatalf("%s: %v", src.name, err)
			}
			if len(file.Tests) != 2*len(set.Alerts) {
				t.Fatalf("%s: %d test groups for %d alerts", src.name, len(file.Tests), len(set.Alerts))
			}
			// Fixtures of one server version give the same rules and tests:
			// each distinct pair runs once.
			if key := testsKey(t, set, file); !seen[key] {
				seen[key] = true
				t.Run(fmt.Sprintf("%s/%d", src.name, j), func(t *testing.T) {
					t.Parallel()
					runGenerated(t, tool, src.name, set, file)
				})
			}
		}
	}
}

// testsKey is what makes a rule file and its tests distinct.
func testsKey(t *testing.T, set *rules.Set, file promtool.File) string {
	var key bytes.Buffer
	if err := set.Write(&key, rules.Prometheus); err != nil {
		t.Fatal(err)
	}
	for _, g := range file.Tests {
		for _, in := range g.InputSeries {
			key.WriteString(in.Series + in.Values)
		}
	}
	return key.String()
}

// runGenerated runs promtool test rules on a rule file and its tests.
func runGenerated(t *testing.T, tool, name string, set *rules.Set, file promtool.File) {
	dir := t.TempDir()
	if err := writeRules(dir, set, rules.Prometheus); err != nil {
		t.Fatal(err)
	}
	if _, err := promtool.Write(dir, "test.yml", file); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "test", "rules", "test.yml"); err != nil {
		t.Errorf("%s: %v\n%s", name, err, failures(out))
	}
}

// Rules follow the report: on every fixture, no recording rule or alert
// belongs to an optional section (speculative decode, KV offload,
// recurrent state) the fixture's report leaves out, and every optional
// section the report has is in the rules where the server publishes its
// series.
func TestRulesFollowTheReport(t *testing.T) {
	optional := []string{analysis.SectionSpecDecode, analysis.SectionKVOffload, analysis.SectionRecurrent}
	checked := 0
	for _, fx := range testdata.All(t, 40) {
		l, err := promql.New(fx.Fams, fx.Snap.Dialect, promql.Options{})
		if err != nil {
			t.Fatalf("%s: %v", fx.Path, err)
		}
		set, err := rules.Generate(l, rules.Options{Advice: fx.Snap.Advice})
		if err != nil {
			t.Fatalf("%s: %v", fx.Path, err)
		}
		rep := analysis.Analyze(fx.Snap, analysis.Options{})
		has := map[string]bool{}
		for _, s := range rep.Sections {
			has[s.ID] = true
		}
		in := map[string]bool{}
		for _, f := range l.Figures() {
			in[analysis.RowSection(f.ID)] = true
		}
		for _, a := range set.Alerts {
			if b, ok := analysis.NoteBand(a.Condition.ID); ok && len(b.Rows) > 0 {
				in[analysis.RowSection(b.Rows[0])] = true
			}
		}
		for _, sec := range optional {
			if in[sec] && !has[sec] {
				t.Errorf("%s: rules for %s, which the report leaves out", fx.Path, sec)
			}
			if in[sec] {
				checked++
			}
		}
		if !slices.Equal(l.Sections().Left(), leftOut(optional, has)) {
			t.Errorf("%s: the library leaves out %v, the report %v", fx.Path, l.Sections().Left(), leftOut(optional, has))
		}
	}
	if checked == 0 {
		t.Error("no fixture has an optional section's rules")
	}
}

func leftOut(optional []string, has map[string]bool) []string {
	var out []string
	for _, s := range optional {
		if !has[s] {
			out = append(out, s)
		}
	}
	return out
}

// A runbook base holding template syntax is a URL, not a template: every
// format passes promtool and vmalert, and each alert's runbook_url expands
// to the base as given (promtool test rules checks the expansion against
// rules.Expand's, which TestRunbookBaseLiteral holds to the base).
func TestRunbookBaseLiteral(t *testing.T) {
	const base = "https://wiki.example/{{ $labels.job }}/a{{{b}}/{{"
	src := sources(t)[0]
	l := src.library(t, promql.Options{})
	set, err := rules.Generate(l, rules.Options{Advice: src.advice, RunbookBase: base})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range set.Alerts {
		got, err := rules.Expand(a.Annotations["runbook_url"], map[string]string{"job": "vllm"}, 1)
		if want := base + "#" + a.Condition.ID; err != nil || got != want {
			t.Errorf("%s: runbook_url expands to %q (%v), want %q", a.Alert, got, err, want)
		}
	}
	tool := promtool.Require(t, "promtool")
	vmalert := promtool.Require(t, "vmalert")
	dir := t.TempDir()
	for _, f := range rules.Formats {
		var b bytes.Buffer
		if err := set.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		body := b.Bytes()
		if f == rules.Operator {
			body = operatorSpec(t, body)
		}
		name := filepath.Join(dir, string(f)+".yml")
		if err := os.WriteFile(name, body, 0o644); err != nil {
			t.Fatal(err)
		}
		check := []string{tool, "check", "rules", name}
		if f == rules.VMAlert {
			check = []string{vmalert, "-dryRun", "-rule=" + name}
		}
		if out, err := promtool.Run(dir, check[0], check[1:]...); err != nil {
			t.Errorf("%s: %v\n%s", f, err, lastLines(out, 20))
		}
	}
	file, err := set.Tests(l, "rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	runGenerated(t, tool, "runbook base with template syntax", set, file)
}
