package fleet

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
)

// Which instance a series belongs to: the values of its --by labels (its
// grouping key; the instance's id joins them: "llm/vllm-7"), or, for the
// unprefixed start time a scrape target carries, its target. One router
// reads every answer of the store into instances. vLLM production-stack's
// router re-publishes engines' series under a label of its own: those
// copies belong to no instance.

// routerLabel is the label vLLM production-stack's router adds to the engine
// series it re-publishes (vllm:num_requests_running, …{server="…"}):
// summed with the engines' own, every figure would count twice.
const routerLabel = "server"

// routerCopy says whether m is a series vLLM production-stack's router
// re-publishes (a vllm: series with a server label).
func routerCopy(m model.Metric) bool {
	return m[routerLabel] != "" && dialect.Owner(string(m[model.MetricNameLabel])) == "vllm"
}

// router finds the instance a series of an answer belongs to: by the
// values of its grouping labels, or, for the start time a target carries
// unprefixed (process_start_time_seconds, which has no label of the
// instance's but its target's), by its target; none for a router copy, nor
// for a series of no instance it knows (an answer may hold more than
// those asked about). Every answer of the store is read into instances by
// one.
type router struct {
	by       []string
	byKey    map[string]*group
	byTarget map[Target]*group
}

// newRouter routes to groups.
func newRouter(groups []*group, by []string) *router {
	rt := &router{by: by, byKey: make(map[string]*group, len(groups)), byTarget: map[Target]*group{}}
	for _, g := range groups {
		rt.byKey[keyOf(g, by)] = g
		for t := range g.targets {
			rt.byTarget[t] = g
		}
	}
	return rt
}

// route returns the group a series belongs to, or nil.
func (rt *router) route(m model.Metric) *group {
	if routerCopy(m) {
		return nil
	}
	// Looked up without a string of its own: route runs for every series.
	var key [128]byte
	if g := rt.byKey[string(appendKey(key[:0], m, rt.by))]; g != nil {
		return g
	}
	if m[model.MetricNameLabel] == startTimeSeries {
		return rt.byTarget[targetOf(m)]
	}
	return nil
}

func targetOf(m model.Metric) Target {
	return Target{Job: string(m[model.JobLabel]), Instance: string(m[model.InstanceLabel])}
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
