package fleet

import (
	"context"
	"maps"
	"regexp"
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
// (read whole: shapes.go's firstShapes) reads them as it reads the first.
// One series request lists, for each dialect a first instance's library
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
// Beside it, the store's label values of each --by label (walk) find the
// instances it did not list.
//
// An instance is left in part, a member of its dialect's first instance's
// shape, where it publishes no family the first does not, gives the
// library's facts the first's answers, and has the same info labels that
// decide, models and HELP, and no series under a replica label
// (member). Every other instance is discovered as discover.go
// does, for it alone (rediscover), and sorted into a shape of its own
// kind; so is every instance of a dialect with no such library. What the
// census cannot see (a family of the first's that a member lacks) shows
// in the store's sums of the member, which then cannot stand for it: it
// is read whole (paths.go), and its series listed then (whole.go).

// byCensus discovers the fleet for a pushdown: the families the store
// holds and its metadata, each dialect's first instance read whole and
// its library written, the census, and the shapes.
func (d *discovery) byCensus(ctx context.Context, q *querier) error {
	var allNames bool
	err := alongside(ctx,
		func(ctx context.Context) (err error) { d.families, allNames, err = familyNames(ctx, q); return },
		func(ctx context.Context) (err error) { d.meta, err = loadMetadata(ctx, q); return })
	if err != nil {
		return err
	}
	firsts, err := firstShapes(ctx, q, d.meta, d.families)
	if err != nil {
		return err
	}
	c, err := takeCensus(ctx, q, firsts, d.families, allNames)
	if err != nil {
		return err
	}
	members, err := d.settle(ctx, q, c, firsts)
	if err != nil {
		return err
	}
	shapes, err := sortShapes(ctx, q, d, members, firsts)
	if err != nil {
		return err
	}
	d.setShapes(shapes)
	return nil
}

// familyNames lists the dialects' families the store holds in the window
// (their buckets aside). Without a --selector it asks for every name the
// store holds, which a store answers from its index (under 1 ms for 2,000
// vLLM pods, where the same list matched to the dialects' names cost
// Prometheus 0.1 s: a look at each of their series); its list may then
// name families with no series in the window, which the probes pass by
// and later selectors find empty. all says the list can be taken for
// every name the store holds (shorter than trustedNames).
func familyNames(ctx context.Context, q *querier) (names []string, all bool, err error) {
	prefixes := prefixRegex(dialect.NamePrefixes())
	dialects := regexp.MustCompile("^" + prefixes + "$")
	var matches []string
	if len(q.o.Selector) > 0 {
		matches = []string{q.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixes},
			Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"}).braces()}
	}
	start, end := q.listed()
	held, err := q.labelValues(ctx, "pushdown: the families the store holds", model.MetricNameLabel, matches, start, end)
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

// trustedNames is the longest list of names taken as the store's whole:
// stores may cut a list of label values at a limit (VictoriaMetrics'
// -search.maxTagValues, a querier's), and the census finds the families
// a first instance lacks in it (censusMatches).
const trustedNames = 10000

// census is what the census found: the instances it listed in part
// (light), those the walk found unlisted, and those of dialects no first
// instance's library reads, discovered whole (full).
type census struct {
	light    *listing
	unlisted []*group
	full     []*listing
}

// takeCensus lists the fleet for a pushdown, once each dialect's first
// instance is read: in part where a library of a first instance may read
// it, whole for the dialects of names that have none; and, beside the
// listing in part, walks the grouping labels' values for what it missed.
func takeCensus(ctx context.Context, q *querier, firsts []*shape, names []string, allNames bool) (*census, error) {
	libs := libraries(firsts)
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
	var mu sync.Mutex
	whole := func(ctx context.Context, purpose string, prefixes []string) error {
		match := discoverMatch(q.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(prefixes)}))
		d, err := list(ctx, q, purpose, []string{match})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		c.full = append(c.full, d)
		return nil
	}
	var stages []func(context.Context) error
	if len(libs) > 0 {
		stages = append(stages, func(ctx context.Context) error {
			var lp []string
			for _, d := range slices.Sorted(maps.Keys(libs)) {
				lp = append(lp, dialectPrefixes(d)...)
			}
			match := q.o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: prefixRegex(lp)},
				Matcher{Name: model.MetricNameLabel, Op: "!~", Value: ".+_bucket"})
			// The walk needs nothing the listing says unless an instance
			// listed lacks a grouping label: it is sent beside it, and
			// again after it for the empty values.
			var light *listing
			var combos [][]string
			var walked bool
			asked := &walkAnswers{values: map[string][]string{}}
			listedDone := make(chan struct{})
			err := alongside(ctx,
				func(ctx context.Context) (err error) {
					defer close(listedDone)
					light, err = list(ctx, q, "discovery (census): each instance of the dialects a first instance's library reads, and what tells its shape",
						censusMatches(q, libs, names, allNames))
					return err
				},
				func(ctx context.Context) (err error) {
					combos, walked, err = walk(ctx, q, match, nil, asked, func() *listing { <-listedDone; return light })
					return err
				})
			if empty := emptyValues(light, len(q.o.By)); err == nil && walked && slices.Contains(empty, true) {
				combos, walked, err = walk(ctx, q, match, empty, asked, func() *listing { return light })
			}
			switch {
			case err != nil:
				return err
			case !walked:
				return whole(ctx, "discovery: every series of every dialect (too many grouping values to walk)", lp)
			}
			unlisted := notListed(combos, light, q.o.By)
			c.light, c.unlisted = light, unlisted
			return nil
		})
	}
	if len(prefixes) > 0 {
		stages = append(stages, func(ctx context.Context) error {
			return whole(ctx, "discovery: every series of the dialects no first instance's library reads", prefixes)
		})
	}
	return c, alongside(ctx, stages...)
}

// maxWalk bounds the label-value requests the census' walk sends (walk):
// past it, the instances are discovered as discover.go does.
const maxWalk = 16

// walk finds the instances the census did not list: one that publishes
// only families its first instance does too, none of them the one the
// census lists every instance by, nor any it lists for its labels. The
// store's label values (answered from its index) say which values of
// each grouping label its series carry, within the values found of the
// labels before it: each combination (of every label's value, in --by's
// order) the census did not list is an instance to discover whole
// (notListed). An instance of a label's empty value is looked for where
// empty says one listed has it. ok is false where more than maxWalk
// requests would be needed. asked keeps the answers, for a walk again.
func walk(ctx context.Context, q *querier, match Selector, empty []bool, asked *walkAnswers, listed func() *listing) (combos [][]string, ok bool, err error) {
	by := q.o.By
	combos = [][]string{nil}
	sent := 0
	start, end := q.listed()
	for i, l := range by {
		if sent += len(combos); sent > maxWalk {
			return nil, false, nil
		}
		next := make([][]string, len(combos))
		err := inParallel(ctx, len(combos), 0, func(ctx context.Context, j int) (err error) {
			sel := match
			for n, v := range combos[j] {
				sel = sel.With(Matcher{Name: by[n], Op: "=", Value: v})
			}
			next[j], err = asked.get(sel.braces(), func() ([]string, error) {
				return q.labelValues(ctx, "discovery (census): the values of "+l+" the fleet's series carry, to find instances it did not list",
					l, []string{sel.braces()}, start, end)
			})
			return err
		})
		if err != nil {
			return nil, false, err
		}
		if i == len(by)-1 {
			if err := valuesBound(q, match, l, combos, next, empty, listed); err != nil {
				return nil, false, err
			}
		}
		var grown [][]string
		for j, c := range combos {
			vs := next[j]
			if i < len(empty) && empty[i] {
				vs = append(slices.Clip(vs), "")
			}
			for _, v := range vs {
				grown = append(grown, append(slices.Clip(c), v))
			}
		}
		combos = grown
	}
	return combos, true, nil
}

// valuesBound refuses a walk whose last label's values (next, within each
// combination of the labels before it) hold more instances the census did
// not list than --max-instances: each would be discovered whole, one
// request for every few hundred. It waits for the census' listing
// (listed), and counts before a combination is made of them.
func valuesBound(q *querier, match Selector, label string, combos, next [][]string, empty []bool, listed func() *listing) error {
	total, most := 0, 0
	for j, vs := range next {
		total += len(vs)
		if len(vs) > len(next[most]) {
			most = j
		}
	}
	if len(empty) > 0 && empty[len(empty)-1] {
		total += len(combos)
	}
	light := listed()
	if light == nil {
		return nil // the listing failed: its error is the census'
	}
	maxInstances := maxInstancesOr(q.o.MaxInstances)
	if total-len(light.groups) <= maxInstances {
		return nil
	}
	sel := match
	for n, v := range combos[most] {
		sel = sel.With(Matcher{Name: q.o.By[n], Op: "=", Value: v})
	}
	// The user's selector and the values of the labels before it, without
	// the dialects' names the walk adds.
	var within Selector
	for _, m := range sel {
		if m.Name != model.MetricNameLabel && !slices.Contains(within, m) {
			within = append(within, m)
		}
	}
	return &LimitError{What: "values", Label: label, Limit: maxInstances, Found: total - len(light.groups), Selector: within}
}

// walkAnswers keeps a walk's answers by selector.
type walkAnswers struct {
	mu     sync.Mutex
	values map[string][]string
}

func (w *walkAnswers) get(key string, ask func() ([]string, error)) ([]string, error) {
	w.mu.Lock()
	vs, ok := w.values[key]
	w.mu.Unlock()
	if ok {
		return vs, nil
	}
	vs, err := ask()
	if err == nil {
		w.mu.Lock()
		w.values[key] = vs
		w.mu.Unlock()
	}
	return vs, err
}

// notListed are the instances of the walk's combinations the census did
// not list.
func notListed(combos [][]string, light *listing, by []string) []*group {
	var out []*group
	for _, c := range combos {
		labels := map[string]string{}
		for n, v := range c {
			labels[by[n]] = v
		}
		g := &group{id: groupID(labels), labels: labels}
		if _, ok := light.byKey[keyOf(g, by)]; !ok {
			out = append(out, g)
		}
	}
	return out
}

// emptyValues says, of each of n grouping labels, whether an instance
// the census listed has it empty.
func emptyValues(light *listing, n int) []bool {
	empty := make([]bool, n)
	if light == nil {
		return empty
	}
	for k := range light.byKey {
		for i, v := range strings.Split(strings.TrimSuffix(k, "\x00"), "\x00") {
			if i < n && v == "" {
				empty[i] = true
			}
		}
	}
	return empty
}

// censusMatches are the census' series selectors (see the top of this
// file); names are the families the store holds (familyNames), allNames
// where the list can be taken for all of them.
func censusMatches(q *querier, libs map[string]*shape, names []string, allNames bool) []string {
	sel := q.o.Selector
	var out, prefixes []string
	for _, d := range slices.Sorted(maps.Keys(libs)) {
		sh := libs[d]
		first := sh.first
		ps := dialectPrefixes(d)
		prefixes = append(prefixes, ps...)
		own := familySel(sel, sh.probe)
		probes := []string{sh.probe}
		if m := modelFamily(sh); m != "" {
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
// keeps the values of the deciding labels alone (listing.note): a fact
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

// modelFamily is a family of a first shape's first instance whose series
// name the model it serves, where the family it was found by does not:
// "" where that one does, or none does.
func modelFamily(sh *shape) string {
	first, probe := sh.first, sh.probe
	labels := modelLabelsOf(first.dialect)
	if len(labels) == 0 {
		return ""
	}
	var named []string
	for _, p := range sh.firstPts {
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

// settle makes the fleet from the census: each instance the census
// listed that its dialect's first instance's library reads as the first
// (member) is kept as listed, in part; every other one is discovered
// whole (rediscover). It returns the members, by group id, and their
// dialect.
func (d *discovery) settle(ctx context.Context, q *querier, c *census, firsts []*shape) (map[string]string, error) {
	libs := libraries(firsts)
	byID := map[string]*group{}
	d.routerSeries = map[string]int{}
	members := map[string]string{}
	full := map[string]*group{}
	for _, part := range c.full {
		d.countRouter(part)
		for _, g := range part.groups {
			full[g.id] = g
		}
	}
	kins := map[string]*kin{}
	for dl, sh := range libs {
		kins[dl] = kinOf(sh, d.meta)
	}
	again := c.unlisted
	if c.light != nil {
		d.countRouter(c.light)
		for _, g := range c.light.groups {
			k := kins[g.dialect]
			switch {
			case full[g.id] != nil:
				// Series of two dialects: the whole of it decides.
				delete(full, g.id)
				again = append(again, g)
			case k != nil && member(g, k, d.meta):
				g.partial = true
				members[g.id] = g.dialect
				byID[g.id] = g
			default:
				again = append(again, g)
			}
		}
	}
	maps.Copy(byID, full)
	found, err := rediscover(ctx, q, again, purposeInPart)
	if err != nil {
		return nil, err
	}
	for _, g := range again {
		switch w := found[g.id]; {
		case w != nil:
			byID[g.id] = w
		case g.families != nil:
			g.partial = true // not listed again: kept as the census saw it
			byID[g.id] = g
		}
	}
	d.groups = slices.Collect(maps.Values(byID))
	sortGroups(d.groups)
	return members, nil
}

// countRouter adds a listing's count of router copies.
func (d *discovery) countRouter(part *listing) {
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
}

func kinOf(sh *shape, meta *metadata) *kin {
	first := sh.first
	k := &kin{first: first, info: infoDeciding(first), served: first.served(), help: meta.ownHelp(first), facts: sh.lib.Facts()}
	for _, f := range k.facts {
		k.matchers = append(k.matchers, factMatcher(f, first))
	}
	return k
}

// member says whether the library of a shape (its dialect's first
// instance's, k) reads g as the first is read, as far as the census
// tells: g publishes no family the first does not, gives the library's
// facts the first's answers, has the same values of the deciding labels
// on its info series, the same models and HELP, and no series under a
// replica label. (Whether it lacks a family the first has shows in the
// store's sums: sums.go.)
func member(g *group, k *kin, meta *metadata) bool {
	for f := range g.families {
		if !k.first.families[f] {
			return false
		}
	}
	switch {
	case g.replicated() != "",
		!slices.Equal(infoDeciding(g), k.info),
		!slices.Equal(g.served(), k.served),
		!slices.Equal(meta.ownHelp(g), k.help):
		return false
	}
	for i, f := range k.facts {
		if !answers(g, f, k.matchers[i]) {
			return false
		}
	}
	return true
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

// purposeInPart is the purpose of listing every series of instances the
// census listed in part, or did not list.
const purposeInPart = "discovery: every series of the instances the census cannot leave in part"

// rediscover lists every series of groups the census listed in part (or
// the walk found), as listAll does, batch by batch (each naming its
// instances), and returns what it found of them by id.
func rediscover(ctx context.Context, q *querier, groups []*group, purpose string) (map[string]*group, error) {
	out := map[string]*group{}
	if len(groups) == 0 {
		return out, nil
	}
	want := map[string]bool{}
	for _, g := range groups {
		want[g.id] = true
	}
	sels := batches(q, groups, 1, false)
	found := make([]*listing, len(sels))
	err := inParallel(ctx, len(sels), 0, func(ctx context.Context, i int) (err error) {
		found[i], err = list(ctx, q, purpose, []string{discoverMatch(sels[i])})
		return
	})
	if err != nil {
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
