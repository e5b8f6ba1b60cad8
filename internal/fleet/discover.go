package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/units"
)

// Discovery: which instances the store holds, and how each can be read.
// It is finished before anything is read of them. A rebuild lists every
// series of every dialect (one request) and groups them into instances
// by --by; a pushdown discovers by census (census.go), which lists a few
// series of each instance, and sorts the instances into shapes, each read
// by one library (shapes.go). Either way the store's metadata is asked
// beside the first request.

// DefaultBy is the grouping unless told: the scrape target (job and
// instance), the labels every series a store scrapes carries, and the
// aggregation of the rules and dashboards (promql.DefaultBy): one --by, one
// meaning. A Kubernetes fleet reads better --by namespace,pod.
func DefaultBy() []string { return promql.DefaultBy("") }

// discovery is the fleet as discovery found it.
type discovery struct {
	// groups are its instances, in the order of their ids; route finds
	// the instance of a series of theirs.
	groups []*group
	route  *router
	// routerSeries counts the series skipped as router copies, by the
	// instance the router's own series would have been.
	routerSeries map[string]int
	// families are the dialects' families the fleet publishes: the
	// store's names within the selector (a pushdown: familyNames), else
	// those listed.
	families []string
	meta     *metadata
	// shapes sort the instances by the library that reads them (a
	// pushdown, and trends): each instance is in one, shapeOf by id.
	shapes  []*shape
	shapeOf map[string]*shape
}

// discover finds the fleet: its instances, grouped by --by, within the
// selector and the window (and the lookback before it); in a pushdown, or
// for trends, sorted into shapes with their libraries. No instance is a
// *NoSeriesError; past its bounds (the series listed; in a rebuild, which
// reads every instance whole, --max-instances), a *LimitError.
func discover(ctx context.Context, q *querier) (*discovery, error) {
	d := &discovery{}
	if q.o.Read == Pushdown {
		if err := d.byCensus(ctx, q); err != nil {
			return nil, err
		}
	} else if err := d.whole(ctx, q); err != nil {
		return nil, err
	}
	if len(d.groups) == 0 {
		return nil, d.noFleet(ctx, q)
	}
	d.route = newRouter(d.groups, q.o.By)
	if q.o.Read == Rebuild && q.o.Trend {
		// Trends read each shape's library step by step.
		shapes, err := sortShapes(ctx, q, d, nil, nil)
		if err != nil {
			return nil, err
		}
		d.setShapes(shapes)
	}
	return d, nil
}

// whole discovers the fleet by every series of every dialect, and the
// store's metadata beside it.
func (d *discovery) whole(ctx context.Context, q *querier) error {
	var l *listing
	err := alongside(ctx,
		func(ctx context.Context) (err error) { d.meta, err = loadMetadata(ctx, q); return },
		func(ctx context.Context) (err error) {
			l, err = listAll(ctx, q, "discovery: every series of every dialect")
			return
		})
	if err != nil {
		return err
	}
	d.groups, d.routerSeries = l.groups, l.routerSeries
	seen := map[string]bool{}
	for _, g := range d.groups {
		for f := range g.families {
			seen[f] = true
		}
	}
	d.families = slices.Sorted(maps.Keys(seen))
	return nil
}

// setShapes keeps the fleet's shapes, and each instance's.
func (d *discovery) setShapes(shapes []*shape) {
	d.shapes, d.shapeOf = shapes, map[string]*shape{}
	for _, sh := range shapes {
		for _, g := range sh.groups {
			d.shapeOf[g.id] = sh
		}
	}
}

// noFleet is the error of a discovery that found nothing to read.
func (d *discovery) noFleet(ctx context.Context, q *querier) error {
	if n := sum(d.routerSeries); n > 0 {
		return fmt.Errorf("only router copies found (%d series with a %s label): no engine's own series are in the store", n, routerLabel)
	}
	return noSeries(ctx, q)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// NoSeriesError is a store (within the selector) holding no series of any
// dialect.
type NoSeriesError struct {
	Selector Selector
	// Prefixes are the name prefixes the store does have (within the
	// selector), at most 20.
	Prefixes []string
	// From and To are the window looked in.
	From, To time.Time
}

func (e *NoSeriesError) Error() string {
	what := "the store has no inference-server series"
	if len(e.Selector) > 0 {
		what += " matching " + e.Selector.Short()
	}
	if len(e.Prefixes) == 0 {
		return what + " (and no series at all in the window, " + e.From.UTC().Format(time.RFC3339) + " to " + e.To.UTC().Format(time.RFC3339) + ")"
	}
	return what + " (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
}

// noSeries says what the store has instead.
func noSeries(ctx context.Context, q *querier) error {
	o := q.o
	match := []string{o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: ".+"}).braces()}
	start, end := q.listed()
	names, err := q.labelValues(ctx, "no series: the names the store has instead", model.MetricNameLabel, match, start, end)
	if err != nil {
		var e *promapi.Error
		if errors.As(err, &e) && e.Kind == promapi.Canceled {
			return err
		}
		names = nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		p := n
		if i := strings.IndexByte(n, ':'); i > 0 {
			p = n[:i+1]
		} else if i := strings.IndexByte(n, '_'); i > 0 {
			p = n[:i+1]
		}
		seen[p] = true
	}
	ps := make([]string, 0, len(seen))
	for p := range seen {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	if len(ps) > 20 {
		ps = append(ps[:20], fmt.Sprintf("and %d more", len(ps)-20))
	}
	return &NoSeriesError{Selector: o.Selector, Prefixes: ps, From: o.From, To: o.To}
}

// startTimeSeries is the standard process collector's series; dialects
// read it beside their own.
const startTimeSeries = "process_start_time_seconds"

// Target is one scrape target: what job and instance identify.
type Target struct{ Job, Instance string }

func (t Target) String() string { return t.Job + "/" + t.Instance }

// group is one instance as discovery found it.
type group struct {
	id      string            // the --by values, joined
	labels  map[string]string // the --by labels and their values
	match   Selector          // equality matchers that select exactly its series
	dialect string
	// families are the names of its series; targets its scrape targets.
	families map[string]bool
	targets  map[Target]bool
	// series counts the series discovery listed for it (buckets left
	// out): what sizes its state in an answer.
	series int
	// infos are its info series (…_info: a value of 1, what they say in
	// their labels, as vLLM's cache_config_info its KV capacity), at most
	// maxInfos.
	infos []model.Metric
	// models are the served models its series name (promql.ModelLabels);
	// deciding the values of the labels that decide how a library reads
	// it (promql.DecidingLabels), "family\x00label\x00value"; replicas
	// the labels of its series whose name says replica.
	models, deciding, replicas map[string]bool
	// partial says the census listed only some of its series (census.go):
	// its families are not all it publishes, nor its series counted.
	partial bool
	// pods are the Kubernetes pods (namespace, pod) its series carry,
	// which the GPUs dcgm-exporter gives to a pod join on (gpus.go).
	pods map[[2]string]bool
}

// newListing is an empty listing grouping by o.By.
func newListing(o Options) *listing {
	return &listing{by: o.By, routerSeries: map[string]int{}, byKey: map[string]string{}, byID: map[string]*group{},
		replicaLabels: o.ReplicaLabels}
}

// listing is what one listing of series found: the series grouped into
// instances.
type listing struct {
	by     []string
	groups []*group
	byID   map[string]*group
	// byKey finds a group's id by groupKey, without building its labels.
	byKey map[string]string
	// routerSeries counts series skipped as router copies, by the group
	// the router's own series would have been.
	routerSeries map[string]int
	// series is how many series the store listed.
	series int
	// replicaLabels are the labels the user named as telling HA
	// replicas' copies apart (--replica-label); replicaish says, of each
	// label name seen, whether it is one (replicaLabel).
	replicaLabels []string
	replicaish    map[model.LabelName]bool
	// key is a buffer for the map keys add builds.
	key []byte
}

// discoverMatch is the series selector of discovery: every family of
// every dialect within the user's selector, histogram buckets left out
// (the _count and _sum series name each histogram; buckets are most of a
// server's series and would only be counted).
func discoverMatch(sel Selector) string {
	return sel.With(
		Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(dialect.NamePrefixes())},
		Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"},
	).braces()
}

// listAll lists the series of every dialect within the selector, over the
// window and its lookback, and groups them into instances by --by. The
// series are taken as the store's answer is read, none kept: memory grows
// with the instances, not the series. More than --max-instances
// instances, or more than MaxSeries of them series, is a *LimitError.
func listAll(ctx context.Context, q *querier, purpose string) (*listing, error) {
	return list(ctx, q, purpose, []string{discoverMatch(q.o.Selector)})
}

// list groups the series the store lists for matches (a series that
// several match is listed once) into instances, as listAll does. The
// series are bounded (MaxSeries: the answer's size); the instances only
// where every instance is read whole (a rebuild): a pushdown sums as many
// as the store holds, and bounds those it reads whole (readWhole).
func list(ctx context.Context, q *querier, purpose string, matches []string) (*listing, error) {
	o := q.o
	start, end := q.listed()
	sel, maxInstances := o.Selector, maxInstancesOr(o.MaxInstances)
	d := newListing(o)
	lim := &limits{maxInstances: maxInstances, maxSeries: MaxSeries(maxInstances), sel: sel}
	if o.Read == Pushdown {
		lim.maxInstances = math.MaxInt
	}
	var seen map[model.Fingerprint]bool
	if len(matches) > 1 {
		seen = map[model.Fingerprint]bool{} // in case the store does not
	}
	err := q.series(ctx, purpose, matches, start, end, func(m model.Metric) error {
		if seen != nil {
			fp := m.Fingerprint()
			if seen[fp] {
				return nil
			}
			seen[fp] = true
		}
		if d.series++; d.series > lim.maxSeries {
			return lim.stopped(len(d.byID))
		}
		return d.add(m, lim)
	})
	var pe *promapi.Error
	switch {
	case errors.As(err, &pe) && pe.Kind == promapi.TooManySeries:
		return nil, lim.stopped(len(d.byID))
	case err != nil:
		return nil, err
	case lim.over > 0:
		return nil, lim.tooMany("instances", len(d.byID)+lim.over, false)
	}
	for _, g := range d.byID {
		g.dialect = majorityDialect(g.families)
		d.groups = append(d.groups, g)
	}
	sortGroups(d.groups)
	return d, nil
}

// sortGroups orders groups by id.
func sortGroups(gs []*group) {
	sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
}

// add routes one series to its instance: a new one if it is the first of
// its instance and there is room, else one only counted (lim).
func (d *listing) add(m model.Metric, lim *limits) error {
	name := string(m[model.MetricNameLabel])
	owner := dialect.Owner(name)
	if owner == "" {
		return nil
	}
	d.key = appendKey(d.key[:0], m, d.by)
	id, known := d.byKey[string(d.key)] // no allocation to look up
	var labels map[string]string
	if !known {
		labels = groupLabels(m, d.by)
		id = groupID(labels)
		d.byKey[string(d.key)] = id
	}
	if owner == "vllm" && m[routerLabel] != "" {
		d.routerSeries[id]++
		return nil
	}
	g := d.byID[id]
	if g == nil {
		if lim.past[id] {
			return nil // counted already
		}
		if labels == nil {
			labels = groupLabels(m, d.by)
		}
		if lim.full(len(d.byID), id, m) {
			return nil
		}
		g = &group{id: id, labels: labels, families: map[string]bool{}, targets: map[Target]bool{},
			models: map[string]bool{}, deciding: map[string]bool{}, replicas: map[string]bool{}}
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			g.match = append(g.match, Matcher{Name: k, Op: "=", Value: labels[k]})
		}
		d.byID[id] = g
		lim.count(m)
	}
	g.families[name] = true
	g.targets[targetOf(m)] = true
	if pod := m["pod"]; pod != "" {
		k := [2]string{string(m["namespace"]), string(pod)}
		if !g.pods[k] {
			if g.pods == nil {
				g.pods = map[[2]string]bool{}
			}
			g.pods[k] = true
		}
	}
	g.series++
	d.note(g, owner, name, m)
	return nil
}

// decidingLabels are promql.DecidingLabels, read once.
var decidingLabels = promql.DecidingLabels()

// note keeps what a series of g says of its instance beyond its name:
// the model it serves, the values that decide how its dialect's library
// reads it, and labels that may tell HA replicas' copies apart. It runs
// for every series discovery lists: it allocates only for what is new.
func (d *listing) note(g *group, owner, name string, m model.Metric) {
	for _, l := range modelLabelsOf(owner) {
		if v := m[model.LabelName(l)]; v != "" {
			d.key = append(append(append(d.key[:0], owner...), 0), v...)
			if !g.models[string(d.key)] {
				g.models[string(d.key)] = true
			}
		}
	}
	for _, l := range decidingLabels {
		if v, ok := m[model.LabelName(l)]; ok {
			d.key = append(append(append(append(append(d.key[:0], name...), 0), l...), 0), v...)
			if !g.deciding[string(d.key)] {
				g.deciding[string(d.key)] = true
			}
		}
	}
	for l := range m {
		replica, seen := d.replicaish[l]
		if !seen {
			replica = replicaLabel(l, d.replicaLabels)
			if d.replicaish == nil {
				d.replicaish = map[model.LabelName]bool{}
			}
			d.replicaish[l] = replica
		}
		if replica {
			g.replicas[string(l)] = true
		}
	}
	if strings.HasSuffix(name, "_info") && len(g.infos) < maxInfos {
		g.infos = append(g.infos, m.Clone()) // m is the reader's, not to be kept
	}
}

// modelLabels are promql.ModelLabels by dialect, read once.
var modelLabels = func() map[string][]string {
	out := map[string][]string{}
	for _, d := range dialect.Names() {
		out[d] = promql.ModelLabels(d)
	}
	return out
}()

func modelLabelsOf(owner string) []string { return modelLabels[owner] }

// maxInfos bounds the info series kept of one instance: vLLM publishes
// one cache_config_info per engine.
const maxInfos = 64

// served lists the models the group's dialect's series name, sorted, as
// the dialect lists them (dialect.ServedModels).
func (g *group) served() []string {
	var out []string
	for k := range g.models {
		if owner, m, _ := strings.Cut(k, "\x00"); owner == g.dialect {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return dialect.ServedModels(g.dialect, out)
}

// Bounds of what is read.
const (
	// DefaultMaxInstances is how many instances a report reads whole
	// unless told (--max-instances): each costs about half a megabyte
	// while the report is built (110 MB for 200 vLLM pods), and its state
	// at the end of the window 68 kB of the largest answer. The store's
	// sums are not bounded by it (60 kB an instance: 125 MB for 2,000 vLLM
	// pods), only by what discovery lists (MaxSeries) and the answers'
	// size (Options.MaxBytes); nor is what a walk of label values
	// finds, which it bounds before asking about them.
	DefaultMaxInstances = 1000
	// SeriesPerInstance is how many series discovery lists for each
	// instance allowed, on average: a vLLM pod lists 45 to 61 for each
	// model and engine it serves (buckets left out).
	SeriesPerInstance = 200
)

// MaxSeries is the most series discovery reads for maxInstances
// instances (0: DefaultMaxInstances).
func MaxSeries(maxInstances int) int {
	return maxInstancesOr(maxInstances) * SeriesPerInstance
}

// maxInstancesOr is n, or DefaultMaxInstances where n is not above 0.
func maxInstancesOr(n int) int {
	if n <= 0 {
		return DefaultMaxInstances
	}
	return n
}

// LimitError is a report past a bound: more instances to read whole than
// Options.MaxInstances, more series listed than MaxSeries allows for
// them, more values of a grouping label than it may ask about.
type LimitError struct {
	// What is "instances" (every instance read whole), "whole" (those a
	// pushdown reads whole), "series", or "values" (of Label, within
	// Selector, that the census did not list).
	What     string
	Label    string
	Limit    int
	Found    int  // how many were found
	AtLeast  bool // reading stopped at Found: there are more
	Selector Selector
	// Largest are the values of the widest label the series carry
	// (namespace, cluster or job: of those with more than one value, the
	// one with most) holding the most instances, at most three, each with
	// its count: selectors that narrow the fleet.
	Largest []Narrower
}

// Narrower is a matcher that selects part of the fleet, and how many
// instances it holds.
type Narrower struct {
	Selector  Selector
	Instances int
}

func (e *LimitError) Error() string {
	within := ""
	if len(e.Selector) > 0 {
		within = " within " + e.Selector.Short()
	}
	found := fmt.Sprint(e.Found)
	if e.AtLeast {
		found = "more than " + found
	}
	switch e.What {
	case "series":
		return fmt.Sprintf("the store lists more than %d inference-server series%s: discovery reads at most %d for each of the %s allowed",
			e.Limit, within, SeriesPerInstance, units.Plural(float64(e.Limit/SeriesPerInstance), "instance"))
	case "whole":
		return fmt.Sprintf("%s inference-server instances%s are to be read whole (the store's sums cannot give their window: restarted, born or gone inside it, …), more than the %d read whole at once",
			found, within, e.Limit)
	case "values":
		return fmt.Sprintf("the store's series carry %s values of %s%s that the census did not list, more than the %d instances discovered whole at once",
			found, e.Label, within, e.Limit)
	}
	return fmt.Sprintf("the store holds %s inference-server instances%s, more than the %d read whole at once", found, within, e.Limit)
}

// limits counts discovery against its bounds.
type limits struct {
	maxInstances, maxSeries int
	sel                     Selector
	// over counts the instances found past maxInstances, by id.
	over int
	past map[string]bool
	// wide counts instances by the values of the labels that narrow a
	// fleet (narrowing).
	wide map[Matcher]int
}

// narrowing are the labels a fleet past its bounds is narrowed by, the
// widest first: whichever has more than one value.
var narrowing = []string{"namespace", "cluster", "job"}

// full says whether an instance not yet seen, with id and a series m of
// it, is past the bound, and counts it there.
func (l *limits) full(have int, id string, m model.Metric) bool {
	if have < l.maxInstances {
		return false
	}
	if l.past == nil {
		l.past = map[string]bool{}
	}
	l.past[id] = true
	l.over++
	l.count(m)
	return true
}

// count adds an instance, by a series m of it, to the tallies of the
// labels that narrow a fleet.
func (l *limits) count(m model.Metric) {
	for _, k := range narrowing {
		if v := m[model.LabelName(k)]; v != "" {
			if l.wide == nil {
				l.wide = map[Matcher]int{}
			}
			l.wide[Matcher{Name: k, Op: "=", Value: string(v)}]++
		}
	}
}

// widest is the label of narrowing with the most values (at least two).
func (l *limits) widest() string {
	values := map[string]int{}
	for m := range l.wide {
		values[m.Name]++
	}
	best := ""
	for _, k := range narrowing {
		if values[k] > 1 && (best == "" || values[k] > values[best]) {
			best = k
		}
	}
	return best
}

// stopped is the error of a discovery stopped at its series bound: the
// instances past theirs if they were, else the series.
func (l *limits) stopped(instances int) *LimitError {
	if l.over > 0 {
		return l.tooMany("instances", instances+l.over, true)
	}
	return l.tooMany("series", l.maxSeries+1, true)
}

func (l *limits) tooMany(what string, found int, atLeast bool) *LimitError {
	e := &LimitError{What: what, Limit: l.maxInstances, Found: found, AtLeast: atLeast, Selector: l.sel}
	if what == "series" {
		e.Limit = l.maxSeries
	}
	wide := l.widest()
	var ms []Matcher
	for m := range l.wide {
		if m.Name == wide {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if l.wide[ms[i]] != l.wide[ms[j]] {
			return l.wide[ms[i]] > l.wide[ms[j]]
		}
		return ms[i].Value < ms[j].Value
	})
	for _, m := range ms[:min(3, len(ms))] {
		e.Largest = append(e.Largest, Narrower{Selector: l.sel.With(m), Instances: l.wide[m]})
	}
	return e
}

// majorityDialect is the dialect owning most of the families, as
// dialect.Map picks one.
func majorityDialect(fams map[string]bool) string {
	count := map[string]int{}
	for f := range fams {
		count[dialect.Owner(f)]++
	}
	best, n := "", 0
	for _, d := range dialect.Names() {
		if count[d] > n {
			best, n = d, count[d]
		}
	}
	return best
}
