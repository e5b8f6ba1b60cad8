package fleet

import (
	"context"
	"errors"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
)

// What the window needs before any instance is read: when each instance
// was last scraped at the window's two ends, which restarted inside it,
// whether its targets are up, which publish values that cannot be, and
// the store's metadata. Then each instance's path.

// survey sends the window's queries, in parallel, and plans each
// instance's path.
//
// A rebuild asks for the metadata and every counter's restarts here; a
// pushdown has asked the store for them, and for the counters its sums
// read, while discovery ran (pushdown.go's speculation).
func (r *run) survey(ctx context.Context) error {
	covering := r.covering()
	jobs := []func(context.Context) error{
		func(ctx context.Context) (err error) { r.tsEnd, err = r.newest(ctx, covering, r.o.To); return },
		func(ctx context.Context) (err error) { r.tsStart, err = r.newest(ctx, covering, r.o.From); return },
		func(ctx context.Context) (err error) { r.targets, err = r.fetchTargets(ctx); return },
	}
	if r.o.Read == Rebuild {
		jobs = append(jobs,
			func(ctx context.Context) (err error) {
				r.meta, err = loadMetadata(ctx, r.q, r.familiesWhere(func(string) bool { return true }))
				return
			},
			func(ctx context.Context) (err error) { r.resets, err = r.restarts(ctx, r.counterFamilies()); return })
	}
	if err := parallel(ctx, jobs...); err != nil {
		return err
	}
	if err := r.dropAbsent(ctx, covering); err != nil {
		return err
	}
	if r.o.Read == Rebuild {
		r.plan()
	}
	return nil
}

// parallel runs fns at once and returns the first error.
func parallel(ctx context.Context, fns ...func(context.Context) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// across calls fn for each of 0..n-1 on every core, and returns once all
// are done, or ctx's error where it ended first (the rest not called).
func across(ctx context.Context, n int, fn func(i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// by writes the grouping of the store's aggregations: " by (job, instance)".
func (r *run) by() string { return " by (" + strings.Join(r.o.By, ", ") + ")" }

// newest reads the time of each instance's newest sample at or before
// at, within the lookback: when it was last scraped. What the rates
// divide by is the time between the two readings, not the window.
// It reads a few families every instance has one of (covering), one at a
// time: timestamp() keeps no name, and VictoriaMetrics reads a
// timestamp() of anything but a series selector as one of its own.
func (r *run) newest(ctx context.Context, covering []string, at time.Time) (map[string]model.Time, error) {
	vec, err := r.q.batch(ctx, "window: the time of each instance's newest sample", covering, func(f string) string {
		return "max" + r.by() + " (timestamp(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + "))"
	}, at)
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

// dropAbsent leaves out the instances discovery listed that have no
// sample in the window (VictoriaMetrics lists the series of whole days):
// read at neither end, they are asked whether they had a sample inside it.
func (r *run) dropAbsent(ctx context.Context, covering []string) error {
	absent := func(g *group) bool { return r.tsEnd[g.id] == 0 && r.tsStart[g.id] == 0 }
	if !slices.ContainsFunc(r.disc.groups, absent) {
		return nil
	}
	w := promDuration(r.o.To.Sub(r.o.From))
	// One family at a time (a range function keeps no name): a few that
	// every instance publishes one of.
	vec, err := r.q.batch(ctx, "window: instances seen inside the window, neither at its start nor at its end", covering, func(f string) string {
		return "group" + r.by() + " (last_over_time(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + "[" + w + "]))"
	}, r.o.To)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil {
			seen[g.id] = true
		}
	}
	kept := r.disc.groups[:0]
	for _, g := range r.disc.groups {
		if !absent(g) || seen[g.id] {
			kept = append(kept, g)
		}
	}
	r.disc.groups = kept
	return nil
}

// covering picks few families that every instance has one of.
func (r *run) covering() []string {
	shared := map[string]int{}
	for _, g := range r.disc.groups {
		for f := range g.families {
			shared[f]++
		}
	}
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
		// _created series is not one every scrape carries); of those, one
		// that is not an info series, whose many labels made its
		// timestamp() a few times the cost of a gauge's.
		best, n := "", -1
		for f := range g.families {
			if strings.HasSuffix(f, "_created") {
				continue
			}
			if c := shared[f]; c > n || (c == n && lighter(f, best)) {
				best, n = f, c
			}
		}
		chosen[best] = true
	}
	return slices.Sorted(maps.Keys(chosen))
}

// lighter orders covering's candidates of one share: a family that is not
// an info series first, then by name.
func lighter(f, than string) bool {
	if fi, ti := strings.HasSuffix(f, "_info"), strings.HasSuffix(than, "_info"); fi != ti {
		return !fi
	}
	return f < than
}

// targetSeries are the series a store keeps per scrape target that a
// report reads: whether the last scrape worked, how long it took, and the
// process start of servers whose own registry publishes it unprefixed.
var targetSeries = []string{"up", "scrape_duration_seconds", startTimeSeries}

// targetState is each target's own series at the window's end.
type targetState struct {
	up     map[Target]float64 // up
	waited map[Target]float64 // scrape_duration_seconds
	// starts are process_start_time_seconds, by group id: a reading of
	// its instance (the rebuild's).
	starts map[string][]point
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

// fetchTargets reads every target's up, scrape_duration_seconds and
// process_start_time_seconds at the window's end.
func (r *run) fetchTargets(ctx context.Context) (*targetState, error) {
	sel := r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(targetSeries)}, r.jobs())
	vec, err := r.q.instant(ctx, "window: up, scrape_duration_seconds and process_start_time_seconds of every target", sel.braces(), r.o.To)
	if err != nil {
		return nil, err
	}
	ts := &targetState{up: map[Target]float64{}, waited: map[Target]float64{}, starts: map[string][]point{}}
	for _, s := range vec {
		t := targetOf(s.Metric)
		g := r.disc.byTarget[t]
		if g == nil {
			continue
		}
		switch s.Metric[model.MetricNameLabel] {
		case "up":
			ts.up[t] = float64(s.Value)
		case "scrape_duration_seconds":
			ts.waited[t] = float64(s.Value)
		default:
			ts.starts[g.id] = append(ts.starts[g.id], point{metric: s.Metric, value: float64(s.Value)})
		}
	}
	return ts, nil
}

// down reports an instance whose every target known says up == 0.
func (r *run) down(g *group) bool {
	down, known := 0, 0
	for t := range g.targets {
		if v, ok := r.targets.up[t]; ok {
			known++
			if v == 0 {
				down++
			}
		}
	}
	return known > 0 && down == known
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

// familySel is the selector a query of family f uses: the user's, and for
// vLLM's families no router copy.
func familySel(sel Selector, f string) Selector {
	if dialect.Owner(f) == "vllm" {
		return sel.With(Matcher{Name: routerLabel, Op: "=", Value: ""})
	}
	return sel
}

func nameIs(f string) Matcher { return Matcher{Name: model.MetricNameLabel, Op: "=", Value: f} }

// restarts are the instances whose counters restarted inside the
// window: by their grouping key (a counter that fell), and by target (the
// unprefixed start time that changed).
type restarts struct {
	byKey    map[string]bool
	byTarget map[Target]bool
}

// of resolves restarts to the groups discovery found, by id.
func (rs restarts) of(r *run) map[string]bool {
	out := map[string]bool{}
	for k := range rs.byKey {
		if id, ok := r.disc.byKey[k]; ok {
			out[id] = true
		}
	}
	for t := range rs.byTarget {
		if g := r.disc.byTarget[t]; g != nil {
			out[g.id] = true
		}
	}
	return out
}

// targetStarts says whose unprefixed process_start_time_seconds a
// restartsOf asks for.
type targetStarts int

const (
	everyTarget  targetStarts = iota // before discovery: every target the selector allows
	fleetTargets                     // the fleet's jobs'
	askedBefore                      // none: an earlier restartsOf asked of every target
)

// restartsOf finds the instances whose counters restarted inside the
// window: resets() of the counter families given (a restart resets every
// counter together), changes() of every start time: those the families
// of the fleet (or, before discovery, every name the store holds) carry,
// and the unprefixed one of the targets whose names.
func (r *run) restartsOf(ctx context.Context, counters, starts []string, whose targetStarts) (restarts, error) {
	slices.Sort(counters)
	counters = slices.Compact(counters)
	w := promDuration(r.o.To.Sub(r.o.From))
	out := restarts{byKey: map[string]bool{}, byTarget: map[Target]bool{}}
	for _, b := range []struct {
		purpose  string
		families []string
		expr     func(f string) string
	}{
		{"window: counters that fell (restarts) in the window", counters, func(f string) string {
			return "resets(" + familySel(r.o.Selector, f).With(nameIs(f)).braces() + "[" + w + "]) > 0"
		}},
		{"window: process start times that changed in the window", starts, func(f string) string {
			return "changes(" + r.o.Selector.With(nameIs(f)).braces() + "[" + w + "]) > 0"
		}},
	} {
		vec, err := r.q.batch(ctx, b.purpose, b.families, b.expr, r.o.To)
		if err != nil {
			return out, err
		}
		for _, s := range vec {
			if !routerCopy(s.Metric) {
				out.byKey[groupKey(s.Metric, r.o.By)] = true
			}
		}
	}
	if whose == askedBefore {
		return out, nil
	}
	sel := r.o.Selector.With(nameIs(startTimeSeries))
	if whose == fleetTargets {
		sel = sel.With(r.jobs())
	}
	vec, err := r.q.instant(ctx, "window: process_start_time_seconds that changed in the window",
		"changes("+sel.braces()+"["+w+"]) > 0", r.o.To)
	if err != nil {
		return out, err
	}
	for _, s := range vec {
		out.byTarget[targetOf(s.Metric)] = true
	}
	return out, nil
}

// restarts finds the instances whose counters restarted inside the
// window, of every counter family the fleet publishes (a rebuild).
func (r *run) restarts(ctx context.Context, counters []string) (map[string]bool, error) {
	rs, err := r.restartsOf(ctx, counters, r.startFamilies(), fleetTargets)
	if err != nil {
		return nil, err
	}
	return rs.of(r), nil
}

// path is how one instance is read: in a pushdown, an instance is read
// whole (why) where the two ends of the window cannot give its window.
type path struct {
	read Read
	why  string
}

// plan reads every instance whole (a rebuild; a pushdown plans once its
// sums are read: planPushdown).
func (r *run) plan() {
	r.paths = map[string]path{}
	for _, g := range r.disc.groups {
		r.paths[g.id] = path{read: Rebuild}
	}
}

// whole says why an instance must be read whole, "" where the store's
// sums at the window's two ends give its window.
func (r *run) whole(g *group) string {
	switch {
	case r.tsEnd[g.id] == 0:
		return "gone: no sample at the window's end"
	case r.down(g):
		return "down"
	case r.tsStart[g.id] == 0:
		return "first seen inside the window"
	case r.resets[g.id]:
		return "restarted inside the window"
	case len(g.replicas) > 0:
		return "series under a replica label (" + strings.Join(slices.Sorted(maps.Keys(g.replicas)), ", ") + ")"
	}
	return ""
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
// families (of those named) where targets declared different things.
func loadMetadata(ctx context.Context, q *querier, families []string) (*metadata, error) {
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
	for _, f := range families {
		wanted[f] = true
		for _, sfx := range []string{"_total", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(f, sfx); ok {
				wanted[base] = true
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

// ownHelp lists the HELP an instance's targets declared for families
// whose targets disagree: what sets it apart from an instance of the same
// names (pushdown.go's shapes).
func (md *metadata) ownHelp(g *group) []string {
	var out []string
	for name, per := range md.byTarget {
		for t := range g.targets {
			if m, ok := per[t]; ok {
				out = append(out, name+"\x00"+m.Type+"\x00"+m.Help)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
