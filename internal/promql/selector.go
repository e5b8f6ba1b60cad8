package promql

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// Op is a label matcher's operator.
type Op string

// The four PromQL matcher operators.
const (
	Equal    Op = "="
	NotEqual Op = "!="
	Match    Op = "=~"
	NoMatch  Op = "!~"
)

// Matcher is one label matcher of a selector: namespace="llm".
type Matcher struct {
	Label string
	Op    Op
	Value string
}

// String writes the matcher as PromQL reads it.
func (m Matcher) String() string { return m.Label + string(m.Op) + quote(m.Value) }

// quote writes a PromQL string literal (PromQL unquotes as Go does).
func quote(s string) string { return strconv.Quote(s) }

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ValidLabel reports whether s can be a label name.
func ValidLabel(s string) bool { return labelName.MatchString(s) }

// SelectorError is a --selector that cannot be read.
type SelectorError struct {
	Selector string
	At       int // byte offset of the problem
	Reason   string
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("selector %s: %s (at byte %d)", termsafe.QuoteAt(e.Selector, e.At), e.Reason, e.At+1)
}

// maxSelector bounds a selector's length: it is typed on a command line.
const maxSelector = 4096

// ParseSelector reads a list of label matchers, with or without braces:
// {namespace="llm", pod=~"vllm-.*"}. Values are PromQL strings (double,
// single or back quotes); a regular expression must compile as Prometheus
// compiles it (RE2, anchored). A metric name or __name__ matcher is
// refused: the series names are the library's to choose.
func ParseSelector(s string) ([]Matcher, error) {
	if len(s) > maxSelector {
		return nil, &SelectorError{Selector: s, Reason: fmt.Sprintf("longer than %d bytes", maxSelector)}
	}
	if !utf8.ValidString(s) {
		return nil, &SelectorError{Selector: strings.ToValidUTF8(s, "\uFFFD"), Reason: "not valid UTF-8"}
	}
	p := &selParser{src: s}
	ms, err := p.parse()
	if err != nil {
		return nil, err
	}
	return ms, nil
}

type selParser struct {
	src string
	i   int
}

func (p *selParser) fail(reason string) error {
	return &SelectorError{Selector: p.src, At: min(p.i, max(len(p.src)-1, 0)), Reason: reason}
}

func (p *selParser) space() {
	for p.i < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.i])) {
		p.i++
	}
}

func (p *selParser) parse() ([]Matcher, error) {
	p.space()
	if err := p.noMetricName(); err != nil {
		return nil, err
	}
	braced := p.peek('{')
	if braced {
		p.i++
	}
	var out []Matcher
	seen := map[string]bool{}
	for {
		p.space()
		if done, err := p.end(braced); done || err != nil {
			return out, err
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		if key := m.String(); !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
		p.space()
		switch {
		case p.peek(','):
			p.i++
		case p.i < len(p.src) && !(braced && p.peek('}')):
			return nil, p.fail("expected a comma between matchers")
		}
	}
}

// peek reports whether the next byte is c.
func (p *selParser) peek(c byte) bool { return p.i < len(p.src) && p.src[p.i] == c }

// noMetricName refuses a metric name before the braces (name{…}, or a
// bare name).
func (p *selParser) noMetricName() error {
	if p.i >= len(p.src) || p.peek('{') || p.peek('"') {
		return nil
	}
	start := p.i
	for p.i < len(p.src) && (isNameByte(p.src[p.i]) || p.src[p.i] == ':') {
		p.i++
	}
	p.space()
	stop := p.i >= len(p.src) || p.peek('{')
	p.i = start
	if stop {
		return p.fail("a metric name cannot be part of the selector: give label matchers only, such as {namespace=\"llm\"}")
	}
	return nil
}

// end reports whether the matcher list ends here: the input's end
// (refused when a brace is open) or the closing brace (with nothing after).
func (p *selParser) end(braced bool) (bool, error) {
	switch {
	case p.i >= len(p.src) && braced:
		return true, p.fail("missing closing }")
	case p.i >= len(p.src):
		return true, nil
	case braced && p.peek('}'):
		p.i++
		p.space()
		if p.i < len(p.src) {
			return true, p.fail("text after the closing }")
		}
		return true, nil
	}
	return false, nil
}

func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func (p *selParser) matcher() (Matcher, error) {
	start := p.i
	for p.i < len(p.src) && isNameByte(p.src[p.i]) {
		p.i++
	}
	name := p.src[start:p.i]
	if !ValidLabel(name) {
		p.i = start
		return Matcher{}, p.fail("expected a label name")
	}
	if name == "__name__" {
		p.i = start
		return Matcher{}, p.fail("__name__ cannot be matched: the series names are chosen from the server's dialect")
	}
	p.space()
	var op Op
	for _, o := range []Op{Match, NoMatch, NotEqual, Equal} {
		if strings.HasPrefix(p.src[p.i:], string(o)) {
			op = o
			break
		}
	}
	if op == "" {
		return Matcher{}, p.fail("expected =, !=, =~ or !~ after " + termsafe.Echo(name))
	}
	p.i += len(op)
	p.space()
	val, err := p.str()
	if err != nil {
		return Matcher{}, err
	}
	if op == Match || op == NoMatch {
		if _, err := regexp.Compile("^(?s:" + val + ")$"); err != nil {
			var re *syntax.Error
			reason := err.Error()
			if errors.As(err, &re) {
				reason = string(re.Code)
			}
			return Matcher{}, p.fail("regular expression for " + name + ": " + reason)
		}
	}
	return Matcher{Label: name, Op: op, Value: val}, nil
}

// str reads a quoted string.
func (p *selParser) str() (string, error) {
	if p.i >= len(p.src) {
		return "", p.fail("expected a quoted value")
	}
	q := p.src[p.i]
	if q != '"' && q != '\'' && q != '`' {
		return "", p.fail("expected a quoted value")
	}
	start := p.i
	p.i++
	for p.i < len(p.src) && p.src[p.i] != q {
		if p.src[p.i] == '\\' && q != '`' {
			p.i++
		}
		p.i++
	}
	if p.i >= len(p.src) {
		p.i = start
		return "", p.fail("unterminated string")
	}
	p.i++
	lit := p.src[start:p.i]
	if q == '\'' {
		lit = doubleQuoted(lit[1 : len(lit)-1])
	}
	v, err := strconv.Unquote(lit)
	if err != nil {
		p.i = start
		return "", p.fail("invalid escape in string")
	}
	return v, nil
}

// doubleQuoted rewrites the inside of a single-quoted PromQL string as a
// double-quoted literal with the same escapes: \' becomes ', a bare "
// becomes \".
func doubleQuoted(inner string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; {
		case c == '\\' && i+1 < len(inner):
			if inner[i+1] == '\'' {
				b.WriteByte('\'')
			} else {
				b.WriteByte(c)
				b.WriteByte(inner[i+1])
			}
			i++
		case c == '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
