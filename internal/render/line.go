package render

import (
	"io"
	"strings"
)

// style is how a span is drawn when colour is on. Only SGR attributes are
// used, and each styled span is reset right after, so a cut line can never
// leave the terminal in a colour.
type style uint8

const (
	plain style = iota
	bold
	good
	warn
	bad
	dim
)

// sgr holds each style's Select Graphic Rendition parameters.
var sgr = [...]string{
	plain: "",
	bold:  "1",
	good:  "32",
	warn:  "33",
	bad:   "31",
	dim:   "2",
}

// span is a run of sanitized text in one style, with its width in cells
// measured once.
type span struct {
	text string
	st   style
	w    int
}

// line is one output line as spans; its width is the sum of theirs.
type line []span

func (l line) width() int {
	n := 0
	for _, s := range l {
		n += s.w
	}
	return n
}

// add appends text in style st; empty text adds nothing.
func (l line) add(text string, st style) line {
	if text == "" {
		return l
	}
	return append(l, span{text, st, cells(text)})
}

// addLeft appends text cut to w cells in style st, padded on the right to
// exactly w with unstyled spaces.
func (l line) addLeft(text string, w int, st style) line {
	text = fit(text, w)
	return l.add(text, st).add(strings.Repeat(" ", max(0, w-cells(text))), plain)
}

// addRight is addLeft with the text right-aligned.
func (l line) addRight(text string, w int, st style) line {
	text = fit(text, w)
	return l.add(strings.Repeat(" ", max(0, w-cells(text))), plain).add(text, st)
}

// pad appends spaces up to w cells.
func (l line) pad(w int) line {
	if n := w - l.width(); n > 0 {
		return l.add(strings.Repeat(" ", n), plain)
	}
	return l
}

// clamp cuts l to at most w cells, ending in … when something was cut. The
// layout already sizes every field to fit; this is the guarantee that holds
// whatever the input.
func (l line) clamp(w int) line {
	if l.width() <= w {
		return l
	}
	if w <= 0 {
		return nil
	}
	out := make(line, 0, len(l))
	used := 0
	for _, s := range l {
		if used+s.w <= w-1 {
			out = append(out, s)
			used += s.w
			continue
		}
		t := cutCells(s.text, w-1-used) + ellipsis
		out = append(out, span{t, s.st, cells(t)})
		break
	}
	return out
}

// trimRight drops trailing spaces, which would only make golden files and
// copied text ragged. It never writes into l's array, which other lines may
// share.
func (l line) trimRight() line {
	for len(l) > 0 {
		last := l[len(l)-1]
		t := strings.TrimRight(last.text, " ")
		if t == last.text {
			return l
		}
		l = l[: len(l)-1 : len(l)-1]
		if t != "" {
			return append(l, span{t, last.st, cells(t)})
		}
	}
	return l
}

// writeLines writes lines to w, with SGR colour when color is set.
func writeLines(w io.Writer, lines []line, color bool) error {
	var b strings.Builder
	for _, l := range lines {
		l = l.trimRight()
		for i := 0; i < len(l); i++ {
			s := l[i]
			if !color || s.st == plain {
				b.WriteString(s.text)
				continue
			}
			// Merge neighbours of the same style into one sequence.
			b.WriteString("\x1b[")
			b.WriteString(sgr[s.st])
			b.WriteByte('m')
			b.WriteString(s.text)
			for i+1 < len(l) && l[i+1].st == s.st {
				i++
				b.WriteString(l[i].text)
			}
			b.WriteString("\x1b[0m")
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
