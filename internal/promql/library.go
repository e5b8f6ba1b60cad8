package promql

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Library is one server's PromQL: the windowed expression of each figure
// and note condition, over the series that server publishes.
type Library struct {
	dialect string
	by      []string
	sel     []Matcher
	window  string
	src     map[string]source
	// sections are the report's optional sections that apply to the
	// server: a figure or condition of one that does not has no
	// expression.
	sections analysis.Sections
	// byValue says a quantity's series were chosen by the scrape's
	// values (ReadByValue).
	byValue bool
	// facts are what its resolvers asked of the scrape's values (Facts).
	facts []Fact
}

// Options choose how a [Library] writes its expressions.
type Options struct {
	// Selector is added to every series selector ({namespace="llm"}).
	Selector []Matcher
	// By are the labels an expression aggregates to: what tells one
	// instance (or model) from another. Nil means the dialect's default
	// ([DefaultBy]); empty aggregates everything into one series.
	By []string
	// Window is the range of every windowed expression: a Prometheus
	// duration ("5m") or a dashboard variable ("$__rate_interval").
	// Empty means [DefaultWindow].
	Window string
	// AllSections writes the figures and conditions of every section the
	// server publishes series for. Without it, [New] writes only those of
	// the sections the report has for the scrape (analysis.SectionsOf:
	// no speculative decode without a drafter that has served, no KV
	// offload without offload capacity, no recurrent state without a
	// budget); [Newest], with no server to judge, writes every section.
	AllSections bool
}

// DefaultWindow is the range of a windowed expression unless told.
const DefaultWindow = "5m"

var windowRE = regexp.MustCompile(`^(([0-9]+(ms|s|m|h|d|w|y))+|\$__rate_interval|\$__interval|\$__range)$`)

// ValidWindow reports whether w can be a range: a Prometheus duration or
// one of Grafana's interval variables.
func ValidWindow(w string) bool { return windowRE.MatchString(w) && w != "0s" }

// DefaultBy is the aggregation labels unless told (--by): the scrape
// target, job and instance, whatever the dialect. One target is one
// server, the unit a report reads, and every series a store scrapes
// carries both labels, so the default is right in any store (namespace and
// pod are only where a Kubernetes scrape adds them; aggregated by labels a
// series lacks, every server adds up into one). The fleet view groups its
// instances by the same labels. A server serving several models is one
// server, as its report is; --by job,instance,model_name splits them.
func DefaultBy(string) []string { return []string{"job", "instance"} }

// ErrUnknownDialect is a dialect this package has no names for.
var ErrUnknownDialect = errors.New("unknown dialect")

// dialectNames are the dialects a library can be built for, in the order
// internal/dialect lists them.
var dialectNames = []string{"tabbyapi", "vllm", "aphrodite", "llamacpp", "sglang", "tgi", "trtllm", "dynamo", "lmdeploy"}

// Dialects lists the dialects a library can be built for.
func Dialects() []string { return slices.Clone(dialectNames) }

func reader(name string) (dialectReader, error) {
	for _, r := range readers {
		if r.name == name {
			return r, nil
		}
	}
	return dialectReader{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownDialect, name, strings.Join(Dialects(), ", "))
}

// New builds a dialect's library from the families of one scrape: each
// quantity is read from the series that scrape carries, under the name it
// carries it by.
func New(fams []*dto.MetricFamily, dialect string, o Options) (*Library, error) {
	l, err := build(dialect, o, func(r dialectReader) scrape { return scrapeOf(fams) })
	if err != nil {
		return nil, err
	}
	if len(l.src) == 0 {
		return nil, fmt.Errorf("no %s series in the scrape that this library reads", dialect)
	}
	if !o.AllSections {
		l.sections = sectionsOf(fams, dialect)
	}
	return l, nil
}

// sectionsOf is the report's judgement of which optional sections apply
// to the server that published fams: the dialect's reading of them, as
// the report reads a scrape. One the dialect cannot read applies every
// section (the library's own reading found series in it).
func sectionsOf(fams []*dto.MetricFamily, name string) analysis.Sections {
	s, err := dialect.Map(fams, dialect.Options{Dialect: name})
	if err != nil {
		return analysis.AllSections()
	}
	return analysis.SectionsOf(s)
}

// Newest builds a dialect's library from the names of the newest version
// it knows ([NewestExposition]), for rules written before any scrape.
func Newest(dialect string, o Options) (*Library, error) {
	return build(dialect, o, func(r dialectReader) scrape { return r.newest() })
}

// build is a dialect's library over the scrape of gives its reader.
func build(dialect string, o Options, of func(dialectReader) scrape) (*Library, error) {
	r, err := reader(dialect)
	if err != nil {
		return nil, err
	}
	l, err := newLibrary(dialect, o)
	if err != nil {
		return nil, err
	}
	sc := of(r)
	l.src = halfRatios(r.read(sc))
	for _, f := range sc {
		l.byValue = l.byValue || f.bySize
		l.facts = append(l.facts, f.asked...)
	}
	// One scrape answers a fact one way, however often it was asked.
	slices.SortFunc(l.facts, func(a, b Fact) int {
		return cmp.Or(strings.Compare(a.Family, b.Family), strings.Compare(a.Label, b.Label), strings.Compare(a.Value, b.Value))
	})
	l.facts = slices.Compact(l.facts)
	return l, nil
}

// ratioPairs are quantities that only mean something together: as the
// dialect drops one published without the other, so does the library.
var ratioPairs = [][2]string{
	{snapshot.PrefixCacheQueries, snapshot.PrefixCacheHits},
	{snapshot.SpecDecodeNumDraftTokensTotal, snapshot.SpecDecodeNumAcceptedTokensTotal},
}

func halfRatios(s sources) sources {
	for _, p := range ratioPairs {
		_, a := s[p[0]]
		_, b := s[p[1]]
		if a != b {
			delete(s, p[0])
			delete(s, p[1])
		}
	}
	return s
}

func newLibrary(dialect string, o Options) (*Library, error) {
	l := &Library{dialect: dialect, by: o.By, sel: o.Selector, window: o.Window, sections: analysis.AllSections()}
	if l.by == nil {
		l.by = DefaultBy(dialect)
	}
	if l.window == "" {
		l.window = DefaultWindow
	}
	if !ValidWindow(l.window) {
		return nil, fmt.Errorf("window %q is not a Prometheus duration such as 5m", l.window)
	}
	seen := map[string]bool{}
	for _, b := range l.by {
		if !ValidLabel(b) || b == "le" || b == "__name__" {
			return nil, fmt.Errorf("cannot aggregate by %q: not a label name an instance can be told by", b)
		}
		if seen[b] {
			return nil, fmt.Errorf("label %q is given twice to aggregate by", b)
		}
		seen[b] = true
	}
	for _, m := range l.sel {
		if !ValidLabel(m.Label) || m.Label == "__name__" {
			return nil, fmt.Errorf("selector label %q cannot be matched", m.Label)
		}
	}
	return l, nil
}

// With is the library's reading of the same series under other options: a
// dashboard's variables and rate interval, without a second scrape.
func (l *Library) With(o Options) (*Library, error) {
	n, err := newLibrary(l.dialect, o)
	if err != nil {
		return nil, err
	}
	n.src, n.sections, n.byValue = l.src, l.sections, l.byValue
	if o.AllSections {
		n.sections = analysis.AllSections()
	}
	return n, nil
}

// Sections are the report's optional sections the library writes
// figures and conditions for.
func (l *Library) Sections() analysis.Sections { return l.sections }

// LeftOut lists the optional sections the server publishes series for
// that the library leaves out (as the report does), in the report's order:
// what [Options.AllSections] would add.
func (l *Library) LeftOut() []string {
	all := *l
	all.sections = analysis.AllSections()
	has := map[string]bool{}
	for _, f := range all.Figures() {
		has[analysis.RowSection(f.ID)] = true
	}
	for _, c := range all.Conditions() {
		has[conditionSection(c.ID)] = true
	}
	var out []string
	for _, sec := range l.sections.Left() {
		if has[sec] {
			out = append(out, sec)
		}
	}
	return out
}

// Dialect is the server the library writes for.
func (l *Library) Dialect() string { return l.dialect }

// By are the labels every expression aggregates to.
func (l *Library) By() []string { return slices.Clone(l.by) }

// Window is the range of the windowed expressions.
func (l *Library) Window() string { return l.window }

// Has reports whether the server publishes a canonical quantity (a
// snapshot name) in a form the library reads.
func (l *Library) Has(name string) bool { _, ok := l.src[name]; return ok }

// Series lists every series name the library's expressions read, sorted:
// what a store must hold for them to return anything.
func (l *Library) Series() []string {
	return l.stored(func(snapshot.Kind) bool { return true })
}

// stored lists, sorted, the series names the library reads for quantities
// of the kinds keep accepts.
func (l *Library) stored(keep func(snapshot.Kind) bool) []string {
	seen := map[string]bool{}
	for _, s := range l.src {
		if !keep(s.kind) {
			continue
		}
		for _, t := range s.terms {
			for _, n := range t.ref.storedNames(s.kind) {
				seen[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// --- How a quantity is read --------------------------------------------------

// ref is one family a quantity is read from.
type ref struct {
	// name is the family's name as the scrape carries it (a histogram's
	// base name).
	name string
	// bare says the family is a counter published without _total: a store
	// may hold it under name or name_total, depending on the format it
	// scraped.
	bare bool
	// match picks the quantity's series from the family
	// (source="local_compute").
	match []Matcher
	// replicas are labels whose series repeat one value (SGLang's tp_rank
	// and the like): the largest is taken over them before anything adds.
	replicas []string
	// within are labels that split one engine's quantity into parts that
	// add up (SGLang's GPU time by forward mode): added before the
	// engines are averaged.
	within []string
}

// storedNames are the names a store may hold the family's series under.
func (r ref) storedNames(kind snapshot.Kind) []string {
	switch {
	case kind == snapshot.Histogram:
		return []string{r.name + "_bucket", r.name + "_count", r.name + "_sum"}
	case r.bare:
		return []string{r.name, r.name + "_total"}
	}
	return []string{r.name}
}

// term is one ref in a quantity made of several, added or subtracted.
type term struct {
	ref ref
	neg bool
	// zeroWith, when set, reads an absent ref as 0 wherever zeroWith's
	// series exist (a counter a server publishes only from its first
	// increment).
	zeroWith *ref
	// zero reads the ref as 0 wherever its series exist: a quantity the
	// server's configuration says is nothing (cached tokens with prefix
	// caching off).
	zero bool
}

// source is how one canonical quantity is read.
type source struct {
	kind  snapshot.Kind
	terms []term
	// mean averages an instance's series instead of adding them: a
	// fraction each engine publishes for its own cache, or each engine's
	// own busy time (a utilization is the engines' mean share).
	mean bool
}

func one(kind snapshot.Kind, r ref) source { return source{kind: kind, terms: []term{{ref: r}}} }

// --- What a scrape carries -------------------------------------------------

// family is what a resolver needs to know of one family in a scrape.
type family struct {
	name   string
	typ    dto.MetricType
	help   string
	sum    float64                    // its samples added (counters, gauges)
	values map[string]map[string]bool // label → values its series carry
	// asked are the facts of its values the resolvers asked (Facts).
	asked []Fact
	// bySize says a reader chose a quantity's series by this family's
	// values' size (Library.ReadByValue).
	bySize bool
}

// scrape is a scrape's families by name.
type scrape map[string]*family

func scrapeOf(fams []*dto.MetricFamily) scrape {
	sc := scrape{}
	for _, mf := range fams {
		f := sc[mf.GetName()]
		if f == nil {
			f = &family{name: mf.GetName(), typ: mf.GetType(), help: mf.GetHelp(), values: map[string]map[string]bool{}}
			sc[mf.GetName()] = f
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if f.values[lp.GetName()] == nil {
					f.values[lp.GetName()] = map[string]bool{}
				}
				f.values[lp.GetName()][lp.GetValue()] = true
			}
			switch {
			case m.Counter != nil:
				f.sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				f.sum += m.GetGauge().GetValue()
			case m.Untyped != nil:
				f.sum += m.GetUntyped().GetValue()
			}
		}
	}
	return sc
}

// first returns the first of names the scrape carries.
func (sc scrape) first(names ...string) (string, *family) {
	for _, n := range names {
		if f, ok := sc[n]; ok {
			return n, f
		}
	}
	return "", nil
}

// counter finds a counter under any of names (give both spellings).
func (sc scrape) counter(names ...string) (ref, bool) {
	n, f := sc.first(names...)
	if f == nil || f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_SUMMARY {
		return ref{}, false
	}
	return ref{name: n, bare: !strings.HasSuffix(n, "_total")}, true
}

// gauge finds a gauge (or any scalar family) under any of names.
func (sc scrape) gauge(names ...string) (ref, bool) {
	n, f := sc.first(names...)
	if f == nil || f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_SUMMARY {
		return ref{}, false
	}
	return ref{name: n}, true
}

// hist finds a histogram under any of names.
func (sc scrape) hist(names ...string) (ref, bool) {
	for _, n := range names {
		if f, ok := sc[n]; ok && f.typ == dto.MetricType_HISTOGRAM {
			return ref{name: n}, true
		}
	}
	return ref{}, false
}

// has reports whether a family carries a series with label=value, and
// keeps the answer among the library's facts.
func (f *family) has(label, value string) bool {
	if f == nil {
		return false
	}
	h := f.values[label][value]
	f.asked = append(f.asked, Fact{Family: f.name, Label: label, Value: value, Has: h})
	return h
}

// hasLabel reports whether any series of the family carries label, and
// keeps the answer among the library's facts.
func (f *family) hasLabel(label string) bool {
	if f == nil {
		return false
	}
	h := len(f.values[label]) > 0
	f.asked = append(f.asked, Fact{Family: f.name, Label: label, Has: h})
	return h
}

// A Fact is something of the scrape a library was written from that
// decides how it reads: whether the family has a series whose label is
// Value (any value where Value is ""). A server whose scrape gives each
// fact the same answer, and has the same names, HELP and sizes (and info
// series' labels), is read by the same expressions.
type Fact struct {
	Family, Label, Value string
	Has                  bool
}

// Facts lists the facts of the scrape the library's resolvers asked,
// each once, in order of family, label and value. Info series' labels,
// which say a configuration (prefix caching on or off), are not among
// them: a reader of the library compares those whole.
func (l *Library) Facts() []Fact { return slices.Clone(l.facts) }

// counterNames spells a counter with and without _total.
func counterNames(base string) []string { return []string{base + "_total", base} }

// sources collects what a resolver found.
type sources map[string]source

func (s sources) set(name string, kind snapshot.Kind, r ref, ok bool) bool {
	if ok {
		s[name] = one(kind, r)
	}
	return ok
}

// dialectReader resolves one dialect's names.
type dialectReader struct {
	name   string
	read   func(scrape) sources
	newest func() scrape
}

// readers are the dialects in the order internal/dialect lists them.
var readers = []dialectReader{
	{"tabbyapi", readTabbyAPI, newestOf("tabbyapi")},
	{"vllm", readVLLM, newestOf("vllm")},
	{"aphrodite", readAphrodite, newestOf("aphrodite")},
	{"llamacpp", readLlamaCpp, newestOf("llamacpp")},
	{"sglang", readSGLang, newestOf("sglang")},
	{"tgi", readTGI, newestOf("tgi")},
	{"trtllm", readTRTLLM, newestOf("trtllm")},
	{"dynamo", readDynamo, newestOf("dynamo")},
	{"lmdeploy", readLMDeploy, newestOf("lmdeploy")},
}
