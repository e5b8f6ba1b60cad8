// Package exposition parses a Prometheus exposition (text 0.0.4 and 1.0.0, or
// OpenMetrics 1.0) into metric families, tolerating what real inference
// servers send: "-nan" values, TYPE lines with no samples, _created series and
// timestamps.
package exposition

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/inferscope/inferscope/internal/termsafe"
	"mime"
	"sort"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Format names how a body was read.
type Format string

const (
	Text        Format = "text"
	OpenMetrics Format = "openmetrics"
)

// Error is a body that is not a readable exposition. Line is 1-based, 0 when
// unknown.
type Error struct {
	Line   int
	Reason string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("not a Prometheus exposition: line %d: %s", e.Line, e.Reason)
	}
	return "not a Prometheus exposition: " + e.Reason
}

// DetectFormat picks the parser from the response's media type, falling back
// to the body when there is none (a file, stdin) or it is generic. expfmt's
// ResponseFormat calls text/plain;version=1.0.0 unknown, so the media type is
// read here instead.
func DetectFormat(contentType string, body []byte) (Format, error) {
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err == nil {
			switch mt {
			case "application/openmetrics-text":
				return OpenMetrics, nil
			case "text/plain":
				return Text, nil
			case "application/vnd.google.protobuf":
				return "", &Error{Reason: "the server answered in protobuf, which inferscope does not request; check for a proxy rewriting Accept"}
			case "text/html":
				return "", &Error{Reason: "the server answered with an HTML page, not metrics"}
			}
		}
	}
	if bytes.HasSuffix(bytes.TrimRight(body, "\r\n\t "), []byte("# EOF")) {
		return OpenMetrics, nil
	}
	return Text, nil
}

// fixSignedNaN rewrites a sample value of "-nan" or "+nan" (any case) to
// " NaN": llama.cpp and other C++ servers print -nan before the first
// request, and Go's ParseFloat rejects it. The rewrite keeps the length (the
// parser skips the extra blank), and body is copied only when a value needs it.
func fixSignedNaN(body []byte) []byte {
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
		if &out[0] == &body[0] {
			out = bytes.Clone(body)
		}
		copy(out[i:], " NaN")
	}
	return out
}

// Parse reads body in format f and returns its families sorted by name,
// without _created series (prometheus_client emits them as separate gauge
// families in text format; they carry no figure the inspector uses).
func Parse(body []byte, f Format) ([]*dto.MetricFamily, error) {
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, &Error{Reason: "the body contains NUL bytes (binary data, not text)"}
	}
	if !utf8.Valid(body) {
		return nil, &Error{Reason: "the body is not UTF-8 text"}
	}
	body = fixSignedNaN(body)
	var fams []*dto.MetricFamily
	switch f {
	case OpenMetrics:
		text, err := fromOpenMetrics(body)
		if err != nil {
			return nil, err
		}
		body = text
		fallthrough
	default:
		p := expfmt.NewTextParser(model.UTF8Validation)
		m, err := p.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			var pe expfmt.ParseError
			if errors.As(err, &pe) {
				return nil, &Error{Line: pe.Line, Reason: cleanReason(pe.Msg)}
			}
			return nil, &Error{Reason: cleanReason(err.Error())}
		}
		for _, mf := range m {
			fams = append(fams, mf)
		}
	}
	out := fams[:0]
	for _, mf := range fams {
		if isCreated(mf) {
			continue
		}
		out = append(out, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

func isCreated(mf *dto.MetricFamily) bool {
	return strings.HasSuffix(mf.GetName(), "_created") && mf.GetType() == dto.MetricType_GAUGE
}

// cleanReason keeps a parser message to one printable line: it may quote
// the hostile body.
func cleanReason(s string) string { return termsafe.Line(s, 200) }
