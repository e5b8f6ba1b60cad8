package fleet

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promql"
)

// The census: a pushdown's discovery. Listing every series (discover.go)
// costs a store about as much as the rest of the pushdown together (2,000
// vLLM pods: 122,000 series, 25 MB, 1.1 s of Prometheus' CPU and 0.5 s of
// ours), and the pushdown needs of most instances only that they exist,
// their targets, and that the library of their dialect's first instance
// (read whole: pushdown.go's probe) reads them as it reads the first. One
// series request lists, for each dialect a first instance's library
// reads, the few series that tell it:
//
//   - every series of the family the first instance was found by (and of
//     one that names the served model, where that one does not): each
//     instance, its targets, its models, labels that say replica;
//   - every series of the dialect's families the first does not publish
//     (the store's names say which: none, in a fleet of one version, and
//     then nothing is asked);
//   - for each fact of its scrape the first instance's library was
//     written by (promql.Fact: vLLM's computed prompt tokens are
//     source="local_compute"'s, its reasons are finished_reason's), the
//     series that tell whether another instance gives the same answer
//     (factMatcher: one for each engine and model of an instance at
//     most, or only those that differ);
//   - the info series (vLLM's KV capacity is in their labels, and whether
//     prefix caching is on);
//   - vLLM production-stack's router copies, to be counted.
//
// An instance is read by its dialect's first instance's library (a member
// of its shape) where it publishes no family the first does not, gives
// the library's facts the first's answers, has the same info labels that
// decide, models and HELP, and, at the window's end, a sum of
// exactly the quantities the first has one of (census.member): a missing
// family that a quantity reads shows there. Every other instance, and
// every instance the pushdown reads whole after all (restarted, born,
// gone, down), is discovered as discover.go does, for it alone
// (rediscover); so is every instance of a dialect with no such library.

// census is what the census found: the instances it listed in part
// (light), those it found unlisted (walk), and those of dialects no first
// instance's library reads, discovered whole (full).
type census struct {
	light    *discovery
	unlisted []*group
	full     []*discovery
}

// libraries are the speculation's shapes that have a library, by dialect.
func (sp *speculation) libraries() map[string]*shape {
	out := map[string]*shape{}
	for _, sh := range sp.shapes {
		if sh.lib != nil {
			out[sh.groups[0].dialect] = sh
		}
	}
	return out
}

// census lists the fleet for a pushdown, once each dialect's first
// instance is read: in part where a library of a first instance may read
// it, whole for the dialects of names that have none.
func (r *run) census(ctx context.Context, sp *speculation, names []string, allNames bool) (*census, error) {
	libs := sp.libraries()
	seen := map[string]bool{}
	for _, n := range names {
		if d := dialect.Owner(n); d != "" && libs[d] == nil {
			seen[d] = true
		}
	}
	var prefixes []string
	for _, d := range slices.Sorted(maps.Keys(seen)) {
		prefixes = append(prefixes, dialectPrefixes(d)...)
	}
	c := &census{}
	start, end := r.o.From.Add(-Lookback), r.o.To
	var mu sync.Mutex
	whole := func(ctx context.Context, purpose string, prefixes []string) error {
		match := discoverMatch(r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(prefixes)}))
		d, err := list(ctx, r.q, purpose, []string{match}, r.o, start, end)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		c.full = append(c.full, d)
		return nil
	}
	var fns []func(context.Context) error
	if len(libs) > 0 {
		fns = append(fns, func(ctx context.Context) error {
			light, err := list(ctx, r.q, "discovery (census): each instance of the dialects a first instance's library reads, and what tells its shape",
				r.censusMatches(libs, names, allNames), r.o, start, end)
			if err != nil {
				return err
			}
			var lp []string
			for _, d := range slices.Sorted(maps.Keys(libs)) {
				lp = append(lp, dialectPrefixes(d)...)
			}
			unlisted, ok, err := r.walk(ctx, light.byKey, r.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(lp)},
				Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"}))
			switch {
			case err != nil:
				return err
			case !ok:
				return whole(ctx, "discovery: every series of every dialect (too many grouping values to walk)", lp)
			}
			c.light, c.unlisted = light, unlisted
			return nil
		})
	}
	if len(prefixes) > 0 {
		fns = append(fns, func(ctx context.Context) error {
			return whole(ctx, "discovery: every series of the dialects no first instance's library reads", prefixes)
		})
	}
	return c, parallel(ctx, fns...)
}

// maxWalk bounds the label-value requests the census' walk sends (walk):
// past it, the instances are discovered as discover.go does.
const maxWalk = 16

// walk finds the instances the census did not list: one that publishes
// only families its first instance does too, none of them the one the
// census lists every instance by, nor any it lists for its labels. The
// store's label values (answered from its index) say which values of
// each grouping label its series carry, within the values found of the
// labels before it: each combination the census did not list is an
// instance to discover whole. An instance of a label's empty value is
// looked for where one listed has it. ok is false where more than
// maxWalk requests would be needed.
func (r *run) walk(ctx context.Context, listed map[string]string, match Selector) (unlisted []*group, ok bool, err error) {
	by := r.o.By
	empty := make([]bool, len(by))
	for k := range listed {
		for i, v := range strings.Split(strings.TrimSuffix(k, "\x00"), "\x00") {
			if i < len(by) && v == "" {
				empty[i] = true
			}
		}
	}
	combos := [][]string{nil}
	sent := 0
	for i, l := range by {
		if sent += len(combos); sent > maxWalk {
			return nil, false, nil
		}
		next := make([][][]string, len(combos))
		fns := make([]func(context.Context) error, len(combos))
		for j, c := range combos {
			fns[j] = func(ctx context.Context) error {
				sel := match
				for n, v := range c {
					sel = sel.With(Matcher{Name: by[n], Op: "=", Value: v})
				}
				vs, err := r.q.labelValues(ctx, "discovery (census): the values of "+l+" the fleet's series carry, to find instances it did not list",
					l, []string{sel.braces()}, r.o.From.Add(-Lookback), r.o.To)
				if empty[i] {
					vs = append(vs, "")
				}
				for _, v := range vs {
					next[j] = append(next[j], append(slices.Clip(c), v))
				}
				return err
			}
		}
		if err := parallel(ctx, fns...); err != nil {
			return nil, false, err
		}
		combos = slices.Concat(next...)
	}
	for _, c := range combos {
		labels := map[string]string{}
		for n, v := range c {
			labels[by[n]] = v
		}
		g := &group{id: groupID(labels), labels: labels}
		if _, ok := listed[keyOf(g, by)]; !ok {
			unlisted = append(unlisted, g)
		}
	}
	return unlisted, true, nil
}

// censusMatches are the census' series selectors (see the top of this
// file); names are the families the store holds (familyNames), allNames
// where the list can be taken for all of them.
func (r *run) censusMatches(libs map[string]*shape, names []string, allNames bool) []string {
	sel := r.o.Selector
	var out, prefixes []string
	for _, d := range slices.Sorted(maps.Keys(libs)) {
		sh := libs[d]
		first := sh.groups[0]
		ps := dialectPrefixes(d)
		prefixes = append(prefixes, ps...)
		own := familySel(sel, sh.probe)
		probes := []string{sh.probe}
		if m := r.modelFamily(first, sh.probe); m != "" {
			probes = append(probes, m)
		}
		out = append(out, own.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(probes)}).braces())
		// The names cost the store nothing more; a match of "not the
		// first's families", a look at every series of the dialect.
		var lacking []string
		for _, n := range names {
			if !first.families[n] && slices.ContainsFunc(ps, func(p string) bool { return strings.HasPrefix(n, p) }) {
				lacking = append(lacking, n)
			}
		}
		switch {
		case !allNames:
			// A list the store may have cut: every family but the first's.
			out = append(out, own.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(ps)},
				Matcher{Name: model.MetricNameLabel, Op: "!~", Value: nameRegex(slices.Sorted(maps.Keys(first.families))) + "|.+_bucket"}).braces())
		case len(lacking) > 0:
			out = append(out, own.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: nameRegex(lacking)}).braces())
		}
		for _, f := range sh.lib.Facts() {
			out = append(out, familySel(sel, f.Family).With(nameIs(f.Family), factMatcher(f, first)).braces())
		}
	}
	out = append(out, sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(prefixes) + "_info"}).braces())
	if libs["vllm"] != nil {
		out = append(out, sel.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(dialectPrefixes("vllm"))},
			Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"},
			Matcher{Name: routerLabel, Op: "!=", Value: ""}).braces())
	}
	return out
}

// factMatcher picks the series of a fact's family that tell whether an
// instance gives the fact the first instance's answer (promql.Fact): those
// of its value; where it names none and the first has the label, those of
// one value the first has (an instance without that one is read whole,
// whatever its others); where the first lacks the label, any. Only those
// that differ answer in a fleet of one version: one series for each
// engine and model of an instance at most, where listing every series of
// the labels that decide a reading took 16,000 series and 3.3 MB for
// 2,000 vLLM pods.
func factMatcher(f promql.Fact, first *group) Matcher {
	switch {
	case f.Value != "":
		return Matcher{Name: f.Label, Op: "=", Value: f.Value}
	case f.Has:
		if v, ok := firstValue(first, f.Family, f.Label); ok {
			return Matcher{Name: f.Label, Op: "=", Value: v}
		}
	}
	return Matcher{Name: f.Label, Op: "=~", Value: ".+"}
}

// firstValue is the least value of label on family's series that g's
// discovery kept (g.deciding).
func firstValue(g *group, family, label string) (string, bool) {
	prefix := family + "\x00" + label + "\x00"
	var vs []string
	for k := range g.deciding {
		if v, ok := strings.CutPrefix(k, prefix); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "", false
	}
	return slices.Min(vs), true
}

// answers says whether g gives fact f the first instance's answer, by
// the series of it the census listed (m, its factMatcher). Discovery
// keeps the values of the deciding labels alone (discovery.note): a fact
// of any other label cannot be told, and g is read whole
// (TestFactsAreDeciding holds every fact of every fixture to those
// labels).
func answers(g *group, f promql.Fact, m Matcher) bool {
	if !slices.Contains(decidingLabels, f.Label) {
		return false
	}
	if m.Op == "=" {
		return g.deciding[f.Family+"\x00"+f.Label+"\x00"+m.Value] == f.Has
	}
	_, any := firstValue(g, f.Family, f.Label)
	return any == f.Has
}

// modelFamily is a family of the first instance whose series name the
// model it serves, where the family it was found by does not: "" where
// that one does, or none does.
func (r *run) modelFamily(first *group, probe string) string {
	labels := modelLabelsOf(first.dialect)
	if len(labels) == 0 {
		return ""
	}
	var named []string
	for _, p := range r.firsts[first.id] {
		name := string(p.metric[model.MetricNameLabel])
		if !first.families[name] || strings.HasSuffix(name, "_created") || strings.HasSuffix(name, "_info") {
			continue
		}
		for _, l := range labels {
			if p.metric[model.LabelName(l)] != "" {
				if name == probe {
					return ""
				}
				named = append(named, name)
			}
		}
	}
	if len(named) == 0 {
		return ""
	}
	return slices.Min(named)
}

// settle makes the fleet's discovery from the census once the first
// instances' sums are read: each instance the census listed that a
// library reads as its first (member) is kept as listed, in part; every
// other one is discovered whole (rediscover). It returns the members, by
// group id, and their dialect.
func (r *run) settle(ctx context.Context, sp *speculation) (*discovery, map[string]string, error) {
	c, libs := sp.census, sp.libraries()
	d := newDiscovery(r.o)
	members := map[string]string{}
	full := map[string]*group{}
	for _, part := range c.full {
		d.keys(part)
		for _, g := range part.groups {
			full[g.id] = g
		}
	}
	kins := map[string]*kin{}
	for d, sh := range libs {
		kins[d] = r.kinOf(sh)
	}
	again := c.unlisted
	if c.light != nil {
		d.keys(c.light)
		for _, g := range c.light.groups {
			k := kins[g.dialect]
			switch {
			case full[g.id] != nil:
				// Series of two dialects: the whole of it decides.
				delete(full, g.id)
				again = append(again, g)
			case k != nil && r.member(g, k):
				g.partial = true
				members[g.id] = g.dialect
				d.byID[g.id] = g
			default:
				again = append(again, g)
			}
		}
	}
	maps.Copy(d.byID, full)
	found, err := r.rediscover(ctx, again)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range again {
		switch w := found[g.id]; {
		case w != nil:
			d.byID[g.id] = w
			d.byKey[keyOf(w, r.o.By)] = w.id
		case g.families != nil:
			g.partial = true // not listed again: kept as the census saw it
			d.byID[g.id] = g
		}
	}
	if maxInstances := maxInstancesOr(r.o.MaxInstances); len(d.byID) > maxInstances {
		lim := &limits{maxInstances: maxInstances, sel: r.o.Selector}
		return nil, nil, lim.tooMany("instances", len(d.byID), false)
	}
	d.groups = slices.Collect(maps.Values(d.byID))
	d.index()
	return d, members, nil
}

// keys takes part's grouping keys, and its count of router copies.
func (d *discovery) keys(part *discovery) {
	maps.Copy(d.byKey, part.byKey)
	for id, n := range part.routerSeries {
		d.routerSeries[id] += n
	}
}

// kin is what an instance must share with its shape's first instance to
// be read by the first's library (member), worked out once a shape.
type kin struct {
	first              *group
	info, served, help []string
	facts              []promql.Fact
	matchers           []Matcher // each fact's (factMatcher)
	// atEnd are the shape's sums at the window's end, by grouping key.
	atEnd map[string]*values
}

func (r *run) kinOf(sh *shape) *kin {
	first := sh.groups[0]
	k := &kin{first: first, info: infoDeciding(first), served: first.served(), help: r.meta.ownHelp(first),
		facts: sh.lib.Facts(), atEnd: sh.sums.atEnd}
	for _, f := range k.facts {
		k.matchers = append(k.matchers, factMatcher(f, first))
	}
	return k
}

// member says whether the library of a shape (its dialect's first
// instance's, k) reads g as the first is read: g publishes no family the
// first does not, gives the library's facts the first's answers, has the
// same values of the deciding labels on its info series, the same models
// and HELP, no series under a replica label, and at the window's end a
// sum of exactly the quantities the first has one of (sameQuantities).
func (r *run) member(g *group, k *kin) bool {
	for f := range g.families {
		if !k.first.families[f] {
			return false
		}
	}
	switch {
	case len(g.replicas) > 0,
		!slices.Equal(infoDeciding(g), k.info),
		!slices.Equal(g.served(), k.served),
		!slices.Equal(r.meta.ownHelp(g), k.help):
		return false
	}
	for i, f := range k.facts {
		if !answers(g, f, k.matchers[i]) {
			return false
		}
	}
	return sameQuantities(k.atEnd[keyOf(g, r.o.By)], k.atEnd[keyOf(k.first, r.o.By)])
}

// infoDeciding lists the deciding values of a group's info series (the
// census lists them whole: prefix caching on or off), sorted.
func infoDeciding(g *group) []string {
	var out []string
	for k := range g.deciding {
		if f, _, _ := strings.Cut(k, "\x00"); strings.HasSuffix(f, "_info") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sameQuantities says whether an instance's sums (a) hold the same
// quantities as its first instance's (b). One with none at the window's
// end (gone, or publishing at its end nothing the library reads) is not
// told apart here: gone, it is read whole; else assemble says why it
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

// rediscover lists every series of groups the census listed in part, as
// discover does, batch by batch (each naming its instances), and returns
// what it found of them by id.
func (r *run) rediscover(ctx context.Context, groups []*group) (map[string]*group, error) {
	out := map[string]*group{}
	if len(groups) == 0 {
		return out, nil
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[g.id] = true
	}
	sels := r.batches(groups, 1, false)
	found := make([]*discovery, len(sels))
	fns := make([]func(context.Context) error, len(sels))
	for i, sel := range sels {
		fns[i] = func(ctx context.Context) (err error) {
			found[i], err = list(ctx, r.q, "discovery: every series of the instances the census cannot leave in part",
				[]string{discoverMatch(sel)}, r.o, r.o.From.Add(-Lookback), r.o.To)
			return
		}
	}
	if err := parallel(ctx, fns...); err != nil {
		return nil, err
	}
	for _, d := range found {
		for _, g := range d.groups {
			if want[g.id] {
				out[g.id] = g
			}
		}
	}
	return out, nil
}

// complete discovers whole the instances listed in part that the pushdown
// reads whole after all (restarted, born, gone, down, unsound), before
// the rebuild reads them.
func (r *run) complete(ctx context.Context) error {
	var partial []*group
	for _, g := range r.disc.groups {
		if g.partial && r.paths[g.id].read == Rebuild {
			partial = append(partial, g)
		}
	}
	found, err := r.rediscover(ctx, partial)
	if err != nil {
		return err
	}
	for i, g := range r.disc.groups {
		if w := found[g.id]; w != nil {
			r.disc.groups[i] = w
			r.disc.byID[g.id] = w
		}
	}
	r.disc.index()
	return nil
}
