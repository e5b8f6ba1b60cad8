package fleet

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// The window: what it says of each instance before any is read. When each
// instance was last scraped at the window's two ends (what its rates
// divide by), which instances have no sample in it at all (a store lists
// series of whole days: those are not the fleet's), whether its targets
// are up and how long their scrapes took, and which restarted inside it.
// The restarts are asked once, for both reads: of the counters the store's
// sums read (a pushdown), or of every counter (a rebuild). And which were
// born inside it: an instance without a sample at its start whose targets
// were not scraped before it either (no up). One whose targets were is
// not new: its series were first published inside the window (vLLM's
// counters, the proxy's, at the first request), and count from zero over
// the whole window, as --since and --watch count them. paths.go then says
// which instances the two ends cannot give.

// window is what the window says of the fleet.
type window struct {
	// groups are the instances with a sample in the window, in order.
	groups []*group
	// end and start are each instance's newest sample at or before the
	// window's end and start, within the lookback, by id (0: none).
	end, start map[string]model.Time
	targets    *targetState
	// restarted are the instances whose counters restarted inside it.
	restarted map[string]bool
	// before are the targets scraped before the window (an up sample at
	// its start): asked only where an instance has no sample there.
	before map[Target]bool
}

// born says an instance began inside the window: no sample of it at the
// window's start, and no target of it scraped before the window (a store
// without up, backfilled or written remotely, cannot say, and its
// instances first seen inside the window are born there).
func (w *window) born(g *group) bool {
	if w.start[g.id] != 0 {
		return false
	}
	for t := range g.targets {
		if w.before[t] {
			return false
		}
	}
	return true
}

// readWindow asks the window's queries at once.
func readWindow(ctx context.Context, q *querier, d *discovery) (*window, error) {
	covering := covering(d.groups)
	w := &window{}
	err := alongside(ctx,
		func(ctx context.Context) (err error) { w.end, err = newest(ctx, q, d.route, covering, q.o.To); return },
		func(ctx context.Context) (err error) {
			w.start, err = newest(ctx, q, d.route, covering, q.o.From)
			return
		},
		func(ctx context.Context) (err error) { w.targets, err = fetchTargets(ctx, q, d); return },
		func(ctx context.Context) (err error) { w.restarted, err = restarts(ctx, q, d); return })
	if err != nil {
		return nil, err
	}
	if w.groups, err = w.present(ctx, q, d, covering); err != nil {
		return nil, err
	}
	if w.before, err = scrapedBefore(ctx, q, w); err != nil {
		return nil, err
	}
	return w, nil
}

// scrapedBefore reads which targets had an up sample at the window's
// start, where an instance has no sample of its own there (one query, or
// none).
func scrapedBefore(ctx context.Context, q *querier, w *window) (map[Target]bool, error) {
	var fresh []*group
	for _, g := range w.groups {
		if w.start[g.id] == 0 {
			fresh = append(fresh, g)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	sel := q.o.Selector.With(nameIs("up"), jobs(fresh))
	vec, err := q.instant(ctx, "window: the targets scraped before the window, of instances first seen inside it", sel.braces(), q.o.From)
	if err != nil {
		return nil, err
	}
	out := map[Target]bool{}
	for _, s := range vec {
		out[targetOf(s.Metric)] = true
	}
	return out, nil
}

// newest reads the time of each instance's newest sample at or before
// at, within the lookback: when it was last scraped. What the rates
// divide by is the time between the two readings, not the window.
// It reads a few families every instance has one of (covering), one at a
// time: timestamp() keeps no name, and VictoriaMetrics reads a
// timestamp() of anything but a series selector as one of its own.
func newest(ctx context.Context, q *querier, rt *router, covering []string, at time.Time) (map[string]model.Time, error) {
	vec, err := q.batch(ctx, "window: the time of each instance's newest sample", covering, func(f string) string {
		return "max" + q.by() + " (timestamp(" + q.familySel(f).With(nameIs(f)).braces() + "))"
	}, at)
	if err != nil {
		return nil, err
	}
	out := map[string]model.Time{}
	for _, s := range vec {
		if g := rt.route(s.Metric); g != nil {
			if t := model.Time(math.Round(float64(s.Value) * 1000)); t > out[g.id] {
				out[g.id] = t
			}
		}
	}
	return out, nil
}

// present leaves out the instances discovery listed that have no sample
// in the window (VictoriaMetrics lists the series of whole days): read at
// neither end, they are asked whether they had a sample inside it.
func (w *window) present(ctx context.Context, q *querier, d *discovery, covering []string) ([]*group, error) {
	absent := func(g *group) bool { return w.end[g.id] == 0 && w.start[g.id] == 0 }
	if !slices.ContainsFunc(d.groups, absent) {
		return d.groups, nil
	}
	// One family at a time (a range function keeps no name): a few that
	// every instance publishes one of.
	vec, err := q.batch(ctx, "window: instances seen inside the window, neither at its start nor at its end", covering, func(f string) string {
		return "group" + q.by() + " (last_over_time(" + q.familySel(f).With(nameIs(f)).braces() + "[" + q.window() + "]))"
	}, q.o.To)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range vec {
		if g := d.route.route(s.Metric); g != nil {
			seen[g.id] = true
		}
	}
	var kept []*group
	for _, g := range d.groups {
		if !absent(g) || seen[g.id] {
			kept = append(kept, g)
		}
	}
	return kept, nil
}

// covering picks few families that every instance has one of.
func covering(groups []*group) []string {
	shared := map[string]int{}
	for _, g := range groups {
		for f := range g.families {
			shared[f]++
		}
	}
	chosen := map[string]bool{}
	for _, g := range groups {
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
	// its instance (the whole read's).
	starts map[string][]point
}

// jobs is a matcher for the jobs of groups, which bounds the per-target
// series to the fleet's own targets.
func jobs(groups []*group) Matcher {
	seen := map[string]bool{}
	for _, g := range groups {
		for t := range g.targets {
			seen[t.Job] = true
		}
	}
	return Matcher{Name: model.JobLabel, Op: "=~", Value: nameRegex(slices.Sorted(maps.Keys(seen)))}
}

// fetchTargets reads every target's up, scrape_duration_seconds and
// process_start_time_seconds at the window's end.
func fetchTargets(ctx context.Context, q *querier, d *discovery) (*targetState, error) {
	sel := q.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(targetSeries)}, jobs(d.groups))
	vec, err := q.instant(ctx, "window: up, scrape_duration_seconds and process_start_time_seconds of every target", sel.braces(), q.o.To)
	if err != nil {
		return nil, err
	}
	ts := &targetState{up: map[Target]float64{}, waited: map[Target]float64{}, starts: map[string][]point{}}
	for _, s := range vec {
		t := targetOf(s.Metric)
		g := d.route.byTarget[t]
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
func (w *window) down(g *group) bool {
	down, known := 0, 0
	for t := range g.targets {
		if v, ok := w.targets.up[t]; ok {
			known++
			if v == 0 {
				down++
			}
		}
	}
	return known > 0 && down == known
}

// waited is how long the instance's slowest target's last scrape took
// (scrape_duration_seconds), 0 when the store does not say.
func (w *window) waited(g *group) float64 {
	out := 0.0
	for t := range g.targets {
		out = math.Max(out, w.targets.waited[t])
	}
	return out
}

// familiesWhere lists, sorted, the families of names that keep accepts.
func familiesWhere(names []string, keep func(family string) bool) []string {
	var out []string
	for _, f := range names {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// counterFamily says whether a family's fall means a restart: a counter
// by its _total, a histogram by its _count.
func counterFamily(f string) bool {
	return strings.HasSuffix(f, "_total") || strings.HasSuffix(f, "_count")
}

// startFamily says whether a family holds a process start time.
func startFamily(f string) bool { return strings.HasSuffix(f, startTimeSeries) }

// restarts finds the instances whose counters restarted inside the
// window, once for both reads: resets() of the counters (a restart resets
// every counter together: a pushdown asks of the counters its sums read
// that every request moves, shape.summedCounters; a rebuild of every
// counter family), changes() of every start time the fleet's families
// hold and of the unprefixed one of its targets.
func restarts(ctx context.Context, q *querier, d *discovery) (map[string]bool, error) {
	var counters []string
	if q.o.Read == Pushdown {
		for _, sh := range d.shapes {
			if sh.lib != nil {
				counters = append(counters, sh.summedCounters()...)
			}
		}
		slices.Sort(counters)
		counters = slices.Compact(counters)
	} else {
		counters = familiesWhere(d.families, counterFamily)
	}
	starts := familiesWhere(d.families, startFamily)
	out := map[string]bool{}
	for _, b := range []struct {
		purpose  string
		families []string
		expr     func(f string) string
	}{
		{"window: counters that fell (restarts) in the window", counters, func(f string) string {
			return "resets(" + q.familySel(f).With(nameIs(f)).braces() + "[" + q.window() + "]) > 0"
		}},
		{"window: process start times that changed in the window", starts, func(f string) string {
			return "changes(" + q.o.Selector.With(nameIs(f)).braces() + "[" + q.window() + "]) > 0"
		}},
	} {
		vec, err := q.batch(ctx, b.purpose, b.families, b.expr, q.o.To)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			if g := d.route.route(s.Metric); g != nil {
				out[g.id] = true
			}
		}
	}
	sel := q.o.Selector.With(nameIs(startTimeSeries), jobs(d.groups))
	vec, err := q.instant(ctx, "window: process_start_time_seconds that changed in the window",
		"changes("+sel.braces()+"["+q.window()+"]) > 0", q.o.To)
	if err != nil {
		return nil, err
	}
	for _, s := range vec {
		if g := d.route.byTarget[targetOf(s.Metric)]; g != nil {
			out[g.id] = true
		}
	}
	return out, nil
}
