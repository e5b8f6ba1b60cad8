package fleet

import (
	"context"
	"errors"
	"sort"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/report"
)

// Assembly: every instance's readings made its figures (figures.go) and
// report (notes.go), whichever read gave them; the totals as the rows'
// arithmetic (totals.go); the fleet's own notes. The store is done by
// now: each core makes instances (2,000 pods: 0.26 s of CPU), every one
// from its own readings alone.

// assemble makes the fleet from what was read.
func assemble(ctx context.Context, q *querier, d *discovery, w *window, paths map[string]path, reads map[string]*read,
	trends map[string]map[string]*report.Trend, gpus *gpuRead) (*Fleet, error) {
	o := q.o
	f := &Fleet{Backend: q.backend(), From: o.From, To: o.To, Range: o.Range, By: o.By, Read: o.Read}
	if c, ok := q.api.(interface{ URL() string }); ok {
		f.Store = c.URL()
	}
	made := make([]*Instance, len(w.groups))
	err := inParallel(ctx, len(made), onCores, func(_ context.Context, i int) error {
		g := w.groups[i]
		made[i] = instanceOf(o, g, paths[g.id], reads[g.id], w, trends[g.id], gpus.of(g.id))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, in := range made {
		if in != nil {
			f.Instances = append(f.Instances, in)
		}
	}
	f.Totals = totals(f, o)
	f.Notes = notesOf(f, said{routerSeries: sum(d.routerSeries), noMetadata: d.meta != nil && d.meta.missing, copies: q.replicas.found(), gpus: gpus})
	return f, nil
}

// instanceOf makes one group's figures and report from its readings,
// whichever path read them. It returns nil for an instance that does not
// serve the model asked for, or has no sample in the window.
func instanceOf(o Options, g *group, p path, rd *read, w *window, trends map[string]*report.Trend, gpus *InstanceGPUs) *Instance {
	in := &Instance{ID: g.id, Labels: g.labels, Dialect: g.dialect, Read: p.read, Why: p.why}
	for t := range g.targets {
		in.Targets = append(in.Targets, t)
	}
	sort.Slice(in.Targets, func(i, j int) bool { return in.Targets[i].String() < in.Targets[j].String() })
	switch {
	case rd == nil:
		return nil
	case rd.err != nil:
		return failed(in, rd.err)
	case len(rd.w.bs) == 0:
		// Listed by the series query without a sample in the window:
		// VictoriaMetrics lists the series of whole days.
		return nil
	}
	last := rd.w.bs[len(rd.w.bs)-1]
	in.snap, in.lastAt = last.snap, last.at
	if rd.end != nil {
		// The report reads the end of the window whole (raw samples may
		// leave out the buckets no window figure reads).
		in.snap = rd.end.snap
	}
	in.native, in.bornAt, in.peak = rd.native, rd.bornAt, rd.peak
	in.snap.ScrapeSeconds = w.waited(g)
	in.delta = deltaOver(rd.w.bs, rd.w.fromZero, rd.w.start)
	in.State = stateOf(in, g, w)
	in.Figures = figuresOf(in.snap, in.peak, in.delta.Delta, o.Range)
	in.Report = instanceReport(in, o)
	if gpus != nil {
		// Its GPU section and notes, of the GPUs' window.
		withGPUs(in, gpus, rd.w.bs[0].snap)
	}
	if len(trends) > 0 {
		in.Trends = trends
		in.Report.Trends = trends
	}
	return in
}

// failed is an instance whose series a dialect could not read (nil: one
// that does not serve the model asked for).
func failed(in *Instance, err error) *Instance {
	var me *dialect.ModelError
	if errors.As(err, &me) {
		return nil
	}
	in.State, in.Err = Unreadable, err
	in.Report = unreadableReport(in, err)
	return in
}

// stateOf is what the window and the readings say of an instance.
func stateOf(in *Instance, g *group, w *window) State {
	switch {
	case w.down(g):
		return Down
	case w.end[g.id] == 0:
		return Gone
	case in.delta.Reset:
		return Restarted
	case w.born(g):
		return New
	}
	return Up
}
