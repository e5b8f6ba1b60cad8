package fleet

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Shapes: the store sums a quantity as the instance's PromQL library
// (internal/promql, the one the rules and dashboards are written from)
// writes it, and a library is written from one scrape's names, HELP and
// a few label values. Instances that publish the same ones (a shape)
// share one, written from one of them read whole (its first). A shape
// whose library cannot stand for its instances (native histograms, its
// names chosen by their values, series the dialect cannot read) has none
// and says why: its instances are read whole.
//
// A pushdown finds each dialect's first instance before the census
// (firstShapes: the census lists what tells an instance from it); the
// instances the census leaves in part are its shape's, and the rest are
// sorted into shapes by their names, deciding values and HELP, each
// getting its first and library (sortShapes). Discovery ends there.

// shape is the instances one library reads: the same dialect, families,
// values of the labels that decide a library's reading, and HELP.
type shape struct {
	groups []*group
	// first is the instance the library was written from, and firstPts
	// its series at the window's end, read whole.
	first    *group
	firstPts []point
	lib      *promql.Library
	// rep is the first instance's reading by its dialect: what the
	// library says nothing of (the dialect's advice, prefix caching, the
	// proxy) is taken from it.
	rep *snapshot.Snapshot
	// why says why its instances are read whole instead.
	why string
	// probe is the family its first instance was found by (a first
	// shape's: firstShapes).
	probe string
	// sums are the store's sums of the library's expressions (sums.go).
	sums *sumsOf
}

// firstShapes finds each dialect's first instance from the names the
// store holds: the first instance the store lists of one of that
// dialect's families, read whole and its library written; a shape of that
// one instance each, in order of dialect.
func firstShapes(ctx context.Context, q *querier, meta *metadata, names []string) ([]*shape, error) {
	probes := probeFamilies(names)
	dialects := slices.Sorted(maps.Keys(probes))
	found := make([]*shape, len(dialects))
	err := inParallel(ctx, len(dialects), 0, func(ctx context.Context, i int) error {
		d := dialects[i]
		for _, family := range probes[d][:min(len(probes[d]), maxProbes)] {
			sh, err := probe(ctx, q, meta, d, family)
			if err != nil || sh != nil {
				found[i] = sh
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []*shape
	for _, sh := range found {
		if sh != nil {
			out = append(out, sh)
		}
	}
	return out, nil
}

// maxProbes bounds the families a dialect's first instance is looked for
// by, one after another, where the store's names hold some with no series
// at the window's end (an older version's, a router's under server=): a
// miss costs the store an index lookup.
const maxProbes = 32

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
func probe(ctx context.Context, q *querier, meta *metadata, d, family string) (*shape, error) {
	vec, err := q.instant(ctx, "pushdown: one instance of "+d, q.familySel(family).With(nameIs(family)).braces(), q.o.To)
	if err != nil || len(vec) == 0 {
		return nil, err
	}
	by := q.o.By
	first := slices.MinFunc(vec, func(a, b *model.Sample) int {
		return strings.Compare(groupKey(a.Metric, by), groupKey(b.Metric, by))
	})
	labels := groupLabels(first.Metric, by)
	g := &group{id: groupID(labels), labels: labels, dialect: d, families: map[string]bool{family: true},
		targets: map[Target]bool{targetOf(first.Metric): true}}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		g.match = append(g.match, Matcher{Name: k, Op: "=", Value: labels[k]})
	}
	pts, err := readState(ctx, q, []*group{g}, q.o.To, stateQueries(q, []*group{g}, stateAtEnd, false))
	if err != nil {
		return nil, err
	}
	// What discovery will say of it, from its series.
	pd := newListing(q.o)
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
	sh := &shape{groups: []*group{g}, first: g, firstPts: pts[g.id], probe: family}
	sh.lib, sh.rep, sh.why = library(q, meta, g, sh.firstPts)
	return sh, nil
}

// sortShapes sorts groups into shapes: the census' members (by id, their
// dialect) into their dialect's first shape; the others by their names,
// deciding values and HELP, a shape holding a first instance taking its
// library; every other shape's first instance is read whole and its
// library written.
func sortShapes(ctx context.Context, q *querier, d *discovery, members map[string]string, firsts []*shape) ([]*shape, error) {
	libs := libraries(firsts)
	byDialect := map[string][]*group{}
	var rest []*group
	for _, g := range d.groups {
		if dl, ok := members[g.id]; ok {
			byDialect[dl] = append(byDialect[dl], g)
		} else {
			rest = append(rest, g)
		}
	}
	var shapes []*shape
	for _, dl := range slices.Sorted(maps.Keys(byDialect)) {
		sp := libs[dl]
		shapes = append(shapes, &shape{groups: byDialect[dl], first: sp.first, firstPts: sp.firstPts, lib: sp.lib, rep: sp.rep, probe: sp.probe})
	}
	others := byHelp(byNames(rest), d.meta)
	var late []*shape
	for _, sh := range others {
		adopt(sh, firsts)
		if sh.lib == nil && sh.why == "" {
			late = append(late, sh)
		}
	}
	if err := writeLibraries(ctx, q, d.meta, late); err != nil {
		return nil, err
	}
	return append(shapes, others...), nil
}

// adopt gives a shape that holds a first instance (its dialect's first
// library could not read it as the first: another dialect's series beside
// its own) that first's library, or its reason for none.
func adopt(sh *shape, firsts []*shape) {
	for _, sp := range firsts {
		if slices.ContainsFunc(sh.groups, func(g *group) bool { return g.id == sp.first.id }) {
			sh.first, sh.firstPts, sh.lib, sh.rep, sh.why = sp.first, sp.firstPts, sp.lib, sp.rep, sp.why
			return
		}
	}
}

// byNames sorts groups into shapes by their names and deciding values, in
// the order of their first instance.
func byNames(groups []*group) []*shape {
	return sortInto(groups, func(g *group) string {
		return g.dialect + "\x01" + strings.Join(slices.Sorted(maps.Keys(g.families)), "\x00") + "\x01" +
			strings.Join(slices.Sorted(maps.Keys(g.deciding)), "\x00")
	})
}

// byHelp splits shapes whose instances' targets declared a family's HELP
// differently (metadata.ownHelp): vLLM 0.8's prefix counters count
// blocks, later ones tokens, under one name.
func byHelp(shapes []*shape, meta *metadata) []*shape {
	var out []*shape
	for _, sh := range shapes {
		out = append(out, sortInto(sh.groups, func(g *group) string { return strings.Join(meta.ownHelp(g), "\x00") })...)
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

// maxFirsts is how many of a shape's instances are tried, in order, for
// one with series at the window's end to write its library from: a store
// lists instances with none (VictoriaMetrics the series of whole days),
// which discovery cannot tell from the rest.
const maxFirsts = 3

// writeLibraries reads each shape's first instance whole and writes the
// shape's library from it: the first of its instances, in order, with
// series at the window's end (at most maxFirsts tried, the shapes'
// candidates read together).
func writeLibraries(ctx context.Context, q *querier, meta *metadata, shapes []*shape) error {
	pts := map[string][]point{}
	for try := range maxFirsts {
		var cands []*group
		for _, sh := range shapes {
			if sh.first == nil && try < len(sh.groups) {
				cands = append(cands, sh.groups[try])
			}
		}
		if len(cands) == 0 {
			break
		}
		got, err := readState(ctx, q, cands, q.o.To, stateQueries(q, cands, stateAtEnd, false))
		if err != nil {
			return err
		}
		maps.Copy(pts, got)
		for _, sh := range shapes {
			if sh.first == nil && try < len(sh.groups) && len(got[sh.groups[try].id]) > 0 {
				sh.first = sh.groups[try]
			}
		}
	}
	for _, sh := range shapes {
		if sh.first == nil {
			sh.first = sh.groups[0] // none has series at the end: no library
		}
		sh.firstPts = pts[sh.first.id]
		sh.lib, sh.rep, sh.why = library(q, meta, sh.first, sh.firstPts)
	}
	return nil
}

// library writes the library of the shape g stands for, from g's series
// at the window's end; without one it says why.
func library(q *querier, meta *metadata, g *group, pts []point) (*promql.Library, *snapshot.Snapshot, string) {
	fb := rebuild(pts, meta.forGroup(g), histBases(g.families)...)
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
	sel := make([]promql.Matcher, 0, len(q.o.Selector)+1)
	for _, m := range q.o.Selector {
		sel = append(sel, promql.Matcher{Label: m.Name, Op: promql.Op(m.Op), Value: m.Value})
	}
	if s.Dialect == "vllm" {
		// vLLM production-stack's router copies would count twice.
		sel = append(sel, promql.Matcher{Label: routerLabel, Op: promql.Equal, Value: ""})
	}
	lib, err := promql.New(fb.fams, s.Dialect, promql.Options{Selector: sel, By: q.o.By, Window: q.window(), AllSections: true})
	switch {
	case err != nil:
		return nil, nil, "its series make nothing the store can sum"
	case lib.ReadByValue():
		return nil, nil, "which of its series to read rested on their values (vLLM's prefix counters in blocks or tokens, the pools of a hybrid SGLang model)"
	}
	return lib, s, ""
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
func (sh *shape) summedCounters() []string {
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

// libraries are the first shapes that have a library, by dialect.
func libraries(firsts []*shape) map[string]*shape {
	out := map[string]*shape{}
	for _, sh := range firsts {
		if sh.lib != nil {
			out[sh.first.dialect] = sh
		}
	}
	return out
}
