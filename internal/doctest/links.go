package doctest

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// anchors are the fragment ids a page's headings get, as GitHub writes
// them: the heading's text in lower case, its punctuation and symbols
// dropped (not - or _), each space a hyphen; a repeated one gets -1, -2.
// Headings inside fenced blocks are not headings. An <a id="…"> or
// <a name="…"> is an anchor too.
func anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	fenced := map[int]bool{}
	if bs, err := blocks(lines); err == nil {
		for _, b := range bs {
			for i := b.start - 1; i <= b.end; i++ {
				fenced[i] = true
			}
		}
	}
	for i, line := range lines {
		if fenced[i] {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		text, ok := heading(line)
		if !ok {
			continue
		}
		id := slug(text)
		for n := 1; out[id]; n++ {
			id = fmt.Sprintf("%s-%d", slug(text), n)
		}
		out[id] = true
	}
	return out
}

var htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

// heading is an ATX heading's text, or false.
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return "", false
	}
	n := len(t) - len(strings.TrimLeft(t, "#"))
	if n < 1 || n > 6 || (len(t) > n && t[n] != ' ') {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[n:]), "#")), true
}

// inlineLink is a Markdown link's text and its target.
var inlineLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)

// slug is the id GitHub gives a heading's text: a link's text stands for the
// link, and code spans for their contents.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// link is a relative link of a page: a path (empty for the page itself)
// and a fragment (empty for none).
type link struct {
	line           int
	path, fragment string
}

// relativeLinks are the links of a page's lines outside fenced blocks and
// code spans that point inside the repository: no scheme, no mailto.
func relativeLinks(lines []string) []link {
	fenced := map[int]bool{}
	if bs, err := blocks(lines); err == nil {
		for _, b := range bs {
			for i := b.start - 1; i <= b.end; i++ {
				fenced[i] = true
			}
		}
	}
	var out []link
	for i, line := range lines {
		if fenced[i] {
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
			target := m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			out = append(out, link{line: i + 1, path: path, fragment: fragment})
		}
	}
	return out
}

// codeSpan is inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")
