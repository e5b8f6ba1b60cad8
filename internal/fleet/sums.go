package fleet

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The store-computed read (the pushdown): every quantity the table's
// columns and their notes read (each counter and gauge a server's library
// reads, and the TTFT histogram's buckets) is one expression of its
// shape's library, aggregated by the grouping labels and evaluated at the
// window's two ends: the store answers instances × quantities, not every
// series. readSums asks each library's expressions once; readingsOf then
// makes each instance two canonical snapshots from its sums, the readings
// the whole read makes too (readings.go), so that the same code makes its
// figures, its window's increases and its notes: a counter's increase is
// the difference of its two readings, never increase(), so Prometheus
// and VictoriaMetrics agree with the whole read to the float. Where an
// instance's sums cannot stand for it, readingsOf says why, and it is
// read whole (paths.go).

// tableHists are the histograms the table reads: its TTFT percentiles.
var tableHists = []string{snapshot.TimeToFirstTokenSeconds}

// tableNeeds are the counters and gauges the table's columns and the
// notes of its notes column read, and what decides which of the report's
// sections apply (analysis.SectionsOf): the pushdown reads these alone.
// TestPushdownQuantitiesMakeTheTable holds the list to the table on every
// fixture of every server.
var tableNeeds = []string{
	// The columns: requests, computed prompt and generated tokens, the
	// prefix hit ratio, the prefill share; KV use and the queue.
	snapshot.RequestsTotal, snapshot.PromptTokensTotal, snapshot.TokensPredictedTotal,
	snapshot.PrefixCacheHits, snapshot.PrefixCacheQueries, snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal,
	snapshot.KVCacheUsageRatio, snapshot.KVCacheTokens, snapshot.KVCacheMaxTokens, snapshot.RequestsDeferred, snapshot.RequestsProcessing,
	// The notes on what happened (analysis.WindowedNotes) and on the
	// state: preemptions, errors, offload and recurrent state, drafts.
	snapshot.ExtraPreemptions, snapshot.ExtraFinishedReason + "error",
	snapshot.ExtraRetractedPromptTokens, snapshot.ExtraRetractedGeneratedTokens,
	snapshot.KVOffloadColdAllocsTotal, snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal, snapshot.KVOffloadEvictionsTotal,
	snapshot.KVOffloadTokens, snapshot.KVOffloadMaxTokens, snapshot.KVOffloadBytes, snapshot.KVOffloadMaxBytes,
	snapshot.RecurrentCacheLiveKVEvictionsTotal, snapshot.RecurrentCappedTokensTotal, snapshot.RecurrentCacheEvictionsTotal,
	snapshot.RecurrentCacheBytes, snapshot.RecurrentCacheMaxBytes,
	snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDraftTokensTotal, snapshot.SpecDecodeRequestsTotal,
	// vLLM's refusals at admission (a note on what happened), and what the
	// queue and state notes say: a queue deferred, an engine asleep.
	snapshot.ExtraAdmissionRejections, snapshot.ExtraWaitingDeferred,
	snapshot.ExtraSleepState + "awake", snapshot.ExtraSleepState + "weights_offloaded", snapshot.ExtraSleepState + "discard_all",
}

// The tags a quantity's expression carries through a batch: its value,
// or a histogram's bucket, sum or count.
const (
	tagValue  = "v:"
	tagBucket = "b:"
	tagSum    = "s:"
	tagCount  = "c:"
)

// quantities are a shape's expressions at the window's end, at its start
// (counters and histograms: what increases) and, over a past range, the
// gauges whose largest value the table shows. Counters read from one
// family share one read of it (promql.Library.Splits).
func quantities(qr *querier, sh *shape, bounds map[string][]string) (end, start, peak []tagged) {
	var counters []string
	for _, q := range sh.lib.Quantities() {
		n, ok := snapshot.Declared(q)
		if !ok || !slices.Contains(tableNeeds, q) && !slices.Contains(tableHists, q) {
			continue
		}
		switch n.Kind {
		case snapshot.Histogram:
			if !slices.Contains(tableHists, q) {
				continue
			}
			h, _ := sh.lib.Histogram(q)
			hs := []tagged{{tag: tagBucket + q, expr: h.Buckets, slow: true}, {tag: tagSum + q, expr: h.Sum}, {tag: tagCount + q, expr: h.Count}}
			if les := bounds[q]; len(les) > 0 {
				hs = hs[1:]
				for _, le := range les {
					e, _ := sh.lib.Bucket(q, le)
					hs = append(hs, tagged{tag: tagBucket + q, expr: e})
				}
				// Any bound the list missed.
				e, _ := sh.lib.BucketsBut(q, les)
				hs = append(hs, tagged{tag: tagBucket + q, expr: e})
			}
			end, start = append(end, hs...), append(start, hs...)
		case snapshot.Counter:
			counters = append(counters, q)
		default:
			e, _ := sh.lib.Reading(q)
			end = append(end, tagged{tag: tagValue + q, expr: e})
			if qr.o.Range && (q == snapshot.KVCacheUsageRatio || q == snapshot.RequestsDeferred) {
				l, _ := sh.lib.Largest(q)
				peak = append(peak, tagged{tag: tagValue + q, expr: l})
			}
		}
	}
	splits, rest := sh.lib.Splits(counters)
	for i := range splits {
		t := tagged{expr: splits[i].Expr, split: &splits[i]}
		end, start = append(end, t), append(start, t)
	}
	for _, q := range rest {
		e, _ := sh.lib.Reading(q)
		end, start = append(end, tagged{tag: tagValue + q, expr: e}), append(start, tagged{tag: tagValue + q, expr: e})
	}
	return end, start, peak
}

// values are what the store answered for one instance at one time.
type values struct {
	scalars map[string]float64
	hists   map[string]*histogram.Histogram
	// splits are the values by label value of each split read, until
	// fromSplits takes the quantities from them.
	splits map[*promql.Split]map[string]float64
	// invalid names a quantity whose sum cannot be: NaN or infinite (a
	// series of it is), a counter's or a bucket's below zero; the first
	// such in the expressions' order (invalidAt).
	invalid   string
	invalidAt int
}

// sumsOf are the store's sums of one library, by the grouping key of the
// instance they are of (groupKey).
type sumsOf struct {
	atEnd, atStart, peaks map[string]*values
	fraction              map[string]bool
}

// readSums asks the store for the sums of each shape's library, once for
// shapes whose libraries write the same expressions (a library's
// expressions name no instance: two versions of a server may read alike),
// all at once.
func readSums(ctx context.Context, q *querier, shapes []*shape) error {
	var firsts []*shape
	byKey := map[string]*shape{}
	keyOf := map[*shape]string{}
	for _, sh := range shapes {
		if sh.lib == nil {
			continue
		}
		k := sumsKey(q, sh)
		keyOf[sh] = k
		if byKey[k] == nil {
			byKey[k] = sh
			firsts = append(firsts, sh)
		}
	}
	err := inParallel(ctx, len(firsts), 0, func(ctx context.Context, i int) (err error) {
		firsts[i].sums, err = fetchSums(ctx, q, firsts[i])
		return err
	})
	if err != nil {
		return err
	}
	for sh, k := range keyOf {
		sh.sums = byKey[k].sums
	}
	return nil
}

// sumsKey is what a shape's sums ask: its library's expressions at the
// window's two ends, its peaks and its fractions (the bounds a store is
// asked for follow from its buckets' selector).
func sumsKey(q *querier, sh *shape) string {
	end, start, peak := quantities(q, sh, nil)
	var b strings.Builder
	for _, ts := range [][]tagged{end, start, peak} {
		for _, t := range ts {
			b.WriteString(t.tag + "\x00" + t.expr + "\x00")
		}
		b.WriteString("\x01")
	}
	b.WriteString(strings.Join(sh.lib.Fractions(), "\x00"))
	for _, h := range tableHists {
		sel, _ := sh.lib.BucketSeries(h)
		b.WriteString("\x01" + sel)
	}
	return b.String()
}

// fetchSums sends a shape's library's expressions: each quantity at the
// window's two ends, the peaks of a past range, the fractions outside
// 0..1. The store answers for every instance that has the series.
func fetchSums(ctx context.Context, q *querier, sh *shape) (*sumsOf, error) {
	bounds, err := bounds(ctx, q, sh)
	if err != nil {
		return nil, err
	}
	end, start, peak := quantities(q, sh, bounds)
	out := &sumsOf{}
	err = alongside(ctx,
		func(ctx context.Context) (err error) { out.fraction, err = outOfRange(ctx, q, sh); return },
		func(ctx context.Context) (err error) {
			out.atEnd, err = sums(ctx, q, "pushdown: each quantity of the table, per instance, at the window's end", end, q.o.To)
			return
		},
		func(ctx context.Context) (err error) {
			out.atStart, err = sums(ctx, q, "pushdown: each counter and the TTFT buckets, per instance, at the window's start", start, q.o.From)
			return
		},
		func(ctx context.Context) (err error) {
			if len(peak) > 0 {
				out.peaks, err = sums(ctx, q, "pushdown, a past range: KV use and the queue at their largest, per instance", peak, q.o.To)
			}
			return
		})
	return out, err
}

// maxBounds is the most bounds a histogram's buckets are read by one at a
// time: a store that lists more (many bucket layouts in one fleet) is
// asked for them in one query, so that the queries stay few.
const maxBounds = 64

// bounds lists, on a store that reads a histogram's buckets faster bound
// by bound than summed into one group each (VictoriaMetrics:
// promql.Library.Bucket), the bounds (le values) of each histogram the
// table reads, as the store lists them over the window and its lookback
// (VictoriaMetrics lists whole days': a bound no series has at either end
// is an empty answer; a bound the list misses is read with the rest,
// promql.Library.BucketsBut). nil elsewhere; a histogram without bounds
// listed, with more than maxBounds, or whose bounds the store would not
// list, is read in one query.
func bounds(ctx context.Context, q *querier, sh *shape) (map[string][]string, error) {
	if q.backend().Kind != promapi.VictoriaMetrics {
		return nil, nil
	}
	out := map[string][]string{}
	start, end := q.listed()
	for _, h := range tableHists {
		sel, ok := sh.lib.BucketSeries(h)
		if !ok {
			continue
		}
		les, err := q.labelValues(ctx, "pushdown: the bounds of a histogram the table reads, asked one at a time", "le", []string{sel}, start, end)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A store that will not list them (a limit on the series a
		// listing may touch) is asked the one query instead.
		if err == nil && len(les) <= maxBounds {
			out[h] = les
		}
	}
	return out, nil
}

// pushedReadings makes the readings of every instance of the window
// whose shape's library the store summed (readingsOf), on every core,
// each from its own sums alone: readings by id, or why its sums cannot
// stand for it.
func pushedReadings(ctx context.Context, q *querier, d *discovery, w *window) (map[string]*read, map[string]string, error) {
	var groups []*group
	for _, g := range w.groups {
		if sh := d.shapeOf[g.id]; sh != nil && sh.sums != nil {
			groups = append(groups, g)
		}
	}
	rds := make([]*read, len(groups))
	whys := make([]string, len(groups))
	infos := &infoReadings{byKey: map[string]*snapshot.Snapshot{}}
	err := inParallel(ctx, len(groups), onCores, func(_ context.Context, i int) error {
		rds[i], whys[i] = readingsOf(q, d.shapeOf[groups[i].id], groups[i], w, infos)
		return nil
	})
	reads, unread := map[string]*read{}, map[string]string{}
	for i, g := range groups {
		switch {
		case whys[i] != "":
			unread[g.id] = whys[i]
		case rds[i] != nil:
			reads[g.id] = rds[i]
		}
	}
	return reads, unread, err
}

// readingsOf is one instance's two readings from its shape's sums, or why
// they cannot stand for it.
func readingsOf(q *querier, sh *shape, g *group, w *window, infos *infoReadings) (*read, string) {
	by := q.o.By
	k := keyOf(g, by)
	atEnd, atStart := sh.sums.atEnd[k], sh.sums.atStart[k]
	if atEnd == nil && g.partial {
		// The census cannot tell its shape.
		return nil, "no sum of its shape's quantities at the window's end"
	}
	if g.partial && !sameQuantities(atEnd, sh.sums.atEnd[keyOf(sh.first, by)]) {
		// A family of the first's it lacks, which the census cannot see.
		return nil, "its sums hold other quantities than its shape's first instance's"
	}
	if why := invalidIn(sh.sums.fraction[k], atEnd, atStart); why != "" {
		return nil, "values that cannot be (" + why + ")"
	}
	info := infos.of(g)
	// Without a sample at the start (its series first published inside
	// the window, its target up before it: window.born), its counters
	// count from zero there.
	startAt := q.o.From
	if t := w.start[g.id]; t != 0 {
		startAt = t.Time()
	}
	e, s := sh.snapshot(g, atEnd, w.end[g.id].Time(), info), sh.snapshot(g, atStart, startAt, info)
	if why := unsound(s, e); why != "" {
		return nil, why
	}
	normalize(s, e)
	rd := &read{end: &reading{at: e.ScrapedAt, snap: e},
		w: readings{bs: []boundary{{at: s.ScrapedAt, snap: s}, {at: e.ScrapedAt, snap: e}}}}
	if p := sh.sums.peaks[k]; p != nil {
		rd.peak = sh.snapshot(g, p, e.ScrapedAt, info)
	}
	return rd, ""
}

// sameQuantities says whether an instance's sums (a) hold the same
// quantities as its first instance's (b). One with none at the window's
// end (gone, or publishing at its end nothing the library reads) is not
// told apart here: gone, it is read whole; else readingsOf says why it
// cannot be read.
func sameQuantities(a, b *values) bool {
	switch {
	case a == nil:
		return true
	case b == nil:
		return false
	}
	return len(a.scalars) == len(b.scalars) && len(a.hists) == len(b.hists) &&
		!slices.ContainsFunc(slices.Collect(maps.Keys(a.scalars)), func(k string) bool { _, ok := b.scalars[k]; return !ok }) &&
		!slices.ContainsFunc(slices.Collect(maps.Keys(a.hists)), func(k string) bool { _, ok := b.hists[k]; return !ok })
}

// invalidIn says why an instance's sums hold a value that cannot be, ""
// where none does.
func invalidIn(fraction bool, vs ...*values) string {
	if fraction {
		return "a fraction outside 0..1"
	}
	for _, v := range vs {
		if v != nil && v.invalid != "" {
			return v.invalid
		}
	}
	return ""
}

// outOfRange finds the instances (their grouping keys) with a fraction
// outside 0..1 at the window's end (promql.Library.Fractions), which the
// dialect would leave out and name: they are read whole.
func outOfRange(ctx context.Context, q *querier, sh *shape) (map[string]bool, error) {
	fs := sh.lib.Fractions()
	if len(fs) == 0 {
		return nil, nil
	}
	exprs := make([]tagged, len(fs))
	for i, f := range fs {
		exprs[i] = tagged{tag: tagValue + "fraction", expr: "group" + q.by() + " (" + f + " < 0 or " + f + " > 1.000001)"}
	}
	out := map[string]bool{}
	err := q.tagged(ctx, "pushdown: instances with a fraction outside 0..1 (read whole)", exprs, q.o.To, func(_ int, s *model.Sample) {
		out[groupKey(s.Metric, q.o.By)] = true
	})
	return out, err
}

// sums runs tagged expressions at one time and sorts what the store
// answered by instance (its grouping key), quantity and bucket.
func sums(ctx context.Context, q *querier, purpose string, exprs []tagged, at time.Time) (map[string]*values, error) {
	out := map[string]*values{}
	buckets := map[string]map[string][]histogram.Bucket{}
	err := q.tagged(ctx, purpose, exprs, at, func(i int, s *model.Sample) {
		k := groupKey(s.Metric, q.o.By)
		v := out[k]
		if v == nil {
			v = &values{scalars: map[string]float64{}, hists: map[string]*histogram.Histogram{}, invalidAt: len(exprs)}
			out[k] = v
		}
		e := exprs[i]
		tag, x := e.tag, float64(s.Value)
		if e.split != nil {
			if v.splits == nil {
				v.splits = map[*promql.Split]map[string]float64{}
			}
			if v.splits[e.split] == nil {
				v.splits[e.split] = map[string]float64{}
			}
			v.splits[e.split][string(s.Metric[model.LabelName(e.split.Label)])] = x
			return
		}
		// The first expression's reason, whichever answer came first.
		if why := cannotBe(tag, x); why != "" && i < v.invalidAt {
			v.invalid, v.invalidAt = why, i
		}
		switch {
		case strings.HasPrefix(tag, tagBucket):
			le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
			if err != nil || math.IsNaN(le) {
				return
			}
			if buckets[k] == nil {
				buckets[k] = map[string][]histogram.Bucket{}
			}
			name := tag[len(tagBucket):]
			buckets[k][name] = append(buckets[k][name], histogram.Bucket{UpperBound: le, Count: x})
		case strings.HasPrefix(tag, tagSum):
			v.hist(tag[len(tagSum):]).Sum = x
		case strings.HasPrefix(tag, tagCount):
			v.hist(tag[len(tagCount):]).Count = x
		default:
			v.scalars[tag[len(tagValue):]] = x
		}
	})
	if err != nil {
		return nil, err
	}
	for _, v := range out {
		v.fromSplits()
	}
	for id, hs := range buckets {
		for name, bs := range hs {
			ladder(out[id].hist(name), bs)
		}
	}
	return out, nil
}

// ladder gives h its buckets, in order of bound, +Inf last (its count,
// where the sums had no +Inf bucket).
func ladder(h *histogram.Histogram, bs []histogram.Bucket) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
		bs = append(bs, histogram.Bucket{UpperBound: math.Inf(1), Count: h.Count})
	}
	h.Buckets = bs
}

// cannotBe says why a sum tagged tag cannot be what the dialect reads: a
// NaN or an infinity in it (a series that cannot be, which the dialect
// leaves out and names; or a gauge with no value yet, which it skips), a
// counter or a bucket below zero. "" where it can.
func cannotBe(tag string, x float64) string {
	name := tag[strings.IndexByte(tag, ':')+1:]
	counter := !strings.HasPrefix(tag, tagValue) && !strings.HasPrefix(tag, tagSum)
	if n, _ := snapshot.Declared(name); strings.HasPrefix(tag, tagValue) && n.Kind == snapshot.Counter {
		counter = true
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprintf("%s is %v", name, x)
	case counter && x < 0:
		return fmt.Sprintf("%s below zero", name)
	}
	return ""
}

// fromSplits takes each quantity read from a split from its values by
// label value, as its Reading would have: the sum of all (added in order
// of value), one value's, or 0 × the sum of all where that one is absent
// and its part says so ("or 0 *": NaN where the sum is).
func (v *values) fromSplits() {
	splits := slices.SortedFunc(maps.Keys(v.splits), func(a, b *promql.Split) int { return strings.Compare(a.Expr, b.Expr) })
	for _, sp := range splits {
		byValue := v.splits[sp]
		var all float64
		for _, lv := range slices.Sorted(maps.Keys(byValue)) {
			all += byValue[lv]
		}
		for _, q := range slices.Sorted(maps.Keys(sp.Parts)) {
			p := sp.Parts[q]
			x, ok := byValue[p.Value]
			switch {
			case p.All:
				x, ok = all, len(byValue) > 0
			case !ok && p.ZeroIfAbsent && len(byValue) > 0:
				x, ok = 0*all, true
			}
			if !ok {
				continue
			}
			if why := cannotBe(tagValue+q, x); why != "" && v.invalid == "" {
				v.invalid = why
			}
			v.scalars[q] = x
		}
	}
	v.splits = nil
}

// hist is the histogram name being filled.
func (v *values) hist(name string) *histogram.Histogram {
	h := v.hists[name]
	if h == nil {
		h = &histogram.Histogram{}
		v.hists[name] = h
	}
	return h
}

// snapshot is an instance's canonical snapshot from the store's sums for
// it at one time: each quantity where the dialect would put it, with what
// the library does not say from the shape's first instance.
func (sh *shape) snapshot(g *group, v *values, at time.Time, info *snapshot.Snapshot) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Source: g.match.braces(), Dialect: sh.rep.Dialect, ScrapedAt: at.UTC(), TimeSource: "scrape",
		Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{},
		Advice: sh.rep.Advice, PrefixCaching: sh.rep.PrefixCaching, Via: sh.rep.Via, Upstream: sh.rep.Upstream, Models: g.served()}
	if v == nil {
		return s
	}
	for name, x := range v.scalars {
		if n, _ := snapshot.Declared(name); n.Extra {
			s.Extra[name] = x
		} else {
			s.Scalars[name] = x
		}
	}
	for name, h := range v.hists {
		if len(h.Buckets) > 0 {
			s.Histograms[name] = h
		}
	}
	withInfo(s, info)
	return s
}

// infoOf is what the dialect reads from an instance's info series, which
// say it in their labels (no sum can): vLLM's KV capacity and whether
// prefix caching is on (cache_config_info), the server behind a proxy.
// Discovery kept them; the dialect reads them as from a scrape. Nil where
// the instance has none.
func infoOf(g *group) *snapshot.Snapshot {
	if len(g.infos) == 0 {
		return nil
	}
	pts := make([]point, len(g.infos))
	for i, m := range g.infos {
		pts[i] = point{metric: m, value: 1}
	}
	is, err := dialect.Map(rebuild(pts, noMeta).fams, dialect.Options{Dialect: g.dialect})
	if err != nil {
		return nil
	}
	return is
}

// infoReadings are the readings of instances' info series (infoOf), once
// for every instance whose info series say the same but for the labels
// of its scrape target (job, instance, pod, …: no dialect reads those):
// a fleet's pods publish alike (2,000 vLLM pods: 0.05 s of CPU a report).
type infoReadings struct {
	mu    sync.Mutex
	byKey map[string]*snapshot.Snapshot
}

// targetLabels are the labels a store or a scrape adds to every series of
// a target, which no dialect reads.
var targetLabels = map[model.LabelName]bool{model.JobLabel: true, model.InstanceLabel: true, "namespace": true, "pod": true,
	"cluster": true, "container": true, "service": true, "endpoint": true}

// of is g's info reading, read only.
func (ir *infoReadings) of(g *group) *snapshot.Snapshot {
	if len(g.infos) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(g.dialect)
	for _, m := range g.infos {
		b.WriteByte(1)
		for _, l := range slices.Sorted(maps.Keys(m)) {
			if !targetLabels[l] {
				b.WriteString(string(l) + "\x00" + string(m[l]) + "\x00")
			}
		}
	}
	k := b.String()
	ir.mu.Lock()
	is, ok := ir.byKey[k]
	ir.mu.Unlock()
	if !ok {
		is = infoOf(g)
		ir.mu.Lock()
		ir.byKey[k] = is
		ir.mu.Unlock()
	}
	return is
}

// withInfo adds info's reading to s where the sums said nothing of it.
func withInfo(s, info *snapshot.Snapshot) {
	if info == nil {
		return
	}
	for name, x := range info.Scalars {
		if _, ok := s.Scalars[name]; !ok {
			s.Scalars[name] = x
		}
	}
	for name, x := range info.Extra {
		if _, ok := s.Extra[name]; !ok {
			s.Extra[name] = x
		}
	}
	if info.PrefixCaching != "" {
		s.PrefixCaching = info.PrefixCaching
	}
	if info.Upstream != "" {
		s.Upstream = info.Upstream
	}
}

// normalize puts snapshots' histograms in the form the dialect gives
// them (histogram.Normalize), once unsound has looked at them as summed.
func normalize(ss ...*snapshot.Snapshot) {
	for _, s := range ss {
		for _, h := range s.Histograms {
			h.Normalize()
		}
	}
}

// unsound says why two readings of an instance cannot make its window
// where its sums show what the dialect would have left out or counted as
// a restart: a histogram whose buckets fall or hold more than its count
// (an invalid series the sum hides), a counter that fell.
func unsound(start, end *snapshot.Snapshot) string {
	for _, s := range []*snapshot.Snapshot{start, end} {
		for name, h := range s.Histograms {
			for i, b := range h.Buckets {
				if (i > 0 && b.Count < h.Buckets[i-1].Count) || (!math.IsInf(b.UpperBound, 1) && b.Count > h.Count) {
					return fmt.Sprintf("%s's buckets cannot be", name)
				}
			}
		}
	}
	if fell(start, end) {
		return "a counter fell inside the window"
	}
	return ""
}
