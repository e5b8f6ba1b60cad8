package fleet

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
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
	// sums are the store's sums of the library's expressions.
	sums *sumsOf
	// rep is the first instance's reading by its dialect: what the
	// library says nothing of (the dialect's advice, prefix caching, the
	// proxy) is taken from it.
	rep *snapshot.Snapshot
	// why says why its instances are read whole instead.
	why string
	// probe is the family its first instance was found by (a
	// speculation's shape).
	probe string
}

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

// pushdown reads the fleet's instances shape by shape, once discovery has
// said which there are: the instances the census left in part are read
// by their dialect's first instance's library (the speculation's); the
// others are sorted into shapes, and those that share a first instance's
// shape adopt its library; any other shape gets its own first instance,
// library and sums now. Last, each instance's path, and the instances
// read whole after all discovered whole (complete).
func (r *run) pushdown(ctx context.Context, spec *speculation) error {
	libs := spec.libraries()
	byDialect := map[string][]*group{}
	var rest []*group
	for _, g := range r.disc.groups {
		if d, ok := r.members[g.id]; ok {
			byDialect[d] = append(byDialect[d], g)
		} else {
			rest = append(rest, g)
		}
	}
	var shapes []*shape
	for _, d := range slices.Sorted(maps.Keys(byDialect)) {
		sp := libs[d]
		shapes = append(shapes, &shape{groups: byDialect[d], lib: sp.lib, rep: sp.rep, sums: sp.sums})
	}
	others := r.byHelp(r.shapes(rest))
	r.adopt(others, spec)
	r.resets = spec.restarts.of(r)
	var late []*shape
	for _, sh := range others {
		if sh.lib == nil && sh.why == "" {
			late = append(late, sh)
		}
	}
	shapes = append(shapes, others...)
	if err := r.readLate(ctx, late); err != nil {
		return err
	}
	for id := range r.lateRestarts.of(r) {
		r.resets[id] = true
	}
	r.unread = map[string]string{}
	for _, sh := range shapes {
		if sh.lib != nil {
			if err := r.assemble(ctx, sh); err != nil {
				return err
			}
		}
	}
	r.planPushdown(shapes)
	r.shaped = shapes
	return r.complete(ctx)
}

// adopt gives each shape the speculation read (that of its first
// instance) that library and those sums.
func (r *run) adopt(shapes []*shape, spec *speculation) {
	for _, sp := range spec.shapes {
		id, ok := r.disc.byKey[keyOf(sp.groups[0], r.o.By)]
		if !ok {
			continue
		}
		for _, sh := range shapes {
			if sh.lib == nil && sh.why == "" && slices.ContainsFunc(sh.groups, func(g *group) bool { return g.id == id }) {
				sh.lib, sh.rep, sh.why, sh.sums = sp.lib, sp.rep, sp.why, sp.sums
			}
		}
	}
}

// readLate reads the shapes the speculation did not: each one's first
// instance, library and sums, and the restarts of their counters.
func (r *run) readLate(ctx context.Context, late []*shape) error {
	if len(late) == 0 {
		return nil
	}
	if err := r.writeLibraries(ctx, late); err != nil {
		return err
	}
	var counters []string
	for _, sh := range late {
		if sh.lib != nil {
			counters = append(counters, r.summedCounters(sh)...)
		}
	}
	fns := []func(context.Context) error{func(ctx context.Context) error {
		// The speculation asked every target's unprefixed start time.
		rs, err := r.restartsOf(ctx, counters, r.startFamilies(), askedBefore)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lateRestarts = rs
		return err
	}}
	for _, sh := range late {
		if sh.lib != nil {
			fns = append(fns, func(ctx context.Context) (err error) { sh.sums, err = r.fetchSums(ctx, sh); return })
		}
	}
	return parallel(ctx, fns...)
}

// speculation is the pushdown begun before discovery: each dialect's
// first instance, its library and sums, and the census made from it.
type speculation struct {
	// shapes are one per dialect the store holds: its first instance
	// (as a group of its own), library and sums.
	shapes   []*shape
	restarts restarts
	census   *census
}

// speculate starts the pushdown before the fleet is discovered: the names
// the store holds say its dialects; for each, the first instance it lists
// of one of that dialect's families is read whole and its library
// written; then, at once, that library's sums of every instance, the
// restarts of the counters they read, and the census (census.go), which
// the first instances' families shape. The store's metadata comes first:
// a library reads HELP. Discovery (settle) then says which instances each
// library reads (pushdown).
func (r *run) speculate(ctx context.Context) (*speculation, error) {
	names, allNames, err := r.familyNames(ctx)
	if err != nil {
		return nil, err
	}
	if r.meta, err = loadMetadata(ctx, r.q, names); err != nil {
		return nil, err
	}
	probes := probeFamilies(names)
	sp := &speculation{}
	var mu sync.Mutex
	var fns []func(context.Context) error
	for _, d := range slices.Sorted(maps.Keys(probes)) {
		fns = append(fns, func(ctx context.Context) error {
			for _, family := range probes[d][:min(len(probes[d]), maxProbes)] {
				sh, err := r.probe(ctx, d, family)
				if err != nil {
					return err
				}
				if sh != nil {
					mu.Lock()
					defer mu.Unlock()
					sp.shapes = append(sp.shapes, sh)
					return nil
				}
			}
			return nil
		})
	}
	if err := parallel(ctx, fns...); err != nil {
		return nil, err
	}
	sort.Slice(sp.shapes, func(i, j int) bool { return sp.shapes[i].groups[0].dialect < sp.shapes[j].groups[0].dialect })
	var counters []string
	fns = nil
	for _, sh := range sp.shapes {
		if sh.lib != nil {
			counters = append(counters, r.summedCounters(sh)...)
			fns = append(fns, func(ctx context.Context) (err error) { sh.sums, err = r.fetchSums(ctx, sh); return })
		}
	}
	var starts []string
	for _, n := range names {
		if strings.HasSuffix(n, startTimeSeries) {
			starts = append(starts, n)
		}
	}
	fns = append(fns, func(ctx context.Context) (err error) {
		sp.restarts, err = r.restartsOf(ctx, counters, starts, everyTarget)
		return
	})
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var cerr error
	err = parallel(pctx, append(fns, func(ctx context.Context) error {
		if sp.census, cerr = r.census(ctx, sp, names, allNames); cerr != nil {
			stop() // a fleet past its bounds is not read
		}
		return nil
	})...)
	if cerr != nil {
		return nil, cerr
	}
	return sp, err
}

// familyNames lists the dialects' families the store holds in the window
// (their buckets aside). Without a --selector it asks for every name the
// store holds, which a store answers from its index (under 1 ms for 2,000
// vLLM pods, where the same list matched to the dialects' names cost
// Prometheus 0.1 s: a look at each of their series); its list may then
// name families with no series in the window, which the probes pass by
// and later selectors find empty. all says the list can be taken for
// every name the store holds (shorter than trustedNames).
func (r *run) familyNames(ctx context.Context) (names []string, all bool, err error) {
	prefixes := prefixRegex(dialect.NamePrefixes())
	dialects := regexp.MustCompile("^" + prefixes + "$")
	var matches []string
	if len(r.o.Selector) > 0 {
		matches = []string{r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixes},
			Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"}).braces()}
	}
	held, err := r.q.labelValues(ctx, "pushdown: the families the store holds", model.MetricNameLabel, matches, r.o.From.Add(-Lookback), r.o.To)
	if err != nil {
		return nil, false, err
	}
	for _, n := range held {
		if dialects.MatchString(n) && !strings.HasSuffix(n, "_bucket") {
			names = append(names, n)
		}
	}
	return names, len(held) < trustedNames, nil
}

// maxProbes bounds the families a dialect's first instance is looked for
// by, one after another, where the store's names hold some with no series
// at the window's end (an older version's, a router's under server=): a
// miss costs the store an index lookup.
const maxProbes = 32

// trustedNames is the longest list of names taken as the store's whole:
// stores may cut a list of label values at a limit (VictoriaMetrics'
// -search.maxTagValues, a querier's), and the census finds the families
// a first instance lacks in it (censusMatches).
const trustedNames = 10000

// probeFamilies lists, for each dialect among the families named, the
// families to find a first instance by, in order of name: every one but a
// _created or _info series, which not every instance publishes.
func probeFamilies(names []string) map[string][]string {
	probes := map[string][]string{}
	for _, n := range slices.Sorted(slices.Values(names)) {
		d := dialect.Owner(n)
		if d == "" || strings.HasSuffix(n, "_created") || strings.HasSuffix(n, "_info") {
			continue
		}
		probes[d] = append(probes[d], n)
	}
	return probes
}

// probe reads the first instance the store lists of family (of dialect
// d) whole, and writes its library: a shape of that one instance; nil
// where the store lists none at the window's end.
func (r *run) probe(ctx context.Context, d, family string) (*shape, error) {
	vec, err := r.q.instant(ctx, "pushdown: one instance of "+d, familySel(r.o.Selector, family).With(nameIs(family)).braces(), r.o.To)
	if err != nil || len(vec) == 0 {
		return nil, err
	}
	first := slices.MinFunc(vec, func(a, b *model.Sample) int {
		return strings.Compare(groupKey(a.Metric, r.o.By), groupKey(b.Metric, r.o.By))
	})
	labels := groupLabels(first.Metric, r.o.By)
	g := &group{id: groupID(labels), labels: labels, dialect: d, families: map[string]bool{family: true},
		targets: map[Target]bool{targetOf(first.Metric): true}}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		g.match = append(g.match, Matcher{Name: k, Op: "=", Value: labels[k]})
	}
	b := &rebuilding{run: r, groups: []*group{g}}
	pts, err := b.state(ctx, r.o.To, true, []*group{g})
	if err != nil {
		return nil, err
	}
	// What discovery will say of it, from its series.
	pd := newDiscovery(r.o)
	lim := &limits{maxInstances: 1, maxSeries: math.MaxInt}
	for _, p := range pts[g.id] {
		if name := string(p.metric[model.MetricNameLabel]); !strings.HasSuffix(name, "_bucket") && name != startTimeSeries {
			if err := pd.add(p.metric, lim); err != nil {
				return nil, err
			}
		}
	}
	if found := pd.byID[g.id]; found != nil {
		found.dialect = d
		g = found
	}
	r.mu.Lock()
	if r.firsts == nil {
		r.firsts = map[string][]point{}
	}
	r.firsts[g.id] = pts[g.id]
	r.mu.Unlock()
	sh := &shape{groups: []*group{g}, probe: family}
	sh.lib, sh.rep, sh.why = r.library(g, pts[g.id])
	return sh, nil
}

// planPushdown decides each instance's path once its sums are read: read
// whole where the window's two ends cannot give its window (whole), where
// its shape has no library, or where its sums hold what cannot be.
func (r *run) planPushdown(shapes []*shape) {
	r.paths = map[string]path{}
	for _, sh := range shapes {
		for _, g := range sh.groups {
			why := r.whole(g)
			if why == "" {
				why = sh.why
			}
			if why == "" {
				why = r.unread[g.id]
			}
			if why != "" || r.reads[g.id] == nil {
				delete(r.reads, g.id)
				r.paths[g.id] = path{read: Rebuild, why: why}
				continue
			}
			r.paths[g.id] = path{read: Pushdown}
		}
	}
}

// shapes sorts groups into shapes by their names and deciding values (the
// HELP the metadata says splits them further: byHelp), in the order of
// their first instance.
func (r *run) shapes(groups []*group) []*shape {
	return sortInto(groups, func(g *group) string {
		return g.dialect + "\x01" + strings.Join(slices.Sorted(maps.Keys(g.families)), "\x00") + "\x01" +
			strings.Join(slices.Sorted(maps.Keys(g.deciding)), "\x00")
	})
}

// byHelp splits shapes whose instances' targets declared a family's HELP
// differently (the metadata, read with the first instances): vLLM 0.8's
// prefix counters count blocks, later ones tokens, under one name.
func (r *run) byHelp(shapes []*shape) []*shape {
	var out []*shape
	for _, sh := range shapes {
		out = append(out, sortInto(sh.groups, func(g *group) string { return strings.Join(r.meta.ownHelp(g), "\x00") })...)
	}
	return out
}

// sortInto sorts groups into shapes of one key each, in order.
func sortInto(groups []*group, key func(*group) string) []*shape {
	byKey := map[string]*shape{}
	var out []*shape
	for _, g := range groups {
		k := key(g)
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

// writeLibraries reads each shape's first instance whole (where not read
// yet) and writes the shape's library from it.
func (r *run) writeLibraries(ctx context.Context, shapes []*shape) error {
	if err := r.firstOf(ctx, shapes); err != nil {
		return err
	}
	for _, sh := range shapes {
		first := sh.groups[0]
		sh.lib, sh.rep, sh.why = r.library(first, r.firsts[first.id])
	}
	return nil
}

// firstOf reads, whole, the first instance of each shape not read yet.
func (r *run) firstOf(ctx context.Context, shapes []*shape) error {
	var firsts []*group
	for _, sh := range shapes {
		if _, ok := r.firsts[sh.groups[0].id]; !ok {
			firsts = append(firsts, sh.groups[0])
		}
	}
	if len(firsts) == 0 {
		return nil
	}
	b := &rebuilding{run: r, groups: firsts}
	pts, err := b.state(ctx, r.o.To, true, firsts)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firsts == nil {
		r.firsts = map[string][]point{}
	}
	for _, g := range firsts {
		r.firsts[g.id] = pts[g.id]
	}
	return nil
}

// restartCounters are the counters a pushdown asks resets() of: those of
// the table's columns that every request moves. A restart resets every
// counter together, so these tell it (with the start time's changes());
// one that fell alone, and stayed below its start, is a fall the two
// readings show (unsound). resets() costs the store a read of every
// sample in the window of each family it is given.
var restartCounters = []string{snapshot.RequestsTotal, snapshot.TokensPredictedTotal, snapshot.PromptTokensTotal}

// summedCounters are the counter families of a shape whose resets() tell
// a restart (restartCounters, the TTFT histogram's count).
func (r *run) summedCounters(sh *shape) []string {
	var out []string
	for _, q := range restartCounters {
		out = append(out, sh.lib.SeriesOf(q)...)
	}
	for _, q := range tableHists {
		for _, name := range sh.lib.SeriesOf(q) {
			if strings.HasSuffix(name, "_count") {
				out = append(out, name)
			}
		}
	}
	return out
}

// library writes the library of the shape g stands for, from g's series
// at the window's end; without one it says why.
func (r *run) library(g *group, pts []point) (*promql.Library, *snapshot.Snapshot, string) {
	fb := rebuild(pts, r.meta.forGroup(g), histBases(g.families)...)
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
	lib, err := promql.New(fb.fams, s.Dialect, promql.Options{Selector: sel, By: r.o.By,
		Window: promDuration(r.o.To.Sub(r.o.From)), AllSections: true})
	switch {
	case err != nil:
		return nil, nil, "its series make nothing the store can sum"
	case lib.ReadByValue():
		return nil, nil, "which of its series to read rested on their values (vLLM's prefix counters in blocks or tokens, the pools of a hybrid SGLang model)"
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
// gauges whose largest value the table shows. Counters read from one
// family share one read of it (promql.Library.Splits).
func (r *run) quantities(sh *shape, bounds map[string][]string) (end, start, peak []tagged) {
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
			hs := []tagged{{tag: tagBucket + q, expr: h.Buckets}, {tag: tagSum + q, expr: h.Sum}, {tag: tagCount + q, expr: h.Count}}
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
			if r.o.Range && (q == snapshot.KVCacheUsageRatio || q == snapshot.RequestsDeferred) {
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

// sumsOf are the store's sums of one shape's library, by the grouping
// key of the instance they are of (groupKey): they are read before
// discovery says which instances the shape holds.
type sumsOf struct {
	atEnd, atStart, peaks map[string]*values
	fraction              map[string]bool
}

// fetchSums sends a shape's library's expressions: each quantity at the
// window's two ends, the peaks of a past range, the fractions outside
// 0..1. The store answers for every instance that has the series.
func (r *run) fetchSums(ctx context.Context, sh *shape) (*sumsOf, error) {
	bounds, err := r.bounds(ctx, sh)
	if err != nil {
		return nil, err
	}
	end, start, peak := r.quantities(sh, bounds)
	out := &sumsOf{}
	err = parallel(ctx,
		func(ctx context.Context) (err error) { out.fraction, err = r.outOfRange(ctx, sh); return },
		func(ctx context.Context) (err error) {
			out.atEnd, err = r.sums(ctx, "pushdown: each quantity of the table, per instance, at the window's end", end, r.o.To)
			return
		},
		func(ctx context.Context) (err error) {
			out.atStart, err = r.sums(ctx, "pushdown: each counter and the TTFT buckets, per instance, at the window's start", start, r.o.From)
			return
		},
		func(ctx context.Context) (err error) {
			if len(peak) > 0 {
				out.peaks, err = r.sums(ctx, "pushdown, a past range: KV use and the queue at their largest, per instance", peak, r.o.To)
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
func (r *run) bounds(ctx context.Context, sh *shape) (map[string][]string, error) {
	if r.f.Backend.Kind != promapi.VictoriaMetrics {
		return nil, nil
	}
	out := map[string][]string{}
	for _, q := range tableHists {
		sel, ok := sh.lib.BucketSeries(q)
		if !ok {
			continue
		}
		les, err := r.q.labelValues(ctx, "pushdown: the bounds of a histogram the table reads, asked one at a time", "le", []string{sel}, r.o.From.Add(-Lookback), r.o.To)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A store that will not list them (a limit on the series a
		// listing may touch) is asked the one query instead.
		if err == nil && len(les) <= maxBounds {
			out[q] = les
		}
	}
	return out, nil
}

// assemble makes each instance of a shape whose window the two ends give
// (whole says none) two snapshots from the sums, or says why they cannot
// stand for it (unread); on every core, each instance from its own sums
// alone.
func (r *run) assemble(ctx context.Context, sh *shape) error {
	rds := make([]*read, len(sh.groups))
	whys := make([]string, len(sh.groups))
	err := across(ctx, len(sh.groups), func(i int) {
		if g := sh.groups[i]; r.whole(g) == "" {
			rds[i], whys[i] = r.assembleOne(sh, g)
		}
	})
	for i, g := range sh.groups {
		switch {
		case whys[i] != "":
			r.unread[g.id] = whys[i]
		case rds[i] != nil:
			r.reads[g.id] = rds[i]
		}
	}
	return err
}

// assembleOne is one instance's two readings from its shape's sums, or
// why they cannot be.
func (r *run) assembleOne(sh *shape, g *group) (*read, string) {
	k := keyOf(g, r.o.By)
	atEnd, atStart := sh.sums.atEnd[k], sh.sums.atStart[k]
	if atEnd == nil && g.partial {
		// The census cannot tell its shape (census.member).
		return nil, "no sum of its shape's quantities at the window's end"
	}
	if why := invalidIn(sh.sums.fraction[k], atEnd, atStart); why != "" {
		return nil, "values that cannot be (" + why + ")"
	}
	info := infoOf(g)
	e, s := sh.snapshot(g, atEnd, r.tsEnd[g.id].Time(), info), sh.snapshot(g, atStart, r.tsStart[g.id].Time(), info)
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
func (r *run) outOfRange(ctx context.Context, sh *shape) (map[string]bool, error) {
	fs := sh.lib.Fractions()
	if len(fs) == 0 {
		return nil, nil
	}
	exprs := make([]tagged, len(fs))
	for i, f := range fs {
		exprs[i] = tagged{tag: tagValue + "fraction", expr: "group" + r.by() + " (" + f + " < 0 or " + f + " > 1.000001)"}
	}
	out := map[string]bool{}
	err := r.q.tagged(ctx, "pushdown: instances with a fraction outside 0..1 (read whole)", exprs, r.o.To, func(_ int, s *model.Sample) {
		out[groupKey(s.Metric, r.o.By)] = true
	})
	return out, err
}

// sums runs tagged expressions at one time and sorts what the store
// answered by instance (its grouping key), quantity and bucket.
func (r *run) sums(ctx context.Context, purpose string, exprs []tagged, at time.Time) (map[string]*values, error) {
	out := map[string]*values{}
	buckets := map[string]map[string][]histogram.Bucket{}
	err := r.q.tagged(ctx, purpose, exprs, at, func(i int, s *model.Sample) {
		k := groupKey(s.Metric, r.o.By)
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

// tagged is an expression and the tag its results carry.
type tagged struct {
	tag, expr string
	// split is the split the expression reads, if it is one (no tag: its
	// quantities are taken from its answer once every sample is in).
	split *promql.Split
}
