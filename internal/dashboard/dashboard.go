// Package dashboard writes dashboards of the report's figures: one panel
// per windowed figure, one row per report section in the report's order,
// and a variable per --by label ($instance, $model) to choose what they
// show. The queries are internal/promql's for the names the server
// publishes, over Grafana's $__rate_interval.
//
// # Formats
//
// Grafana's JSON model is built with the typed builders of
// github.com/grafana/grafana-foundation-sdk/go (no dependencies of its
// own; a builder error is a typed field set wrong, found when the
// dashboard is built). Perses is written from typed structs after its
// documented dashboard model: its Go SDK is a module with hundreds of
// requirements (CUE, Kubernetes clients) and its Prometheus plugin SDK is
// not served by the module proxy.
package dashboard

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/promql"
)

// Format is a dashboard format.
type Format string

// The formats.
const (
	Grafana Format = "grafana"
	Perses  Format = "perses"
)

// Formats lists the formats.
var Formats = []Format{Grafana, Perses}

// RateInterval is the window of every panel's windowed expression:
// Grafana's and Perses' own choice for a rate over the scrape interval.
const RateInterval = "$__rate_interval"

// Variable is a dashboard variable choosing the values of one label.
type Variable struct {
	Name  string // the variable's name ("model")
	Label string // the label it chooses ("model_name")
}

// Variables are the variables for aggregation labels: each label's own
// name, "model" for a model label.
func Variables(by []string) []Variable {
	out := make([]Variable, len(by))
	for i, b := range by {
		name := b
		if b == "model_name" || b == "model" {
			name = "model"
		}
		out[i] = Variable{Name: name, Label: b}
	}
	return out
}

// placeholder is how a format writes a variable inside a regular
// expression matcher: Grafana formats a multi-value variable as a regex
// there by itself, Perses is told to.
func placeholder(f Format, v Variable) string {
	if f == Perses {
		return "${" + v.Name + ":regex}"
	}
	return "$" + v.Name
}

// LibraryOptions are a library's options for a dashboard's queries: the
// user's, plus a matcher per variable and the rate interval for window.
// by are the labels the library aggregates to.
func LibraryOptions(f Format, by []string, o promql.Options) promql.Options {
	o.By = by
	o.Window = RateInterval
	o.Selector = append([]promql.Matcher(nil), o.Selector...)
	for _, v := range Variables(by) {
		o.Selector = append(o.Selector, promql.Matcher{Label: v.Label, Op: promql.Match, Value: placeholder(f, v)})
	}
	return o
}

// Options choose what a dashboard says of itself.
type Options struct {
	// Title is the dashboard's title; "" is "inferscope · DIALECT".
	Title string
	// UID is Grafana's uid and Perses' metadata name; "" is
	// inferscope-DIALECT.
	UID string
	// GPU, when set, adds a GPU row beside the engine's: the GPU figures
	// over dcgm-exporter's names (issue 32).
	GPU *promql.GPU
}

// labelled is a library whose expressions keep some labels: a server's,
// or the GPU's.
type labelled interface{ By() []string }

// GPUPanels are the GPU row's panels: a panel per GPU figure.
func GPUPanels(g *promql.GPU) []Panel {
	var out []Panel
	for _, f := range g.Figures() {
		out = append(out, Panel{ID: f.ID, Title: f.Title, Unit: f.Unit, Queries: []Query{{Figure: f}}})
	}
	return out
}

func (o Options) withDefaults(dialect string) Options {
	if o.Title == "" {
		o.Title = "inferscope · " + dialect
	}
	if o.UID == "" {
		o.UID = "inferscope-" + dialect
	}
	return o
}

// Row is one report section's panels.
type Row struct {
	Section promql.Section
	Panels  []Panel
}

// Panel is one row of the report: one figure, or a latency or size row's
// mean, p50, p90 and p99 together.
type Panel struct {
	ID    string // the report's section/row
	Title string
	Unit  promql.Unit
	// Queries are the panel's figures, each with what its legend adds to
	// the labels ("p99"; "" for a panel of one figure).
	Queries []Query
}

// Query is one figure of a panel.
type Query struct {
	Figure promql.Figure
	Suffix string
}

// statSuffixes are the figure id endings a latency or size row groups.
var statSuffixes = []string{"_mean", "_p50", "_p90", "_p99"}

// Rows lays a library's figures out as the report's sections and rows.
func Rows(l *promql.Library) []Row {
	var rows []Row
	figs := l.Figures()
	for _, s := range promql.Sections {
		r := Row{Section: s}
		for _, f := range figs {
			if f.Section() != s.ID {
				continue
			}
			id, suffix := f.ID, ""
			for _, x := range statSuffixes {
				if base, ok := strings.CutSuffix(f.ID, x); ok {
					id, suffix = base, x[1:]
				}
			}
			title := f.Title
			if suffix != "" {
				title, _, _ = strings.Cut(title, ", ")
			}
			if n := len(r.Panels); n > 0 && r.Panels[n-1].ID == id {
				r.Panels[n-1].Queries = append(r.Panels[n-1].Queries, Query{Figure: f, Suffix: suffix})
				continue
			}
			r.Panels = append(r.Panels, Panel{ID: id, Title: title, Unit: f.Unit, Queries: []Query{{Figure: f, Suffix: suffix}}})
		}
		if len(r.Panels) > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// legend names a series by the labels it keeps and the query's suffix.
func legend(by []string, suffix string) string {
	parts := make([]string, 0, len(by)+1)
	for _, b := range by {
		parts = append(parts, "{{"+b+"}}")
	}
	if suffix != "" {
		parts = append(parts, suffix)
	}
	return strings.Join(parts, " ")
}

// variableSeries is the selector a variable's values are read from: a
// series every instance publishes, under the user's selector (not the
// variables').
func variableSeries(l *promql.Library, user []promql.Matcher) (string, error) {
	s, ok := l.Presence(user)
	if !ok {
		return "", fmt.Errorf("no %s series every instance publishes, to read the variables' values from", l.Dialect())
	}
	return s, nil
}
