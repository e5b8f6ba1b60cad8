package fleet

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
)

// DefaultBy is the grouping where every series has both labels (a
// Kubernetes scrape); FallbackBy where one lacks them.
var (
	DefaultBy  = []string{"namespace", "pod"}
	FallbackBy = []string{"job", "instance"}
)

// routerLabel is the label vLLM production-stack's router adds to the engine
// series it re-publishes (vllm:num_requests_running, …{server="…"}):
// summed with the engines' own, every figure would count twice.
const routerLabel = "server"

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
// them into instances by the by labels (nil: DefaultBy where a series has
// them, else FallbackBy).
func discover(ctx context.Context, q *querier, sel Selector, by []string, start, end time.Time) (*discovery, error) {
	sets, err := q.series(ctx, "discovery: every series of every dialect", []string{discoverMatch(sel)}, start, end)
	if err != nil {
		return nil, err
	}
	d := &discovery{by: by, routerSeries: map[string]int{}, series: len(sets), byKey: map[string]string{}}
	byID := map[string]*group{}
	for _, ls := range sets {
		m := model.Metric(ls)
		name := string(m[model.MetricNameLabel])
		owner := dialect.Owner(name)
		if owner == "" {
			continue
		}
		labels := groupLabels(m, by)
		id := groupID(labels)
		d.byKey[groupKey(m, by)] = id
		if owner == "vllm" && m[routerLabel] != "" {
			d.routerSeries[id]++
			continue
		}
		g := byID[id]
		if g == nil {
			g = &group{id: id, labels: labels, families: map[string]bool{}, targets: map[Target]bool{}}
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				g.match = append(g.match, Matcher{Name: k, Op: "=", Value: labels[k]})
			}
			byID[id] = g
		}
		g.families[name] = true
		g.targets[targetOf(m)] = true
	}
	for _, g := range byID {
		g.dialect = majorityDialect(g.families)
		d.groups = append(d.groups, g)
	}
	sort.Slice(d.groups, func(i, j int) bool { return d.groups[i].id < d.groups[j].id })
	d.byID = byID
	d.byTarget = map[Target]*group{}
	for _, g := range d.groups {
		for t := range g.targets {
			d.byTarget[t] = g
		}
	}
	return d, nil
}

// groupLabels are the labels that identify m's instance.
func groupLabels(m model.Metric, by []string) map[string]string {
	if by == nil {
		by = DefaultBy
		for _, l := range DefaultBy {
			if m[model.LabelName(l)] == "" {
				by = FallbackBy
				break
			}
		}
	}
	out := make(map[string]string, len(by))
	for _, l := range by {
		out[l] = string(m[model.LabelName(l)])
	}
	return out
}

// groupKey identifies m's instance as groupLabels does, in one string:
// the values of the labels that decide it.
func groupKey(m model.Metric, by []string) string {
	if by == nil {
		ns, pod := m["namespace"], m["pod"]
		if ns != "" && pod != "" {
			return "\x00" + string(ns) + "\x00" + string(pod)
		}
		return "\x01" + string(m[model.JobLabel]) + "\x00" + string(m[model.InstanceLabel])
	}
	var b strings.Builder
	for _, l := range by {
		b.WriteString(string(m[model.LabelName(l)]))
		b.WriteByte(0)
	}
	return b.String()
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
