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
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The pushdown: the store computes the table. Every quantity the table's
// columns and their notes read (each counter and gauge a server's library
// reads, and the TTFT histogram's buckets) is one expression of the
// server's PromQL library (internal/promql, the one the rules and
// dashboards are written from), aggregated by the grouping labels and
// evaluated at the window's two ends: the store answers instances ×
// quantities, not every series. Each instance is then two canonical
// snapshots, as the rebuild's, and the same code makes its figures, its
// window's increases and its notes (figures.go, notes.go): a counter's
// increase is the difference of its two readings, never increase(), so
// Prometheus and VictoriaMetrics agree with the rebuild to the float.
//
// A library is written from one scrape's names, HELP and a few label
// values; instances that publish the same ones (a shape) share one,
// written from one of them read whole. A shape whose library cannot stand
// for all its instances (its names chosen by their values, native
// histograms, an instance the dialect cannot read) is read whole.

// shape is the instances one library reads: the same dialect, families,
// values of the labels that decide a library's reading, and HELP.
type shape struct {
	groups []*group
	lib    *promql.Library
	// rep is the first instance's reading by its dialect: what the
	// library says nothing of (the dialect's advice, prefix caching, the
	// proxy) is taken from it.
	rep *snapshot.Snapshot
	// why says why its instances are read whole instead.
	why string
}

// tableHists are the histograms the table reads: its TTFT percentiles.
var tableHists = []string{snapshot.TimeToFirstTokenSeconds}

// pushdown reads the instances planned for it, shape by shape.
func (r *run) pushdown(ctx context.Context) error {
	groups := r.on(Pushdown)
	if len(groups) == 0 {
		return nil
	}
	shapes := r.shapes(groups)
	if err := r.libraries(ctx, shapes); err != nil {
		return err
	}
	fns := make([]func(context.Context) error, 0, len(shapes))
	for _, sh := range shapes {
		if sh.lib == nil {
			for _, g := range sh.groups {
				r.paths[g.id] = path{read: Rebuild, why: sh.why}
			}
			continue
		}
		fns = append(fns, func(ctx context.Context) error { return r.readShape(ctx, sh) })
	}
	return parallel(ctx, fns...)
}

// shapes sorts groups into shapes, in the order of their first instance.
func (r *run) shapes(groups []*group) []*shape {
	byKey := map[string]*shape{}
	var out []*shape
	for _, g := range groups {
		k := g.dialect + "\x01" + strings.Join(slices.Sorted(maps.Keys(g.families)), "\x00") + "\x01" +
			strings.Join(slices.Sorted(maps.Keys(g.deciding)), "\x00") + "\x01" + strings.Join(r.meta.ownHelp(g), "\x00")
		sh := byKey[k]
		if sh == nil {
			sh = &shape{}
			byKey[k] = sh
			out = append(out, sh)
		}
		sh.groups = append(sh.groups, g)
	}
	return out
}

// libraries reads each shape's first instance whole and writes its
// library from it; a shape it cannot stand for is left without one, with
// why.
func (r *run) libraries(ctx context.Context, shapes []*shape) error {
	reps := make([]*group, len(shapes))
	for i, sh := range shapes {
		reps[i] = sh.groups[0]
	}
	b := &rebuilding{run: r, groups: reps}
	pts, err := b.state(ctx, r.o.To, true, reps)
	if err != nil {
		return err
	}
	for i, sh := range shapes {
		sh.lib, sh.rep, sh.why = r.library(reps[i], pts[reps[i].id])
	}
	return nil
}

// library writes the library of the shape g stands for, from g's series
// at the window's end; without one it says why.
func (r *run) library(g *group, pts []point) (*promql.Library, *snapshot.Snapshot, string) {
	fb, err := rebuild(pts, r.meta.forGroup(g), histBases(g.families)...)
	if err != nil {
		return nil, nil, "its series make no exposition"
	}
	if fb.native > 0 {
		return nil, nil, "native histograms"
	}
	s, err := dialect.Map(fb.fams, dialect.Options{})
	if err != nil {
		return nil, nil, "its series make nothing its dialect reads"
	}
	if !slices.Equal(s.Models, g.served()) {
		return nil, nil, "its models named by a label the store's sums do not read"
	}
	sel := make([]promql.Matcher, 0, len(r.o.Selector)+1)
	for _, m := range r.o.Selector {
		sel = append(sel, promql.Matcher{Label: m.Name, Op: promql.Op(m.Op), Value: m.Value})
	}
	if s.Dialect == "vllm" {
		// vLLM production-stack's router copies would count twice.
		sel = append(sel, promql.Matcher{Label: routerLabel, Op: promql.Equal, Value: ""})
	}
	lib, err := promql.New(fb.fams, s.Dialect, promql.Options{Selector: sel, By: r.disc.by,
		Window: promDuration(r.o.To.Sub(r.o.From)), AllSections: true})
	switch {
	case err != nil:
		return nil, nil, "its series make nothing the store can sum"
	case lib.ReadByValue():
		return nil, nil, "vLLM's prefix counters told blocks from tokens by their size"
	}
	return lib, s, ""
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
// gauges whose largest value the table shows.
func (r *run) quantities(sh *shape) (end, start, peak []tagged) {
	for _, q := range sh.lib.Quantities() {
		n, ok := snapshot.Declared(q)
		if !ok || strings.Contains(q, "*") {
			continue // a sum over every reason, which no snapshot holds
		}
		switch n.Kind {
		case snapshot.Histogram:
			if !slices.Contains(tableHists, q) {
				continue
			}
			h, _ := sh.lib.Histogram(q)
			hs := []tagged{{tagBucket + q, h.Buckets}, {tagSum + q, h.Sum}, {tagCount + q, h.Count}}
			end, start = append(end, hs...), append(start, hs...)
		case snapshot.Counter:
			e, _ := sh.lib.Reading(q)
			end, start = append(end, tagged{tagValue + q, e}), append(start, tagged{tagValue + q, e})
		default:
			e, _ := sh.lib.Reading(q)
			end = append(end, tagged{tagValue + q, e})
			if r.o.Range && (q == snapshot.KVCacheUsageRatio || q == snapshot.RequestsDeferred) {
				l, _ := sh.lib.Largest(q)
				peak = append(peak, tagged{tagValue + q, l})
			}
		}
	}
	return end, start, peak
}

// values are what the store answered for one instance at one time.
type values struct {
	scalars map[string]float64
	hists   map[string]*histogram.Histogram
}

// readShape reads a shape's instances: its quantities at the window's
// two ends (and the peaks of a past range), each instance two snapshots.
func (r *run) readShape(ctx context.Context, sh *shape) error {
	end, start, peak := r.quantities(sh)
	in := map[string]bool{}
	for _, g := range sh.groups {
		in[g.id] = true
	}
	var atEnd, atStart, peaks map[string]*values
	var invalid map[string]bool
	err := parallel(ctx,
		func(ctx context.Context) (err error) { invalid, err = r.outOfRange(ctx, sh, in); return },
		func(ctx context.Context) (err error) {
			atEnd, err = r.sums(ctx, "pushdown: each quantity of the table, per instance, at the window's end", end, r.o.To, in)
			return
		},
		func(ctx context.Context) (err error) {
			atStart, err = r.sums(ctx, "pushdown: each counter and the TTFT buckets, per instance, at the window's start", start, r.o.From, in)
			return
		},
		func(ctx context.Context) (err error) {
			if len(peak) > 0 {
				peaks, err = r.sums(ctx, "pushdown, a past range: KV use and the queue at their largest, per instance", peak, r.o.To, in)
			}
			return
		})
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range sh.groups {
		if invalid[g.id] {
			r.paths[g.id] = path{read: Rebuild, why: "values that cannot be"}
			continue
		}
		info := infoOf(g)
		e, s := sh.snapshot(g, atEnd[g.id], r.tsEnd[g.id].Time(), info), sh.snapshot(g, atStart[g.id], r.tsStart[g.id].Time(), info)
		if why := unsound(s, e); why != "" {
			r.paths[g.id] = path{read: Rebuild, why: why}
			continue
		}
		normalize(s, e)
		rd := &read{end: &reading{at: e.ScrapedAt, snap: e},
			w: readings{bs: []boundary{{at: s.ScrapedAt, snap: s}, {at: e.ScrapedAt, snap: e}}}}
		if p := peaks[g.id]; p != nil {
			rd.peak = sh.snapshot(g, p, e.ScrapedAt, info)
		}
		r.reads[g.id] = rd
	}
	return nil
}

// outOfRange finds a shape's instances (of those in) with a fraction
// outside 0..1 at the window's end (promql.Library.Fractions), which the
// dialect would leave out and name: they are read whole.
func (r *run) outOfRange(ctx context.Context, sh *shape, in map[string]bool) (map[string]bool, error) {
	fs := sh.lib.Fractions()
	if len(fs) == 0 {
		return nil, nil
	}
	exprs := make([]tagged, len(fs))
	for i, f := range fs {
		exprs[i] = tagged{tagValue + "fraction", "group" + r.by() + " (" + f + " < 0 or " + f + " > 1.000001)"}
	}
	vec, err := r.q.tagged(ctx, "pushdown: instances with a fraction outside 0..1 (read whole)", exprs, r.o.To)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, s := range vec {
		if g := r.route(s.Metric); g != nil && in[g.id] {
			out[g.id] = true
		}
	}
	return out, nil
}

// sums runs tagged expressions at one time and sorts what the store
// answered by instance (of those in), quantity and bucket.
func (r *run) sums(ctx context.Context, purpose string, exprs []tagged, at time.Time, in map[string]bool) (map[string]*values, error) {
	vec, err := r.q.tagged(ctx, purpose, exprs, at)
	if err != nil {
		return nil, err
	}
	out := map[string]*values{}
	buckets := map[string]map[string][]histogram.Bucket{}
	for _, s := range vec {
		g := r.route(s.Metric)
		if g == nil || !in[g.id] {
			continue
		}
		v := out[g.id]
		if v == nil {
			v = &values{scalars: map[string]float64{}, hists: map[string]*histogram.Histogram{}}
			out[g.id] = v
		}
		tag := string(s.Metric[tagLabel])
		x := float64(s.Value)
		switch {
		case strings.HasPrefix(tag, tagBucket):
			le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
			if err != nil || math.IsNaN(le) {
				continue
			}
			if buckets[g.id] == nil {
				buckets[g.id] = map[string][]histogram.Bucket{}
			}
			name := tag[len(tagBucket):]
			buckets[g.id][name] = append(buckets[g.id][name], histogram.Bucket{UpperBound: le, Count: x})
		case strings.HasPrefix(tag, tagSum):
			v.hist(tag[len(tagSum):]).Sum = x
		case strings.HasPrefix(tag, tagCount):
			v.hist(tag[len(tagCount):]).Count = x
		case !math.IsNaN(x):
			v.scalars[tag[len(tagValue):]] = x
		}
	}
	for id, hs := range buckets {
		for name, bs := range hs {
			h := out[id].hist(name)
			sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
			if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
				bs = append(bs, histogram.Bucket{UpperBound: math.Inf(1), Count: h.Count})
			}
			h.Buckets = bs
		}
	}
	return out, nil
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
	fb, err := rebuild(pts, noMeta)
	if err != nil {
		return nil
	}
	is, err := dialect.Map(fb.fams, dialect.Options{Dialect: g.dialect})
	if err != nil {
		return nil
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

// tagLabel carries a quantity's tag through a batch.
const tagLabel = "inferscope_q"

// tagged is an expression and the tag its results carry.
type tagged struct{ tag, expr string }
