package termsafe

import (
	"strings"
	"testing"
)

func TestShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://gpu-box:5000/metrics", "http://gpu-box:5000/metrics"},
		{"scrape.prom", "scrape.prom"},
		{"my scrape.prom", "'my scrape.prom'"},
		{"http://h/metrics?a=1&b=2", "'http://h/metrics?a=1&b=2'"},
		{"it's", `'it'\''s'`},
		{"$(rm -rf ~)", "'$(rm -rf ~)'"},
		{"", "''"},
		{"a\x1b[2Jb", "ab"},
	} {
		if got := ShellQuote(c.in); got != c.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A value the user gave is repeated on one safe line, at most EchoRunes
// runes (and the quotes) however long it was.
func TestEcho(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	for _, c := range []struct{ in, echo, quote string }{
		{"json", "json", `"json"`},
		{" json", "json", `" json"`},
		{"", "", `""`},
		{"a\x1b]0;pwned\x07\u202eb.yml", "ab.yml", `"a\x1b]0;pwned\a\u202eb.yml"`},
		{"\xff", "\uFFFD", `"` + "\uFFFD" + `"`},
		{long, strings.Repeat("a", EchoRunes-1) + "…", `"` + strings.Repeat("a", EchoRunes-1) + `"…`},
	} {
		if got := Echo(c.in); got != c.echo {
			t.Errorf("Echo(%.20q) = %q, want %q", c.in, got, c.echo)
		}
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%.20q) = %q, want %q", c.in, got, c.quote)
		}
	}
}

func TestShellEcho(t *testing.T) {
	long := strings.Repeat("a/", 50_000)
	for _, c := range []struct{ in, want string }{
		{"scrape.prom", "scrape.prom"},
		{"it's", `'it'\''s'`},
		{long, strings.Repeat("a/", EchoRunes/2-1) + "a…"},
	} {
		if got := ShellEcho(c.in); got != c.want {
			t.Errorf("ShellEcho(%.20q) = %q, want %q", c.in, got, c.want)
		}
	}
}
