package exporter

import (
	"bytes"
	"cmp"
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
	"google.golang.org/protobuf/types/known/timestamppb"
)

// textLayout is the fixed text of the exposition in one format, built once
// in New, so a scrape only appends numbers (and, with PerModel, labels)
// between prepared pieces. There is one for the text format 0.0.4 and one
// for OpenMetrics 1.0; the same code writes both. The result is byte for
// byte what expfmt writes for the same families in that format
// (TestTextMatchesExpfmt, TestServedMatchesGeneral and the fuzz targets
// hold it to that): the names are valid legacy names, so no escaping scheme
// changes them, and numbers are formatted by expfmt's rules.
type textLayout struct {
	om    bool                          // OpenMetrics: counters' _created lines, its number forms, # EOF
	order [numScalars + numHists]int    // family indexes (scalars, then numScalars+histogram) in name order
	name  [numScalars + numHists]string // full names, to merge the caller's families in
	// head is the # HELP and # TYPE lines of each family; sample is an
	// unlabelled scalar's name and a space.
	head   [numScalars + numHists][]byte
	sample [numScalars][]byte
	// created is `<name>_created` of each family that has a created time
	// in OpenMetrics (nil for the rest, and in the text format).
	created [numScalars + numHists][]byte
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

// newTextLayout prepares the text format 0.0.4's pieces, or OpenMetrics
// 1.0's with om. OpenMetrics names a counter family without its _total
// (whose samples keep it) and writes a counter named otherwise as
// "unknown"; help texts escape quotes too.
func newTextLayout(ns string, om bool) *textLayout {
	t := &textLayout{om: om}
	help := escapeHelp
	if om {
		help = escapeLabel
	}
	for i, d := range scalars {
		name := ns + ":" + d.name
		family, typ := name, "gauge"
		if d.kind != gauge {
			typ = "counter"
			if om {
				var total bool
				if family, total = strings.CutSuffix(name, "_total"); !total {
					typ = "unknown"
				}
			}
		}
		t.name[i] = name
		t.head[i] = []byte("# HELP " + family + " " + help(d.help) + "\n# TYPE " + family + " " + typ + "\n")
		t.sample[i] = []byte(name + " ")
		if om && d.created() {
			t.created[i] = []byte(family + "_created")
		}
	}
	for i, d := range hists {
		name := ns + ":" + d.name
		t.name[numScalars+i] = name
		t.head[numScalars+i] = []byte("# HELP " + name + " " + help(d.help) + "\n# TYPE " + name + " histogram\n")
		t.le[i] = t.bucketText(name+`_bucket{`, histBounds[i])
		t.leOnly[i] = t.bucketText("", histBounds[i])
		t.bucket[i] = []byte(name + `_bucket{`)
		t.inf[i] = []byte(name + `_bucket{le="+Inf"} `)
		t.sum[i] = []byte(name + "_sum")
		t.count[i] = []byte(name + "_count")
		if om {
			t.created[numScalars+i] = []byte(name + "_created")
		}
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
func (t *textLayout) bucketText(pre string, bounds []float64) [][]byte {
	out := make([][]byte, len(bounds))
	for i, b := range bounds {
		out[i] = t.appendValue([]byte(pre+`le="`), b)
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
		prompt: t.bucketText(t.name[numScalars+hPromptTokens]+`_bucket{`, l.bounds),
		gen:    t.bucketText(t.name[numScalars+hGenerationTokens]+`_bucket{`, l.bounds),
		leOnly: t.bucketText("", l.bounds),
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

// appendOMFloat formats f as expfmt's OpenMetrics encoder does: as
// appendFloat, with ".0" after a number that would otherwise have neither
// a point nor an exponent (1.0, 0.0, -1.0, 250.0).
func appendOMFloat(b []byte, f float64) []byte {
	n := len(b)
	b = appendFloat(b, f)
	if !math.IsNaN(f) && !math.IsInf(f, 0) && !bytes.ContainsAny(b[n:], "e.") {
		b = append(b, ".0"...)
	}
	return b
}

// appendValue appends a sample's value, a bound or a time in the layout's
// format.
func (t *textLayout) appendValue(b []byte, f float64) []byte {
	if t.om {
		return appendOMFloat(b, f)
	}
	return appendFloat(b, f)
}

// appendCount appends a histogram's bucket or _count: an integer in
// OpenMetrics, a float in the text format (1e+06 from a million).
func (t *textLayout) appendCount(b []byte, n uint64) []byte {
	if t.om {
		return strconv.AppendUint(b, n, 10)
	}
	return appendFloat(b, float64(n))
}

// createdText is a created time as OpenMetrics' _created lines write it:
// seconds since the epoch, from the time in nanoseconds, as expfmt
// computes them.
func createdText(ts *timestamppb.Timestamp) []byte {
	return appendOMFloat(nil, float64(ts.AsTime().UnixNano())/1e9)
}

// seriesText is one label set's figures for the text encoder. It holds no
// pointer into the reading, which then stays on the scraping goroutine's
// stack.
type seriesText struct {
	v  [numScalars]float64
	p  presence
	tt *tokenText
}

// callerFams are the caller's families (sorted by name) to merge into an
// exposition, the format to write them in, and what a family that cannot
// be served does: fail the exposition (WriteText), or, with lenient, be
// left out while everything else is served (the handler, as promhttp
// serves with ContinueOnError: a family the set already serves is dropped,
// and one whose encoding fails stops where it failed).
type callerFams struct {
	fams    []*dto.MetricFamily
	format  expfmt.Format
	lenient bool
}

// appendText appends the exposition of one reading in the layout's format,
// with the caller's families merged in by name.
func (t *textLayout) appendText(b []byte, m *Metrics, r *reading, x callerFams) ([]byte, error) {
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
	var first error // with lenient, the first family left out or cut short
	fail := func(err error) bool {
		first = cmp.Or(first, err)
		return !x.lenient
	}
	extra := x.fams
	for _, fi := range t.order {
		for len(extra) > 0 && extra[0].GetName() < t.name[fi] {
			var err error
			if b, err = appendFamily(b, extra[0], x.format); err != nil && fail(err) {
				return b, err
			}
			extra = extra[1:]
		}
		if len(extra) > 0 && extra[0].GetName() == t.name[fi] {
			if err := fmt.Errorf("exporter: the caller's registry has a family %s, which the metric set already serves", t.name[fi]); fail(err) {
				return b, err
			}
			extra = extra[1:]
		}
		if fi < numScalars && !rules[fi].perSeries {
			if ep.has(fi) {
				b = append(b, t.head[fi]...)
				b = t.appendScalar(b, fi, nil, ev[fi], m.createdText)
			}
			continue
		}
		b = t.appendSeries(b, fi, r, sets)
	}
	for _, mf := range extra {
		var err error
		if b, err = appendFamily(b, mf, x.format); err != nil && fail(err) {
			return b, err
		}
	}
	if t.om {
		b = append(b, "# EOF\n"...)
	}
	return b, first
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
			b = t.appendScalar(b, fi, tl.s.label, st.v[fi], tl.s.createdText)
		} else {
			i := fi - numScalars
			created := tl.s.createdText
			if i == hPromptTokens || i == hGenerationTokens {
				created = tl.tokens.createdText
			}
			hv := tl.histValues()
			b = t.appendHist(b, i, &hv[i], tl.s.label, st.tt, created)
		}
	}
	return b
}

// appendScalar appends one scalar sample, with its label if it has one,
// and in OpenMetrics the created time of a counter that has one.
func (t *textLayout) appendScalar(b []byte, fi int, label []byte, v float64, created []byte) []byte {
	if label == nil {
		b = append(b, t.sample[fi]...)
	} else {
		b = append(b, t.name[fi]...)
		b = append(b, '{')
		b = append(b, label...)
		b = append(b, "} "...)
	}
	b = t.appendValue(b, v)
	b = append(b, '\n')
	if t.created[fi] != nil {
		b = appendSuffixed(b, t.created[fi], label)
		b = append(b, created...)
		b = append(b, '\n')
	}
	return b
}

// appendHist appends one histogram series: its buckets, sum and count, and
// in OpenMetrics its created time.
func (t *textLayout) appendHist(b []byte, i int, h *histValue, label []byte, tt *tokenText, created []byte) []byte {
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
		b = t.appendCount(b, cum)
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
	b = t.appendCount(b, cum)
	b = append(b, '\n')
	b = appendSuffixed(b, t.sum[i], label)
	b = t.appendValue(b, h.sum)
	b = append(b, '\n')
	b = appendSuffixed(b, t.count[i], label)
	b = t.appendCount(b, cum)
	b = append(b, '\n')
	if t.created[numScalars+i] != nil {
		b = appendSuffixed(b, t.created[numScalars+i], label)
		b = append(b, created...)
		b = append(b, '\n')
	}
	return b
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

// appendFamily appends one of the caller's families, encoded by expfmt in
// the given format (with its escaping scheme, and in OpenMetrics with
// created lines, as the handler has always served them). What was written
// before an error stays, as it does in a response promhttp streams.
func appendFamily(b []byte, mf *dto.MetricFamily, format expfmt.Format) ([]byte, error) {
	w := appendWriter{&b}
	if err := expfmt.NewEncoder(w, format, expfmt.WithCreatedLines()).Encode(mf); err != nil {
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

// appendScrape takes one reading and appends its exposition in t's format,
// with the caller's families (gathered first) in the given format. With
// lenient, what cannot be served is left out, as by the handler; the
// error returned then only says what was.
func (m *Metrics) appendScrape(b []byte, t *textLayout, format expfmt.Format, lenient bool) ([]byte, error) {
	extra, err := m.reg.Gather()
	if err != nil {
		err = fmt.Errorf("exporter: gathering the caller's collectors: %w", err)
		if !lenient {
			return b, err
		}
	}
	var r reading
	m.read(&r)
	b, werr := t.appendText(b, m, &r, callerFams{extra, format, lenient})
	return b, cmp.Or(err, werr)
}

// writeText writes one scrape's text exposition to w.
func (m *Metrics) writeText(w io.Writer) error {
	bp := textBufs.Get().(*[]byte)
	b, err := m.appendScrape((*bp)[:0], m.text, expfmt.FmtText, false)
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
