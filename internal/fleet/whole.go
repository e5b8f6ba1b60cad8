package fleet

import (
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The whole read (the rebuild): an instance read whole. Its series at the
// window's end (and start: series.go) are rebuilt into the families its
// scrape would have parsed (families.go) and read by its dialect unchanged; where it
// restarted, was born or went away inside the window, its raw samples
// give the readings around each restart. Many instances' series are read
// in batches, each answer kept well under --max-bytes. An instance the
// census listed in part has every series listed first.

// readWhole reads groups whole, and returns their readings by id.
func readWhole(ctx context.Context, q *querier, d *discovery, w *window, groups []*group) (map[string]*read, error) {
	out := map[string]*read{}
	if len(groups) == 0 {
		return out, nil
	}
	if maxInstances := maxInstancesOr(q.o.MaxInstances); q.o.Read == Pushdown && len(groups) > maxInstances {
		// A rebuild's discovery bounded every instance already.
		lim := &limits{maxInstances: maxInstances, sel: q.o.Selector}
		for _, g := range groups {
			lim.count(knownBy(g))
		}
		return nil, lim.tooMany("whole", len(groups), false)
	}
	if err := complete(ctx, q, groups); err != nil {
		return nil, err
	}
	b := &wholeRead{q: q, d: d, w: w, groups: groups}
	var atStart []*group
	for _, g := range groups {
		if w.start[g.id] != 0 {
			atStart = append(atStart, g)
		}
	}
	all := len(groups) == len(w.groups)
	err := alongside(ctx,
		func(ctx context.Context) (err error) {
			b.end, err = readState(ctx, q, groups, q.o.To, stateQueries(q, groups, stateAtEnd, all))
			return
		},
		func(ctx context.Context) (err error) {
			start := stateAt{buckets: b.bucketsFor, jobs: jobs(w.groups)}
			b.start, err = readState(ctx, q, atStart, q.o.From, stateQueries(q, atStart, start, len(atStart) == len(w.groups)))
			return
		},
		func(ctx context.Context) (err error) {
			if q.o.Range {
				b.peaks, err = b.gaugePeaks(ctx, all)
			}
			return
		})
	if err != nil {
		return nil, err
	}
	// The end's reading has the process start of its targets too.
	for id, pts := range w.targets.starts {
		if _, ok := b.end[id]; ok {
			b.end[id] = append(b.end[id], pts...)
		}
	}
	b.plan()
	if err := b.fetchRaw(ctx); err != nil {
		return nil, err
	}
	for _, g := range groups {
		out[g.id] = b.read(g)
	}
	return out, nil
}

// knownBy are the labels a group is known by: its grouping labels, and
// its scrape job (the labels a fleet past its bounds is narrowed by).
func knownBy(g *group) model.Metric {
	m := model.Metric{}
	for k, v := range g.labels {
		m[model.LabelName(k)] = model.LabelValue(v)
	}
	for t := range g.targets {
		m[model.JobLabel] = model.LabelValue(t.Job)
		break
	}
	return m
}

// complete lists every series of the instances discovery listed in part
// (the census), before they are read whole: each instance is then as a
// rebuild's discovery lists it.
func complete(ctx context.Context, q *querier, groups []*group) error {
	var partial []*group
	for _, g := range groups {
		if g.partial {
			partial = append(partial, g)
		}
	}
	found, err := rediscover(ctx, q, partial, purposeInPart)
	if err != nil {
		return err
	}
	for _, g := range partial {
		if w := found[g.id]; w != nil {
			*g = *w
		}
	}
	return nil
}

// wholeRead is the whole read's work: its instances, what the fleet and
// the window say of them, their series at the window's two ends, and
// where each one's window is read from, raw samples.
type wholeRead struct {
	q      *querier
	d      *discovery
	w      *window
	groups []*group
	// end, start and peaks are the instances' series at the window's
	// end, at its start, and each gauge's largest (a past range), by id.
	end, start, peaks map[string][]point
	ends              map[string]*reading
	how               map[string]how
	raw               map[string]model.Matrix
	// buckets are, by dialect, the bucket series the window's
	// percentiles read (bucketsFor).
	mu      sync.Mutex
	buckets map[string][]string
}

// rateHists are the canonical histograms the window's figures read: the
// rates table's percentiles (TestRateHists keeps the list in step with
// package rates).
var rateHists = []string{snapshot.TimeToFirstTokenSeconds, snapshot.E2ERequestLatencySeconds}

// bucketsFor lists the bucket series names of dialect d's histograms that
// its reading maps onto rateHists, worked out once per report.
func (b *wholeRead) bucketsFor(d string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bs, ok := b.buckets[d]; ok {
		return bs
	}
	if b.buckets == nil {
		b.buckets = map[string][]string{}
	}
	b.buckets[d] = findBuckets(b.w.groups, d)
	return b.buckets[d]
}

// findBuckets tries each of dialect d's histograms among groups' families
// on its own: a one-bucket exposition of it, read by the dialect.
func findBuckets(groups []*group, d string) []string {
	bases := map[string]bool{}
	for _, g := range groups {
		for _, b := range histBases(g.families) {
			if dialect.Owner(b) == d {
				bases[b] = true
			}
		}
	}
	var out []string
	for _, b := range slices.Sorted(maps.Keys(bases)) {
		m := func(name string) model.Metric { return model.Metric{model.MetricNameLabel: model.LabelValue(name)} }
		inf := m(b + "_bucket")
		inf["le"] = "+Inf"
		rb := rebuild([]point{{metric: inf, value: 1}, {metric: m(b + "_count"), value: 1}, {metric: m(b + "_sum"), value: 1}}, noMeta)
		s, err := dialect.Map(rb.fams, dialect.Options{Dialect: d})
		if err != nil {
			continue
		}
		for _, h := range rateHists {
			if s.Hist(h) != nil {
				out = append(out, b+"_bucket")
				break
			}
		}
	}
	return out
}

// gaugeFamilies are the families of groups that are neither counters nor
// parts of a histogram: what a past range reports the largest value of.
func gaugeFamilies(groups []*group) []string {
	seen := map[string]bool{}
	for _, g := range groups {
		for f := range g.families {
			seen[f] = true
		}
	}
	return familiesWhere(slices.Sorted(maps.Keys(seen)), func(f string) bool {
		for _, sfx := range []string{"_total", "_count", "_sum", "_created", "_info", startTimeSeries} {
			if strings.HasSuffix(f, sfx) {
				return false
			}
		}
		return true
	})
}

// gaugePeaks reads each gauge's largest value over a past range, of the
// instances read whole (all: every instance of the window).
func (b *wholeRead) gaugePeaks(ctx context.Context, all bool) (map[string][]point, error) {
	q := b.q
	out := map[string][]point{}
	gauges := gaugeFamilies(b.w.groups)
	for _, sel := range batches(q, b.groups, bytesPerSeriesStart, all) {
		vec, err := q.batch(ctx, "rebuild, a past range: each gauge's largest value in the window", gauges, func(f string) string {
			return "max_over_time(" + familySel(sel, f).With(nameIs(f)).braces() + "[" + q.window() + "])"
		}, q.o.To)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			if g := b.d.route.route(s.Metric); g != nil {
				out[g.id] = append(out[g.id], point{metric: s.Metric, value: float64(s.Value)})
			}
		}
	}
	return out, nil
}

// how says where an instance's window is read from.
type how int

const (
	// fromEnds: the two ends, the instance ran through the window.
	fromEnds how = iota
	// fromStart: the end alone, counted from its process start inside
	// the window.
	fromStart
	// fromWindowStart: the end alone, counted from zero at the window's
	// start: not born inside it, its series first published there.
	fromWindowStart
	// fromRaw: raw samples, histogram buckets but the percentiles' left
	// out (the end's reading, whole, is the report's).
	fromRaw
	// fromRawAll: every raw sample: an instance gone before the end,
	// whose last raw reading is its report.
	fromRawAll
)

// plan reads each instance at the window's end and decides where its
// window is read from: the two ends where it ran through the window; the
// end alone where it was born inside the window (its process start after
// the window's) and did not restart; raw samples where it restarted, went
// away, or appeared without a start time to count from.
func (b *wholeRead) plan() {
	b.ends = map[string]*reading{}
	b.how = map[string]how{}
	o := b.q.o
	for _, g := range b.groups {
		meta := b.d.meta.forGroup(g)
		atStart, atEnd := len(b.start[g.id]) > 0, len(b.end[g.id]) > 0
		var end *reading
		if atEnd {
			var err error
			if end, err = readingOf(o, g, b.end[g.id], b.w.end, o.To, meta); err != nil {
				b.ends[g.id] = &reading{err: err}
				continue
			}
			b.ends[g.id] = end
		}
		switch {
		case !atEnd:
			b.how[g.id] = fromRawAll
		case b.w.restarted[g.id]:
			b.how[g.id] = fromRaw
		case !atStart && !b.w.born(g):
			// Its series first published inside the window, its target up
			// before it: from zero at the window's start.
			b.how[g.id] = fromWindowStart
		case !atStart:
			if _, ok := bornIn(end.snap, o.From, end.at); ok {
				b.how[g.id] = fromStart
			} else {
				b.how[g.id] = fromRaw
			}
		default:
			b.how[g.id] = fromEnds
		}
	}
}

// fetchRaw reads the raw samples of every instance whose window its ends
// cannot tell, over the window and one lookback before it (the reading the
// window starts from): for one still there at the end, every series but
// the histogram buckets the percentiles do not read.
func (b *wholeRead) fetchRaw(ctx context.Context) error {
	q := b.q
	b.raw = map[string]model.Matrix{}
	span := "[" + promDuration(q.o.To.Sub(q.o.From)+Lookback) + "]"
	all := prefixRegex(dialect.NamePrefixes()) + "|" + startTimeSeries
	var mu sync.Mutex
	type ask struct {
		g *group
		q string
	}
	var asks []ask
	for _, g := range b.groups {
		how := b.how[g.id]
		if how != fromRaw && how != fromRawAll {
			continue
		}
		sel := q.o.Selector.With(g.match...)
		queries := []string{sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: all}).braces() + span}
		if how == fromRaw {
			queries = []string{sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: all},
				Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"}).braces() + span}
			if bs := b.bucketsFor(g.dialect); len(bs) > 0 {
				queries = append(queries, sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(bs)}).braces()+span)
			}
		}
		for _, text := range queries {
			asks = append(asks, ask{g, text})
		}
	}
	return inParallel(ctx, len(asks), 0, func(ctx context.Context, i int) error {
		m, err := q.raw(ctx, "rebuild: the raw samples of an instance that restarted, was born or went away in the window", asks[i].q, q.o.To)
		if err != nil {
			return err
		}
		m = q.replicas.matrix(slices.DeleteFunc(m, func(ss *model.SampleStream) bool { return routerCopy(ss.Metric) }))
		for _, ss := range m {
			ss.Values = withoutNaN(ss.Values)
		}
		mu.Lock()
		defer mu.Unlock()
		b.raw[asks[i].g.id] = append(b.raw[asks[i].g.id], m...)
		return nil
	})
}

// withoutNaN drops NaN samples: VictoriaMetrics returns the staleness
// markers it writes when a target's scrapes fail, and a NaN is no reading
// (every dialect skips it).
func withoutNaN(vs []model.SamplePair) []model.SamplePair {
	out := vs[:0]
	for _, v := range vs {
		if !math.IsNaN(float64(v.Value)) {
			out = append(out, v)
		}
	}
	return out
}

// read is one instance as the whole read read it.
func (b *wholeRead) read(g *group) *read {
	meta := b.d.meta.forGroup(g)
	end := b.ends[g.id]
	rd := &read{end: end}
	if end != nil && end.err != nil {
		rd.err = end.err
		return rd
	}
	if end != nil {
		rd.native = end.native
	}
	rd.w, rd.err = b.window(rd, g, meta, end)
	if pts := b.peaks[g.id]; len(pts) > 0 {
		rd.peak, _ = dialect.Map(rebuild(pts, meta, histBases(g.families)...).fams, dialect.Options{Model: b.q.o.Model})
	}
	return rd
}

// bornIn is the process start a snapshot says, where it lies between
// from and at (a process born inside the window, before that reading).
func bornIn(s *snapshot.Snapshot, from, at time.Time) (time.Time, bool) {
	st := s.StartTime()
	born := time.Unix(0, int64(st*1e9))
	return born, st > 0 && !born.Before(from) && !born.After(at)
}

// window reads an instance's readings as plan decided.
func (b *wholeRead) window(rd *read, g *group, meta metaFunc, end *reading) (readings, error) {
	o := b.q.o
	switch b.how[g.id] {
	case fromRaw, fromRawAll:
		bs, err := b.rawBoundaries(rd, g, meta)
		w := readings{bs: bs}
		if err == nil && len(bs) > 0 && len(b.start[g.id]) == 0 && !b.w.born(g) {
			// Not born: its series first published inside the window
			// count from zero at its start.
			w.fromZero, w.start = true, o.From
			return w, nil
		}
		if err == nil && len(bs) > 0 && len(b.start[g.id]) == 0 {
			// Born inside the window: from its process start when that
			// lies between the window's start and its first reading.
			rd.bornAt = bs[0].at
			if s, ok := bornIn(bs[0].snap, o.From, bs[0].at); ok {
				w.fromZero, w.start, rd.bornAt = true, s, s
			}
		}
		return w, err
	case fromStart:
		// Born inside the window, its start known and nothing restarted:
		// all it counted is the window's, its end reading is enough.
		born, _ := bornIn(end.snap, o.From, end.at)
		rd.bornAt = born
		return readings{bs: []boundary{{at: end.at, snap: end.snap}}, fromZero: true, start: born}, nil
	case fromWindowStart:
		return readings{bs: []boundary{{at: end.at, snap: end.snap}}, fromZero: true, start: o.From}, nil
	}
	first, err := readingOf(o, g, b.start[g.id], b.w.start, o.From, meta)
	if err != nil {
		return readings{}, err
	}
	return readings{bs: []boundary{{at: first.at, snap: first.snap}, {at: end.at, snap: end.snap}}}, nil
}

// readingOf reads an instance's points at one time (at, or its newest
// sample's time ts holds).
func readingOf(o Options, g *group, pts []point, ts map[string]model.Time, at time.Time, meta metaFunc) (*reading, error) {
	if t, ok := ts[g.id]; ok {
		at = t.Time()
	}
	s, native, err := snapshotOf(o, g, pts, at, meta)
	if err != nil {
		return nil, err
	}
	return &reading{at: at, snap: s, native: native}, nil
}

// snapshotOf reads an instance's points as its dialect reads a scrape.
func snapshotOf(o Options, g *group, pts []point, at time.Time, meta metaFunc) (*snapshot.Snapshot, int, error) {
	fb := rebuild(pts, meta, histBases(g.families)...)
	s, err := dialect.Map(fb.fams, dialect.Options{Model: o.Model})
	if err != nil {
		return nil, fb.native, err
	}
	s.Source = g.match.braces()
	s.ScrapedAt = at.UTC()
	s.TimeSource = "scrape"
	return s, fb.native, nil
}

// rawBoundaries reads an instance's window from its raw samples: the
// reading at the window's start (the newest at or before it; the first
// inside it for an instance born there), the readings around each
// restart, and the last.
func (b *wholeRead) rawBoundaries(rd *read, g *group, meta metaFunc) ([]boundary, error) {
	m := b.raw[g.id]
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
	from := model.TimeFromUnixNano(b.q.o.From.UnixNano())
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
		s, native, err := snapshotOf(b.q.o, g, pointsAt(m, t), t.Time(), meta)
		if err != nil {
			return nil, err
		}
		rd.native = max(rd.native, native)
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
