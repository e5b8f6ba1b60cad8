package promql

import (
	"regexp"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// Readings are a quantity's value at one moment, aggregated to the
// library's labels the way the dialect reads one scrape's series: the
// terms of a quantity combined (computed = all − cached), each instance's
// series summed, averaged where each is an engine's own fraction or busy
// time, the largest over replicated ranks first. Evaluated at the two ends
// of a window, they give the window's increase as --since computes it,
// the difference of two readings: no rate() or increase(), so nothing a
// backend extrapolates (Prometheus' increase() extrapolates to the
// window's edges, VictoriaMetrics' does not and reads the sample before
// the window). The fleet view's pushdown (internal/fleet) reads them.

// Reading writes a counter's or a gauge's value at the evaluation time, or
// a histogram's count of observations; ok is false when the server does
// not publish it.
func (l *Library) Reading(name string) (string, bool) {
	s, ok := l.src[name]
	if !ok {
		return "", false
	}
	if s.kind == snapshot.Histogram {
		r := s.terms[0].ref
		return l.reduce("sum", r, l.selector(r, "_count")), true
	}
	return combine(s, func(r ref) string { return l.reduce(s.op(), r, l.selector(r, "")) }), true
}

// HistogramReading is a histogram's state at one moment: its cumulative
// buckets summed by le and the library's labels, its sum and its count.
type HistogramReading struct{ Buckets, Sum, Count string }

// Histogram writes a histogram's reading; ok is false when the server
// does not publish the histogram.
func (l *Library) Histogram(name string) (HistogramReading, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return HistogramReading{}, false
	}
	return HistogramReading{
		Buckets: l.reduce("sum", r, l.selector(r, "_bucket"), "le"),
		Sum:     l.reduce("sum", r, l.selector(r, "_sum")),
		Count:   l.reduce("sum", r, l.selector(r, "_count")),
	}, true
}

// Bucket writes the reading of one bound's buckets of a histogram (le, as
// the store holds it): [HistogramReading.Buckets] for that bound alone,
// still grouped by le. A store that aggregates many groups slowly is asked
// one bound at a time: VictoriaMetrics sums 180,000 bucket series into as
// many groups for some 1.7 times the CPU of the same series asked bound by
// bound.
func (l *Library) Bucket(name, le string) (string, bool) {
	return l.bucketsWhere(name, Matcher{Label: "le", Op: Equal, Value: le})
}

// BucketsBut writes the reading of a histogram's buckets at every bound but
// les (as the store holds them), read with [Library.Bucket]'s one at a time:
// what a list of bounds missed is still read, and where it missed none the
// store answers from its index alone.
func (l *Library) BucketsBut(name string, les []string) (string, bool) {
	quoted := make([]string, len(les))
	for i, le := range les {
		quoted[i] = regexp.QuoteMeta(le)
	}
	return l.bucketsWhere(name, Matcher{Label: "le", Op: NoMatch, Value: strings.Join(quoted, "|")})
}

// bucketsWhere is [HistogramReading.Buckets] of the bucket series m also
// matches.
func (l *Library) bucketsWhere(name string, m Matcher) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	r.match = append(slices.Clip(r.match), m)
	return l.reduce("sum", r, l.selector(r, "_bucket"), "le"), true
}

// BucketSeries writes the selector of a histogram's bucket series, whose
// bounds (le values) a store lists.
func (l *Library) BucketSeries(name string) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	return l.selector(r, "_bucket"), true
}

// histRef is the series a histogram the server publishes is read by;
// false where it publishes none by that name.
func (l *Library) histRef(name string) (ref, bool) {
	s, ok := l.src[name]
	if !ok || s.kind != snapshot.Histogram {
		return ref{}, false
	}
	return s.terms[0].ref, true
}

// Largest writes a gauge's largest value over the window: each series'
// max_over_time, aggregated as [Library.Reading] aggregates it (a fraction
// averaged over engines is each engine's largest, averaged, which no
// single moment need have reached). ok is false for a quantity that is
// not a gauge the server publishes.
func (l *Library) Largest(name string) (string, bool) {
	s, ok := l.src[name]
	if !ok || s.kind != snapshot.Gauge {
		return "", false
	}
	return combine(s, func(r ref) string {
		return l.reduce(s.op(), r, "max_over_time("+l.selector(r, "")+"["+l.window+"])")
	}), true
}

// ReadByValue reports that the library's choice of series for some
// quantity rests on the values of the scrape it was built from, not only
// on its names, labels and HELP: vLLM's gpu_prefix_cache counters without
// HELP saying blocks or tokens are told apart by their size. Such a
// library holds for the server it was built from, not for every server
// that publishes the same names.
func (l *Library) ReadByValue() bool { return l.byValue }

// decidingLabels are the labels whose values decide how a library reads a
// scrape (besides its names, HELP and the sizes ReadByValue says): which
// finish reasons a vLLM counter has, which sources its prompt count is
// split by, whether prefix caching is on, SGLang's token modes, whether
// vLLM publishes a deferred queue and which sleep states, TGI's batch
// methods, Dynamo's request status and error type.
var decidingLabels = []string{"finished_reason", "finish_reason", "source", "enable_prefix_caching", "mode",
	"reason", "sleep_state", "method", "status", "error_type"}

// DecidingLabels lists the labels whose values decide how a library reads
// a scrape: two servers publishing the same families with the same values
// of these labels (and the same HELP) are read by the same expressions.
func DecidingLabels() []string { return slices.Clone(decidingLabels) }

// modelLabels are the labels each dialect reads the served model from,
// as internal/dialect does (SGLang's first metrics, of late 2024, used
// name=, which later names a function; they are not read here).
var modelLabels = map[string][]string{"vllm": {"model_name"}, "aphrodite": {"model_name"}, "sglang": {"model_name"}, "tabbyapi": {"model"},
	"trtllm": {"model_name"}, "lmdeploy": {"model_name"}, "dynamo": {"model"}}

// ModelLabels lists the labels a dialect's series name the served model
// by (none where its series carry no model).
func ModelLabels(dialect string) []string { return slices.Clone(modelLabels[dialect]) }

// fractions are the canonical gauges that hold a fraction 0..1, as the
// dialects validate them.
var fractions = []string{snapshot.KVCacheUsageRatio, snapshot.KVOffloadUsageRatio, snapshot.RecurrentCacheUsageRatio,
	snapshot.SpecDecodeDraftAcceptanceRate}

// Fractions lists selectors of the gauge series the library reads as
// fractions 0..1 (a KV cache's use): a value outside that range cannot be,
// and the dialect leaves such a series out and names it. A reader of sums
// (the fleet's pushdown) asks the store for them apart, since an average
// can hide one.
func (l *Library) Fractions() []string {
	var out []string
	for _, name := range l.Quantities() {
		s := l.src[name]
		if s.kind != snapshot.Gauge || !slices.Contains(fractions, name) {
			continue
		}
		for _, t := range s.terms {
			out = append(out, l.selector(t.ref, ""))
		}
	}
	return out
}

// SeriesOf lists the series names the store holds a quantity under, sorted
// (a histogram's _bucket, _count and _sum; a counter published without
// _total under both spellings); none for one the library does not read.
func (l *Library) SeriesOf(name string) []string {
	s, ok := l.src[name]
	if !ok {
		return nil
	}
	var out []string
	for _, t := range s.terms {
		out = append(out, t.ref.storedNames(s.kind)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A Split is one read of a counter family that several quantities share:
// the family summed by the library's labels and one more (Label), each
// quantity then the sum of the values its part picks. The store reads the
// family's series once instead of once for each quantity: vLLM's request
// counter, for every request and for the errors, is one read of 10,000
// series for 2,000 pods instead of three (the errors' "or 0 *" reads them
// all again).
type Split struct {
	Expr  string
	Label string
	// Parts are the quantities read from it, by name.
	Parts map[string]SplitPart
}

// A SplitPart says how one quantity is read from a Split's answer for an
// instance: the sum over every value of the label (All, the series
// without it too), or Value's alone; absent where the instance has none
// of those, but 0 where ZeroIfAbsent and it has any series of the family
// (the Reading's "or 0 *": a counter published from its first increment).
type SplitPart struct {
	All          bool
	Value        string
	ZeroIfAbsent bool
}

// Splits sorts the counters among quantities into those that share one
// read of their family with at least one other (each a Split), and the
// rest, which are read by their Reading. A counter can share a read
// where its Reading sums one family's series, picked by at most one
// matcher "label = value" (one label for the family's every such
// counter), with no replicas or parts to fold first.
func (l *Library) Splits(quantities []string) (splits []Split, rest []string) {
	type part struct {
		q     string
		label string
		p     SplitPart
	}
	byFamily := map[string][]part{}
	var families []string
	for _, q := range slices.Sorted(slices.Values(quantities)) {
		r, p, label, ok := l.splitPart(q)
		if !ok {
			rest = append(rest, q)
			continue
		}
		if byFamily[r.name] == nil {
			families = append(families, r.name)
		}
		byFamily[r.name] = append(byFamily[r.name], part{q, label, p})
	}
	for _, name := range families {
		parts := byFamily[name]
		label := ""
		one := true
		for _, p := range parts {
			switch {
			case p.label == "":
			case label == "":
				label = p.label
			case p.label != label:
				one = false
			}
		}
		if len(parts) < 2 || label == "" || !one {
			for _, p := range parts {
				rest = append(rest, p.q)
			}
			continue
		}
		base := ref{name: name}
		sp := Split{Expr: l.reduce("sum", base, l.selector(base, ""), label), Label: label, Parts: map[string]SplitPart{}}
		for _, p := range parts {
			sp.Parts[p.q] = p.p
		}
		splits = append(splits, sp)
	}
	slices.Sort(rest)
	return splits, rest
}

// splitPart says how counter q would be read from a split of its family:
// the family's ref, its part, and the label its matcher picks by ("" for
// every series); ok is false where its reading cannot be shared.
func (l *Library) splitPart(q string) (ref, SplitPart, string, bool) {
	s, ok := l.src[q]
	if !ok || s.kind != snapshot.Counter || s.mean || len(s.terms) != 1 {
		return ref{}, SplitPart{}, "", false
	}
	t := s.terms[0]
	r := t.ref
	if t.neg || t.zero || r.bare || len(r.replicas) > 0 || len(r.within) > 0 {
		return ref{}, SplitPart{}, "", false
	}
	plain := func(o ref) bool {
		return o.name == r.name && !o.bare && len(o.match) == 0 && len(o.replicas) == 0 && len(o.within) == 0
	}
	switch {
	case len(r.match) == 0 && t.zeroWith == nil:
		return r, SplitPart{All: true}, "", true
	case len(r.match) == 1 && r.match[0].Op == Equal && r.match[0].Value != "" && (t.zeroWith == nil || plain(*t.zeroWith)):
		return r, SplitPart{Value: r.match[0].Value, ZeroIfAbsent: t.zeroWith != nil}, r.match[0].Label, true
	}
	return ref{}, SplitPart{}, "", false
}
