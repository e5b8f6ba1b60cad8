package fleet

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// targetSeries are the series a store keeps per scrape target that a
// report reads: whether the last scrape worked, how long it took, and the
// process start of servers whose own registry publishes it unprefixed.
var targetSeries = []string{"up", "scrape_duration_seconds", startTimeSeries}

// dialectPrefixes are the name prefixes of one dialect.
func dialectPrefixes(name string) []string {
	var out []string
	for _, p := range dialect.NamePrefixes() {
		if dialect.Owner(p+"x") == name {
			out = append(out, p)
		}
	}
	return out
}

// familySel is the selector a query of family f uses: the user's, and for
// vLLM's families no router copy.
func familySel(sel Selector, f string) Selector {
	if dialect.Owner(f) == "vllm" {
		return sel.With(Matcher{Name: routerLabel, Op: "=", Value: ""})
	}
	return sel
}

// jobs is a matcher for the jobs discovery found, which bounds the
// per-target series to the fleet's own targets.
func (r *run) jobs() Matcher {
	seen := map[string]bool{}
	for _, g := range r.disc.groups {
		for t := range g.targets {
			seen[t.Job] = true
		}
	}
	return Matcher{Name: model.JobLabel, Op: "=~", Value: nameRegex(slices.Sorted(maps.Keys(seen)))}
}

// dialects lists the dialects discovery found.
func (r *run) dialects() []string {
	seen := map[string]bool{}
	for _, g := range r.disc.groups {
		for f := range g.families {
			seen[dialect.Owner(f)] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// fetched is what the state queries at one time answered, before it is
// routed to instances.
type fetched struct {
	at      time.Time
	series  model.Vector // the dialects' series
	targets model.Vector // up, scrape_duration_seconds, process_start_time_seconds
}

// fetchState reads every instance's series at one time: the dialects'
// series in two queries (histogram buckets apart from the rest, which lets
// the store answer both at once), and each target's own series. With full
// unset it leaves out the buckets of every histogram but those the
// window's percentiles read (bucketsFor): what the window's start needs,
// at a fifth of the series. dialects nil means every dialect: the end of
// the window is read while discovery runs. vLLM's router copies are
// dropped when routed.
func (r *run) fetchState(ctx context.Context, at time.Time, full bool, dialects []string) (*fetched, error) {
	f := &fetched{at: at}
	if dialects == nil {
		dialects = dialect.Names()
	}
	var prefixes []string
	for _, d := range dialects {
		prefixes = append(prefixes, dialectPrefixes(d)...)
	}
	names := Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(prefixes)}
	bucket := Matcher{Name: model.MetricNameLabel, Op: "=~", Value: ".+_bucket"}
	type query struct {
		purpose, text string
		into          *model.Vector
	}
	queries := []query{{"state: every series but histogram buckets",
		r.o.Selector.With(names, Matcher{Name: model.MetricNameLabel, Op: "!~", Value: bucket.Value}).braces(), &f.series}}
	if full {
		queries = append(queries, query{"state: every histogram bucket", r.o.Selector.With(names, bucket).braces(), &f.series})
	} else {
		var bs []string
		for _, d := range dialects {
			bs = append(bs, r.bucketsFor(d)...)
		}
		if len(bs) > 0 {
			queries = append(queries, query{"window start: the buckets of the histograms the percentiles read",
				r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(bs)}).braces(), &f.series})
		}
	}
	tsel := r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(targetSeries)})
	if r.disc != nil {
		tsel = tsel.With(r.jobs())
	}
	queries = append(queries, query{"state: up, scrape_duration_seconds and process_start_time_seconds of every target", tsel.braces(), &f.targets})
	var mu sync.Mutex
	var wg sync.WaitGroup
	var first error
	for _, qu := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vec, err := r.q.instant(ctx, qu.purpose, qu.text, at)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			*qu.into = append(*qu.into, vec...)
		}()
	}
	wg.Wait()
	return f, first
}

// routed sends what was fetched to the instances discovery found.
func (r *run) routed(f *fetched, ts map[string]model.Time) *state {
	st := &state{at: f.at, points: map[string][]point{}, up: map[Target]float64{}, waited: map[Target]float64{}, ts: ts}
	for _, s := range f.series {
		if g := r.route(s.Metric); g != nil {
			st.points[g.id] = append(st.points[g.id], point{metric: s.Metric, value: float64(s.Value), hist: s.Histogram})
		}
	}
	for _, s := range f.targets {
		t := targetOf(s.Metric)
		g := r.disc.byTarget[t]
		if g == nil {
			continue
		}
		switch s.Metric[model.MetricNameLabel] {
		case "up":
			st.up[t] = float64(s.Value)
		case "scrape_duration_seconds":
			st.waited[t] = float64(s.Value)
		default:
			st.points[g.id] = append(st.points[g.id], point{metric: s.Metric, value: float64(s.Value)})
		}
	}
	for id, pts := range st.points {
		st.points[id] = r.dedup(id, pts)
	}
	return st
}

// dedup drops the replica labels the user named from an instance's
// points, keeping one copy of each series they told apart; and, where none
// was named, notes a label whose name says replica that does tell copies
// apart (an HA pair, read twice).
func (r *run) dedup(id string, pts []point) []point {
	if len(r.o.ReplicaLabels) > 0 {
		seen := map[uint64]bool{}
		out := pts[:0]
		for _, p := range pts {
			for _, l := range r.o.ReplicaLabels {
				delete(p.metric, model.LabelName(l))
			}
			if fp := p.metric.Fingerprint(); !seen[uint64(fp)] {
				seen[uint64(fp)] = true
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range pts {
		for l := range p.metric {
			if !strings.Contains(strings.ToLower(string(l)), "replica") {
				continue
			}
			if r.replicaDups[string(l)] == nil {
				r.replicaDups[string(l)] = map[string]bool{}
			}
			if r.replicaDups[string(l)][id] {
				continue
			}
			// Another point equal but for l is a copy.
			without := map[model.LabelName]struct{}{l: {}}
			sig := model.SignatureWithoutLabels(p.metric, without)
			for _, q := range pts {
				if q.metric[l] != p.metric[l] && model.SignatureWithoutLabels(q.metric, without) == sig {
					r.replicaDups[string(l)][id] = true
					break
				}
			}
		}
	}
	return pts
}

// timestamps reads the time of each instance's newest sample at or before
// at: when it was last scraped.
func (r *run) timestamps(ctx context.Context, at time.Time) (map[string]model.Time, error) {
	vec, err := r.q.batch(ctx, "state: the time of each instance's newest sample", r.covering(),
		func(f string) string { return "timestamp(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + ")" }, at)
	if err != nil {
		return nil, err
	}
	out := map[string]model.Time{}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil {
			if t := model.Time(math.Round(float64(s.Value) * 1000)); t > out[g.id] {
				out[g.id] = t
			}
		}
	}
	return out, nil
}

// rateHists are the canonical histograms the window's figures read: the
// rates table's percentiles (TestRateHists keeps the list in step with
// package rates).
var rateHists = []string{snapshot.TimeToFirstTokenSeconds, snapshot.E2ERequestLatencySeconds}

// histBases are the histograms among a group's families: a base whose
// _count and _sum are there (a summary's base has series of its own).
func histBases(fams map[string]bool) []string {
	var out []string
	for f := range fams {
		base, ok := strings.CutSuffix(f, "_count")
		if ok && fams[base+"_sum"] && !fams[base] {
			out = append(out, base)
		}
	}
	sort.Strings(out)
	return out
}

// bucketsFor lists the bucket series names of dialect d's histograms that
// its reading maps onto rateHists. Each histogram is tried on its own: a
// one-bucket exposition of it, read by the dialect.
func (r *run) bucketsFor(d string) []string {
	bases := map[string]bool{}
	for _, g := range r.disc.groups {
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
		rb, err := rebuild([]point{{metric: inf, value: 1}, {metric: m(b + "_count"), value: 1}, {metric: m(b + "_sum"), value: 1}}, noMeta)
		if err != nil {
			continue
		}
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

func noMeta(string) (string, string) { return "", "" }

func nameIs(f string) Matcher { return Matcher{Name: model.MetricNameLabel, Op: "=", Value: f} }

// covering picks few families that every instance has one of: whose
// samples' times say when each instance was last scraped.
func (r *run) covering() []string {
	chosen := map[string]bool{}
	for _, g := range r.disc.groups {
		have := false
		for f := range g.families {
			if chosen[f] {
				have = true
				break
			}
		}
		if have {
			continue
		}
		// The family most groups share, so that one serves many (a
		// _created series is not one every scrape carries).
		best, n := "", -1
		for f := range g.families {
			if strings.HasSuffix(f, "_created") {
				continue
			}
			c := 0
			for _, h := range r.disc.groups {
				if h.families[f] {
					c++
				}
			}
			if c > n || (c == n && f < best) {
				best, n = f, c
			}
		}
		chosen[best] = true
	}
	return slices.Sorted(maps.Keys(chosen))
}

// familiesWhere lists, sorted, the families any instance publishes that
// keep accepts.
func (r *run) familiesWhere(keep func(family string) bool) []string {
	seen := map[string]bool{}
	for _, g := range r.disc.groups {
		for f := range g.families {
			if keep(f) {
				seen[f] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// counterFamilies are the families whose fall means a restart: counters
// by their _total and histograms by their _count.
func (r *run) counterFamilies() []string {
	return r.familiesWhere(func(f string) bool {
		return strings.HasSuffix(f, "_total") || strings.HasSuffix(f, "_count")
	})
}

// startFamilies are the families that hold a process start time.
func (r *run) startFamilies() []string {
	return r.familiesWhere(func(f string) bool { return strings.HasSuffix(f, startTimeSeries) })
}

// restarts finds the instances whose counters restarted inside the
// window: resets() of every counter, changes() of every start time.
func (r *run) restarts(ctx context.Context) (map[string]bool, error) {
	w := promDuration(r.o.To.Sub(r.o.From))
	out := map[string]bool{}
	vec, err := r.q.batch(ctx, "window: counters that fell (restarts) in the window", r.counterFamilies(), func(f string) string {
		return "resets(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + "[" + w + "]) > 0"
	}, r.o.To)
	if err != nil {
		return nil, err
	}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil {
			out[g.id] = true
		}
	}
	starts := r.startFamilies()
	vec, err = r.q.batch(ctx, "window: process start times that changed in the window", starts, func(f string) string {
		return "changes(" + r.o.Selector.With(nameIs(f)).braces() + "[" + w + "]) > 0"
	}, r.o.To)
	if err != nil {
		return nil, err
	}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil {
			out[g.id] = true
		}
	}
	// The unprefixed start time, of the fleet's own targets.
	sel := r.o.Selector.With(nameIs(startTimeSeries), r.jobs())
	vec2, err := r.q.instant(ctx, "window: process_start_time_seconds that changed in the window",
		"changes("+sel.braces()+"["+w+"]) > 0", r.o.To)
	if err != nil {
		return nil, err
	}
	for _, s := range vec2 {
		if g := r.disc.byTarget[targetOf(s.Metric)]; g != nil {
			out[g.id] = true
		}
	}
	return out, nil
}

// gaugeFamilies are the families that are neither counters nor parts of a
// histogram: what a past range reports the largest value of.
func (r *run) gaugeFamilies() []string {
	return r.familiesWhere(func(f string) bool {
		for _, sfx := range []string{"_total", "_count", "_sum", "_created", "_info", startTimeSeries} {
			if strings.HasSuffix(f, sfx) {
				return false
			}
		}
		return true
	})
}

// gaugePeaks reads each gauge's largest value over a past range.
func (r *run) gaugePeaks(ctx context.Context) (map[string][]point, error) {
	w := promDuration(r.o.To.Sub(r.o.From))
	vec, err := r.q.batch(ctx, "window: each gauge's largest value in the window", r.gaugeFamilies(), func(f string) string {
		return "max_over_time(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + "[" + w + "])"
	}, r.o.To)
	if err != nil {
		return nil, err
	}
	out := map[string][]point{}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil {
			out[g.id] = append(out[g.id], point{metric: s.Metric, value: float64(s.Value)})
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
func (r *run) plan() {
	r.ends = map[string]*reading{}
	r.how = map[string]how{}
	for _, g := range r.disc.groups {
		meta := r.meta.forGroup(g)
		atStart, atEnd := len(r.start.points[g.id]) > 0, len(r.end.points[g.id]) > 0
		var end *reading
		if atEnd {
			var err error
			if end, err = r.reading(g, r.end, meta); err != nil {
				r.ends[g.id] = &reading{err: err}
				continue
			}
			r.ends[g.id] = end
		}
		switch {
		case !atEnd:
			r.how[g.id] = fromRawAll
		case r.resets[g.id]:
			r.how[g.id] = fromRaw
		case !atStart:
			st := end.snap.StartTime()
			born := time.Unix(0, int64(st*1e9))
			if st > 0 && !born.Before(r.o.From) && !born.After(end.at) {
				end.born = born
				r.how[g.id] = fromStart
			} else {
				r.how[g.id] = fromRaw
			}
		default:
			r.how[g.id] = fromEnds
		}
	}
}

// fetchRaw reads the raw samples of every instance whose window its ends
// cannot tell, over the window and one lookback before it (the reading the
// window starts from): for one still there at the end, every series but
// the histogram buckets the percentiles do not read.
func (r *run) fetchRaw(ctx context.Context) error {
	r.raw = map[string]model.Matrix{}
	span := "[" + promDuration(r.o.To.Sub(r.o.From)+Lookback) + "]"
	all := prefixRegex(dialect.NamePrefixes()) + "|" + startTimeSeries
	var mu sync.Mutex
	var wg sync.WaitGroup
	var first error
	for _, g := range r.disc.groups {
		how := r.how[g.id]
		if how != fromRaw && how != fromRawAll {
			continue
		}
		sel := r.o.Selector.With(g.match...)
		queries := []string{sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: all}).braces() + span}
		if how == fromRaw {
			queries = []string{sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: all},
				Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"}).braces() + span}
			if bs := r.bucketsFor(g.dialect); len(bs) > 0 {
				queries = append(queries, sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(bs)}).braces()+span)
			}
		}
		for _, q := range queries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m, err := r.q.raw(ctx, "raw: the samples of an instance that restarted, was born or went away in the window", q, r.o.To)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if first == nil {
						first = err
					}
					return
				}
				r.raw[g.id] = append(r.raw[g.id], r.kept(m)...)
			}()
		}
	}
	wg.Wait()
	return first
}

// kept are a raw answer's series but vLLM's router copies, each once
// without the replica labels named, without NaN samples.
func (r *run) kept(m model.Matrix) model.Matrix {
	var out model.Matrix
	seen := map[model.Fingerprint]bool{}
	for _, ss := range m {
		if dialect.Owner(string(ss.Metric[model.MetricNameLabel])) == "vllm" && ss.Metric[routerLabel] != "" {
			continue
		}
		for _, l := range r.o.ReplicaLabels {
			delete(ss.Metric, model.LabelName(l))
		}
		if fp := ss.Metric.Fingerprint(); !seen[fp] {
			seen[fp] = true
			ss.Values = withoutNaN(ss.Values)
			out = append(out, ss)
		}
	}
	return out
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

// metadata is what the store declared of each family.
type metadata struct {
	global map[string][]promapi.Metadata
	// byTarget holds the per-target declarations of families whose
	// targets disagree (vLLM 0.8's block-counting prefix counters beside
	// a later version's token-counting ones).
	byTarget map[string]map[Target]promapi.Metadata
	missing  bool
}

// loadMetadata reads the store's metadata, and each target's own for the
// families where targets declared different things.
func loadMetadata(ctx context.Context, q *querier, disc *discovery) (*metadata, error) {
	md := &metadata{byTarget: map[string]map[Target]promapi.Metadata{}}
	t := time.Now()
	all, err := q.api.Metadata(ctx)
	q.record("metadata: each family's type and help", "", time.Time{}, t)
	switch {
	case errors.Is(err, promapi.ErrNoMetadata):
		md.missing = true
		return md, nil
	case err != nil:
		var e *promapi.Error
		if errors.As(err, &e) && (e.Status == 404 || e.Kind == promapi.Query) {
			md.missing = true
			return md, nil
		}
		return nil, err
	}
	md.global = all
	wanted := map[string]bool{}
	for _, g := range disc.groups {
		for f := range g.families {
			wanted[f] = true
			for _, sfx := range []string{"_total", "_count", "_sum"} {
				if base, ok := strings.CutSuffix(f, sfx); ok {
					wanted[base] = true
				}
			}
		}
	}
	for name, ms := range all {
		if !wanted[name] || !disagree(ms) {
			continue
		}
		t := time.Now()
		tms, err := q.api.TargetsMetadata(ctx, name)
		q.record("metadata: each target's own declaration of "+name+", where targets disagree", name, time.Time{}, t)
		if err != nil {
			continue // the global declaration stands
		}
		per := map[Target]promapi.Metadata{}
		for _, tm := range tms {
			per[Target{Job: string(tm.Target[model.JobLabel]), Instance: string(tm.Target[model.InstanceLabel])}] = tm.Metadata
		}
		md.byTarget[name] = per
	}
	return md, nil
}

func disagree(ms []promapi.Metadata) bool {
	for _, m := range ms[1:] {
		if m.Type != ms[0].Type || m.Help != ms[0].Help {
			return true
		}
	}
	return false
}

// forGroup is the metadata lookup of one instance.
func (md *metadata) forGroup(g *group) metaFunc {
	return func(name string) (string, string) {
		if md == nil {
			return "", ""
		}
		if per, ok := md.byTarget[name]; ok {
			for t := range g.targets {
				if m, ok := per[t]; ok {
					return m.Type, m.Help
				}
			}
		}
		if ms := md.global[name]; len(ms) > 0 {
			return ms[0].Type, ms[0].Help
		}
		return "", ""
	}
}
