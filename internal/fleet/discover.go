package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// DefaultBy is the grouping unless told: the scrape target (job and
// instance), the labels every series a store scrapes carries, and the
// aggregation of the rules and dashboards (promql.DefaultBy): one --by, one
// meaning. A Kubernetes fleet reads better --by namespace,pod.
func DefaultBy() []string { return promql.DefaultBy("") }

// routerLabel is the label vLLM production-stack's router adds to the engine
// series it re-publishes (vllm:num_requests_running, …{server="…"}):
// summed with the engines' own, every figure would count twice.
const routerLabel = "server"

// routerCopy says whether m is a series vLLM production-stack's router
// re-publishes (a vllm: series with a server label).
func routerCopy(m model.Metric) bool {
	return m[routerLabel] != "" && dialect.Owner(string(m[model.MetricNameLabel])) == "vllm"
}

// startTimeSeries is the standard process collector's series; dialects
// read it beside their own.
const startTimeSeries = "process_start_time_seconds"

// Target is one scrape target: what job and instance identify.
type Target struct{ Job, Instance string }

func (t Target) String() string { return t.Job + "/" + t.Instance }

func targetOf(m model.Metric) Target {
	return Target{Job: string(m[model.JobLabel]), Instance: string(m[model.InstanceLabel])}
}

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
}

// newDiscovery is an empty discovery grouping by o.By.
func newDiscovery(o Options) *discovery {
	return &discovery{by: o.By, routerSeries: map[string]int{}, byKey: map[string]string{}, byID: map[string]*group{},
		replicaLabels: o.ReplicaLabels}
}

// discovery is what one series query found.
type discovery struct {
	by     []string
	groups []*group
	byID   map[string]*group
	// byKey finds a group's id by groupKey, without building its labels.
	byKey map[string]string
	// byTarget finds the group of a series that carries only its
	// target's labels (process_start_time_seconds, up).
	byTarget map[Target]*group
	// routerSeries counts series skipped as router copies, by the group
	// the router's own series would have been.
	routerSeries map[string]int
	// series is how many series the store listed.
	series int
	// replicaLabels are the labels the user named as telling HA
	// replicas' copies apart (--replica-label); replicaish says, of each
	// label name seen, whether it is one or its name says replica.
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

// discover lists the series of every dialect in [start, end] and groups
// them into instances by the by labels. The series are taken as the store's answer is
// read, none kept: memory grows with the instances, not the series. More
// than maxInstances instances, or more than MaxSeries(maxInstances)
// series, is a *LimitError.
func discover(ctx context.Context, q *querier, purpose string, o Options, start, end time.Time) (*discovery, error) {
	return list(ctx, q, purpose, []string{discoverMatch(o.Selector)}, o, start, end)
}

// list groups the series the store lists for matches (a series that
// several match is listed once) into instances, as discover does.
func list(ctx context.Context, q *querier, purpose string, matches []string, o Options, start, end time.Time) (*discovery, error) {
	sel, maxInstances := o.Selector, maxInstancesOr(o.MaxInstances)
	d := newDiscovery(o)
	lim := &limits{maxInstances: maxInstances, maxSeries: MaxSeries(maxInstances), sel: sel}
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
	d.index()
	return d, nil
}

// index sorts the groups by id and finds each by its targets.
func (d *discovery) index() {
	sort.Slice(d.groups, func(i, j int) bool { return d.groups[i].id < d.groups[j].id })
	d.byTarget = map[Target]*group{}
	for _, g := range d.groups {
		for t := range g.targets {
			d.byTarget[t] = g
		}
	}
}

// add routes one series to its instance: a new one if it is the first of
// its instance and there is room, else one only counted (lim).
func (d *discovery) add(m model.Metric, lim *limits) error {
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
func (d *discovery) note(g *group, owner, name string, m model.Metric) {
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
			replica = strings.Contains(strings.ToLower(string(l)), "replica") || slices.Contains(d.replicaLabels, string(l))
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

// Bounds of discovery.
const (
	// DefaultMaxInstances is how many instances a report reads unless
	// told (--max-instances): each costs about half a megabyte while the
	// report is built (110 MB for 200 vLLM pods), and its state at the end
	// of the window 68 kB of the largest answer.
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

// LimitError is a discovery past a bound: more instances than
// Options.MaxInstances, or more series than MaxSeries allows for them.
type LimitError struct {
	What     string // "instances" or "series"
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
	if e.What == "series" {
		return fmt.Sprintf("the store lists more than %d inference-server series%s: discovery reads at most %d for each of the %s allowed",
			e.Limit, within, SeriesPerInstance, units.Plural(float64(e.Limit/SeriesPerInstance), "instance"))
	}
	found := fmt.Sprint(e.Found)
	if e.AtLeast {
		found = "more than " + found
	}
	return fmt.Sprintf("the store holds %s inference-server instances%s, more than the %d read at once", found, within, e.Limit)
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

// groupLabels are the labels that identify m's instance.
func groupLabels(m model.Metric, by []string) map[string]string {
	out := make(map[string]string, len(by))
	for _, l := range by {
		out[l] = string(m[model.LabelName(l)])
	}
	return out
}

// keyOf is a group's key, as groupKey gives it for its series.
func keyOf(g *group, by []string) string {
	var b []byte
	for _, l := range by {
		b = append(append(b, g.labels[l]...), 0)
	}
	return string(b)
}

// groupKey identifies m's instance as groupLabels does, in one string:
// the values of the labels that decide it.
func groupKey(m model.Metric, by []string) string { return string(appendKey(nil, m, by)) }

// appendKey appends m's group key to b.
func appendKey(b []byte, m model.Metric, by []string) []byte {
	for _, l := range by {
		b = append(append(b, m[model.LabelName(l)]...), 0)
	}
	return b
}

// groupID joins an instance's label values in label order: "llm/vllm-7".
func groupID(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	// namespace before pod, job before instance: the wider first.
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = labels[k]
		if vals[i] == "" {
			vals[i] = "-"
		}
	}
	return strings.Join(vals, "/")
}

func rank(label string) int {
	switch label {
	case "namespace", "job", "cluster":
		return 0
	case "pod", "instance":
		return 2
	}
	return 1
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
