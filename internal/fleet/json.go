package fleet

import (
	"io"
	"time"

	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// Schema is the version of the fleet's JSON document.
const Schema = 1

// Document is the fleet as JSON: the store, the window, a report per
// instance in the single-server schema (docs/json.md) with the instance's
// labels and state beside it, the totals as one report, and the fleet's
// notes. "at" is set for "now", "from" and "to" for a past range.
type Document struct {
	Schema  int             `json:"schema"`
	Version string          `json:"inferscope_version,omitempty"`
	Backend promapi.Backend `json:"backend"`
	Store   string          `json:"store"`
	At      *report.Time    `json:"at,omitempty"`
	From    *report.Time    `json:"from,omitempty"`
	To      *report.Time    `json:"to,omitempty"`
	// WindowSeconds is what the rates divide by at most: the window.
	WindowSeconds float64                  `json:"window_seconds"`
	By            []string                 `json:"by"`
	Instances     []DocumentEntry          `json:"instances"`
	Totals        *TotalsEntry             `json:"totals"`
	Notes         report.List[report.Note] `json:"notes"`
	// Queries is how many requests the report took.
	Queries int `json:"queries"`
}

// DocumentEntry is one instance: its report's fields, and what the fleet
// knows of it.
type DocumentEntry struct {
	*report.Report
	Instance map[string]string `json:"instance"`
	State    State             `json:"state"`
	Targets  []string          `json:"targets"`
	// Read is how the instance was read: "rebuild" (its series, read
	// whole by its dialect: every report of the document) or "pushdown".
	Read Read `json:"read"`
}

// TotalsEntry is the totals: a report in the single-server schema, and
// how many instances each of its window's figures adds up.
type TotalsEntry struct {
	*report.Report
	// Coverage holds, by the rates row's id, the instances each window
	// figure is made of (Over) and the instances read (Of): a column
	// some instances cannot give is totalled over those that can.
	Coverage map[string]Coverage `json:"coverage"`
}

// Coverage is how many instances a totals figure adds up, of how many.
type Coverage struct {
	Over int `json:"over"`
	Of   int `json:"of"`
}

// Document returns the fleet's JSON document.
func (f *Fleet) Document() Document {
	d := Document{Schema: Schema, Version: f.Version, Backend: f.Backend, Store: f.Store, WindowSeconds: f.Window().Seconds(),
		By: f.By, Notes: f.Notes, Queries: len(f.Queries), Instances: []DocumentEntry{}}
	if d.By == nil {
		d.By = []string{}
	}
	t := func(v time.Time) *report.Time { return &report.Time{Time: v.UTC()} }
	if f.Range {
		d.From, d.To = t(f.From), t(f.To)
	} else {
		d.At = t(f.To)
	}
	if t := f.Totals; t != nil {
		d.Totals = &TotalsEntry{Report: t.Report, Coverage: map[string]Coverage{}}
		for i, row := range t.Figures.Rows {
			d.Totals.Coverage[row.ID] = Coverage{Over: t.Figures.Totals[i].Over, Of: t.Figures.Totals[i].Of}
		}
	}
	for _, in := range f.Instances {
		e := DocumentEntry{Report: in.Report, Instance: in.Labels, State: in.State, Targets: []string{}, Read: in.Read}
		for _, t := range in.Targets {
			e.Targets = append(e.Targets, t.String())
		}
		d.Instances = append(d.Instances, e)
	}
	return d
}

// JSON writes the fleet's document, indented (or on one line: the watch
// view's one document per refresh).
func (f *Fleet) JSON(w io.Writer, compact bool) error {
	return render.JSONValue(w, f.Document(), render.JSONOptions{Compact: compact})
}
