package fleet

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// pairs are canonical counters that divide one another in some figure
// (hit ratio, acceptance, prefill share, cached share): the totals add
// either only over the instances that publish both, so that a ratio of
// the sums divides like with like.
var pairs = [][2]string{
	{snapshot.PrefixCacheHits, snapshot.PrefixCacheQueries},
	{snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDraftTokensTotal},
	{snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal},
	{snapshot.PromptTokensTotal, snapshot.CachedTokensTotal},
}

// extensive are the gauges that add across servers (a count of requests,
// tokens or bytes held); every other gauge (a fraction, a speed, a start
// time) does not.
var extensive = map[string]bool{
	snapshot.RequestsProcessing: true, snapshot.RequestsDeferred: true,
	snapshot.KVCacheTokens: true, snapshot.KVCacheMaxTokens: true,
	snapshot.KVOffloadBytes: true, snapshot.KVOffloadMaxBytes: true,
	snapshot.KVOffloadTokens: true, snapshot.KVOffloadMaxTokens: true,
	snapshot.RecurrentCacheBytes: true, snapshot.RecurrentCacheMaxBytes: true,
	snapshot.RecurrentCheckpoints: true,
}

// paired returns the counter name's partner, if it has one.
func paired(name string) (string, bool) {
	for _, p := range pairs {
		switch name {
		case p[0]:
			return p[1], true
		case p[1]:
			return p[0], true
		}
	}
	return "", false
}

// totals is the fleet read as one server. Its window's figures are the
// rows' own arithmetic over the union of their data (rates.Totals): each
// rate the sum of the rows' rates as shown, each ratio the sums of its
// counters' increases divided, each percentile the estimate of the summed
// bucket increases, every figure over the instances that can give it
// (Figures.Totals says how many). Its report reads a snapshot that adds
// counters, extensive gauges and histograms over the instances (the KV
// cache's use is the used tokens over the capacity, both summed; ratios
// divide sums, never average ratios), with its notes on what happened
// judged on the sum of the instances' increases.
func totals(f *Fleet, o Options) *Instance {
	var snaps []*snapshot.Snapshot
	var live []bool
	var deltas []rates.Delta
	var parts []rates.Part
	for _, in := range f.Instances {
		if in.snap == nil {
			continue
		}
		snaps = append(snaps, in.snap)
		live = append(live, in.State != Gone && in.State != Down)
		deltas = append(deltas, in.delta.Delta)
		parts = append(parts, rates.Part{Delta: in.delta.Delta, Rows: in.Figures.Rows})
	}
	t := &Instance{ID: "totals", State: Up}
	s := mergeSnapshots(snaps, live)
	s.ScrapedAt = o.To.UTC()
	s.TimeSource = "scrape"
	s.Source = "totals of " + units.Plural(float64(len(snaps)), "instance")
	t.snap = s
	d := mergeDeltas(deltas)
	d.Seconds = o.To.Sub(o.From).Seconds()
	t.delta = windowDelta{Delta: d}
	t.Figures = figuresOf(s, nil, rates.Delta{}, false)
	t.Figures.Rows, t.Figures.Totals = rates.Totals(parts)
	t.Figures.Rates = make([]rates.Figure, len(t.Figures.Totals))
	for i, tot := range t.Figures.Totals {
		t.Figures.Rates[i] = tot.Figure
	}
	t.Figures.Seconds = d.Seconds
	t.Figures.GPU, t.Figures.GPUCoverage = gpuTotals(f.Instances)
	if o.Range {
		t.Figures.KV, t.Figures.Waiting = nil, nil
	}
	rep := analysis.Analyze(s, analysis.Options{Now: s.ScrapedAt, Hist: o.Hist, WithRates: true})
	rep = rates.Judge(rep, s, &d, windowWords(o))
	sec, figs := rateSection(t.Figures, t.delta, o, nil)
	rep.Sections = append([]report.Section{sec}, rep.Sections...)
	rep.Rates = figs
	rep.Header = append([]string{fmt.Sprintf("totals of %s: each rate the sum of the rows', each ratio and percentile over the rows' summed counters and buckets; the lifetime sections add counters, histograms and extensive gauges", units.Plural(float64(len(snaps)), "instance"))}, rep.Header...)
	t.Report = rep
	if ts := totalTrends(f.Instances); len(ts) > 0 {
		t.Trends, t.Report.Trends = ts, ts
	}
	return t
}

// mergeSnapshots adds snapshots as the totals read them: counters and
// histograms of every instance, extensive gauges of those there at the
// window's end (live; nil: all).
func mergeSnapshots(snaps []*snapshot.Snapshot, live []bool) *snapshot.Snapshot {
	out := &snapshot.Snapshot{Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{}}
	hists := map[string][]histogram.Histogram{}
	var alive []*snapshot.Snapshot
	for i, s := range snaps {
		here := live == nil || live[i]
		if here {
			alive = append(alive, s)
		}
		addScalars(out, s, here)
		for name, v := range s.Extra {
			if n, ok := snapshot.Declared(name); ok && n.Kind == snapshot.Counter && finite(v) {
				out.Extra[name] += v
			}
		}
		for name, h := range s.Histograms {
			if h != nil {
				hists[name] = append(hists[name], *h)
			}
		}
	}
	for name, hs := range hists {
		m := rates.AddHists(hs)
		out.Histograms[name] = &m
	}
	kvUse(out, alive)
	describe(out, snaps)
	return out
}

// addScalars adds one snapshot's counters (a pair only where both halves
// are there) and, where gauges is set, its extensive gauges; the largest
// prompt and generation are the largest any instance saw.
func addScalars(out, s *snapshot.Snapshot, gauges bool) {
	for name, v := range s.Scalars {
		n, ok := snapshot.Declared(name)
		if !ok || !finite(v) {
			continue
		}
		if partner, ok := paired(name); ok {
			if _, has := s.Scalar(partner); !has {
				continue
			}
		}
		switch {
		case name == snapshot.NTokensMax || name == snapshot.TokensPredictedMax:
			out.Scalars[name] = math.Max(out.Scalars[name], v)
		case n.Kind == snapshot.Counter, gauges && extensive[name]:
			out.Scalars[name] += v
		}
	}
}

// describe sets what the totals are of: the dialect (its advice where the
// fleet is one dialect), the models, whether prefix caching is on.
func describe(out *snapshot.Snapshot, snaps []*snapshot.Snapshot) {
	dialects := map[string]bool{}
	models := map[string]bool{}
	caching := map[string]bool{}
	for _, s := range snaps {
		dialects[s.Dialect] = true
		caching[s.PrefixCaching] = true
		for _, m := range s.Models {
			models[m] = true
		}
	}
	if len(dialects) == 1 {
		out.Dialect = snaps[0].Dialect
		out.Advice = snaps[0].Advice
	} else {
		out.Dialect = strings.Join(slices.Sorted(maps.Keys(dialects)), "+")
	}
	if len(caching) == 1 && len(snaps) > 0 {
		out.PrefixCaching = snaps[0].PrefixCaching
	}
	out.Models = slices.Sorted(maps.Keys(models))
}

// kvUse sets the totals' KV use: the tokens in use over the capacity,
// both summed over every instance; where an instance publishes only its
// fraction, its tokens in use are the fraction of its capacity. Without
// every instance's capacity there is no total.
func kvUse(out *snapshot.Snapshot, snaps []*snapshot.Snapshot) {
	used, capacity := 0.0, 0.0
	for _, s := range snaps {
		c, ok := s.Scalar(snapshot.KVCacheMaxTokens)
		if !ok || c <= 0 {
			delete(out.Scalars, snapshot.KVCacheTokens)
			return
		}
		u, ok := s.Scalar(snapshot.KVCacheTokens)
		if !ok {
			f, fok := s.Scalar(snapshot.KVCacheUsageRatio)
			if !fok {
				delete(out.Scalars, snapshot.KVCacheTokens)
				return
			}
			u = f * c
		}
		used += u
		capacity += c
	}
	if capacity > 0 {
		out.Scalars[snapshot.KVCacheUsageRatio] = used / capacity
		out.Scalars[snapshot.KVCacheTokens] = used
	}
}

// mergeDeltas adds instances' increases: counters over the instances that
// have them (a pair only where both halves are), histograms over every
// instance that has one.
func mergeDeltas(ds []rates.Delta) rates.Delta {
	out := rates.Delta{Counters: map[string]float64{}}
	hists := map[string][]histogram.Histogram{}
	for _, d := range ds {
		out.Reset = out.Reset || d.Reset
		for name, v := range d.Counters {
			if partner, ok := paired(name); ok {
				if _, has := d.Counters[partner]; !has {
					continue
				}
			}
			out.Counters[name] += v
		}
		for name, h := range d.Hists {
			hists[name] = append(hists[name], h)
		}
	}
	if len(hists) > 0 {
		out.Hists = map[string]histogram.Histogram{}
		for name, hs := range hists {
			out.Hists[name] = rates.AddHists(hs)
		}
	}
	return out
}
