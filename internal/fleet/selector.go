package fleet

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// Matcher is one PromQL label matcher: name op "value".
type Matcher struct {
	Name, Op, Value string
}

// String writes the matcher as PromQL reads it.
func (m Matcher) String() string { return m.Name + m.Op + strconv.Quote(m.Value) }

// Selector is a list of label matchers, ANDed.
type Selector []Matcher

// String writes the matchers without braces, comma-separated.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, m := range s {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

// With returns the selector and more matchers, as a new slice.
func (s Selector) With(more ...Matcher) Selector {
	out := make(Selector, 0, len(s)+len(more))
	return append(append(out, s...), more...)
}

// braces writes the selector as a series selector "{…}".
func (s Selector) braces() string { return "{" + s.String() + "}" }

// shortRunes is how much of a selector or of the user's text a message
// quotes: as much as of any value the user gave.
const shortRunes = termsafe.EchoRunes

// Short writes the selector in braces for a message as every value the
// user gave is repeated ([termsafe.Echo]).
func (s Selector) Short() string { return termsafe.Echo(s.braces()) }

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// SelectorError is a --selector or --instance that cannot be read.
type SelectorError struct {
	Input string
	At    int // byte offset of the problem
	Msg   string
}

// Error quotes the input where it is short, else the bytes on each side
// of the problem ([termsafe.QuoteAt]).
func (e *SelectorError) Error() string {
	if utf8.RuneCountInString(e.Input) <= shortRunes {
		return fmt.Sprintf("%s at byte %d of %s", e.Msg, e.At+1, termsafe.Quote(e.Input))
	}
	return fmt.Sprintf("%s at byte %d of %d: %s", e.Msg, e.At+1, len(e.Input), termsafe.QuoteAt(e.Input, e.At))
}

// ParseSelector reads label matchers as PromQL writes them inside a series
// selector: `{namespace="llm",pod=~"vllm-.*"}`, with or without the
// braces. Values are quoted with ", ' or ` (Go's escapes inside the first
// two). A metric name before the braces is refused: the fleet view chooses
// the names.
func ParseSelector(s string) (Selector, error) {
	p := &selParser{in: s}
	return p.parse()
}

type selParser struct {
	in  string
	pos int
}

func (p *selParser) fail(msg string) error { return &SelectorError{Input: p.in, At: p.pos, Msg: msg} }

func (p *selParser) space() {
	for p.pos < len(p.in) && strings.IndexByte(" \t\r\n", p.in[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *selParser) parse() (Selector, error) {
	if !utf8.ValidString(p.in) {
		return nil, p.fail("not UTF-8")
	}
	p.space()
	braced := p.pos < len(p.in) && p.in[p.pos] == '{'
	if braced {
		p.pos++
	} else if p.pos < len(p.in) && !labelName.MatchString(string(p.in[p.pos])) {
		return nil, p.fail("expected a label matcher such as namespace=\"llm\"")
	}
	var out Selector
	for {
		done, err := p.end(braced)
		if done || err != nil {
			return out, err
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		if err := p.comma(braced); err != nil {
			return nil, err
		}
	}
}

// end reads the end of the selector, if it is next: the end of the text,
// or the closing brace and nothing after it.
func (p *selParser) end(braced bool) (bool, error) {
	p.space()
	switch {
	case p.pos == len(p.in) && braced:
		return true, p.fail("missing }")
	case p.pos == len(p.in):
		return true, nil
	case braced && p.in[p.pos] == '}':
		p.pos++
		p.space()
		if p.pos != len(p.in) {
			return true, p.fail("text after }")
		}
		return true, nil
	}
	return false, nil
}

// comma reads the comma between two matchers, where one is due.
func (p *selParser) comma(braced bool) error {
	p.space()
	switch {
	case p.pos < len(p.in) && p.in[p.pos] == ',':
		p.pos++
	case p.pos < len(p.in) && !(braced && p.in[p.pos] == '}'):
		return p.fail("expected , between matchers")
	}
	return nil
}

func (p *selParser) matcher() (Matcher, error) {
	start := p.pos
	for p.pos < len(p.in) && (p.in[p.pos] == '_' || isAlnum(p.in[p.pos])) {
		p.pos++
	}
	name := p.in[start:p.pos]
	if !labelName.MatchString(name) {
		p.pos = start
		return Matcher{}, p.fail("expected a label name")
	}
	p.space()
	if p.pos < len(p.in) && strings.IndexByte("{([", p.in[p.pos]) >= 0 {
		return Matcher{}, p.fail("a selector holds label matchers only, not a query or a metric name")
	}
	var op string
	for _, o := range []string{"=~", "!~", "!=", "="} {
		if strings.HasPrefix(p.in[p.pos:], o) {
			op = o
			break
		}
	}
	if op == "" {
		return Matcher{}, p.fail("expected =, !=, =~ or !~ after " + termsafe.Echo(name))
	}
	p.pos += len(op)
	p.space()
	v, err := p.quoted()
	if err != nil {
		return Matcher{}, err
	}
	if op == "=~" || op == "!~" {
		if _, err := regexp.Compile("^(?:" + v + ")$"); err != nil {
			// The error quotes the expression, as long as it is.
			return Matcher{}, p.fail(fmt.Sprintf("%s: not a regular expression (%s)", name, termsafe.Line(err.Error(), shortRunes)))
		}
	}
	return Matcher{Name: name, Op: op, Value: v}, nil
}

func isAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func (p *selParser) quoted() (string, error) {
	if p.pos >= len(p.in) {
		return "", p.fail("expected a quoted value")
	}
	q := p.in[p.pos]
	if q != '"' && q != '\'' && q != '`' {
		return "", p.fail("expected a quoted value (\"…\")")
	}
	start := p.pos
	p.pos++
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '\\' && q != '`' {
			p.pos += 2
			continue
		}
		if c == q {
			p.pos++
			raw := p.in[start:p.pos]
			if q == '`' {
				return raw[1 : len(raw)-1], nil
			}
			if q == '\'' {
				// Go unquotes only double quotes: swap the quoting.
				raw = `"` + strings.ReplaceAll(strings.ReplaceAll(raw[1:len(raw)-1], `\'`, `'`), `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(raw)
			if err != nil {
				p.pos = start
				return "", p.fail("bad escape in quoted value")
			}
			return v, nil
		}
		p.pos++
	}
	p.pos = start
	return "", p.fail("unterminated quoted value")
}

// ParseInstance reads --instance: label=value pairs, comma-separated
// (pod=vllm-7 or namespace=llm,pod=vllm-7), or label matchers as
// --selector takes them. Each pair is an equality matcher.
func ParseInstance(s string) (Selector, error) {
	t := strings.TrimSpace(s)
	if strings.ContainsAny(t, "\"'`{") {
		return ParseSelector(t)
	}
	var out Selector
	for _, part := range strings.Split(t, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.TrimSpace(k)
		if !ok || !labelName.MatchString(k) || strings.HasPrefix(v, "~") {
			return nil, &SelectorError{Input: s, At: strings.Index(s, part), Msg: "expected label=value, such as pod=vllm-7"}
		}
		out = append(out, Matcher{Name: k, Op: "=", Value: strings.TrimSpace(v)})
	}
	return out, nil
}

// nameRegex is a PromQL regular expression matching exactly names.
func nameRegex(names []string) string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	q := make([]string, len(sorted))
	for i, n := range sorted {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

// prefixRegex matches every name under one of prefixes.
func prefixRegex(prefixes []string) string {
	q := make([]string, len(prefixes))
	for i, p := range prefixes {
		q[i] = regexp.QuoteMeta(p)
	}
	return "(?:" + strings.Join(q, "|") + ").+"
}
