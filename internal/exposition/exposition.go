// Package exposition parses a Prometheus exposition (text 0.0.4 and 1.0.0, or
// OpenMetrics 1.0) into metric families, tolerating what real inference
// servers and the files people save send: "-nan" values, TYPE lines with no
// samples, _created series, timestamps, CRLF line endings, a UTF-8 byte
// order mark and a missing final newline.
//
// # Bounded work
//
// A body is checked in one linear pass before expfmt's text parser sees it:
// a series may have at most [MaxLabelsPerSeries] labels, label names at most
// [MaxLabelNameBytes] bytes, label values and metric names at most
// [MaxLabelValueBytes] (expfmt's duplicate-label check is quadratic in a
// series' labels). The same pass rejects what Prometheus rejects and expfmt
// lets through or words badly: a series listed twice (expfmt would keep
// both, and a sum would count it twice), a family's HELP or TYPE repeated,
// a bad escape. What is left costs time in proportion to the body, which the
// caller caps; [ParseContext] stops when its context is done.
package exposition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"sort"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// Format names how a body was read.
type Format string

const (
	Text        Format = "text"
	OpenMetrics Format = "openmetrics"
)

// ErrorKind says what is wrong with a body.
type ErrorKind int

const (
	// Malformed: not well-formed text in the format (a syntax error, a byte
	// that is not UTF-8, binary data).
	Malformed ErrorKind = iota
	// NotMetrics: another kind of document (JSON, HTML, protobuf).
	NotMetrics
	// Invalid: well-formed, but against the format's rules (a series or a
	// family's HELP or TYPE given twice).
	Invalid
	// OverLimit: beyond what inferscope reads (see MaxLabelsPerSeries).
	OverLimit
)

var kindNames = [...]string{Malformed: "malformed", NotMetrics: "not_metrics", Invalid: "invalid", OverLimit: "over_limit"}

// String returns a stable snake_case name, fit for JSON.
func (k ErrorKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Error is a body that is not a readable exposition. Line is 1-based, 0 when
// the whole body is at fault. Reason is one terminal-safe line; Hints say
// what to try, one line each (there may be none).
type Error struct {
	Line   int
	Reason string
	Kind   ErrorKind
	Hints  []string
}

func (e *Error) Error() string {
	prefix := "not a Prometheus exposition"
	switch e.Kind {
	case Invalid:
		prefix = "invalid Prometheus exposition"
	case OverLimit:
		prefix = "cannot read the exposition"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", prefix, e.Line, e.Reason)
	}
	return prefix + ": " + e.Reason
}

// DetectFormat picks the parser from the response's media type, falling back
// to the body when there is none (a file, stdin) or it is generic. expfmt's
// ResponseFormat calls text/plain;version=1.0.0 unknown, so the media type is
// read here instead. A JSON or HTML answer is an error: it is some other
// endpoint's.
func DetectFormat(contentType string, body []byte) (Format, error) {
	var mt string
	if contentType != "" {
		mt, _, _ = mime.ParseMediaType(contentType)
		switch mt {
		case "application/vnd.google.protobuf":
			return "", &Error{Kind: NotMetrics, Reason: "the server answered in protobuf, which inferscope does not request",
				Hints: []string{"check for a proxy rewriting the Accept header; inferscope asks for the text format"}}
		case "text/html":
			return "", htmlError(0)
		}
	}
	json := mt == "application/json" || strings.HasSuffix(mt, "+json")
	if e := sniffOther(body, json); e != nil {
		return "", e
	}
	switch mt {
	case "application/openmetrics-text":
		return OpenMetrics, nil
	case "text/plain":
		return Text, nil
	}
	if bytes.HasSuffix(bytes.TrimRight(body, "\r\n\t "), []byte("# EOF")) {
		return OpenMetrics, nil
	}
	return Text, nil
}

func htmlError(line int) *Error {
	return &Error{Kind: NotMetrics, Line: line, Reason: "the body is an HTML page, not metrics",
		Hints: []string{"a login page or a proxy's error page? check the URL and anything in front of the server"}}
}

func jsonError() *Error {
	return &Error{Kind: NotMetrics, Reason: "the body is JSON, not the Prometheus text format",
		Hints: []string{"the URL may be an API route; inference servers publish their metrics at /metrics",
			"TensorRT-LLM's trtllm-serve answers JSON at /metrics and publishes Prometheus text at /prometheus/metrics (with return_perf_metrics: true in --extra_llm_api_options)"}}
}

// sniffOther reports a body that is plainly another kind of document: JSON
// (an array, an empty object, or an object whose first key is followed by
// a colon, which no exposition has; any object when the media type says
// JSON) or HTML/XML (no exposition line starts with '<').
// One function: a tokenizer over the body's first bytes.
func sniffOther(body []byte, jsonType bool) *Error {
	body = bytes.TrimPrefix(body, utf8BOM)
	i := skipSpace(body, 0)
	if i == len(body) {
		return nil
	}
	switch body[i] {
	case '<':
		return htmlError(1 + bytes.Count(body[:i], []byte("\n")))
	case '[':
		return jsonError()
	case '{':
		if jsonType {
			return jsonError()
		}
		i = skipSpace(body, i+1)
		if i < len(body) && body[i] == '}' {
			return jsonError()
		}
		if i >= len(body) || body[i] != '"' {
			return nil
		}
		for i++; i < len(body) && body[i] != '"' && body[i] != '\n'; i++ {
			if body[i] == '\\' {
				i++
			}
		}
		if i = skipSpace(body, i+1); i < len(body) && body[i] == ':' {
			return jsonError()
		}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

var utf8BOM = []byte("\xef\xbb\xbf")

// normalize checks that body is UTF-8 text and returns it with a leading
// byte order mark removed, CRLF line endings made LF, a final newline, and
// "-nan" values rewritten (see fixSignedNaN). body is copied at most once,
// and only when something changes.
func normalize(body []byte) ([]byte, error) {
	if isUTF16(body) {
		return nil, &Error{Kind: Malformed, Reason: "the body is UTF-16 text, not UTF-8", Hints: []string{
			"Windows PowerShell's > writes UTF-16; convert the file, e.g. iconv -f UTF-16 -t UTF-8 FILE > scrape.prom, or save with Out-File -Encoding utf8",
		}}
	}
	if i := bytes.IndexByte(body, 0); i >= 0 {
		return nil, &Error{Kind: Malformed, Line: lineOf(body, i), Reason: "the body contains NUL bytes (binary data, not text)",
			Hints: []string{"a scrape is text; the target may be another kind of file or endpoint"}}
	}
	body = bytes.TrimPrefix(body, utf8BOM)
	if !utf8.Valid(body) {
		i := firstInvalid(body)
		return nil, &Error{Kind: Malformed, Line: lineOf(body, i),
			Reason: fmt.Sprintf("byte 0x%02x is not UTF-8; an exposition is UTF-8 text", body[i]),
			Hints: []string{
				"a file saved in another encoding needs converting, e.g. iconv -f WINDOWS-1252 -t UTF-8 FILE > scrape.prom",
			}}
	}
	crlf := bytes.Contains(body, []byte("\r\n"))
	noFinal := len(body) > 0 && body[len(body)-1] != '\n'
	owned := false
	if crlf || noFinal {
		out := make([]byte, 0, len(body)+1)
		if crlf {
			for rest := body; len(rest) > 0; {
				i := bytes.Index(rest, []byte("\r\n"))
				if i < 0 {
					out = append(out, rest...)
					break
				}
				out = append(out, rest[:i]...)
				out = append(out, '\n')
				rest = rest[i+2:]
			}
		} else {
			out = append(out, body...)
		}
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		body, owned = out, true
	}
	return fixSignedNaN(body, owned), nil
}

// isUTF16 reports a body with a UTF-16 byte order mark, or that starts
// with two ASCII characters each paired with a zero byte.
func isUTF16(b []byte) bool {
	if bytes.HasPrefix(b, []byte("\xff\xfe")) || bytes.HasPrefix(b, []byte("\xfe\xff")) {
		return true
	}
	ascii := func(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' }
	return len(b) >= 4 && (ascii(b[0]) && b[1] == 0 && ascii(b[2]) && b[3] == 0 ||
		b[0] == 0 && ascii(b[1]) && b[2] == 0 && ascii(b[3]))
}

// lineOf is the 1-based line holding body[i].
func lineOf(body []byte, i int) int { return 1 + bytes.Count(body[:i], []byte("\n")) }

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// fixSignedNaN rewrites a sample value of "-nan" or "+nan" (any case) to
// " NaN": llama.cpp and other C++ servers print -nan before the first
// request, and Go's ParseFloat rejects it. The rewrite keeps the length (the
// parser skips the extra blank), and body is copied only when a value needs
// it and the caller does not own it.
func fixSignedNaN(body []byte, owned bool) []byte {
	out := body
	for i := 1; i+4 <= len(body); i++ {
		c := body[i]
		if c != '-' && c != '+' {
			continue
		}
		if p := body[i-1]; p != ' ' && p != '\t' {
			continue
		}
		if (body[i+1]|0x20) != 'n' || (body[i+2]|0x20) != 'a' || (body[i+3]|0x20) != 'n' {
			continue
		}
		if i+4 < len(body) {
			if n := body[i+4]; n != ' ' && n != '\t' && n != '\n' && n != '\r' {
				continue
			}
		}
		if !owned {
			out = bytes.Clone(body)
			body, owned = out, true
		}
		copy(out[i:], " NaN")
	}
	return out
}

// Parse reads body in format f and returns its families sorted by name,
// without _created series (prometheus_client emits them as separate gauge
// families in text format; they carry no figure the inspector uses). Every
// error is an *Error.
func Parse(body []byte, f Format) ([]*dto.MetricFamily, error) {
	return ParseContext(context.Background(), body, f)
}

// ParseContext is Parse that gives up when ctx is done, with an error that
// wraps ctx.Err() (and is no *Error): the work is linear in the body, but a
// body at a 64 MiB cap still takes seconds.
func ParseContext(ctx context.Context, body []byte, f Format) ([]*dto.MetricFamily, error) {
	body, err := textBody(body, f)
	if err != nil {
		return nil, err
	}
	found, err := prescan(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("parsing the exposition: %w", err)
	}
	if found.limit != nil {
		if found.first != nil && found.first.Line < found.limit.Line {
			return nil, found.first
		}
		return nil, found.limit
	}
	if len(found.repeats) > 0 {
		body = blankLines(body, found.repeats)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(&ctxReader{ctx: ctx, r: bytes.NewReader(body)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("parsing the exposition: %w", ctx.Err())
		}
		e := fromExpfmt(err)
		if found.first != nil && (e.Line == 0 || found.first.Line <= e.Line) {
			return nil, found.first
		}
		return nil, e
	}
	if found.first != nil {
		return nil, found.first
	}
	return sortedFamilies(m), nil
}

// textBody is body in the classic text format, normalized, for prescan
// and expfmt to read; a body that is plainly another kind of document is
// an error.
func textBody(body []byte, f Format) ([]byte, error) {
	body, err := normalize(body)
	if err != nil {
		return nil, err
	}
	if e := sniffOther(body, false); e != nil {
		return nil, e
	}
	if f != OpenMetrics {
		return body, nil
	}
	if body, err = fromOpenMetrics(body); err != nil {
		return nil, err
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	return body, nil
}

// sortedFamilies is expfmt's families sorted by name, without _created
// series.
func sortedFamilies(m map[string]*dto.MetricFamily) []*dto.MetricFamily {
	fams := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		if !isCreated(mf) {
			fams = append(fams, mf)
		}
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].GetName() < fams[j].GetName() })
	return fams
}

// blankLines returns a copy of body with the given comment lines (1-based,
// ascending) emptied to a bare "#", so line numbers stay as they were.
func blankLines(body []byte, lines []int) []byte {
	out := bytes.Clone(body)
	line, start := 1, 0
	for _, want := range lines {
		for line < want {
			start += bytes.IndexByte(out[start:], '\n') + 1
			line++
		}
		end := start + bytes.IndexByte(out[start:], '\n')
		if end < start {
			end = len(out)
		}
		for i := start + 1; i < end; i++ {
			out[i] = ' '
		}
	}
	return out
}

// ctxReader ends a read when ctx is done; expfmt reads through a bufio
// buffer of 4 KiB, so a canceled parse stops within a few kilobytes.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// fromExpfmt words expfmt's error for a person: one clean line, and a hint
// where the cause is known.
func fromExpfmt(err error) *Error {
	var pe expfmt.ParseError
	if !errors.As(err, &pe) {
		return &Error{Kind: Malformed, Reason: cleanReason(err.Error())}
	}
	e := &Error{Kind: Malformed, Line: pe.Line, Reason: cleanReason(pe.Msg)}
	name := func() string {
		if i := strings.IndexByte(pe.Msg, '"'); i >= 0 {
			return strings.Trim(pe.Msg[i:], `"`)
		}
		return "a family"
	}
	switch {
	case strings.HasPrefix(pe.Msg, "second HELP line"):
		e.Kind, e.Hints = Invalid, repeatedHints
		e.Reason = cleanReason("second # HELP for " + name() + ": the exposition repeats the family")
	case strings.HasPrefix(pe.Msg, "second TYPE line"):
		e.Kind, e.Hints = Invalid, repeatedHints
		e.Reason = cleanReason("second # TYPE for " + name() + ", or a # TYPE after its samples: the exposition repeats the family")
	case strings.HasPrefix(pe.Msg, "duplicate label names"):
		e.Kind = Invalid
		e.Hints = []string{"a series has each label once; the exporter is broken"}
	}
	return e
}

func isCreated(mf *dto.MetricFamily) bool {
	return strings.HasSuffix(mf.GetName(), "_created") && mf.GetType() == dto.MetricType_GAUGE
}

// cleanReason keeps a parser message to one printable line: it may quote
// the hostile body.
func cleanReason(s string) string { return termsafe.Line(s, 200) }
