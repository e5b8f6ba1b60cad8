package exporter

import (
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/common/expfmt"
)

// servedFormats are the formats the handler negotiates, in its order of
// preference: promhttp's with OpenMetrics enabled.
var servedFormats = expfmt.DefaultOpenMetricsAcceptedFormats()

// serveHTTP answers a scrape as promhttp's handler over the prepared
// families (m.general) would, byte for byte once decompressed, but writes
// text and OpenMetrics with the code behind WriteText and compresses with
// pooled writers. What it does not write itself (protobuf, a name[]
// filter, zstd) it hands to m.general.
func (m *Metrics) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if m.err != nil {
		http.Error(w, m.err.Error(), http.StatusInternalServerError)
		return
	}
	// The Content-Type, with its escaping scheme, is expfmt's answer to the
	// Accept header, as in promhttp. Our names are valid legacy names, which
	// no escaping scheme changes; the caller's families are written with
	// the scheme negotiated.
	format := expfmt.NegotiateAccept(r.Header, servedFormats...)
	t := m.layoutFor(format)
	enc := negotiateEncoding(r.Header)
	if t == nil || enc == encZstd || filtered(r) {
		m.general.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	if m.startHeader != "" {
		h.Set("Process-Start-Time-Unix", m.startHeader)
	}
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))

	bp := textBufs.Get().(*[]byte)
	// What this leaves out (a caller's family that failed), promhttp with
	// ContinueOnError leaves out too, and tells no one: no error log is set.
	b, _ := m.appendScrape((*bp)[:0], t, format, true)
	if enc == encGzip {
		h.Set("Content-Encoding", "gzip")
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(w)
		// An error here is the client gone: there is no one to answer.
		_, _ = zw.Write(b)
		_ = zw.Close()
		zw.Reset(nil) // keep no reference to the response in the pool
		gzipWriters.Put(zw)
	} else {
		_, _ = w.Write(b)
	}
	if cap(b) <= keepBuf {
		*bp = b[:0]
		textBufs.Put(bp)
	}
}

// layoutFor is the layout that writes a negotiated format, nil for one
// the general path serves. NegotiateAccept returns one of servedFormats
// followed by its escaping parameter.
func (m *Metrics) layoutFor(f expfmt.Format) *textLayout {
	switch s := string(f); {
	case strings.HasPrefix(s, string(expfmt.FmtText)):
		return m.text
	case strings.HasPrefix(s, string(expfmt.FmtOpenMetrics_1_0_0)), strings.HasPrefix(s, string(expfmt.FmtOpenMetrics_0_0_1)):
		return m.om
	}
	return nil
}

// filtered reports whether the request names families with name[], which
// promhttp serves alone.
func filtered(r *http.Request) bool {
	return r.URL != nil && r.URL.RawQuery != "" && len(r.URL.Query()["name[]"]) > 0
}

// gzipWriters keeps compressors between scrapes, each with its tables.
// klauspost/compress at BestSpeed compresses a 20 KB scrape to 3.3 KB in
// about 40 µs; the standard library takes 80 µs at BestSpeed and 240 µs at
// its default level, promhttp's (2.8 KB), far more than writing the text
// (see docs/performance.md).
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// encoding is a response's content encoding.
type encoding uint8

const (
	encIdentity encoding = iota
	encGzip
	encZstd
	numEncodings
)

// offers are the content encodings in promhttp's order of preference when
// zstd support is linked in (promhttp/zstd); without it, zstd is not
// offered, which changes an answer only where zstd would win.
var offers = [numEncodings]string{encIdentity: "identity", encGzip: "gzip", encZstd: "zstd"}

// negotiateEncoding chooses the content encoding as promhttp does (it
// uses golang/gddo's httputil.NegotiateContentEncoding): the offer that
// the highest quality any Accept-Encoding clause gives it, by its name or
// "*", the earlier offer on a tie, and identity when no clause names an
// offer or the best quality is 0. Offer names match case-sensitively, and
// "*" also names identity, which comes first: "gzip, *" is answered
// uncompressed. Clauses are read as gddo reads them (see
// qualities.line), so a malformed header gets the answer promhttp gives it
// (FuzzNegotiation holds the two to the same answers).
func negotiateEncoding(h http.Header) encoding {
	qs := qualities{-1, -1, -1}
	for _, line := range h["Accept-Encoding"] {
		qs.line(line)
	}
	best, bestQ := encIdentity, -1.0
	for e, q := range qs {
		if q > bestQ {
			best, bestQ = encoding(e), q
		}
	}
	if bestQ == 0 {
		return encIdentity
	}
	return best
}

// qualities is the highest quality an Accept-Encoding clause gave each
// offer; -1 where none named it.
type qualities [numEncodings]float64

// line reads one Accept-Encoding line: clauses `token[;q=quality]`
// separated by commas, a token being any run of token characters and '/'.
// Reading stops, with the clauses read so far kept, at an empty token, at
// a parameter other than q or a quality that does not start with 0 or 1
// (that clause is dropped), and after a clause followed by anything but a
// comma (that clause is kept).
func (qs *qualities) line(s string) {
	for {
		var value string
		value, s = cutToken(s)
		if value == "" {
			return
		}
		q := 1.0
		s = trimSpace(s)
		if rest, ok := strings.CutPrefix(s, ";"); ok {
			if rest, ok = strings.CutPrefix(trimSpace(rest), "q="); !ok {
				return
			}
			if q, s = cutQuality(rest); q < 0 {
				return
			}
		}
		for e, offer := range offers {
			// A quality that is NaN (see cutQuality) never wins.
			if (value == "*" || value == offer) && q > qs[e] {
				qs[e] = q
			}
		}
		rest, ok := strings.CutPrefix(trimSpace(s), ",")
		if !ok {
			return
		}
		s = trimSpace(rest)
	}
}

// cutToken splits off the longest prefix of token characters (RFC 2616:
// US-ASCII but controls and separators) and slashes.
func cutToken(s string) (token, rest string) {
	i := 0
	for i < len(s) && (isTokenChar(s[i]) || s[i] == '/') {
		i++
	}
	return s[:i], s[i:]
}

func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[]\\{}", rune(c))
}

// trimSpace drops leading spaces, tabs, carriage returns and line feeds.
func trimSpace(s string) string {
	return strings.TrimLeft(s, " \t\r\n")
}

// cutQuality reads a quality: 0 or 1, optionally a point and digits, as
// gddo reads it, in int arithmetic that can overflow on absurdly many
// digits (to a negative quality, which drops the clause, or a NaN or
// infinite one); -1 for anything else.
func cutQuality(s string) (q float64, rest string) {
	switch {
	case s == "":
		return -1, ""
	case s[0] == '0':
		q = 0
	case s[0] == '1':
		q = 1
	default:
		return -1, ""
	}
	s, ok := strings.CutPrefix(s[1:], ".")
	if !ok {
		return q, s
	}
	n, d, i := 0, 1, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		d *= 10
	}
	return q + float64(n)/float64(d), s[i:]
}
