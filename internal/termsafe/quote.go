package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShellQuote makes s one word for a POSIX shell, for hints that show a
// command to paste (`curl -s URL | head`): a word of only safe characters
// is returned as it is, anything else in single quotes. The result is also
// made terminal-safe, so a hostile URL cannot drive the terminal either.
func ShellQuote(s string) string {
	s = Text(s)
	if s != "" && strings.IndexFunc(s, unsafeInWord) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func unsafeInWord(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:@%+=,", r)
}

// EchoRunes is how much of a value the user gave a message repeats: enough
// to know it by, and a 100 kB argument still makes one line, not pages.
const EchoRunes = 120

// Echo is a value the user gave (a flag's argument, a path, a word taken
// for a command) as a message repeats it in its prose: [Line], cut to
// [EchoRunes] runes ending in "…". Where the value's exact ends matter
// (spaces, an empty value), use [Quote].
func Echo(s string) string { return Line(s, EchoRunes) }

// ShellEcho is a value the user gave as a hint's command repeats it:
// [ShellQuote]d, or where longer than [EchoRunes] runes cut as [Echo] cuts
// (the command then shows which value it was, and is not to be pasted).
func ShellEcho(s string) string {
	if utf8.RuneCountInString(s) > EchoRunes {
		return Echo(s)
	}
	return ShellQuote(s)
}

// Quote is a value the user gave, quoted as Go quotes a string (%q), so
// that its ends, spaces and any control, escape or bidi character show as
// escapes, and cut after [EchoRunes] runes with "…" outside the quotes.
func Quote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= EchoRunes {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:EchoRunes-1])) + "…"
}

// QuoteAt is [Quote] for a value with a problem at byte at: the whole
// value where it is short, else about EchoRunes/3 bytes on each side of
// the problem, with "…" where it is cut (a 12 kB selector made a
// 14,350-character line).
func QuoteAt(s string, at int) string {
	if utf8.RuneCountInString(s) <= EchoRunes {
		return Quote(s)
	}
	const width = EchoRunes / 3
	at = min(max(at, 0), len(s))
	from, to := max(0, at-width), min(len(s), at+width)
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to++
	}
	q := strconv.Quote(strings.ToValidUTF8(s[from:to], "\uFFFD"))
	if from > 0 {
		q = "…" + q
	}
	if to < len(s) {
		q += "…"
	}
	return q
}
