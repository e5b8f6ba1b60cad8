package promql

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Values are canonical quantities as a server would publish them at one
// moment: counters and gauges by snapshot name, histograms by theirs.
type Values struct {
	Scalars map[string]float64
	Hists   map[string]histogram.Histogram
}

// Families writes values as the families this library reads them from:
// the server's own names and labels, each series carrying labels (a
// target's, and values that satisfy the selector). It is the library read
// backwards, for tests a user can run (rules' --tests) and for checking
// that the dialect reads the same values back. A quantity the library does
// not read, or reads from a histogram's _sum or _count, is not written; a quantity
// made of several series (computed = all − cached) is written through the
// series it is made of, which the other values must give.
func (l *Library) Families(v Values, labels map[string]string) ([]*dto.MetricFamily, error) {
	w := &writer{l: l, labels: labels, fams: map[string]*dto.MetricFamily{}}
	names := make([]string, 0, len(v.Scalars)+len(v.Hists))
	for n := range v.Scalars {
		names = append(names, n)
	}
	for n := range v.Hists {
		names = append(names, n)
	}
	sort.Strings(names)
	// Single series first, then what is made of several, whose other
	// parts the single ones have written.
	var later []string
	for _, n := range names {
		s, ok := l.src[n]
		if !ok {
			continue
		}
		if len(s.terms) > 1 {
			later = append(later, n)
			continue
		}
		if err := w.one(n, s, v); err != nil {
			return nil, err
		}
	}
	for _, n := range later {
		if err := w.several(n, l.src[n], v.Scalars[n]); err != nil {
			return nil, err
		}
	}
	w.writeSums()
	w.remainders()
	out := make([]*dto.MetricFamily, 0, len(w.fams))
	for _, k := range w.order {
		out = append(out, w.fams[k])
	}
	return out, nil
}

type writer struct {
	l      *Library
	labels map[string]string
	fams   map[string]*dto.MetricFamily
	order  []string
	// totals are families read whole for one quantity and by a label for
	// others (vLLM's request_success: all reasons, and error alone): the
	// whole is written last, as the remainder under another label value.
	totals []total
	// sums are quantities read as several label values of a family
	// (SGLang's queries, mode=~"prefill_compute|prefill_cache"): written
	// last, and only where no other quantity wrote those series.
	sums []total
}

type total struct {
	r     ref
	value float64
}

func (w *writer) family(name string, t dto.MetricType) *dto.MetricFamily {
	f, ok := w.fams[name]
	if !ok {
		f = &dto.MetricFamily{Name: proto.String(name), Type: t.Enum()}
		w.fams[name] = f
		w.order = append(w.order, name)
	}
	return f
}

// seriesLabels are a ref's labels: the writer's, and what its matchers
// pick.
func (w *writer) seriesLabels(r ref) ([]*dto.LabelPair, error) {
	ls := map[string]string{}
	for k, v := range w.labels {
		ls[k] = v
	}
	for _, m := range r.match {
		v, err := satisfy(m)
		if err != nil {
			return nil, err
		}
		ls[m.Label] = v
	}
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*dto.LabelPair, len(keys))
	for i, k := range keys {
		out[i] = &dto.LabelPair{Name: proto.String(k), Value: proto.String(ls[k])}
	}
	return out, nil
}

// scalar writes one counter or gauge series; one series read for two
// quantities (llama.cpp's cached tokens are its hits) is written once, and
// must be given one value.
func (w *writer) scalar(r ref, kind snapshot.Kind, value float64) error {
	if x, ok := w.written(r); ok {
		if math.Abs(x-value) > 1e-9*math.Max(1, math.Abs(x)) {
			return fmt.Errorf("series %s is given two values, %g and %g", r.name, x, value)
		}
		return nil
	}
	ls, err := w.seriesLabels(r)
	if err != nil {
		return err
	}
	m := &dto.Metric{Label: ls}
	t := dto.MetricType_GAUGE
	if kind == snapshot.Counter {
		t = dto.MetricType_COUNTER
		m.Counter = &dto.Counter{Value: proto.Float64(value)}
	} else {
		m.Gauge = &dto.Gauge{Value: proto.Float64(value)}
	}
	f := w.family(r.name, t)
	f.Metric = append(f.Metric, m)
	return nil
}

// partitioned reports whether the library reads r's family by a label for
// another quantity, so that r's own series is the family's remainder.
func (w *writer) partitioned(r ref) bool {
	if len(r.match) > 0 {
		return false
	}
	for _, s := range w.l.src {
		for _, t := range s.terms {
			if t.ref.name == r.name && len(t.ref.match) > 0 {
				return true
			}
		}
	}
	return false
}

func (w *writer) one(name string, s source, v Values) error {
	t := s.terms[0]
	switch {
	case t.zero:
		return nil
	case s.kind == snapshot.Histogram:
		h, ok := v.Hists[name]
		if !ok {
			return nil
		}
		return w.hist(t.ref, h)
	case (strings.HasSuffix(t.ref.name, "_sum") || strings.HasSuffix(t.ref.name, "_count")) && !t.ref.bare:
		// A histogram's (or summary's) sum or count: written with the
		// histogram, where it is a canonical one, else not at all.
		return nil
	}
	x, ok := v.Scalars[name]
	if !ok {
		return nil
	}
	if w.partitioned(t.ref) {
		w.totals = append(w.totals, total{t.ref, x})
		return nil
	}
	for _, m := range t.ref.match {
		if m.Op == Match {
			w.sums = append(w.sums, total{t.ref, x})
			return nil
		}
	}
	return w.scalar(t.ref, s.kind, x)
}

// several writes a quantity made of several series: the one its other
// parts leave unknown is given what makes the whole come out at value.
// Where several parts that add are unknown (LMDeploy's requests waiting at
// the engine and for a request handle), the first takes the whole and the
// others none.
func (w *writer) several(name string, s source, value float64) error {
	known := 0.0
	var unknown []*term
	for i, t := range s.terms {
		x, ok := w.written(t.ref)
		switch {
		case ok && t.neg:
			known -= x
		case ok:
			known += x
		default:
			unknown = append(unknown, &s.terms[i])
		}
	}
	if len(unknown) == 0 {
		return nil // its parts were all given
	}
	for _, t := range unknown[1:] {
		if t.neg || unknown[0].neg {
			return fmt.Errorf("cannot write %s: two of its series are unknown", name)
		}
	}
	x := value - known
	if unknown[0].neg {
		x = known - value
	}
	if err := w.scalar(unknown[0].ref, s.kind, x); err != nil {
		return err
	}
	for _, t := range unknown[1:] {
		if err := w.scalar(t.ref, s.kind, 0); err != nil {
			return err
		}
	}
	return nil
}

// written finds the value written for a ref's series.
func (w *writer) written(r ref) (float64, bool) {
	f, ok := w.fams[r.name]
	if !ok {
		return 0, false
	}
	want, err := w.seriesLabels(r)
	if err != nil {
		return 0, false
	}
	for _, m := range f.Metric {
		if sameLabels(m.GetLabel(), want) {
			if m.Counter != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func sameLabels(a, b []*dto.LabelPair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetName() != b[i].GetName() || a[i].GetValue() != b[i].GetValue() {
			return false
		}
	}
	return true
}

// writeSums writes each quantity read as several label values, unless
// other quantities wrote series it reads.
func (w *writer) writeSums() {
	for _, t := range w.sums {
		covered := false
		if f, ok := w.fams[t.r.name]; ok {
			for _, m := range f.Metric {
				covered = covered || picks(t.r.match, m.GetLabel())
			}
		}
		if !covered {
			_ = w.scalar(t.r, snapshot.Counter, t.value)
		}
	}
}

// picks reports whether matchers select a series with labels ls.
func picks(ms []Matcher, ls []*dto.LabelPair) bool {
	for _, m := range ms {
		v := ""
		for _, lp := range ls {
			if lp.GetName() == m.Label {
				v = lp.GetValue()
			}
		}
		if !matches(m, v) {
			return false
		}
	}
	return true
}

// remainders writes each partitioned whole as the rest of its family,
// under a label value no matcher picks.
func (w *writer) remainders() {
	for _, t := range w.totals {
		rest := t.value
		label := ""
		if f, ok := w.fams[t.r.name]; ok {
			for _, m := range f.Metric {
				rest -= m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		for _, s := range w.l.src {
			for _, x := range s.terms {
				if x.ref.name == t.r.name && len(x.ref.match) > 0 {
					label = x.ref.match[0].Label
				}
			}
		}
		r := t.r
		r.match = []Matcher{{Label: label, Op: Equal, Value: "other"}}
		// The partition's own matchers never pick "other".
		_ = w.scalar(r, snapshot.Counter, math.Max(rest, 0))
	}
}

// hist writes one histogram series.
func (w *writer) hist(r ref, h histogram.Histogram) error {
	ls, err := w.seriesLabels(r)
	if err != nil {
		return err
	}
	dh := &dto.Histogram{SampleCount: proto.Uint64(uint64(h.Count)), SampleSum: proto.Float64(h.Sum)}
	for _, b := range h.Buckets {
		dh.Bucket = append(dh.Bucket, &dto.Bucket{UpperBound: proto.Float64(b.UpperBound), CumulativeCount: proto.Uint64(uint64(b.Count))})
	}
	f := w.family(r.name, dto.MetricType_HISTOGRAM)
	f.Metric = append(f.Metric, &dto.Metric{Label: ls, Histogram: dh})
	return nil
}

// ExampleLabels are labels for series written by [Library.Families] that
// every selector of the library matches and that tell one instance apart:
// target's, a placeholder for each aggregation label target lacks, and a
// value satisfying each matcher of the selector.
func (l *Library) ExampleLabels(target map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range target {
		out[k] = v
	}
	for _, b := range l.by {
		if _, ok := out[b]; !ok {
			out[b] = b + "-1"
		}
	}
	for _, m := range l.sel {
		if v, ok := out[m.Label]; ok && matches(m, v) {
			continue
		}
		v, err := satisfy(m)
		if err != nil {
			return nil, err
		}
		out[m.Label] = v
	}
	for _, m := range l.sel {
		if !matches(m, out[m.Label]) {
			return nil, fmt.Errorf("no label values found that satisfy every matcher of the selector (%s)", m)
		}
	}
	return out, nil
}

// matches reports whether a label value satisfies a matcher.
func matches(m Matcher, v string) bool {
	switch m.Op {
	case Equal:
		return v == m.Value
	case NotEqual:
		return v != m.Value
	}
	re, err := regexp.Compile("^(?s:" + m.Value + ")$")
	if err != nil {
		return false
	}
	return re.MatchString(v) == (m.Op == Match)
}

// satisfy finds a label value a matcher accepts.
func satisfy(m Matcher) (string, error) {
	var candidates []string
	switch m.Op {
	case Equal:
		return m.Value, nil
	case Match:
		if s, ok := shortest(m.Value); ok {
			candidates = append(candidates, s)
		}
	}
	candidates = append(candidates, "example", "x", "other-1", "0")
	for _, c := range candidates {
		if matches(m, c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("no label value found that satisfies %s", m)
}

// shortest writes a short string a regular expression matches, when it
// can tell one.
func shortest(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	ok := sample(re.Simplify(), &b)
	return b.String(), ok
}

func sample(re *syntax.Regexp, b *strings.Builder) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
		return true
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return false
		}
		b.WriteRune(re.Rune[0])
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
		return true
	case syntax.OpCapture, syntax.OpPlus:
		return sample(re.Sub[0], b)
	case syntax.OpRepeat:
		for range re.Min {
			if !sample(re.Sub[0], b) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !sample(s, b) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return sample(re.Sub[0], b)
	}
	return false
}
