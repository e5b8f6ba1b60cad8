package exporter

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// textLayout is the fixed text of the exposition, built once in New, so a
// scrape only appends numbers (and, with PerModel, labels) between prepared
// pieces. The result is byte for byte what expfmt writes for the same
// families (TestTextMatchesExpfmt and the fuzz target hold it to that): the
// names are valid legacy names, and numbers are formatted by expfmt's rule.
type textLayout struct {
	order [numScalars + numHists]int    // family indexes (scalars, then numScalars+histogram) in name order
	name  [numScalars + numHists]string // full names, to merge the caller's families in
	// head is the # HELP and # TYPE lines of each family; sample is an
	// unlabelled scalar's name and a space.
	head   [numScalars + numHists][]byte
	sample [numScalars][]byte
	// le is the `<name>_bucket{le="<bound>"} ` of each finite bound for an
	// unlabelled series; the token histograms' are in tokens, as their
	// ladder changes. bucket is `<name>_bucket{`, to which a labelled
	// series adds its label, a comma and the bound's `le="<bound>"} `.
	le              [numHists][][]byte
	leOnly          [numHists][][]byte
	bucket          [numHists][]byte
	inf, sum, count [numHists][]byte
	tokens          atomic.Pointer[tokenText]
}

// tokenText is the bucket text of the two token histograms for one ladder.
type tokenText struct {
	ladder *ladder
	prompt [][]byte
	gen    [][]byte
	leOnly [][]byte
}

func newTextLayout(ns string) *textLayout {
	t := &textLayout{}
	for i, d := range scalars {
		name := ns + ":" + d.name
		typ := "gauge"
		if d.kind != gauge {
			typ = "counter"
		}
		t.name[i] = name
		t.head[i] = []byte("# HELP " + name + " " + escapeHelp(d.help) + "\n# TYPE " + name + " " + typ + "\n")
		t.sample[i] = []byte(name + " ")
	}
	for i, d := range hists {
		name := ns + ":" + d.name
		t.name[numScalars+i] = name
		t.head[numScalars+i] = []byte("# HELP " + name + " " + escapeHelp(d.help) + "\n# TYPE " + name + " histogram\n")
		t.le[i] = bucketText(name+`_bucket{`, histBounds[i])
		t.leOnly[i] = bucketText("", histBounds[i])
		t.bucket[i] = []byte(name + `_bucket{`)
		t.inf[i] = []byte(name + `_bucket{le="+Inf"} `)
		t.sum[i] = []byte(name + "_sum")
		t.count[i] = []byte(name + "_count")
	}
	for i := range t.order {
		t.order[i] = i
	}
	slices.SortFunc(t.order[:], func(a, b int) int { return strings.Compare(t.name[a], t.name[b]) })
	return t
}

// escapeHelp escapes a help text as the text format requires.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// bucketText returns `<pre>le="<bound>"} ` for each bound.
func bucketText(pre string, bounds []float64) [][]byte {
	out := make([][]byte, len(bounds))
	for i, b := range bounds {
		out[i] = appendFloat([]byte(pre+`le="`), b)
		out[i] = append(out[i], `"} `...)
	}
	return out
}

// tokenBuckets returns the token histograms' bucket text for a ladder,
// building it on the first scrape after a ladder change.
func (t *textLayout) tokenBuckets(l *ladder) *tokenText {
	if tt := t.tokens.Load(); tt != nil && tt.ladder == l {
		return tt
	}
	tt := &tokenText{
		ladder: l,
		prompt: bucketText(t.name[numScalars+hPromptTokens]+`_bucket{`, l.bounds),
		gen:    bucketText(t.name[numScalars+hGenerationTokens]+`_bucket{`, l.bounds),
		leOnly: bucketText("", l.bounds),
	}
	t.tokens.Store(tt)
	return tt
}

// appendFloat formats f as expfmt's text encoder does: 1, 0, -1, NaN, +Inf
// and -Inf spelled out, otherwise the shortest representation in %g form.
// Whole numbers below 10^6, every count most scrapes carry, take a shortcut
// with the same result (%g writes them without an exponent).
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case f > 0 && f < 1e6 && f == math.Trunc(f):
		return strconv.AppendUint(b, uint64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// seriesText is one label set's figures for the text encoder. It holds no
// pointer into the reading, which then stays on the scraping goroutine's
// stack.
type seriesText struct {
	v  [numScalars]float64
	p  presence
	tt *tokenText
}

// appendText appends the text exposition of one reading, with the caller's
// families (sorted by name, none sharing a name with the set) merged in.
func (t *textLayout) appendText(b []byte, m *Metrics, r *reading, extra []*dto.MetricFamily) ([]byte, error) {
	var ev [numScalars]float64
	r.engineValues(&ev, m.start)
	ep := enginePresence(m.unknown)
	n := r.count()
	var one [1]seriesText
	sets := one[:]
	if n != 1 {
		sets = make([]seriesText, n)
	}
	for k := range sets {
		st, tl := &sets[k], r.at(k)
		tl.values(&st.v)
		hv := tl.histValues()
		st.p = tl.presence(&hv)
		st.tt = t.tokenBuckets(tl.tokens.ladder)
	}
	for _, fi := range t.order {
		for len(extra) > 0 && extra[0].GetName() < t.name[fi] {
			var err error
			if b, err = appendFamily(b, extra[0]); err != nil {
				return b, err
			}
			extra = extra[1:]
		}
		if len(extra) > 0 && extra[0].GetName() == t.name[fi] {
			return b, fmt.Errorf("exporter: the caller's registry has a family %s, which the metric set already serves", t.name[fi])
		}
		if fi < numScalars && !rules[fi].perSeries {
			if ep.has(fi) {
				b = append(b, t.head[fi]...)
				b = append(b, t.sample[fi]...)
				b = appendFloat(b, ev[fi])
				b = append(b, '\n')
			}
			continue
		}
		b = t.appendSeries(b, fi, r, sets)
	}
	for _, mf := range extra {
		var err error
		if b, err = appendFamily(b, mf); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendSeries appends family fi's series, one per label set publishing
// it, after its head; nothing when none does.
func (t *textLayout) appendSeries(b []byte, fi int, r *reading, sets []seriesText) []byte {
	headed := false
	for k := range sets {
		st := &sets[k]
		if !st.p.has(fi) {
			continue
		}
		if !headed {
			b = append(b, t.head[fi]...)
			headed = true
		}
		tl := r.at(k)
		if fi < numScalars {
			b = t.appendScalar(b, fi, tl.s.label, st.v[fi])
		} else {
			hv := tl.histValues()
			b = t.appendHist(b, fi-numScalars, &hv[fi-numScalars], tl.s.label, st.tt)
		}
	}
	return b
}

// appendScalar appends one scalar sample, with its label if it has one.
func (t *textLayout) appendScalar(b []byte, fi int, label []byte, v float64) []byte {
	if label == nil {
		b = append(b, t.sample[fi]...)
	} else {
		b = append(b, t.name[fi]...)
		b = append(b, '{')
		b = append(b, label...)
		b = append(b, "} "...)
	}
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendHist appends one histogram series: its buckets, sum and count.
func (t *textLayout) appendHist(b []byte, i int, h *histValue, label []byte, tt *tokenText) []byte {
	le, leOnly := t.le[i], t.leOnly[i]
	switch i {
	case hPromptTokens:
		le, leOnly = tt.prompt, tt.leOnly
	case hGenerationTokens:
		le, leOnly = tt.gen, tt.leOnly
	}
	var cum uint64
	for j := range leOnly {
		cum += h.counts[j]
		if label == nil {
			b = append(b, le[j]...)
		} else {
			b = append(b, t.bucket[i]...)
			b = append(b, label...)
			b = append(b, ',')
			b = append(b, leOnly[j]...)
		}
		b = appendFloat(b, float64(cum))
		b = append(b, '\n')
	}
	cum += h.counts[len(leOnly)]
	if label == nil {
		b = append(b, t.inf[i]...)
	} else {
		b = append(b, t.bucket[i]...)
		b = append(b, label...)
		b = append(b, `,le="+Inf"} `...)
	}
	b = appendFloat(b, float64(cum))
	b = append(b, '\n')
	b = appendSuffixed(b, t.sum[i], label)
	b = appendFloat(b, h.sum)
	b = append(b, '\n')
	b = appendSuffixed(b, t.count[i], label)
	b = appendFloat(b, float64(cum))
	return append(b, '\n')
}

// appendSuffixed appends `<name>{<label>} `, or `<name> ` without a label.
func appendSuffixed(b, name, label []byte) []byte {
	b = append(b, name...)
	if label != nil {
		b = append(b, '{')
		b = append(b, label...)
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendFamily appends one of the caller's families, encoded by expfmt.
func appendFamily(b []byte, mf *dto.MetricFamily) ([]byte, error) {
	w := appendWriter{&b}
	if err := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain)).Encode(mf); err != nil {
		return b, fmt.Errorf("exporter: writing %s: %w", mf.GetName(), err)
	}
	return b, nil
}

// appendWriter appends to a byte slice. It has the methods expfmt uses
// directly, so expfmt does not wrap it in a bufio.Writer.
type appendWriter struct{ b *[]byte }

func (w appendWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

func (w appendWriter) WriteString(s string) (int, error) {
	*w.b = append(*w.b, s...)
	return len(s), nil
}

func (w appendWriter) WriteByte(c byte) error {
	*w.b = append(*w.b, c)
	return nil
}

func (w appendWriter) WriteRune(r rune) (int, error) {
	n := len(*w.b)
	*w.b = utf8.AppendRune(*w.b, r)
	return len(*w.b) - n, nil
}

// textBufs keeps scrape buffers between scrapes. A full exposition is about
// 20 KB; a buffer grown far beyond that by a caller's collectors is not kept.
var textBufs = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

const keepBuf = 1 << 20

// writeText writes one scrape's text exposition to w.
func (m *Metrics) writeText(w io.Writer) error {
	extra, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("exporter: gathering the caller's collectors: %w", err)
	}
	var r reading
	m.read(&r)
	bp := textBufs.Get().(*[]byte)
	b, err := m.text.appendText((*bp)[:0], m, &r, extra)
	if err == nil {
		if _, err = w.Write(b); err != nil {
			err = fmt.Errorf("exporter: writing the exposition: %w", err)
		}
	}
	if cap(b) <= keepBuf {
		*bp = b[:0]
		textBufs.Put(bp)
	}
	return err
}
