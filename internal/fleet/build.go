package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// build turns what was gathered into instances, totals and notes.
func (r *run) build(ctx context.Context) {
	for _, g := range r.disc.groups {
		if ctx.Err() != nil {
			return
		}
		in := r.instance(g)
		if in != nil {
			r.f.Instances = append(r.f.Instances, in)
		}
	}
	r.f.Totals = totals(r.f, r.o)
	r.f.Notes = r.notes()
}

// instance reads one group: its snapshots, its window and its report.
// It returns nil for an instance that does not serve the model asked for,
// or has no sample in the window.
func (r *run) instance(g *group) *Instance {
	in := &Instance{ID: g.id, Labels: g.labels, Dialect: g.dialect}
	for t := range g.targets {
		in.Targets = append(in.Targets, t)
	}
	sort.Slice(in.Targets, func(i, j int) bool { return in.Targets[i].String() < in.Targets[j].String() })
	meta := r.meta.forGroup(g)
	end := r.ends[g.id]
	if end != nil && end.err != nil {
		return r.failed(in, end.err)
	}
	w, err := r.window(in, g, meta, end)
	switch {
	case err != nil:
		return r.failed(in, err)
	case len(w.bs) == 0:
		// Listed by the series query without a sample in the window:
		// VictoriaMetrics lists the series of whole days.
		return nil
	}
	last := w.bs[len(w.bs)-1]
	in.snap, in.lastAt = last.snap, last.at
	if end != nil {
		// The report reads the end of the window whole (raw samples may
		// leave out the buckets no window figure reads).
		in.snap, in.native = end.snap, max(in.native, end.native)
	}
	in.snap.ScrapeSeconds = r.waited(g)
	in.delta = deltaOver(w.bs, w.fromZero, w.start)
	in.State = r.stateOf(in, g)
	if pts := r.peaks[g.id]; len(pts) > 0 {
		if rb, err := rebuild(pts, meta, histBases(g.families)...); err == nil {
			in.peak, _ = dialect.Map(rb.fams, dialect.Options{Model: r.o.Model})
		}
	}
	in.Figures = figuresOf(in.snap, in.peak, in.delta.Delta, r.o.Range)
	in.Report = r.report(in)
	return in
}

// readings are the readings an instance's window is counted over, and
// whether it counts from zero at start (born inside the window).
type readings struct {
	bs       []boundary
	fromZero bool
	start    time.Time
}

// window reads an instance's readings as plan decided.
func (r *run) window(in *Instance, g *group, meta metaFunc, end *reading) (readings, error) {
	switch r.how[g.id] {
	case fromRaw, fromRawAll:
		in.raw = true
		bs, err := r.rawBoundaries(in, g, meta)
		w := readings{bs: bs}
		if err == nil && len(bs) > 0 && len(r.start.points[g.id]) == 0 {
			// Born inside the window: from its process start when that
			// lies between the window's start and its first reading.
			st := bs[0].snap.StartTime()
			s := time.Unix(0, int64(st*1e9))
			in.bornAt = bs[0].at
			if st > 0 && !s.Before(r.o.From) && !s.After(bs[0].at) {
				w.fromZero, w.start, in.bornAt = true, s, s
			}
		}
		return w, err
	case fromStart:
		// Born inside the window, its start known and nothing restarted:
		// all it counted is the window's, its end reading is enough.
		in.bornAt = end.born
		return readings{bs: []boundary{{at: end.at, snap: end.snap}}, fromZero: true, start: end.born}, nil
	}
	first, err := r.reading(g, r.start, meta)
	if err != nil {
		return readings{}, err
	}
	return readings{bs: []boundary{{at: first.at, snap: first.snap}, {at: end.at, snap: end.snap}}}, nil
}

// failed is an instance whose series a dialect could not read (nil: one
// that does not serve the model asked for).
func (r *run) failed(in *Instance, err error) *Instance {
	var me *dialect.ModelError
	if errors.As(err, &me) {
		return nil
	}
	in.State, in.Err = Unreadable, err
	in.Report = unreadableReport(in, err)
	return in
}

// waited is how long the instance's slowest target's last scrape took
// (scrape_duration_seconds), 0 when the store does not say.
func (r *run) waited(g *group) float64 {
	w := 0.0
	for t := range g.targets {
		w = math.Max(w, r.end.waited[t])
	}
	return w
}

func (r *run) stateOf(in *Instance, g *group) State {
	down, known := 0, 0
	for t := range g.targets {
		if v, ok := r.end.up[t]; ok {
			known++
			if v == 0 {
				down++
			}
		}
	}
	switch {
	case known > 0 && down == known:
		return Down
	case len(r.end.points[g.id]) == 0:
		return Gone
	case in.delta.Reset:
		return Restarted
	case len(r.start.points[g.id]) == 0:
		return New
	}
	return Up
}

// reading is an instance read at one time.
type reading struct {
	at     time.Time
	snap   *snapshot.Snapshot
	native int
	err    error
	// born is the process start where it lies in the window: the
	// instance started there.
	born time.Time
}

// reading reads an instance at one time from the state there.
func (r *run) reading(g *group, st *state, meta metaFunc) (*reading, error) {
	at := st.at
	if ts, ok := st.ts[g.id]; ok {
		at = ts.Time()
	}
	s, native, err := r.snapshotOf(g, st.points[g.id], at, meta)
	if err != nil {
		return nil, err
	}
	return &reading{at: at, snap: s, native: native}, nil
}

// snapshotOf reads an instance's points as its dialect reads a scrape.
func (r *run) snapshotOf(g *group, pts []point, at time.Time, meta metaFunc) (*snapshot.Snapshot, int, error) {
	rb, err := rebuild(pts, meta, histBases(g.families)...)
	if err != nil {
		return nil, 0, err
	}
	s, err := dialect.Map(rb.fams, dialect.Options{Model: r.o.Model})
	if err != nil {
		return nil, rb.native, err
	}
	s.Source = g.match.braces()
	s.ScrapedAt = at.UTC()
	s.TimeSource = "scrape"
	return s, rb.native, nil
}

// rawBoundaries reads an instance's window from its raw samples: the
// reading at the window's start (the newest at or before it; the first
// inside it for an instance born there), the readings around each
// restart, and the last.
func (r *run) rawBoundaries(in *Instance, g *group, meta metaFunc) ([]boundary, error) {
	m := r.raw[g.id]
	var times []model.Time
	seen := map[model.Time]bool{}
	for _, ss := range m {
		for _, v := range ss.Values {
			if !seen[v.Timestamp] {
				seen[v.Timestamp] = true
				times = append(times, v.Timestamp)
			}
		}
		for _, h := range ss.Histograms {
			if !seen[h.Timestamp] {
				seen[h.Timestamp] = true
				times = append(times, h.Timestamp)
			}
		}
	}
	if len(times) == 0 {
		return nil, nil
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	from := model.TimeFromUnixNano(r.o.From.UnixNano())
	// The window starts at the newest reading at or before its start, or
	// at the first inside it.
	i0 := sort.Search(len(times), func(i int) bool { return times[i] > from })
	if i0 > 0 {
		i0--
	}
	times = times[i0:]
	resetAt := restartTimes(m, times[0])
	marks := map[model.Time]bool{times[0]: false, times[len(times)-1]: false}
	for t := range resetAt {
		i := sort.Search(len(times), func(i int) bool { return times[i] >= t })
		if _, ok := marks[times[max(i-1, 0)]]; !ok && i > 0 {
			marks[times[i-1]] = false // the last reading before it
		}
		marks[t] = true
	}
	var at []model.Time
	for t := range marks {
		at = append(at, t)
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	var bs []boundary
	for _, t := range at {
		s, native, err := r.snapshotOf(g, pointsAt(m, t), t.Time(), meta)
		if err != nil {
			return nil, err
		}
		in.native = max(in.native, native)
		bs = append(bs, boundary{at: t.Time(), snap: s, reset: marks[t]})
	}
	return bs, nil
}

// restartTimes lists when the instance's counters restarted after since:
// a counter (a _total, a histogram's _bucket, _count or _sum) that fell,
// a native histogram whose count fell, a start time that changed.
func restartTimes(m model.Matrix, since model.Time) map[model.Time]bool {
	out := map[model.Time]bool{}
	for _, ss := range m {
		name := string(ss.Metric[model.MetricNameLabel])
		counter := strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_bucket") ||
			strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_sum")
		start := strings.HasSuffix(name, startTimeSeries)
		for k := 1; k < len(ss.Values); k++ {
			a, b := ss.Values[k-1], ss.Values[k]
			if b.Timestamp <= since {
				continue
			}
			switch {
			case counter && b.Value < a.Value,
				start && math.Abs(float64(b.Value-a.Value)) >= 1:
				out[b.Timestamp] = true
			}
		}
		for k := 1; k < len(ss.Histograms); k++ {
			a, b := ss.Histograms[k-1], ss.Histograms[k]
			if b.Timestamp > since && b.Histogram.Count < a.Histogram.Count {
				out[b.Timestamp] = true
			}
		}
	}
	return out
}

// pointsAt is each series' newest sample at or before t, within the
// lookback: what an instant query at t returns.
func pointsAt(m model.Matrix, t model.Time) []point {
	oldest := t.Add(-Lookback)
	var out []point
	for _, ss := range m {
		i := sort.Search(len(ss.Values), func(i int) bool { return ss.Values[i].Timestamp > t })
		if i > 0 && ss.Values[i-1].Timestamp >= oldest {
			out = append(out, point{metric: ss.Metric, value: float64(ss.Values[i-1].Value)})
			continue
		}
		j := sort.Search(len(ss.Histograms), func(i int) bool { return ss.Histograms[i].Timestamp > t })
		if j > 0 && ss.Histograms[j-1].Timestamp >= oldest {
			out = append(out, point{metric: ss.Metric, hist: ss.Histograms[j-1].Histogram})
		}
	}
	return out
}

// windowLabel is the window's column key and header: "5m", "1h".
func windowLabel(d time.Duration) string { return units.Duration(d.Round(time.Second)) }

// report is the instance's single-server report, with the window's rates
// first, as --since shows them.
func (r *run) report(in *Instance) *report.Report {
	rep := analysis.Analyze(in.snap, analysis.Options{Now: in.snap.ScrapedAt, Hist: r.o.Hist, Raw: r.o.Raw, WithRates: true})
	// Notes on what happened judge the window, as the watch view's do.
	rep = rates.Judge(rep, in.snap, &in.delta.Delta, windowWords(r.o))
	sec, figs := rateSection(in.Figures, in.delta, r.o, in)
	rep.Sections = append([]report.Section{sec}, rep.Sections...)
	rep.Rates = figs
	rep.Header = append(instanceHeader(in), rep.Header...)
	return rep
}

// instanceHeader says where the instance's figures come from.
func instanceHeader(in *Instance) []string {
	var h []string
	if in.Dialect != "" {
		ts := make([]string, len(in.Targets))
		for i, t := range in.Targets {
			ts[i] = t.String()
		}
		h = append(h, fmt.Sprintf("instance %s (%s), read from the store", in.ID, strings.Join(ts, ", ")))
	}
	return h
}

// windowWords names the window in the notes: "the last 5m", or a past
// range's times.
func windowWords(o Options) string {
	if o.Range {
		return fmt.Sprintf("the range %s to %s", o.From.UTC().Format("2006-01-02 15:04:05"), o.To.UTC().Format("15:04:05 MST"))
	}
	return "the last " + windowLabel(o.To.Sub(o.From))
}

// rateSection is the window's rates table of one instance (or the
// totals: their figures computed already), with a row for each thing
// that shaped the window.
func rateSection(f Figures, d windowDelta, o Options, in *Instance) (report.Section, map[string]map[string]*float64) {
	w := o.To.Sub(o.From)
	title := "Rates over the last " + windowLabel(w)
	if o.Range {
		title = fmt.Sprintf("Rates from %s to %s", o.From.UTC().Format("2006-01-02 15:04:05"), o.To.UTC().Format("15:04:05 MST"))
	}
	sec := report.Section{ID: "rates", Title: title, Wide: true}
	say := func(id, label, value, note string) {
		sec.Rows = append(sec.Rows, report.Row{ID: id, Label: label, Value: value, Note: note, Severity: report.Dim})
	}
	if in != nil {
		switch {
		case d.fromZero:
			say("window_born", "started", in.bornAt.UTC().Format("15:04:05"), "inside the window: counted from zero at its process start")
		case !in.bornAt.IsZero():
			say("window_born", "first seen", in.bornAt.UTC().Format("15:04:05"), "inside the window: counted from its first sample, what it did before is not in these figures")
		}
		for _, t := range d.resets {
			say("window_restart", "restarted", t.UTC().Format("15:04:05"), "counters counted from zero there (raw samples), as rate() does")
		}
		if in.State == Gone || in.State == Down {
			say("window_gone", "last sample", in.lastAt.UTC().Format("15:04:05"), "figures end there")
		}
	}
	label := windowLabel(w)
	col := rates.Column{Key: label, Header: "Δ " + windowLabel(time.Duration(d.Seconds*float64(time.Second))), Delta: &d.Delta}
	if f.Totals != nil {
		col.Delta, col.Figures, col.Seconds = nil, f.Rates, f.Seconds
	}
	t, figs := rates.Table(f.Rows, []rates.Column{col})
	sec.Table = t
	return sec, figs
}

// unreadableReport stands for an instance the dialect could not read.
func unreadableReport(in *Instance, err error) *report.Report {
	return &report.Report{
		Schema: analysis.Schema, Source: in.ID, Dialect: in.Dialect,
		Header:   instanceHeader(in),
		Sections: []report.Section{},
		Notes:    []report.Note{{ID: "fleet_unreadable", Severity: report.Warn, Text: "its series in the store cannot be read: " + err.Error()}},
	}
}
