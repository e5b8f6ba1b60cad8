// Package termsafe makes untrusted text (anything a scraped server sent: model
// names, label values, error pages, help texts) safe to print on a terminal,
// so that a hostile endpoint cannot drive the user's terminal.
package termsafe

import (
	"strings"
	"unicode/utf8"
)

// Text makes server-provided text safe to print on a terminal. It drops
// every escape sequence whole (CSI, OSC, DCS, SOS, PM, APC and two-byte ESC
// sequences, in their 7-bit ESC forms and their 8-bit C1 forms), every other
// C0 and C1 control (BEL, backspace, CR, DEL, …) and the Unicode bidi
// embedding, override, isolate and mark controls, which can make a line read other
// than it is. Tab, newline and the Unicode line and paragraph separators
// become a space so that words do not run together and a string stays on one
// line. Bytes that are not UTF-8 become U+FFFD: a terminal must not be left
// to decide what a stray 0x9b means.
//
// A sequence is dropped with its payload (the text of an OSC title, the
// parameters of a CSI) because printing the remains ("[2J", "0;pwned")
// would only be noise; an unterminated string sequence swallows the rest of
// s, as it would on the terminal.
func Text(s string) string {
	// One function: a byte-level scanner, one case per class of character.
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0x1b:
				i = skipEscape(s, i+1)
				continue
			case c == '\t' || c == '\n':
				b.WriteByte(' ')
			case c < 0x20 || c == 0x7f:
				// Dropped: BEL, BS, CR, VT, FF, SO/SI, DEL and the rest.
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x9b: // C1 CSI
			i = skipCSI(s, i)
		case r == 0x9d, r == 0x90, r == 0x98, r == 0x9e, r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i = skipString(s, i)
		case r >= 0x80 && r <= 0x9f:
			// Other C1 controls: dropped.
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x061c, r == 0x200e, r == 0x200f:
			// Bidi embeddings, overrides, isolates and marks: dropped.
		case r == 0x2028 || r == 0x2029:
			b.WriteByte(' ')
		default:
			b.WriteString(s[i-size : i])
		}
	}
	return b.String()
}

// isPlainASCII reports whether s is printable ASCII only, the common case,
// which needs no copy.
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// skipEscape returns the index just past the escape sequence whose ESC
// preceded s[i]. One function: a state machine, one case per kind of
// sequence the byte after ESC starts.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch c := s[i]; {
	case c == '[':
		return skipCSI(s, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(s, i+1)
	case c >= 0x20 && c <= 0x2f:
		// nF sequence (e.g. ESC ( B): intermediates, then one final byte.
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		// Two-byte sequence such as ESC c (full reset) or ESC 7.
		return i + 1
	}
	// ESC before a control or non-ASCII: the ESC alone is dropped and the
	// next character is judged on its own.
	return i
}

// skipCSI returns the index past a control sequence's parameter and
// intermediate bytes and its final byte. Anything else ends the sequence
// where a terminal would abort it, and is judged on its own.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c >= 0x20 && c <= 0x3f:
			i++
		case c >= 0x40 && c <= 0x7e:
			return i + 1
		default:
			return i
		}
	}
	return i
}

// skipString returns the index past a string sequence (OSC, DCS, SOS, PM,
// APC): up to and including BEL, ESC \ or the C1 string terminator. A bare
// ESC ends the string too and is left to start the next sequence.
func skipString(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case 0x07:
			return i + 1
		case 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i
		case 0xc2:
			if i+1 < len(s) && s[i+1] == 0x9c {
				return i + 2
			}
		}
		i++
	}
	return i
}

// Line is Text on one line for a message: runs of white space collapse to
// one space, the ends are trimmed, and a result longer than max runes (0 =
// no limit) is cut to max runes ending in "…".
func Line(s string, max int) string {
	out := strings.Join(strings.Fields(Text(s)), " ")
	if max <= 0 || utf8.RuneCountInString(out) <= max {
		return out
	}
	runes := []rune(out)[:max-1]
	return strings.TrimRight(string(runes), " ") + "…"
}
