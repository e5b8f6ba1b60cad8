package fleet

import (
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// point is one series' value at one time: a float, or a native histogram.
type point struct {
	metric model.Metric // with __name__
	value  float64
	hist   *model.SampleHistogram
}

// metaFunc returns what the store knows of a family ("", "" when nothing).
type metaFunc func(family string) (typ, help string)

// rebuilt is an instance's families as the scrape path would have read
// them.
type rebuilt struct {
	fams []*dto.MetricFamily
	// native counts the histograms read from native (or custom-bucket)
	// histogram values.
	native int
}

// rebuild turns an instance's points into the metric families its scrape
// would have parsed into (exposition.Parse of the text format), so that
// the dialect reads exactly what it reads from a scrape: a counter under
// its sample name (x_total) typed counter, a histogram assembled from its
// _bucket, _sum and _count series, HELP and TYPE from the store's metadata
// where it has them. The labels the store or the scrape added (job,
// instance, pod, …) stay: they keep the series of one instance apart, and
// no dialect reads them.
//
// What the store changed is undone: the _created series OpenMetrics
// scrapes add are dropped, and a native histogram (or one stored with
// custom buckets) becomes the classic histogram it stands for. Counts keep
// their fractions (CumulativeCountFloat, SampleCountFloat), which a
// store's arithmetic can give them.
//
// known names histogram bases the caller knows of (from another reading
// of the same instance) whose buckets these points may leave out: their
// _sum and _count still make a histogram, without buckets.
func rebuild(points []point, meta metaFunc, known ...string) *rebuilt {
	out := &rebuilt{}
	names := make(map[string]bool, len(points))
	for _, p := range points {
		names[string(p.metric[model.MetricNameLabel])] = true
	}
	kinds := classify(names, meta, known)
	b := builder{fams: map[string]*dto.MetricFamily{}, parts: map[partKey]*dto.Metric{}}
	for _, p := range points {
		name := string(p.metric[model.MetricNameLabel])
		if !valid(p.metric) {
			continue
		}
		if p.hist != nil {
			if names[name+"_bucket"] {
				continue // the store keeps the classic buckets too: read those
			}
			out.native++
			b.native(name, p)
			continue
		}
		switch k := kinds[name]; k.role {
		case roleCreated:
		case roleHistPart:
			b.histPart(k.family, name, p)
		case roleSummaryPart:
			b.summaryPart(k.family, name, p)
		default:
			b.own(name, k.typ, p)
		}
	}
	out.fams = b.families(meta)
	return out
}

// valid reports a series a text exposition can carry: legacy metric and
// label names.
func valid(m model.Metric) bool {
	for k := range m {
		if k != model.MetricNameLabel && !model.LegacyValidation.IsValidLabelName(string(k)) {
			return false
		}
	}
	return model.LegacyValidation.IsValidMetricName(string(m[model.MetricNameLabel]))
}

// role is what a series is within its family.
type role int

const (
	roleOwn         role = iota // a family of its own
	roleHistPart                // a histogram's _bucket, _sum or _count
	roleSummaryPart             // a summary's quantiles, _sum or _count
	roleCreated                 // an OpenMetrics _created series
)

type kind struct {
	role   role
	family string // the histogram or summary a part belongs to
	typ    dto.MetricType
}

// classify decides each name's family and type from the names present
// and the store's metadata. A histogram is a _bucket series whose _count
// or _sum is present too (or whose metadata says histogram); a summary
// needs its metadata. A counter is a name ending in _total, or one the
// metadata calls a counter; what the metadata calls a gauge is one;
// everything else is untyped, which every dialect reads as it reads a
// gauge or counter.
func classify(names map[string]bool, meta metaFunc, known []string) map[string]kind {
	out := make(map[string]kind, len(names))
	hist, summary := bases(names, meta, known)
	for n := range names {
		if base, ok := strings.CutSuffix(n, "_created"); ok && createdOf(base, names, hist, summary, meta) {
			out[n] = kind{role: roleCreated}
			continue
		}
		if base, ok := partOf(n, hist, "_bucket", "_sum", "_count"); ok {
			out[n] = kind{role: roleHistPart, family: base}
			continue
		}
		if base, ok := partOf(n, summary, "", "_sum", "_count"); ok {
			out[n] = kind{role: roleSummaryPart, family: base}
			continue
		}
		out[n] = kind{typ: ownType(n, meta)}
	}
	return out
}

// bases finds the histograms (a _bucket series with its _count or _sum,
// one the metadata calls a histogram, or one known) and the summaries
// (the metadata says so) among names.
func bases(names map[string]bool, meta metaFunc, known []string) (hist, summary map[string]bool) {
	hist, summary = map[string]bool{}, map[string]bool{}
	for _, k := range known {
		hist[k] = true
	}
	for n := range names {
		if t, _ := meta(n); t == "summary" {
			summary[n] = true
		}
		base, ok := strings.CutSuffix(n, "_bucket")
		if !ok {
			continue
		}
		t, _ := meta(base)
		if t == "histogram" || t == "gaugehistogram" || names[base+"_count"] || names[base+"_sum"] {
			hist[base] = true
		}
	}
	return hist, summary
}

// ownType is the type of a family of its own: a counter by its _total or
// its metadata, a gauge by its metadata, else untyped.
func ownType(n string, meta metaFunc) dto.MetricType {
	t, _ := meta(n)
	if t == "" {
		t, _ = meta(strings.TrimSuffix(n, "_total"))
	}
	switch {
	case strings.HasSuffix(n, "_total") || t == "counter":
		return dto.MetricType_COUNTER
	case t == "gauge":
		return dto.MetricType_GAUGE
	}
	return dto.MetricType_UNTYPED
}

// createdOf reports whether base_created is the creation time OpenMetrics
// gives a counter, histogram or summary base.
func createdOf(base string, names, hist, summary map[string]bool, meta metaFunc) bool {
	if names[base+"_total"] || hist[base] || summary[base] {
		return true
	}
	t, _ := meta(base)
	return t == "counter" || t == "histogram" || t == "summary"
}

func partOf(n string, bases map[string]bool, suffixes ...string) (string, bool) {
	for _, s := range suffixes {
		if base, ok := strings.CutSuffix(n, s); ok && bases[base] {
			return base, true
		}
	}
	return "", false
}

// builder assembles families; parts holds each histogram's or summary's
// metric by family and the signature of its labels, as its series arrive.
type builder struct {
	fams  map[string]*dto.MetricFamily
	parts map[partKey]*dto.Metric
}

type partKey struct {
	family string
	sig    uint64
}

func (b *builder) family(name string, typ dto.MetricType) *dto.MetricFamily {
	f := b.fams[name]
	if f == nil {
		f = &dto.MetricFamily{Name: &name, Type: typ.Enum()}
		b.fams[name] = f
	}
	return f
}

// labels are a series' labels but its name and those named in skip.
func labels(m model.Metric, skip string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(m))
	for k, v := range m {
		if k == model.MetricNameLabel || string(k) == skip {
			continue
		}
		out = append(out, &dto.LabelPair{Name: ptr(string(k)), Value: ptr(strings.ToValidUTF8(string(v), "\uFFFD"))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func ptr[T any](v T) *T { return &v }

// without are the labels a histogram's or summary's series differ in.
var without = map[string]map[model.LabelName]struct{}{
	"le":       {model.MetricNameLabel: {}, "le": {}},
	"quantile": {model.MetricNameLabel: {}, "quantile": {}},
}

// part returns the metric a histogram's or summary's series adds to.
func (b *builder) part(family string, typ dto.MetricType, p point, skip string) *dto.Metric {
	sig := partKey{family, model.SignatureWithoutLabels(p.metric, without[skip])}
	m := b.parts[sig]
	if m == nil {
		m = &dto.Metric{Label: labels(p.metric, skip)}
		if typ == dto.MetricType_HISTOGRAM {
			m.Histogram = &dto.Histogram{}
		} else {
			m.Summary = &dto.Summary{}
		}
		b.parts[sig] = m
		f := b.family(family, typ)
		f.Metric = append(f.Metric, m)
	}
	return m
}

func (b *builder) histPart(family, name string, p point) {
	h := b.part(family, dto.MetricType_HISTOGRAM, p, "le").Histogram
	switch {
	case strings.HasSuffix(name, "_bucket"):
		le, err := strconv.ParseFloat(string(p.metric["le"]), 64)
		if err != nil || math.IsNaN(le) {
			return // the text parser refuses a bucket without a bound
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(le), CumulativeCountFloat: ptr(p.value)})
	case strings.HasSuffix(name, "_sum"):
		h.SampleSum = ptr(p.value)
	default:
		h.SampleCountFloat = ptr(p.value)
	}
}

func (b *builder) summaryPart(family, name string, p point) {
	s := b.part(family, dto.MetricType_SUMMARY, p, "quantile").Summary
	switch {
	case name == family:
		q, err := strconv.ParseFloat(string(p.metric["quantile"]), 64)
		if err == nil {
			s.Quantile = append(s.Quantile, &dto.Quantile{Quantile: ptr(q), Value: ptr(p.value)})
		}
	case strings.HasSuffix(name, "_sum"):
		s.SampleSum = ptr(p.value)
	case p.value >= 0 && p.value < math.MaxUint64:
		s.SampleCount = ptr(uint64(p.value)) // as the text parser reads it
	}
}

func (b *builder) own(name string, typ dto.MetricType, p point) {
	m := &dto.Metric{Label: labels(p.metric, "")}
	switch typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: ptr(p.value)}
	case dto.MetricType_GAUGE:
		m.Gauge = &dto.Gauge{Value: ptr(p.value)}
	default:
		m.Untyped = &dto.Untyped{Value: ptr(p.value)}
	}
	f := b.family(name, typ)
	f.Metric = append(f.Metric, m)
}

// native adds a native histogram as the classic one it stands for: a
// cumulative bucket at every bucket's upper bound (custom buckets' own
// bounds; an exponential histogram's many), and at its lower bound where
// the one before it ends lower (the store lists only buckets that hold
// observations; without that bound a classic reading would spread them
// down to the previous one), the +Inf bucket, sum and count.
func (b *builder) native(name string, p point) {
	h := b.part(name, dto.MetricType_HISTOGRAM, p, "le").Histogram
	type span struct{ lower, upper, count float64 }
	var bs []span
	for _, bk := range p.hist.Buckets {
		if bk != nil {
			bs = append(bs, span{float64(bk.Lower), float64(bk.Upper), float64(bk.Count)})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].upper < bs[j].upper })
	add := func(le, cum float64) {
		if n := len(h.Bucket); n > 0 && h.Bucket[n-1].GetUpperBound() == le {
			h.Bucket[n-1].CumulativeCountFloat = ptr(cum)
			return
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(le), CumulativeCountFloat: ptr(cum)})
	}
	cum := 0.0
	for _, bk := range bs {
		if n := len(h.Bucket); (n == 0 || h.Bucket[n-1].GetUpperBound() < bk.lower) && !math.IsInf(bk.lower, -1) {
			add(bk.lower, cum)
		}
		cum += bk.count
		if !math.IsInf(bk.upper, 1) {
			add(bk.upper, cum)
		}
	}
	h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(math.Inf(1)), CumulativeCountFloat: ptr(float64(p.hist.Count))})
	h.SampleSum = ptr(float64(p.hist.Sum))
	h.SampleCountFloat = ptr(float64(p.hist.Count))
}

// families returns the families sorted by name, each with its HELP and
// its series in label order, histograms' buckets in bound order.
func (b *builder) families(meta metaFunc) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(b.fams))
	for _, f := range b.fams {
		_, help := meta(f.GetName())
		if help == "" && f.GetType() == dto.MetricType_COUNTER {
			_, help = meta(strings.TrimSuffix(f.GetName(), "_total"))
		}
		if help != "" {
			f.Help = ptr(strings.ToValidUTF8(help, "\uFFFD"))
		}
		for _, m := range f.Metric {
			if h := m.Histogram; h != nil {
				sort.SliceStable(h.Bucket, func(i, j int) bool { return h.Bucket[i].GetUpperBound() < h.Bucket[j].GetUpperBound() })
			}
		}
		sortMetrics(f.Metric)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// sortMetrics orders a family's series by their labels, as a stable
// order for the dialects to read them in.
func sortMetrics(ms []*dto.Metric) {
	keys := make(map[*dto.Metric]string, len(ms))
	for _, m := range ms {
		var sb strings.Builder
		for _, lp := range m.GetLabel() {
			sb.WriteString(lp.GetName())
			sb.WriteByte(0)
			sb.WriteString(lp.GetValue())
			sb.WriteByte(0)
		}
		keys[m] = sb.String()
	}
	sort.SliceStable(ms, func(i, j int) bool { return keys[ms[i]] < keys[ms[j]] })
}
