package exposition

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// Limits on one series, checked in one linear pass before the body reaches
// expfmt, whose duplicate-label check costs the square of a series' label
// count (30,000 labels on one line took 37 s). They are Prometheus's own
// per-scrape limits (label_limit, label_name_length_limit,
// label_value_length_limit) set well above what any inference server sends:
// vLLM's cache_config_info, the most labelled series seen, has 18 labels,
// and label values are model names, paths and settings.
const (
	// MaxLabelsPerSeries bounds the labels of one series, le and quantile
	// included.
	MaxLabelsPerSeries = 64
	// MaxLabelNameBytes bounds a label name as written (a quoted name
	// without its quotes).
	MaxLabelNameBytes = 256
	// MaxLabelValueBytes bounds a label value, after unescaping.
	MaxLabelValueBytes = 4096
	// MaxMetricNameBytes bounds a metric name: Prometheus counts the name
	// as the value of the __name__ label, so the value limit applies.
	MaxMetricNameBytes = MaxLabelValueBytes
)

// checkEvery is how many lines the scan reads between looks at the context.
const checkEvery = 4096

// scanResult is what the pre-scan found: a limit broken (the body must not
// be parsed), and the first rule broken that expfmt would miss or word
// badly (a duplicate series, a repeated HELP or TYPE, a bad escape).
type scanResult struct {
	limit *Error
	first *Error
	// repeats are the lines (1-based) of a family's HELP and TYPE said
	// again in a later block, agreeing with the first: Prometheus reads such
	// a body (two outputs joined, as Ray Serve's exporter and vendors'
	// fixtures produce), and so does inferscope, once the repeated lines
	// are blanked for expfmt, which refuses them.
	repeats []int
}

// scanner is the state of one pre-scan. It tokenizes each line as expfmt's
// text parser does, as far as the limits and duplicates need (where they
// could differ, the label limit falls back on a count that needs no
// grammar: see sample). It never looks back past the current line except
// through maps, so its cost is linear in the body.
type scanner struct {
	line int
	res  scanResult

	series    map[string]int // series key → line of its first sample
	help      map[string]int // family name → line of its HELP
	typeLine  map[string]int // family name → line of its TYPE
	typeOf    map[string]string
	firstSeen map[string]int // sample name → line of its first sample

	labels []labelPair // reused per line
	key    []byte      // reused per line
	float  []byte      // reused per le or quantile value
}

type labelPair struct{ name, value []byte }

// prescan checks body (text format, LF line endings, ending in a newline)
// against the limits and the rules expfmt does not check.
func prescan(ctx context.Context, body []byte) (scanResult, error) {
	s := &scanner{
		// A line is a series, more or less: sized so that a real scrape's
		// map never grows, and a huge body's is not allocated up front.
		series:    make(map[string]int, min(bytes.Count(body, []byte("\n")), 1<<14)),
		help:      map[string]int{},
		typeLine:  map[string]int{},
		typeOf:    map[string]string{},
		firstSeen: map[string]int{},
	}
	for len(body) > 0 {
		s.line++
		if s.line%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return s.res, err
			}
		}
		end := bytes.IndexByte(body, '\n')
		if end < 0 {
			end = len(body)
		}
		line := body[:end]
		body = body[min(end+1, len(body)):]
		s.scanLine(line)
		if s.res.limit != nil {
			return s.res, nil
		}
	}
	return s.res, nil
}

// found records the first rule broken; later ones are not reported.
func (s *scanner) found(e *Error) {
	if s.res.first == nil {
		e.Line = s.line
		s.res.first = e
	}
}

func (s *scanner) overLimit(reason string) {
	s.res.limit = &Error{Kind: OverLimit, Line: s.line, Reason: reason, Hints: []string{
		"inference servers label a series with fewer than 20 labels of modest length; check that the target is the server's metrics endpoint",
	}}
}

func (s *scanner) scanLine(line []byte) {
	i := skipBlank(line, 0)
	switch {
	case i == len(line):
	case line[i] == '#':
		s.comment(line, i+1)
	default:
		s.sample(line, i)
	}
}

// comment reads "# HELP name text" and "# TYPE name type"; other comments
// are skipped, as expfmt skips them.
func (s *scanner) comment(line []byte, i int) {
	i = skipBlank(line, i)
	j := i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	keyword := line[i:j]
	isHelp := bytes.Equal(keyword, []byte("HELP"))
	if !isHelp && !bytes.Equal(keyword, []byte("TYPE")) {
		return
	}
	i = skipBlank(line, j)
	rawName, i, ok := s.readName(line, i, &metricNameChars)
	if !ok || len(rawName) == 0 || i == len(line) || !isBlank(line[i]) {
		return // expfmt reports or ignores it
	}
	if len(rawName) > MaxMetricNameBytes {
		s.overLimit(fmt.Sprintf("metric name of %d bytes (%s); inferscope reads metric names of at most %d bytes",
			len(rawName), quoteCut(string(rawName)), MaxMetricNameBytes))
		return
	}
	name := string(rawName)
	i = skipBlank(line, i)
	if i == len(line) {
		return // no text: expfmt ignores the line
	}
	switch {
	case s.res.first != nil:
		// Past the first error nothing more is recorded.
	case isHelp:
		s.helpComment(name, line[i:])
	default:
		s.typeComment(name, strings.ToLower(string(bytes.TrimRight(line[i:], " \t"))))
	}
}

// helpComment records the # HELP text of name, checking its escapes; a
// second HELP is blanked later, the first text standing.
func (s *scanner) helpComment(name string, text []byte) {
	if bad, ok := badEscape(text); ok {
		s.found(&Error{Reason: fmt.Sprintf("invalid escape %s in the # HELP text of %s", bad, termsafe.Line(name, 80)), Hints: escapeHints})
		return
	}
	if _, dup := s.help[name]; dup {
		s.res.repeats = append(s.res.repeats, s.line) // the first text stands
		return
	}
	s.help[name] = s.line
}

// typeComment records the # TYPE of name: a repeat that agrees is blanked
// later, one that disagrees, or comes after the family's samples, is an
// error.
func (s *scanner) typeComment(name, typ string) {
	if first, dup := s.typeLine[name]; dup {
		if typ == s.typeOf[name] {
			s.res.repeats = append(s.res.repeats, s.line)
			return
		}
		s.found(repeatedFamily("# TYPE", name, first, s.typeOf[name], typ))
		return
	}
	if first, seen := s.firstSeen[name]; seen {
		s.found(&Error{Kind: Invalid, Reason: fmt.Sprintf("# TYPE for %s comes after its samples (line %d)", termsafe.Line(name, 120), first),
			Hints: []string{"a family's # TYPE line must come before its samples; if the exposition repeats the family, two outputs may have been joined"}})
		return
	}
	s.typeLine[name] = s.line
	s.typeOf[name] = typ
}

// repeatedFamily is a family typed twice, differently: which samples are
// which cannot be told.
func repeatedFamily(what, name string, first int, was, is string) *Error {
	return &Error{Kind: Invalid,
		Reason: fmt.Sprintf("second %s for %s (first at line %d) says %s where the first said %s", what, termsafe.Line(name, 120), first,
			termsafe.Line(is, 20), termsafe.Line(was, 20)),
		Hints: repeatedHints}
}

var repeatedHints = []string{
	"two registries or two processes' outputs joined into one? scrape each on its own, or keep one copy of each family",
}

var escapeHints = []string{`only \\, \" and \n may follow a backslash; write a literal backslash as \\`}

// sample reads a sample line's name and labels, enforces the limits and
// looks for a duplicate series.
//
// The label limit must hold whatever expfmt makes of the line, and its
// tokenizer has quirks (a quote inside an unquoted name starts a quoted
// part), so the count relies on no grammar where it matters: expfmt makes a
// label pair only on reading a '=', so a line with at most
// MaxLabelsPerSeries of them is safe; a line with more is read here, and
// rejected unless it is read to its value with the labels counted.
func (s *scanner) sample(line []byte, i int) {
	name, nLabels, complete := s.readSeries(line, i)
	switch {
	case s.res.limit != nil:
		return
	case nLabels > MaxLabelsPerSeries:
		s.overLimit(fmt.Sprintf("series has %d labels; inferscope reads at most %d per series", nLabels, MaxLabelsPerSeries))
		return
	case !complete:
		if n := bytes.Count(line, []byte("=")); n > MaxLabelsPerSeries {
			s.overLimit(fmt.Sprintf("a sample line inferscope cannot follow holds %d '=' signs, more than the %d labels a series may have",
				n, MaxLabelsPerSeries))
		}
		return // malformed: expfmt reports it, if it disagrees within the limit
	case len(name) == 0 || s.res.first != nil:
		return
	}
	if _, seen := s.firstSeen[string(name)]; !seen {
		s.firstSeen[string(name)] = s.line
	}
	s.checkSeries(name, line)
}

// readSeries reads the metric name and labels of the sample line at
// line[i], into s.labels (the first MaxLabelsPerSeries of them). It counts
// every label it reads, and reports complete only when the line is
// well-formed up to its value: a name, optional labels, then a blank.
// One function: a tokenizer, its branches the grammar byte by byte.
func (s *scanner) readSeries(line []byte, i int) (name []byte, nLabels int, complete bool) {
	s.labels = s.labels[:0]
	braced := line[i] == '{' // {"name", label="v"} form
	if !braced {
		var ok bool
		name, i, ok = s.readName(line, i, &metricNameChars)
		if !ok || len(name) == 0 {
			return nil, 0, false
		}
		if len(name) > MaxMetricNameBytes {
			s.overLimit(fmt.Sprintf("metric name of %d bytes (%s); inferscope reads metric names of at most %d bytes",
				len(name), quoteCut(string(name)), MaxMetricNameBytes))
			return nil, 0, false
		}
		if i < len(line) && line[i] != '{' && !isBlank(line[i]) {
			return nil, 0, false
		}
		i = skipBlank(line, i)
		if i == len(line) || line[i] != '{' {
			return name, 0, i < len(line)
		}
	}
	i++ // past '{'
	for {
		i = skipBlank(line, i)
		if i >= len(line) {
			return name, nLabels, false
		}
		if line[i] == '}' {
			i++
			break
		}
		lname, j, ok := s.readName(line, i, &labelNameChars)
		if !ok || len(lname) == 0 || s.res.limit != nil {
			return name, nLabels, false
		}
		if len(lname) > MaxLabelNameBytes && !(braced && name == nil && len(lname) <= MaxMetricNameBytes) {
			s.overLimit(fmt.Sprintf("label name of %d bytes (%s); inferscope reads label names of at most %d bytes",
				len(lname), quoteCut(string(lname)), MaxLabelNameBytes))
			return name, nLabels, false
		}
		i = skipBlank(line, j)
		if i >= len(line) {
			return name, nLabels, false
		}
		if line[i] != '=' {
			if !braced || name != nil || (line[i] != ',' && line[i] != '}') {
				return name, nLabels, false
			}
			name = lname
			if line[i] == ',' {
				i++
			}
			continue
		}
		if len(lname) > MaxLabelNameBytes {
			s.overLimit(fmt.Sprintf("label name of %d bytes (%s); inferscope reads label names of at most %d bytes",
				len(lname), quoteCut(string(lname)), MaxLabelNameBytes))
			return name, nLabels, false
		}
		i = skipBlank(line, i+1)
		if i >= len(line) || line[i] != '"' {
			return name, nLabels, false
		}
		value, size, j, ok := s.readValue(line, i+1, lname)
		if !ok {
			return name, nLabels, false
		}
		if size > MaxLabelValueBytes {
			s.overLimit(fmt.Sprintf("label %s has a value of %d bytes; inferscope reads label values of at most %d bytes",
				quoteCut(string(lname)), size, MaxLabelValueBytes))
			return name, nLabels, false
		}
		nLabels++
		if nLabels <= MaxLabelsPerSeries {
			s.labels = append(s.labels, labelPair{lname, value})
		}
		i = skipBlank(line, j)
		if i >= len(line) {
			return name, nLabels, false
		}
		switch line[i] {
		case ',':
			i++
		case '}':
		default:
			return name, nLabels, false
		}
	}
	// expfmt reads the value after any blanks; a line that ends here has
	// none, and is malformed.
	i = skipBlank(line, i)
	return name, nLabels, i < len(line) && len(name) > 0
}

// checkSeries records the series of the current sample line and reports it
// when an earlier line had the same name and label set. Histogram buckets
// differ by le and summary quantiles by quantile, whose values are compared
// as numbers ("1" and "1.0" are one bucket), as Prometheus compares them.
func (s *scanner) checkSeries(name, line []byte) {
	var normal string
	switch {
	case bytes.HasSuffix(name, []byte("_bucket")) && isHistogram(s.typeOf[string(name[:len(name)-len("_bucket")])]):
		normal = "le"
	case s.typeOf[string(name)] == "summary":
		normal = "quantile"
	}
	slices.SortFunc(s.labels, func(a, b labelPair) int { return bytes.Compare(a.name, b.name) })
	k := append(s.key[:0], name...)
	for n, l := range s.labels {
		if n > 0 && bytes.Equal(s.labels[n-1].name, l.name) {
			s.found(&Error{Kind: Invalid, Reason: fmt.Sprintf("label %s appears twice in one series of %s", quoteCut(string(l.name)), termsafe.Line(string(name), 120)),
				Hints: []string{"a series has each label once; the exporter is broken"}})
			return
		}
		v := l.value
		if normal != "" && string(l.name) == normal {
			if f, err := strconv.ParseFloat(string(v), 64); err == nil {
				s.float = strconv.AppendFloat(s.float[:0], f, 'g', -1, 64)
				v = s.float
			}
		}
		// 0xfe and 0xff never occur in UTF-8, so they separate fields.
		k = append(k, 0xff)
		k = append(k, l.name...)
		k = append(k, 0xfe)
		k = append(k, v...)
	}
	s.key = k
	if first, dup := s.series[string(k)]; dup {
		s.found(&Error{Kind: Invalid,
			Reason: fmt.Sprintf("duplicate series %s (first at line %d)", seriesText(line), first),
			Hints: []string{
				"an exposition lists each series once; two registries or processes may publish the same series: fix the exporter, or scrape each process on its own",
			}})
		return
	}
	s.series[string(k)] = s.line
}

func isHistogram(typ string) bool {
	return typ == "histogram" || typ == "gaugehistogram" || typ == "gauge_histogram"
}

// seriesText is a sample line without its value, fit for a message.
func seriesText(line []byte) string {
	text := string(bytes.TrimLeft(line, " \t"))
	if i := strings.LastIndexByte(text, '}'); i >= 0 {
		text = text[:i+1]
	} else if i := strings.IndexAny(text, " \t"); i >= 0 {
		text = text[:i]
	}
	return termsafe.Line(text, 160)
}

// readName reads a metric or label name at line[i]: a run of name
// characters, or a quoted string with escapes. It returns the name
// unquoted, the index after it, and false when the line is malformed there
// (left for expfmt to report).
func (s *scanner) readName(line []byte, i int, chars *nameChars) ([]byte, int, bool) {
	if i >= len(line) {
		return nil, i, false
	}
	if line[i] != '"' {
		if !chars.start[line[i]] {
			return nil, i, true
		}
		j := i + 1
		for j < len(line) && chars.rest[line[j]] {
			j++
		}
		return line[i:j], j, true
	}
	value, _, j, ok := s.readValue(line, i+1, nil)
	return value, j, ok
}

// readValue reads a quoted string whose opening quote precedes line[i]. It
// returns the string as written (escapes kept), its unescaped size, and the
// index after the closing quote. A bad escape is recorded as
// the rule broken; label names the value in the message ("" for a quoted
// name).
func (s *scanner) readValue(line []byte, i int, label []byte) ([]byte, int, int, bool) {
	start := i
	size := 0
	escaped := false
	for ; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
			if c != '\\' && c != '"' && c != 'n' {
				if s.res.first == nil {
					what := "quoted name"
					if label != nil {
						what = "label value"
					}
					bad, _ := badEscape(line[i-1:])
					raw := string(line[start:closingQuote(line, i)])
					s.found(&Error{Reason: fmt.Sprintf("invalid escape %s in %s %s", bad, what, quoteCut(raw)), Hints: escapeHints})
				}
				return nil, size, i, false
			}
		case c == '\\':
			escaped = true
			continue
		case c == '"':
			// The raw form is canonical (a quote, backslash or newline can
			// only appear escaped, one way), so it is kept as written.
			return line[start:i], size, i + 1, true
		}
		size++
	}
	return nil, size, i, false // unterminated
}

// closingQuote is the index of the quote that ends the string holding
// line[i], or the end of the line.
func closingQuote(line []byte, i int) int {
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(line)
}

// badEscape finds the first backslash in b not followed by \, " or n, and
// describes it as written.
func badEscape(b []byte) (string, bool) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) {
			return `\ at the end of the line`, true
		}
		switch b[i+1] {
		case '\\', '"', 'n':
			i++
			continue
		}
		r, _ := utf8.DecodeRune(b[i+1:])
		if r == utf8.RuneError || !unicode.IsPrint(r) || termsafe.Text(string(r)) != string(r) {
			return fmt.Sprintf(`\ followed by byte 0x%02x`, b[i+1]), true
		}
		return `\` + string(r), true
	}
	return "", false
}

// quoteCut quotes untrusted text for a message: terminal-safe, one line,
// cut to 60 runes.
func quoteCut(s string) string { return `"` + termsafe.Line(s, 60) + `"` }

// nameChars tables the bytes of unquoted names: nameStart for the first
// byte of a label name, nameRest for the others; metric names add ':'.
type nameChars struct{ start, rest [256]bool }

var labelNameChars, metricNameChars = func() (l, m nameChars) {
	for c := range 256 {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		l.start[c] = letter
		l.rest[c] = letter || c >= '0' && c <= '9'
		m.start[c] = l.start[c] || c == ':'
		m.rest[c] = l.rest[c] || c == ':'
	}
	return l, m
}()

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlank(line []byte, i int) int {
	for i < len(line) && isBlank(line[i]) {
		i++
	}
	return i
}
