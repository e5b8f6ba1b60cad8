package fleet

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/exposition"
)

// point is one series' value at one time: a float, or a native histogram.
type point struct {
	metric model.Metric // with __name__
	value  float64
	hist   *model.SampleHistogram
}

// metaFunc returns what the store knows of a family ("", "" when nothing).
type metaFunc func(family string) (typ, help string)

// rebuilt is an instance's exposition as the scrape path would have read
// it.
type rebuilt struct {
	fams []*dto.MetricFamily
	// native counts the histograms read from native (or custom-bucket)
	// histogram values.
	native int
	// skipped counts series left out: names the text format cannot carry.
	skipped int
}

// rebuild writes an instance's points as a text exposition (0.0.4) and
// parses it with the scrape path's own parser, so that the families the
// dialect reads are exactly what it reads from a scrape: counters under
// their sample names (x_total), histograms as _bucket/_sum/_count, HELP
// and TYPE from the store's metadata where it has them. The labels the
// store or the scrape added (job, instance, pod, …) stay: they make no
// series of one instance collide, and no dialect reads them.
//
// What the store changed is undone: the _created series OpenMetrics
// scrapes add are dropped, and a native histogram (or one stored with
// custom buckets) is written as the classic histogram it stands for.
func rebuild(points []point, meta metaFunc) (*rebuilt, error) {
	out := &rebuilt{}
	fams := map[string]*family{}
	get := func(name, typ string) *family {
		f := fams[name]
		if f == nil {
			f = &family{name: name, typ: typ}
			fams[name] = f
		}
		return f
	}
	names := map[string]bool{}
	for _, p := range points {
		names[string(p.metric[model.MetricNameLabel])] = true
	}
	kinds := classify(names, meta)
	for _, p := range points {
		name := string(p.metric[model.MetricNameLabel])
		if !model.LegacyValidation.IsValidMetricName(name) {
			out.skipped++
			continue
		}
		if p.hist != nil {
			if names[name+"_bucket"] {
				continue // the store keeps the classic buckets too: read those
			}
			out.native++
			writeNative(get(name, "histogram"), p)
			continue
		}
		k := kinds[name]
		switch k.role {
		case roleCreated:
			continue
		case roleHistPart:
			get(k.family, "histogram").samples = append(get(k.family, "histogram").samples, sample{name: name, labels: p.metric, value: p.value})
			continue
		case roleSummaryPart:
			get(k.family, "summary").samples = append(get(k.family, "summary").samples, sample{name: name, labels: p.metric, value: p.value})
			continue
		}
		f := get(name, k.typ)
		f.samples = append(f.samples, sample{name: name, labels: p.metric, value: p.value})
	}
	var b bytes.Buffer
	keys := make([]string, 0, len(fams))
	for k := range fams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := fams[k]
		_, help := meta(f.name)
		if help == "" && f.typ == "counter" {
			_, help = meta(strings.TrimSuffix(f.name, "_total"))
		}
		f.write(&b, help)
	}
	parsed, err := exposition.Parse(b.Bytes(), exposition.Text)
	if err != nil {
		return nil, fmt.Errorf("the store's series do not make an exposition: %w", err)
	}
	out.fams = parsed
	return out, nil
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
	typ    string // TYPE of a family of its own: counter, gauge, untyped
}

// classify decides each name's family and type from the names present
// and the store's metadata. A histogram is a _bucket series whose _count
// or _sum is present too (or whose metadata says histogram); a summary
// needs its metadata. A counter is a name ending in _total, or one the
// metadata calls a counter; what the metadata calls a gauge is one;
// everything else is untyped, which every dialect reads as it reads a
// gauge or counter.
func classify(names map[string]bool, meta metaFunc) map[string]kind {
	out := make(map[string]kind, len(names))
	hist := map[string]bool{}
	summary := map[string]bool{}
	for n := range names {
		base, ok := strings.CutSuffix(n, "_bucket")
		if !ok {
			continue
		}
		t, _ := meta(base)
		if t == "histogram" || t == "gaugehistogram" || names[base+"_count"] || names[base+"_sum"] {
			hist[base] = true
		}
	}
	for n := range names {
		if t, _ := meta(n); t == "summary" {
			summary[n] = true
		}
	}
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
		t, _ := meta(n)
		if t == "" {
			t, _ = meta(strings.TrimSuffix(n, "_total"))
		}
		switch {
		case strings.HasSuffix(n, "_total") || t == "counter":
			out[n] = kind{typ: "counter"}
		case t == "gauge":
			out[n] = kind{typ: "gauge"}
		default:
			out[n] = kind{typ: "untyped"}
		}
	}
	return out
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

type sample struct {
	name   string
	labels model.Metric
	value  float64
}

type family struct {
	name    string
	typ     string
	samples []sample
}

func (f *family) write(b *bytes.Buffer, help string) {
	if help != "" {
		fmt.Fprintf(b, "# HELP %s %s\n", f.name, escapeHelp(help))
	}
	fmt.Fprintf(b, "# TYPE %s %s\n", f.name, f.typ)
	sort.SliceStable(f.samples, func(i, j int) bool { return f.samples[i].key() < f.samples[j].key() })
	for _, s := range f.samples {
		b.WriteString(s.name)
		writeLabels(b, s.labels)
		b.WriteByte(' ')
		b.WriteString(formatValue(s.value))
		b.WriteByte('\n')
	}
}

// key orders a family's samples: by labels other than le, then by name
// (_bucket, _count, _sum), then by le, as a scrape lists them.
func (s sample) key() string {
	var b strings.Builder
	for _, k := range sortedLabels(s.labels) {
		if k == "le" || k == model.MetricNameLabel {
			continue
		}
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(string(s.labels[model.LabelName(k)]))
		b.WriteByte(0)
	}
	b.WriteString(s.name)
	if le, ok := s.labels["le"]; ok {
		v, err := strconv.ParseFloat(string(le), 64)
		if err != nil {
			v = math.Inf(1)
		}
		// Sortable as text: the bits of a float, order-preserving.
		fmt.Fprintf(&b, "\x00%016x", sortableBits(v))
	}
	return b.String()
}

func sortableBits(v float64) uint64 {
	u := math.Float64bits(v)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

func sortedLabels(m model.Metric) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	return keys
}

func writeLabels(b *bytes.Buffer, m model.Metric) {
	first := true
	for _, k := range sortedLabels(m) {
		if k == model.MetricNameLabel {
			continue
		}
		if first {
			b.WriteByte('{')
			first = false
		} else {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(string(m[model.LabelName(k)])))
		b.WriteByte('"')
	}
	if !first {
		b.WriteByte('}')
	}
}

// The text format's escapes; a NUL, which no exposition may hold (the
// parser takes it for binary data), becomes U+FFFD.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`, "\x00", "\uFFFD")
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\x00", "\uFFFD")
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeNative adds a native histogram's classic form to f: a cumulative
// _bucket at every bucket's upper bound (custom buckets' own bounds; an
// exponential histogram's many), the +Inf bucket, _sum and _count.
func writeNative(f *family, p point) {
	h := p.hist
	type ub struct{ upper, count float64 }
	var bs []ub
	for _, b := range h.Buckets {
		if b == nil {
			continue
		}
		bs = append(bs, ub{float64(b.Upper), float64(b.Count)})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].upper < bs[j].upper })
	name := string(p.metric[model.MetricNameLabel])
	labels := func(le string) model.Metric {
		m := make(model.Metric, len(p.metric)+1)
		for k, v := range p.metric {
			m[k] = v
		}
		if le != "" {
			m["le"] = model.LabelValue(le)
		}
		return m
	}
	cum := 0.0
	for i, b := range bs {
		cum += b.count
		if i+1 < len(bs) && bs[i+1].upper == b.upper {
			continue
		}
		if math.IsInf(b.upper, 1) {
			break
		}
		f.samples = append(f.samples, sample{name: name + "_bucket", labels: labels(formatValue(b.upper)), value: cum})
	}
	f.samples = append(f.samples,
		sample{name: name + "_bucket", labels: labels("+Inf"), value: float64(h.Count)},
		sample{name: name + "_sum", labels: labels(""), value: float64(h.Sum)},
		sample{name: name + "_count", labels: labels(""), value: float64(h.Count)},
	)
}
