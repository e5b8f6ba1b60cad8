// Package rules writes Prometheus rules from inferscope's diagnoses: a
// recording rule for every windowed figure of the report and an alert for
// every note a window can decide, plus the alerts incidents show are needed
// where no note says it (admission stalled, queue time high, aborts and
// failures, a target down). The expressions are internal/promql's, for the
// names the server publishes; the thresholds are the report's.
//
// # Names
//
// Recording rules are named level:metric:operations, after Prometheus'
// practice: the --by labels, a dialect-neutral metric
// (inferscope_kv_cache_usage) and what was done (avg, rate5m, ratio_rate5m,
// p99_rate5m). Alerts are CamelCase under one prefix ([Prefix]), with
// severity critical for a note of severity bad and warning for warn,
// summary and description annotations in the note's own words (its knob
// from the dialect's advice), the note's id, and a runbook URL to the
// note's entry in docs/notes.md.
//
// # Formats
//
// A plain rule file, a prometheus-operator PrometheusRule, or a rule file
// for vmalert ([Format]); [Tests] writes promtool unit tests for the
// alerts over series built from the same names.
package rules

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Format is the shape the rules are written in.
type Format string

// The formats.
const (
	// Prometheus is a plain rule file (rule_files in prometheus.yml).
	Prometheus Format = "prometheus"
	// Operator is a prometheus-operator PrometheusRule resource.
	Operator Format = "operator"
	// VMAlert is a rule file for vmalert, its groups typed prometheus.
	VMAlert Format = "vmalert"
)

// Formats lists the formats.
var Formats = []Format{Prometheus, Operator, VMAlert}

// DefaultRunbookBase is where the runbook links point unless told: the
// notes' entries in the repository's docs/notes.md.
const DefaultRunbookBase = "https://github.com/inferscope/inferscope/blob/main/docs/notes.md"

// Options choose what [Generate] writes.
type Options struct {
	// Advice is the server's wording for the notes' knobs (a dialect's
	// snapshot.Advice); empty gives the notes in general terms.
	Advice snapshot.Advice
	// RunbookBase is the page each runbook_url points into, the note's id
	// as the fragment; "" is [DefaultRunbookBase]. It is written as it is
	// (template syntax in it is escaped, not expanded).
	RunbookBase string
	// Name is the PrometheusRule's name, and the groups' prefix; "" is
	// inferscope-<dialect>.
	Name string
}

// File is a rule file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is a rule group.
type Group struct {
	Name string `yaml:"name"`
	// Type is vmalert's datasource type, written only for vmalert.
	Type  string `yaml:"type,omitempty"`
	Rules []Rule `yaml:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set).
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// Alert is one generated alert with what produced it, for tests and docs.
type Alert struct {
	Rule
	// Condition is the promql condition the alert fires on.
	Condition promql.Condition
	// Clause is part of the description the report's note says in the
	// same words ("" for an alert no note makes).
	Clause string
}

// Set is everything generated for one server.
type Set struct {
	Dialect string
	Name    string
	Records []Rule
	Alerts  []Alert
}

// Generate writes the recording rules and alerts for a library.
func Generate(l *promql.Library, o Options) (*Set, error) {
	if o.RunbookBase == "" {
		o.RunbookBase = DefaultRunbookBase
	}
	if o.Name == "" {
		o.Name = "inferscope-" + l.Dialect()
	}
	set := &Set{Dialect: l.Dialect(), Name: o.Name}
	level := strings.Join(l.By(), "_")
	if level == "" {
		level = "all"
	}
	seen := map[string]string{}
	for _, f := range l.Figures() {
		name := level + ":" + f.Metric + ":" + f.Op
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("figures %s and %s would both record %s", other, f.ID, name)
		}
		seen[name] = f.ID
		set.Records = append(set.Records, Rule{Record: name, Expr: f.Expr})
	}
	where := location(l.By())
	for _, c := range l.Conditions() {
		d, ok := def(c.ID)
		if !ok {
			return nil, fmt.Errorf("condition %s has no alert", c.ID)
		}
		sev, err := severity(c, d)
		if err != nil {
			return nil, err
		}
		loc := where
		if c.ID == "target_down" {
			loc = "{{ $labels.instance }}"
		}
		r := Rule{
			Alert: Prefix + d.name,
			Expr:  c.Expr,
			For:   d.hold,
			Labels: map[string]string{
				"severity": sev,
				"note_id":  c.ID,
			},
			Annotations: map[string]string{
				"summary":     d.summary + " on " + loc,
				"description": d.describe(o.Advice, l.Window()),
				"runbook_url": literal(strings.TrimSuffix(o.RunbookBase, "#")) + "#" + c.ID,
			},
		}
		set.Alerts = append(set.Alerts, Alert{Rule: r, Condition: c, Clause: d.clause})
	}
	return set, nil
}

// literal writes s into an annotation so that the alert's template
// expands it to s itself: a URL may hold "{{", which Prometheus and
// vmalert would read as the start of an action (an unclosed one fails the
// whole file). Text outside an action, "}}" included, is copied as it is.
func literal(s string) string { return strings.ReplaceAll(s, "{{", `{{ "{{" }}`) }

// location writes where an alert fires, from the labels its series keep.
func location(by []string) string {
	if len(by) == 0 {
		return "the fleet"
	}
	parts := make([]string, len(by))
	for i, b := range by {
		parts[i] = "{{ $labels." + b + " }}"
	}
	return strings.Join(parts, " ")
}

func def(id string) (alertDef, bool) {
	for _, d := range alertDefs {
		if d.id == id {
			return d, true
		}
	}
	return alertDef{}, false
}

// severity maps a note's severity (bad → critical, warn → warning); an
// alert no note makes has its own.
func severity(c promql.Condition, d alertDef) (string, error) {
	if !c.Note {
		return d.severity, nil
	}
	b, ok := analysis.NoteBand(c.ID)
	if !ok {
		return "", fmt.Errorf("note %s has no band in the judgement table", c.ID)
	}
	switch b.Severity {
	case report.Bad:
		return "critical", nil
	case report.Warn:
		return "warning", nil
	}
	return "", fmt.Errorf("note %s is %s: only warn and bad notes make alerts", c.ID, b.Severity)
}

// File returns the set as a rule file: one group of recording rules, one
// of alerts.
func (s *Set) File(f Format) File {
	alerts := make([]Rule, len(s.Alerts))
	for i, a := range s.Alerts {
		alerts[i] = a.Rule
	}
	file := File{Groups: []Group{
		{Name: s.Name + "-records", Rules: slices.Clone(s.Records)},
		{Name: s.Name + "-alerts", Rules: alerts},
	}}
	if f == VMAlert {
		for i := range file.Groups {
			file.Groups[i].Type = "prometheus"
		}
	}
	return file
}

// PrometheusRule is prometheus-operator's resource holding rule groups.
type PrometheusRule struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       File     `yaml:"spec"`
}

// Metadata is a Kubernetes object's name and labels.
type Metadata struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

// Write writes the set in a format.
func (s *Set) Write(w io.Writer, f Format) error {
	var v any
	switch f {
	case Prometheus, VMAlert:
		v = s.File(f)
	case Operator:
		v = PrometheusRule{
			APIVersion: "monitoring.coreos.com/v1",
			Kind:       "PrometheusRule",
			Metadata: Metadata{Name: s.Name, Labels: map[string]string{
				"app.kubernetes.io/name":      "inferscope",
				"app.kubernetes.io/component": s.Dialect + "-rules",
			}},
			Spec: s.File(Prometheus),
		}
	default:
		return fmt.Errorf("unknown rule format %q (known: prometheus, operator, vmalert)", f)
	}
	return Encode(w, v)
}

// Encode writes v (a rule file, a PrometheusRule, promtool tests) as
// YAML, two spaces deep.
func Encode(w io.Writer, v any) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	return nil
}
