package fleet

import (
	"io"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// Schema is the version of the fleet's JSON document. 2: each instance is
// its row of the table (read as the table reads it), its full report
// only where every instance was read whole (--instance, --read-whole).
const Schema = 2

// Document is the fleet as JSON: the store, the window, a row per
// instance with the table's figures, from the same read as the table, the
// totals' row, and the fleet's notes. "at" is set for "now", "from" and
// "to" for a past range. docs/json.md lists every field.
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
	Read          Read                     `json:"read"`
	Instances     []Row                    `json:"instances"`
	Totals        *Row                     `json:"totals"`
	Notes         report.List[report.Note] `json:"notes"`
	// Queries is how many requests the report took.
	Queries int `json:"queries"`
}

// Row is one instance, or the totals, as the table shows it: the same
// figures, as numbers.
type Row struct {
	ID string `json:"id"`
	// Instance is its grouping labels (not the totals').
	Instance map[string]string `json:"instance,omitempty"`
	Dialect  string            `json:"dialect,omitempty"`
	Models   []string          `json:"models"`
	// State is the instance's; the totals say how many are up (Up).
	State   State    `json:"state,omitempty"`
	Up      *int     `json:"up,omitempty"`
	Targets []string `json:"targets,omitempty"`
	// Read is how the instance was read, and Why, for one read whole in
	// a pushdown, why.
	Read Read   `json:"read,omitempty"`
	Why  string `json:"why,omitempty"`
	// ElapsedSeconds is what its rates divide by.
	ElapsedSeconds report.Number `json:"elapsed_seconds"`
	// KV is its KV cache's use (the largest over a past range), Waiting
	// its requests queued.
	KV      *report.Number `json:"kv_cache"`
	Waiting *report.Number `json:"waiting"`
	// Rates are the table's figures of the window, by rates row id, in
	// the row's base unit; null where the window has none (idle).
	Rates map[string]*report.Number `json:"rates"`
	// Stated says how each percentile of Rates is stated (exact,
	// interpolated, at_most, at_least).
	Stated map[string]string `json:"stated"`
	// Notes are the notes its row's notes column names (warn and bad).
	Notes  report.List[report.Note] `json:"notes"`
	Trends map[string]*report.Trend `json:"trends,omitempty"`
	Error  string                   `json:"error,omitempty"`
	// GPU is its GPUs' figures over the window, where some joined it
	// (the totals': of every row's).
	GPU *RowGPU `json:"gpu,omitempty"`
	// Coverage holds, by the rates row's id (and the GPU columns' ids),
	// the instances each of the totals' figures is made of (Over) and the
	// instances read (Of).
	Coverage map[string]Coverage `json:"coverage,omitempty"`
	// Report is the instance's (or the totals') full report, where every
	// instance was read whole.
	Report *report.Report `json:"report,omitempty"`
}

// RowGPU is a row's GPUs as the table shows them: how many joined and
// how (pod, host; not the totals'), the mean power over the window in
// watts, the energy in joules, joules per generated token, the
// utilization (0..1); each null where not published.
type RowGPU struct {
	GPUs           int            `json:"gpus"`
	Join           string         `json:"join,omitempty"`
	Watts          *report.Number `json:"watts"`
	Energy         *report.Number `json:"energy_joules"`
	JoulesPerToken *report.Number `json:"joules_per_token"`
	Utilization    *report.Number `json:"utilization"`
}

func rowGPU(f *GPUFigures, join string) *RowGPU {
	if f == nil {
		return nil
	}
	return &RowGPU{GPUs: f.GPUs, Join: join, Watts: number(f.Watts), Energy: number(f.Energy),
		JoulesPerToken: number(f.JoulesPerToken), Utilization: number(f.Utilization)}
}

// Coverage is how many instances a totals figure adds up, of how many.
type Coverage struct {
	Over int `json:"over"`
	Of   int `json:"of"`
}

// Document returns the fleet's JSON document.
func (f *Fleet) Document() Document {
	d := Document{Schema: Schema, Version: f.Version, Backend: f.Backend, Store: f.Store, WindowSeconds: f.Window().Seconds(),
		By: f.By, Read: f.Read, Notes: f.Notes, Queries: len(f.Queries), Instances: []Row{}}
	if d.By == nil {
		d.By = []string{}
	}
	t := func(v time.Time) *report.Time { return &report.Time{Time: v.UTC()} }
	if f.Range {
		d.From, d.To = t(f.From), t(f.To)
	} else {
		d.At = t(f.To)
	}
	whole := f.Read == Rebuild
	for _, in := range f.Instances {
		r := rowOf(in, whole)
		r.Instance, r.State, r.Targets, r.Read, r.Why = in.Labels, in.State, []string{}, in.Read, in.Why
		for _, t := range in.Targets {
			r.Targets = append(r.Targets, t.String())
		}
		if in.Err != nil {
			r.Error = in.Err.Error()
		}
		if in.GPUs != nil && r.GPU != nil {
			r.GPU.Join = in.GPUs.Join
		}
		d.Instances = append(d.Instances, r)
	}
	if t := f.Totals; t != nil {
		r := rowOf(t, whole)
		up := countUp(f.Instances)
		// Its notes column is empty: the fleet's notes say what the
		// totals' would (their report, read whole, holds them).
		r.Up, r.Coverage, r.Notes = &up, map[string]Coverage{}, report.List[report.Note]{}
		for i, row := range t.Figures.Rows {
			r.Coverage[row.ID] = Coverage{Over: t.Figures.Totals[i].Over, Of: t.Figures.Totals[i].Of}
		}
		for id, c := range t.Figures.GPUCoverage {
			r.Coverage[id] = c
		}
		d.Totals = &r
	}
	return d
}

// rowOf is an instance's (or the totals') row: the table's figures, with
// its report where it was read whole.
func rowOf(in *Instance, whole bool) Row {
	r := Row{ID: in.ID, Dialect: in.Dialect, Models: []string{}, ElapsedSeconds: report.Number(in.Figures.Seconds),
		KV: number(in.Figures.KV), Waiting: number(in.Figures.Waiting), Rates: map[string]*report.Number{}, Stated: map[string]string{},
		Notes: tableNotes(in), Trends: in.Trends, GPU: rowGPU(in.Figures.GPU, "")}
	if in.snap != nil {
		r.Models = append(r.Models, in.snap.Models...)
		if r.Dialect == "" {
			r.Dialect = in.snap.Dialect // the totals': the fleet's
		}
	}
	for _, c := range tableRates {
		_, fig, ok := in.Figures.Rate(c.id)
		if !ok {
			continue
		}
		r.Rates[c.id] = number(fig.Value)
		if fig.Value != nil && fig.Estimate.Kind != histogram.Unknown {
			r.Stated[c.id] = fig.Estimate.Kind.String() // a percentile's
		}
	}
	if whole {
		r.Report = in.Report
	}
	return r
}

// tableNotes are the notes an instance's row names: its warn and bad
// notes, worst first (noteIDs).
func tableNotes(in *Instance) report.List[report.Note] {
	out := report.List[report.Note]{}
	if in.Report == nil {
		return out
	}
	for _, sev := range []report.Severity{report.Bad, report.Warn} {
		for _, n := range in.Report.Notes {
			if n.Severity == sev {
				out = append(out, n)
			}
		}
	}
	return out
}

func number(p *float64) *report.Number {
	if p == nil {
		return nil
	}
	n := report.Number(*p)
	return &n
}

// JSON writes the fleet's document, indented (or on one line: the watch
// view's one document per refresh).
func (f *Fleet) JSON(w io.Writer, compact bool) error {
	return render.JSONValue(w, f.Document(), render.JSONOptions{Compact: compact})
}
