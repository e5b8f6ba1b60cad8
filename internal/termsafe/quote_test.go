package termsafe

import "testing"

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
