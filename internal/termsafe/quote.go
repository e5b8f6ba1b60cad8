package termsafe

import "strings"

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
