// Package dialect translates one server's metric families into a canonical
// snapshot: the quantities the inspector reasons about, under their tabbyAPI
// names without the prefix, whatever server published them. Each dialect
// handles its server's semantic traps (what a counter includes, what unit it
// counts in), not just its names.
//
// A canonical scalar or histogram is set only when the server publishes that
// quantity with the same meaning (or it follows exactly from published
// counters, as tabbyAPI's own prefix_cache_queries does); nothing is ever
// filled with 0 for want of a series. What a person would expect and the
// server lacks is a line in Snapshot.Missing.
//
// # Names
//
// The canonical names, Scalars, Histograms and Extra keys alike, are the
// constants of package snapshot, each with its unit and kind; a dialect
// produces no other (the tests read every fixture to check). Figures with
// no canonical counterpart go to Snapshot.Extra under the snapshot.Extra*
// keys; NaN samples are left out.
//
// Inter-token latency, where published per step or per token, is the
// histogram inter_token_latency_seconds; each request's mean time per
// output token is request_time_per_output_token_seconds (vLLM's, decode
// time over tokens after the first; TGI's, inference time, prefill
// included, over generated tokens).
//
// Besides Scalars, Histograms and Extra a dialect sets Snapshot.Invalid
// (series whose values cannot be, left out), Advice (the server's wording
// and knobs), PrefixCaching (vLLM's cache_config_info) and, where the
// computed share of prompt tokens is unknown, snapshot.PromptTokensAll.
package dialect

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// Options choose how families are read.
type Options struct {
	// Dialect forces a dialect by name; "" detects it from the series present.
	Dialect string
	// Model restricts a multi-model scrape to one served model; "" is all
	// together.
	Model string
	// StartHeader is the scrape's Process-Start-Time-Unix header in Unix
	// seconds (0 when absent). It becomes the snapshot's HeaderStart only
	// for a server whose header is a wall-clock time.
	StartHeader float64
	// Parts also reads each unit the server's totals add up from on its
	// own (Snapshot.Parts: vLLM's data-parallel engines, SGLang's DP
	// ranks), for the report's breakdowns.
	Parts bool
}

// UnknownError is an exposition with nothing a dialect recognises: no
// series of any known server, a forced dialect's prefix missing, or a known
// prefix whose series are none that server publishes (tabbyapi:foo alone).
type UnknownError struct {
	Prefixes []string // the name prefixes it did have
	Wanted   string   // the dialect --dialect asked for, if any
	// Dialect names the server whose prefix was found when none of its
	// series was one the dialect reads; Seen lists those names (at most 8).
	Dialect string
	Seen    []string
	// Readable lists the dialects that do find series they recognise in
	// these families, so that a hint to force one is given only where it
	// would work; empty when none does.
	Readable []string
}

func (e *UnknownError) Error() string {
	switch {
	case len(e.Prefixes) == 0:
		return "the exposition has no series at all"
	case e.Dialect != "":
		return "none of the " + e.Dialect + " series inferscope reads found (saw: " + strings.Join(e.Seen, ", ") + ")"
	case e.Wanted != "":
		return "no " + e.Wanted + " series found (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
	}
	return "no inference-server series found (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
}

// ErrUnknownDialect is returned for a --dialect name that is not supported.
var ErrUnknownDialect = errors.New("unknown dialect")

// dialect is one server's reading of the exposition.
type dialect struct {
	name  string
	title string // the server's own spelling of its name, for people
	// match reports whether a family name belongs to this server.
	match func(name string) bool
	// read fills the canonical snapshot from the families.
	read func(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error
	// startHeaderIsTime says the server's Process-Start-Time-Unix header is
	// Unix seconds (tabbyAPI); llama.cpp sends a monotonic clock under the
	// same name.
	startHeaderIsTime bool
	// advice is the server's wording for notes that name its knobs.
	advice snapshot.Advice
	// partLabel tells apart the units a server's figures add up from
	// (vLLM's data-parallel engines, SGLang's DP ranks): parts.go reads
	// each on its own; "" for a server of one.
	partLabel string
}

// all lists the supported dialects; detection prefers the one with most
// families when a scrape mixes them.
var all = []dialect{tabbyAPI, vllm, aphrodite, llamaCpp, sglang, tgi, trtllm, dynamo, lmdeploy}

// Names lists the supported dialect names.
func Names() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.name
	}
	return out
}

// Titles lists the supported servers as people spell them ("vLLM"), in
// the order of [Names].
func Titles() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.title
	}
	return out
}

// Map reads families into a canonical snapshot. Source, ScrapedAt and the
// other scrape fields are left for the caller to fill.
//
// Every series is checked first: one whose values cannot be (a counter
// below zero, buckets that fall, ±Inf) is left out of what the dialect
// reads and listed in Snapshot.Invalid. An exposition in which the dialect
// finds nothing it recognises is an *UnknownError, never an empty report.
func Map(fams []*dto.MetricFamily, o Options) (*snapshot.Snapshot, error) {
	valid, problems := validate(fams)
	d, err := pick(fams, o.Dialect)
	if err != nil {
		var ue *UnknownError
		if errors.As(err, &ue) {
			ue.Readable = readable(valid)
		}
		return nil, err
	}
	s, err := read(d, valid, o)
	if err != nil {
		return nil, err
	}
	if len(problems) == 0 && !recognised(s) {
		return nil, &UnknownError{Prefixes: Prefixes(fams), Wanted: o.Dialect, Dialect: d.name, Seen: familyNames(fams, d.match, 8), Readable: readable(valid)}
	}
	s.Raw = fams
	s.Invalid = capProblems(append(problems, s.Invalid...))
	if o.Parts {
		s.Parts = readParts(d, valid, o, s)
	}
	return s, nil
}

// read runs one dialect over families that passed validation.
func read(d dialect, fams []*dto.MetricFamily, o Options) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{
		Dialect:    d.name,
		Scalars:    map[string]float64{},
		Histograms: map[string]*histogram.Histogram{},
		Extra:      map[string]float64{},
		Model:      o.Model,
		Advice:     d.advice,
	}
	if d.startHeaderIsTime {
		s.HeaderStart = o.StartHeader
	}
	if err := d.read(fams, o, s); err != nil {
		return nil, fmt.Errorf("reading %s series: %w", d.name, err)
	}
	halfRatios(s)
	return s, nil
}

// recognised reports whether a reading found anything the server publishes:
// any canonical figure but the process start, which every process has.
func recognised(s *snapshot.Snapshot) bool {
	if len(s.Histograms) > 0 || len(s.Extra) > 0 {
		return true
	}
	for k := range s.Scalars {
		if k != snapshot.ProcessStartTimeSeconds {
			return true
		}
	}
	return false
}

// readable lists the dialects that recognise something in fams when forced.
func readable(fams []*dto.MetricFamily) []string {
	var out []string
	for _, d := range all {
		if len(familyNames(fams, d.match, 1)) == 0 {
			continue
		}
		if s, err := read(d, fams, Options{}); err == nil && recognised(s) {
			out = append(out, d.name)
		}
	}
	return out
}

// familyNames lists up to max family names that match, made safe to print.
func familyNames(fams []*dto.MetricFamily, match func(string) bool, max int) []string {
	var out []string
	for _, mf := range fams {
		if len(out) == max {
			break
		}
		if match(mf.GetName()) {
			out = append(out, termsafe.Line(mf.GetName(), 80))
		}
	}
	return out
}

// ratioPairs are canonical counters that only mean something together:
// one without the other is a hit rate or acceptance rate with half missing.
var ratioPairs = []struct{ a, b, what string }{
	{snapshot.PrefixCacheQueries, snapshot.PrefixCacheHits, "prefix-cache hit rate"},
	{snapshot.SpecDecodeNumDraftTokensTotal, snapshot.SpecDecodeNumAcceptedTokensTotal, "draft acceptance"},
}

// halfRatios drops one half of a ratio published without the other (a cut
// paste, a server that lost one) and says which half is missing.
func halfRatios(s *snapshot.Snapshot) {
	for _, r := range ratioPairs {
		_, okA := s.Scalars[r.a]
		_, okB := s.Scalars[r.b]
		switch {
		case okA && !okB:
			delete(s.Scalars, r.a)
			s.Missing = append(s.Missing, fmt.Sprintf("%s: the scrape has %s but no %s", r.what, r.a, r.b))
		case okB && !okA:
			delete(s.Scalars, r.b)
			s.Missing = append(s.Missing, fmt.Sprintf("%s: the scrape has %s but no %s", r.what, r.b, r.a))
		}
	}
}

func pick(fams []*dto.MetricFamily, name string) (dialect, error) {
	if name != "" {
		for _, d := range all {
			if d.name != name {
				continue
			}
			for _, mf := range fams {
				if d.match(mf.GetName()) {
					return d, nil
				}
			}
			// A forced dialect with none of its series would be an empty report.
			return dialect{}, &UnknownError{Prefixes: Prefixes(fams), Wanted: name}
		}
		return dialect{}, fmt.Errorf("%w %s (known: %s)", ErrUnknownDialect, termsafe.Quote(name), strings.Join(Names(), ", "))
	}
	best, bestN := -1, 0
	for i, d := range all {
		n := 0
		for _, mf := range fams {
			if d.match(mf.GetName()) {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return dialect{}, &UnknownError{Prefixes: Prefixes(fams)}
	}
	return all[best], nil
}

// Prefixes lists the distinct name prefixes in fams: the part before the
// first colon, else before the first underscore.
func Prefixes(fams []*dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, mf := range fams {
		n := mf.GetName()
		if i := strings.IndexByte(n, ':'); i > 0 {
			seen[n[:i+1]] = true
		} else if i := strings.IndexByte(n, '_'); i > 0 {
			seen[n[:i+1]] = true
		} else {
			seen[n] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Sum adds a family's sample values across all its series (counters,
// gauges, untyped), skipping NaN samples; ok is false when the family has no
// usable sample. For a single unlabelled NaN sample it returns NaN, ok: the
// series exists but has no value yet.
func Sum(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (v float64, ok bool) {
	nan := false
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		var x float64
		switch {
		case m.Counter != nil:
			x = m.GetCounter().GetValue()
		case m.Gauge != nil:
			x = m.GetGauge().GetValue()
		case m.Untyped != nil:
			x = m.GetUntyped().GetValue()
		default:
			continue
		}
		if math.IsNaN(x) {
			nan = true
			continue
		}
		v += x
		ok = true
	}
	if !ok && nan {
		return math.NaN(), true
	}
	return v, ok
}

// Hist merges a family's histogram series, or returns nil when it has none.
// A series without _sum (or with a NaN one) makes the merge NoSum; one
// with neither _count nor a +Inf bucket makes it NoTop, its total taken as
// its last bucket's count, a lower bound.
// Series with equal bucket bounds add bound by bound, as sum by (le) would.
// Where their ladders differ (vLLM sizes its token buckets by each model's
// context length) the merged ladder is the union of bounds, and a series
// that lacks a bound counts what it has at its next lower bound: a lower
// estimate, exact at every bound all series share, instead of leaving the
// series out of that bucket altogether.
func Hist(mf *dto.MetricFamily, keep func(*dto.Metric) bool) *histogram.Histogram {
	var h *histogram.Histogram
	var series [][]histogram.Bucket
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		dh := m.GetHistogram()
		if dh == nil {
			continue
		}
		if h == nil {
			h = &histogram.Histogram{}
		}
		// A paste cut short can lack _sum, _count or the +Inf bucket: what
		// it lacks is unknown, never 0.
		if s := dh.GetSampleSum(); dh.SampleSum == nil || math.IsNaN(s) {
			h.NoSum = true
		} else {
			h.Sum += s
		}
		bs, n, noTop := seriesLadder(dh)
		h.Count += n
		h.NoTop = h.NoTop || noTop
		series = append(series, bs)
	}
	if h == nil {
		return nil
	}
	h.Buckets = histogram.MergeLadders(series)
	h.Normalize()
	return h
}

// seriesLadder is one series' buckets in order of bound, ending with +Inf,
// and its total. With neither _count nor a +Inf bucket (noTop) the total
// is only at least the last bucket's count, and the +Inf bucket added
// says no more.
func seriesLadder(dh *dto.Histogram) (bs []histogram.Bucket, n float64, noTop bool) {
	bs = make([]histogram.Bucket, 0, len(dh.GetBucket())+1)
	for _, b := range dh.GetBucket() {
		if !math.IsNaN(b.GetUpperBound()) {
			bs = append(bs, histogram.Bucket{UpperBound: b.GetUpperBound(), Count: cumulative(b)})
		}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	hasTop := len(bs) > 0 && math.IsInf(bs[len(bs)-1].UpperBound, 1)
	switch {
	case dh.SampleCount != nil || dh.SampleCountFloat != nil:
		n = float64(dh.GetSampleCount()) + dh.GetSampleCountFloat()
	case hasTop:
		n = bs[len(bs)-1].Count
	default:
		noTop = true
		if len(bs) > 0 {
			n = bs[len(bs)-1].Count
		}
	}
	if !hasTop {
		bs = append(bs, histogram.Bucket{UpperBound: math.Inf(1), Count: n})
	}
	return bs, n, noTop
}

// cumulative is a bucket's cumulative count, integer and float parts
// together.
func cumulative(b *dto.Bucket) float64 {
	n := float64(b.GetCumulativeCount())
	if b.CumulativeCountFloat != nil {
		n += b.GetCumulativeCountFloat()
	}
	return n
}

// ModelError is a --model the scrape does not serve.
type ModelError struct {
	Model string
	// Models lists the models the scrape does serve, made safe to print
	// (and so to type back: a cleaned name selects its model); empty when
	// the server does not label its series by model.
	Models []string
	// Ambiguous is how many served models Model matches once their names
	// are cleaned, when that is more than one.
	Ambiguous int
}

func (e *ModelError) Error() string {
	model := termsafe.Line(e.Model, 200)
	switch {
	case len(e.Models) == 0:
		return fmt.Sprintf("model %q: this server does not label its series by model", model)
	case e.Ambiguous > 1:
		return fmt.Sprintf("model %q matches %d served models whose names differ only in control characters (models: %s)", model, e.Ambiguous, strings.Join(e.Models, ", "))
	}
	return fmt.Sprintf("model %q is not served here (models: %s)", model, strings.Join(e.Models, ", "))
}

// cleanModel is a model name as it can be shown and typed back.
func cleanModel(m string) string { return termsafe.Line(m, 0) }

// labelValue returns a series' label value and whether it has the label.
func labelValue(m *dto.Metric, name string) (string, bool) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}

// withLabel keeps series whose label name has one of values.
func withLabel(name string, values ...string) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool {
		v, ok := labelValue(m, name)
		if !ok {
			return false
		}
		for _, want := range values {
			if v == want {
				return true
			}
		}
		return false
	}
}

// both keeps series that a and b keep; a nil filter keeps everything.
func both(a, b func(*dto.Metric) bool) func(*dto.Metric) bool {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(m *dto.Metric) bool { return a(m) && b(m) }
}

// scalarValue is a counter, gauge or untyped sample's value.
func scalarValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// mean averages a family's samples across series, skipping NaN; ok is false
// when no sample is a number.
func mean(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (float64, bool) {
	sum, n := 0.0, 0
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		if v, ok := scalarValue(m); ok && !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// labelNumber parses a label value as a positive finite number ("None",
// "0" and garbage are not numbers here: an info series' unset field).
func labelNumber(m *dto.Metric, name string) (float64, bool) {
	s, ok := labelValue(m, name)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, false
	}
	return v, true
}

// counterNames lists the names a counter may be exposed under: with _total
// (text format) and without (OpenMetrics family names, TGI).
func counterNames(base string) []string {
	return []string{base + "_total", base}
}

// modelLabel is the label that names a served model; SGLang's first
// metrics used name instead (sglangFirstModelLabels).
var modelLabel = []string{"model_name"}

// modelOf returns the served model a series is labelled with, under the
// first of labels it has.
func modelOf(m *dto.Metric, labels []string) (string, bool) {
	for _, l := range labels {
		if v, ok := labelValue(m, l); ok {
			return v, true
		}
	}
	return "", false
}

// servedModels lists the distinct models labelled across the families a
// dialect owns, sorted.
func servedModels(fams []*dto.MetricFamily, owns func(string) bool, labels []string) []string {
	seen := map[string]bool{}
	for _, mf := range fams {
		if !owns(mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v, ok := modelOf(m, labels); ok && v != "" {
				seen[v] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// modelFilter resolves Options.Model against the models served: nil keeps
// everything; otherwise series labelled with another model are dropped and
// unlabelled ones (process series, info series) kept. A name that served
// none exactly selects the one model whose cleaned name it is (a label
// holding control characters is listed cleaned, and typed back so). It
// returns the model selected as served.
func modelFilter(models []string, model string, labels []string) (func(*dto.Metric) bool, string, error) {
	if model == "" {
		return nil, "", nil
	}
	if !slices.Contains(models, model) {
		var match []string
		for _, m := range models {
			if cleanModel(m) == model {
				match = append(match, m)
			}
		}
		if len(match) != 1 {
			shown := make([]string, len(models))
			for i, m := range models {
				shown[i] = cleanModel(m)
			}
			return nil, "", &ModelError{Model: model, Models: shown, Ambiguous: len(match)}
		}
		model = match[0]
	}
	return func(m *dto.Metric) bool {
		v, ok := modelOf(m, labels)
		return !ok || v == model
	}, model, nil
}

// pickModel is modelFilter over s's served models, the model selected set
// as s's.
func pickModel(s *snapshot.Snapshot, model string, labels []string) (func(*dto.Metric) bool, error) {
	keep, picked, err := modelFilter(s.Models, model, labels)
	if picked != "" {
		s.Model = picked
	}
	return keep, err
}

// mapper fills one snapshot from indexed families through a model filter.
type mapper struct {
	byName map[string]*dto.MetricFamily
	keep   func(*dto.Metric) bool
	s      *snapshot.Snapshot
}

func newMapper(fams []*dto.MetricFamily, keep func(*dto.Metric) bool, s *snapshot.Snapshot) *mapper {
	p := &mapper{byName: make(map[string]*dto.MetricFamily, len(fams)), keep: keep, s: s}
	for _, mf := range fams {
		if _, dup := p.byName[mf.GetName()]; !dup {
			p.byName[mf.GetName()] = mf
		}
	}
	return p
}

// fam returns the first of names present with a series the filter keeps.
func (p *mapper) fam(names ...string) *dto.MetricFamily {
	for _, n := range names {
		mf := p.byName[n]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			if p.keep == nil || p.keep(m) {
				return mf
			}
		}
	}
	return nil
}

// sum is Sum over the first family of names present.
func (p *mapper) sum(names ...string) (float64, bool) {
	mf := p.fam(names...)
	if mf == nil {
		return 0, false
	}
	return Sum(mf, p.keep)
}

// scalar sets a canonical scalar from the first family of names present
// (NaN included: the series exists, its value does not yet).
func (p *mapper) scalar(canon string, names ...string) bool {
	v, ok := p.sum(names...)
	if ok {
		p.s.Scalars[canon] = v
	}
	return ok
}

// hist sets a canonical histogram from the first family of names present.
func (p *mapper) hist(canon string, names ...string) *histogram.Histogram {
	mf := p.fam(names...)
	if mf == nil {
		return nil
	}
	h := Hist(mf, p.keep)
	if h != nil {
		p.s.Histograms[canon] = h
	}
	return h
}

// extra sets a dialect-only figure, leaving NaN out.
func (p *mapper) extra(key string, v float64) {
	if !math.IsNaN(v) {
		p.s.Extra[key] = v
	}
}

// extraSum sets an Extra figure from the first family of names present.
func (p *mapper) extraSum(key string, names ...string) {
	if v, ok := p.sum(names...); ok {
		p.extra(key, v)
	}
}

// extraByLabel sets Extra[prefix+value] to the sum of each value of label.
func (p *mapper) extraByLabel(prefix, label string, names ...string) {
	p.extraByLabels(prefix, []string{label}, names...)
}

// extraByLabels is extraByLabel where servers spell the label more than
// one way: each series is read by the first of labels it carries.
func (p *mapper) extraByLabels(prefix string, labels []string, names ...string) {
	mf := p.fam(names...)
	if mf == nil {
		return
	}
	sums := map[string]float64{}
	for _, m := range mf.GetMetric() {
		if p.keep != nil && !p.keep(m) {
			continue
		}
		var lv string
		ok := false
		for _, label := range labels {
			if lv, ok = labelValue(m, label); ok {
				break
			}
		}
		if !ok {
			continue
		}
		if v, ok := scalarValue(m); ok && !math.IsNaN(v) {
			sums[lv] += v
		}
	}
	for lv, v := range sums {
		p.extra(prefix+lv, v)
	}
}

// missing adds a line about a quantity the server does not publish.
func (p *mapper) missing(format string, a ...any) {
	p.s.Missing = append(p.s.Missing, fmt.Sprintf(format, a...))
}

// processStart copies the standard process_start_time_seconds series when
// the server's registry has one, and says why when it does not.
func (p *mapper) processStart(why string) {
	if p.scalar(snapshot.ProcessStartTimeSeconds, "process_start_time_seconds") {
		return
	}
	if why != "" {
		p.missing("%s", why)
	}
}

// invalid records a series whose value is impossible for what the dialect
// takes it to be (a fraction above 1); the figure is left unset.
func (p *mapper) invalid(mf *dto.MetricFamily, m *dto.Metric, reason string) {
	p.s.Invalid = append(p.s.Invalid, snapshot.Problem{Series: seriesName(mf.GetName(), m), Reason: reason})
}

// ratioOK checks that every kept series of a ratio gauge lies in 0..1 once
// divided by scale (100 for a percent), recording each that does not. A
// value a little above 1 from rounding is let through.
func (p *mapper) ratioOK(mf *dto.MetricFamily, keep func(*dto.Metric) bool, scale float64, unit string) bool {
	ok := true
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		v, isScalar := scalarValue(m)
		if !isScalar || math.IsNaN(v) {
			continue
		}
		if f := v / scale; f < 0 || f > 1+1e-6 {
			p.invalid(mf, m, fmt.Sprintf("%s is impossible for a %s (%s)", num(v), unit, ratioRange(scale)))
			ok = false
		}
	}
	return ok
}

func ratioRange(scale float64) string {
	if scale == 100 {
		return "0 to 100"
	}
	return "0 to 1"
}
