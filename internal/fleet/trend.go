package fleet

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Trends: with a past range, or in a watch, each instance and the totals
// get their requests per second and KV cache use over the window, step by
// step: from query_range of each shape's library's readings (the same
// expressions the pushdown sums at the window's two ends), so the queries
// grow with the shapes, not the instances. A step's rate is the
// difference of two readings over the step, as every rate of the fleet is
// (a reading that fell, a restart, is a gap: never a zero, never a rate
// across it); KV use is the reading at the step's end.

// Trend ids, as the watch view's JSON names its trends (Report.Trends).
const (
	TrendRequests = "requests"
	TrendKV       = "kv_cache"
)

// TrendCells is how many steps a trend holds at most: the window is cut
// into as many steps of at least one scrape interval.
const TrendCells = 16

// trendQuantities are the readings each trend is made of.
var trendQuantities = map[string]string{TrendRequests: snapshot.RequestsTotal, TrendKV: snapshot.KVCacheUsageRatio}

// readTrends reads every instance's trends, shape by shape, by id.
func readTrends(ctx context.Context, q *querier, shapes []*shape) (map[string]map[string]*report.Trend, error) {
	out := map[string]map[string]*report.Trend{}
	step, err := trendStep(ctx, q, shapes)
	if err != nil || step == 0 {
		return out, err // no shape has a family to trend
	}
	// Shapes whose libraries read a trend alike (two versions of a
	// server) are asked once, for all their instances.
	var withLib []*shape
	byKey := map[string]*shape{}
	for _, sh := range shapes {
		if sh.lib == nil {
			continue
		}
		k := newestFamily(sh)
		for _, id := range []string{TrendRequests, TrendKV} {
			e, _ := sh.lib.Reading(trendQuantities[id])
			k += "\x00" + e
		}
		if alike := byKey[k]; alike != nil {
			alike.groups = append(alike.groups, sh.groups...)
			continue
		}
		byKey[k] = &shape{groups: slices.Clone(sh.groups), lib: sh.lib}
		withLib = append(withLib, byKey[k])
	}
	var mu sync.Mutex
	err = inParallel(ctx, len(withLib), 0, func(ctx context.Context, i int) error {
		made, err := shapeTrends(ctx, q, withLib[i], step)
		mu.Lock()
		defer mu.Unlock()
		for id, ts := range made {
			if out[id] == nil {
				out[id] = map[string]*report.Trend{}
			}
			maps.Copy(out[id], ts)
		}
		return err
	})
	return out, err
}

// shapeTrends reads a shape's trends: each trend quantity's reading step
// by step, and when the instance's newest sample was at each step (of
// newestFamily's family, which comes with every scrape): a step with no sample
// newer than the step before (a target gone, its last values still seen
// within the store's lookback) is a gap, not a zero.
func shapeTrends(ctx context.Context, q *querier, sh *shape, step time.Duration) (map[string]map[string]*report.Trend, error) {
	o := q.o
	answers := map[string]model.Matrix{}
	var times model.Matrix
	var mu sync.Mutex
	var asks []func(context.Context) error
	newest := newestFamily(sh)
	for _, id := range []string{TrendRequests, TrendKV} {
		qn := trendQuantities[id]
		e, ok := sh.lib.Reading(qn)
		if !ok {
			continue
		}
		asks = append(asks, func(ctx context.Context) error {
			m, err := q.rangeQuery(ctx, "trend: "+qn+" per instance, step by step over the window", e, o.From, o.To, step)
			mu.Lock()
			defer mu.Unlock()
			answers[id] = m
			return err
		})
	}
	if newest != "" {
		sel := q.familySel(newest).With(nameIs(newest))
		asks = append(asks, func(ctx context.Context) (err error) {
			m, err := q.rangeQuery(ctx, "trend: the newest sample of "+newest+" per instance, step by step",
				"max"+q.by()+" (timestamp("+sel.braces()+"))", o.From, o.To, step)
			mu.Lock()
			defer mu.Unlock()
			times = m
			return err
		})
	}
	if err := alongside(ctx, asks...); err != nil {
		return nil, err
	}
	// Each answer indexed once by instance: looking each instance up in
	// the whole answer made 2,000 pods 12 million key computations.
	when := streamsByKey(times, o.By)
	made := map[string]map[string]*report.Trend{}
	for id, m := range answers {
		idx := streamsByKey(m, o.By)
		for _, g := range sh.groups {
			k := keyOf(g, o.By)
			if t := series(idx[k], when[k], id, o.From, o.To, step); t != nil {
				if made[g.id] == nil {
					made[g.id] = map[string]*report.Trend{}
				}
				made[g.id][id] = t
			}
		}
	}
	return made, nil
}

// newestFamily is the family whose newest sample dates a shape's trend
// readings: its KV use's, else its request counter's; "" where it has
// neither. Both come with every scrape of the instance; KV use has one
// series an engine, vLLM's request counter one for each finish reason,
// and timestamp() over a range costs a store per series (2,000 vLLM
// pods: 0.38 s of Prometheus' CPU by the request counter, 0.08 s by KV
// use).
func newestFamily(sh *shape) string {
	for _, id := range []string{TrendKV, TrendRequests} {
		if names := sh.lib.SeriesOf(trendQuantities[id]); len(names) > 0 {
			return names[0]
		}
	}
	return ""
}

// trendStep is the trends' step: the window in TrendCells steps, none
// shorter than the fleet's scrape interval (a step without a new sample
// would be a gap), in whole seconds. The interval is the window over the
// most samples one series of the trends' families has in it (not up's: a
// store fed otherwise, by a backfill or remote write, has none).
func trendStep(ctx context.Context, q *querier, shapes []*shape) (time.Duration, error) {
	w := q.o.To.Sub(q.o.From)
	var names []string
	for _, sh := range shapes {
		if sh.lib != nil {
			if n := newestFamily(sh); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	slices.Sort(names)
	// Each family as its readings select it: vLLM's without the router's
	// copies, which may be scraped at another interval.
	counts := make([]string, len(names))
	for i, n := range names {
		counts[i] = "count_over_time(" + q.familySel(n).With(nameIs(n)).braces() + "[" + promDuration(w) + "])"
	}
	vec, err := q.instant(ctx, "trend: the scrape interval (the most samples of a series in the window)",
		"max("+strings.Join(counts, " or ")+")", q.o.To)
	if err != nil {
		return 0, err
	}
	step := w / TrendCells
	if len(vec) == 1 && vec[0].Value > 1 {
		step = max(step, time.Duration(float64(w)/float64(vec[0].Value-1)))
	}
	return max(step.Round(time.Second), time.Second), nil
}

// streamsByKey indexes a range query's answer by each series' grouping key.
func streamsByKey(m model.Matrix, by []string) map[string]*model.SampleStream {
	out := make(map[string]*model.SampleStream, len(m))
	for _, ss := range m {
		out[groupKey(ss.Metric, by)] = ss
	}
	return out
}

// series is one instance's trend from its series in a range query's
// answer (readings) and the time of its newest sample at each step
// (times, nil where not asked), evaluated from from every step up to to:
// the steps after from, a rate's each the difference of the readings at
// its ends over the time between them, a gauge's the reading at its end.
// Nil where the answer has no series of the instance.
func series(readingsOf, timesOf *model.SampleStream, id string, from, to time.Time, step time.Duration) *report.Trend {
	if readingsOf == nil {
		return nil
	}
	readings, newest := steps(readingsOf, from, step), steps(timesOf, from, step)
	dated := timesOf != nil
	t := &report.Trend{StepSeconds: report.Number(step.Seconds()), Say: units.Count}
	if id == TrendKV {
		t.Say = units.Percent
	}
	for k := 1; !from.Add(time.Duration(k) * step).After(to); k++ {
		v, ok := readings[k]
		prev, okPrev := readings[k-1]
		switch {
		case !ok || math.IsNaN(v):
			v = math.NaN()
		case id == TrendRequests && (!okPrev || math.IsNaN(prev) || v < prev):
			v = math.NaN() // no reading before it, or a restart: no rate
		case dated && !(newest[k] > newest[k-1]):
			v = math.NaN() // no sample inside the step: the target gone
		case id == TrendRequests && dated:
			// Over the time between the two readings, as every rate
			// of the fleet: a step is not the time its samples span.
			v = (v - prev) / (newest[k] - newest[k-1])
		case id == TrendRequests:
			v = (v - prev) / step.Seconds()
		}
		t.Values = append(t.Values, report.Number(v))
	}
	return t
}

// steps are one series' values by step (0 at from); nil for no series.
func steps(ss *model.SampleStream, from time.Time, step time.Duration) map[int]float64 {
	if ss == nil {
		return nil
	}
	out := make(map[int]float64, len(ss.Values))
	for _, p := range ss.Values {
		out[int(math.Round(float64(p.Timestamp.Time().Sub(from))/float64(step)))] = float64(p.Value)
	}
	return out
}

// totalTrends are the totals' trends, the rows' arithmetic step by step:
// requests the sum of the rows' rates (a step none of them has a value for
// is a gap), KV use the tokens in use over the capacity, both summed (each
// instance's use times its capacity, as the totals' KV column), only
// where every instance with a KV trend publishes its capacity.
func totalTrends(ins []*Instance) map[string]*report.Trend {
	out := map[string]*report.Trend{}
	for _, id := range []string{TrendRequests, TrendKV} {
		var sum, weight []float64
		var step report.Number
		for _, in := range ins {
			t := in.Trends[id]
			if t == nil {
				continue
			}
			w := 1.0
			if id == TrendKV {
				c, ok := in.snap.Scalar(snapshot.KVCacheMaxTokens)
				if !ok || c <= 0 {
					sum = nil
					break
				}
				w = c
			}
			if sum == nil {
				sum, weight, step = make([]float64, len(t.Values)), make([]float64, len(t.Values)), t.StepSeconds
			}
			for k, v := range t.Values {
				if k < len(sum) && !math.IsNaN(float64(v)) {
					sum[k] += float64(v) * w
					weight[k] += w
				}
			}
		}
		if sum == nil {
			continue
		}
		t := &report.Trend{StepSeconds: step, Say: units.Count}
		for k := range sum {
			v := math.NaN()
			switch {
			case weight[k] == 0:
			case id == TrendKV:
				v = sum[k] / weight[k]
				t.Say = units.Percent
			default:
				v = sum[k]
			}
			t.Values = append(t.Values, report.Number(v))
		}
		out[id] = t
	}
	return out
}
