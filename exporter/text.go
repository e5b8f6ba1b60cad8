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
// scrape only appends numbers between prepared pieces. The result is byte
// for byte what expfmt writes for the same families (TestTextMatchesExpfmt
// and the fuzz target hold it to that): the series have no labels, the
// names are valid legacy names, and numbers are formatted by expfmt's rule.
type textLayout struct {
	order [numScalars + numHists]int    // family indexes (scalars, then numScalars+histogram) in name order
	name  [numScalars + numHists]string // full names, to merge the caller's families in
	// head is the # HELP and # TYPE lines of each family; a scalar's also
	// ends with its sample's name and a space.
	head [numScalars + numHists][]byte
	// le is the `<name>_bucket{le="<bound>"} ` of each finite bound; the
	// token histograms' are in tokens, as their ladder changes.
	le              [numHists][][]byte
	inf, sum, count [numHists][]byte
	tokens          atomic.Pointer[tokenText]
}

// tokenText is the bucket text of the two token histograms for one ladder.
type tokenText struct {
	ladder *ladder
	prompt [][]byte
	gen    [][]byte
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
		t.head[i] = []byte("# HELP " + name + " " + escapeHelp(d.help) + "\n# TYPE " + name + " " + typ + "\n" + name + " ")
	}
	fixed := [numHists][]float64{
		hQueue: latencyBuckets[:], hPrefill: latencyBuckets[:], hDecode: latencyBuckets[:],
		hTTFT: ttftBuckets[:], hE2E: latencyBuckets[:], hAcceptance: acceptanceBuckets[:],
	}
	for i, d := range hists {
		name := ns + ":" + d.name
		t.name[numScalars+i] = name
		t.head[numScalars+i] = []byte("# HELP " + name + " " + escapeHelp(d.help) + "\n# TYPE " + name + " histogram\n")
		t.le[i] = bucketText(name, fixed[i])
		t.inf[i] = []byte(name + `_bucket{le="+Inf"} `)
		t.sum[i] = []byte(name + "_sum ")
		t.count[i] = []byte(name + "_count ")
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

// bucketText returns `<name>_bucket{le="<bound>"} ` for each bound.
func bucketText(name string, bounds []float64) [][]byte {
	out := make([][]byte, len(bounds))
	for i, b := range bounds {
		out[i] = appendFloat([]byte(name+`_bucket{le="`), b)
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
		prompt: bucketText(t.name[numScalars+hPromptTokens], l.bounds),
		gen:    bucketText(t.name[numScalars+hGenerationTokens], l.bounds),
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

// appendText appends the text exposition of one reading, with the caller's
// families (sorted by name, none sharing a name with the set) merged in.
func (t *textLayout) appendText(b []byte, m *Metrics, r *reading, extra []*dto.MetricFamily) ([]byte, error) {
	vals := r.scalarValues(m.start)
	hv := r.histValues()
	tt := t.tokenBuckets(r.t.tokens.ladder)
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
		b = append(b, t.head[fi]...)
		if fi < numScalars {
			b = appendFloat(b, vals[fi])
			b = append(b, '\n')
			continue
		}
		i := fi - numScalars
		h := &hv[i]
		le := t.le[i]
		switch i {
		case hPromptTokens:
			le = tt.prompt
		case hGenerationTokens:
			le = tt.gen
		}
		var cum uint64
		for j, pre := range le {
			cum += h.counts[j]
			b = append(b, pre...)
			b = appendFloat(b, float64(cum))
			b = append(b, '\n')
		}
		cum += h.counts[len(le)]
		b = append(b, t.inf[i]...)
		b = appendFloat(b, float64(cum))
		b = append(b, '\n')
		b = append(b, t.sum[i]...)
		b = appendFloat(b, h.sum)
		b = append(b, '\n')
		b = append(b, t.count[i]...)
		b = appendFloat(b, float64(cum))
		b = append(b, '\n')
	}
	for _, mf := range extra {
		var err error
		if b, err = appendFamily(b, mf); err != nil {
			return b, err
		}
	}
	return b, nil
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
