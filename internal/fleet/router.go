package fleet

import (
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
)

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
