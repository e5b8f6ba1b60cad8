package fleet

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
)

// Reading instances' series: every series of some instances at one time,
// each answer read into its instances, in batches that keep each answer
// well under --max-bytes. Discovery reads a shape's first instance so
// (shapes.go), the whole read every instance it reads (whole.go); the
// series become families in families.go.

// Answer sizes, to batch by: a vLLM pod's state is about 82 kB of JSON
// for the 50 or so series discovery lists for it (buckets left out, which
// are most of the answer), 18 kB without buckets but the percentiles'.
const (
	bytesPerSeries      = 1700
	bytesPerSeriesStart = 400
	// maxPerBatch bounds the instances one query names.
	maxPerBatch = 500
)

// stateAt says what a state reads: every series and every bucket (full:
// the window's end), or every series but buckets, the buckets of the
// histograms the window's percentiles read (buckets, by dialect) and the
// targets' process_start_time_seconds (of jobs): the window's start, at a
// fifth of the series. The end has the start time from the targets
// (readWhole adds it).
type stateAt struct {
	full    bool
	buckets func(dialect string) []string
	jobs    Matcher
}

var stateAtEnd = stateAt{full: true}

// stateQuery is one query of a state and what it is for.
type stateQuery struct{ purpose, text string }

// stateQueries are the queries of groups' state, batch by batch; all says
// groups are every instance of the window, read under the user's
// selector alone where their answer fits.
func stateQueries(q *querier, groups []*group, at stateAt, all bool) []stateQuery {
	per := bytesPerSeriesStart
	if at.full {
		per = bytesPerSeries
	}
	var prefixes, buckets []string
	for _, d := range dialectsOf(groups) {
		prefixes = append(prefixes, dialectPrefixes(d)...)
		if !at.full {
			buckets = append(buckets, at.buckets(d)...)
		}
	}
	names := Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(prefixes)}
	bucket := Matcher{Name: model.MetricNameLabel, Op: "=~", Value: ".+_bucket"}
	var out []stateQuery
	for _, sel := range batches(q, groups, per, all) {
		out = append(out, stateQuery{"rebuild: every series but histogram buckets",
			sel.With(names, Matcher{Name: model.MetricNameLabel, Op: "!~", Value: bucket.Value}).braces()})
		switch {
		case at.full:
			out = append(out, stateQuery{"rebuild: every histogram bucket", sel.With(names, bucket).braces()})
		case len(buckets) > 0:
			out = append(out, stateQuery{"rebuild, window start: the buckets of the histograms the percentiles read",
				sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(buckets)}).braces()})
		}
		if !at.full {
			out = append(out, stateQuery{"rebuild, window start: process_start_time_seconds of the targets",
				sel.With(nameIs(startTimeSeries), at.jobs).braces()})
		}
	}
	return out
}

// readState reads groups' series at one time by queries (stateQueries),
// each answer read into its instances by a router of groups (a batch may
// select others), its replica copies removed.
func readState(ctx context.Context, q *querier, groups []*group, at time.Time, queries []stateQuery) (map[string][]point, error) {
	out := map[string][]point{}
	if len(groups) == 0 {
		return out, nil
	}
	rt := newRouter(groups, q.o.By)
	var mu sync.Mutex
	err := inParallel(ctx, len(queries), 0, func(ctx context.Context, i int) error {
		vec, err := q.instant(ctx, queries[i].purpose, queries[i].text, at)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range vec {
			if g := rt.route(s.Metric); g != nil {
				out[g.id] = append(out[g.id], point{metric: s.Metric, value: float64(s.Value), hist: s.Histogram})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for id, pts := range out {
		out[id] = q.replicas.points(id, pts)
	}
	return out, nil
}

// batches are selectors that each read some of groups, about per bytes of
// answer for every series discovery listed for one, each answer within
// half of --max-bytes: the user's selector alone where groups are all the
// instances of the window (all) and fit in one answer; else, batch by
// batch, equality on every grouping label but the last and a list of the
// last's values.
func batches(q *querier, groups []*group, per int, all bool) []Selector {
	o := q.o
	budget := o.MaxBytes
	if budget <= 0 {
		budget = DefaultMaxBytes
	}
	budget /= 2
	total := int64(0)
	for _, g := range groups {
		total += int64(g.series * per)
	}
	if all && total <= budget {
		return []Selector{o.Selector}
	}
	by := o.By
	last := by[len(by)-1]
	// Batches of groups that agree on every label but the last.
	parts := map[string][]*group{}
	for _, g := range groups {
		k := keyOf(g, by[:len(by)-1])
		parts[k] = append(parts[k], g)
	}
	var out []Selector
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		var batch []string
		size, length := int64(0), 0
		flush := func(g *group) {
			sel := o.Selector
			for _, l := range by[:len(by)-1] {
				sel = sel.With(Matcher{Name: l, Op: "=", Value: g.labels[l]})
			}
			out = append(out, sel.With(Matcher{Name: last, Op: "=~", Value: nameRegex(batch)}))
			batch, size, length = nil, 0, 0
		}
		ps := parts[k]
		for i, g := range ps {
			batch = append(batch, g.labels[last])
			size += int64(g.series * per)
			length += len(g.labels[last]) + 1
			if i == len(ps)-1 || size >= budget || length >= maxBatchBytes/2 || len(batch) >= maxPerBatch {
				flush(g)
			}
		}
	}
	return out
}

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

// dialectsOf lists the dialects of groups.
func dialectsOf(groups []*group) []string {
	seen := map[string]bool{}
	for _, g := range groups {
		for f := range g.families {
			seen[dialect.Owner(f)] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

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
