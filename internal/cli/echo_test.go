package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// A value the user gave is repeated on stderr cut, whatever says it: a
// 100 kB argument makes a short error, not pages of it.
func TestLongArgumentsClipped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 100_000)
	idle := fixtures + "idle.prom"
	for _, args := range [][]string{
		{"-o", long, idle},
		{"--" + long, idle},
		{"help", long},
		{"--at", long, idle},
		{"--dialect", long, idle},
		{"rules", "--dialect", long},
		{"fleet", "--prometheus", "http://127.0.0.1:1", "--sort", long},
		{"fleet", "--prometheus", "http://127.0.0.1:1", "--selector", long + "="},
		{"fleet", "--prometheus", "http://127.0.0.1:1", "--by", long + "-"},
		{long},                   // a file name too long: the file hint
		{"/no/such/dir/" + long}, // no such file
		{"proxy", "--upstream", "ftp://" + long, "--listen", "127.0.0.1:0"},
		{"--header", long, idle},
		{"demo", "--scenario", long},
		{"dashboard", "--uid", long, "--dialect", "vllm"},
	} {
		io, out, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), args, io)
		name := strings.ReplaceAll(strings.Join(args, " "), long, "<100 kB>")
		if code != ExitError || out.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %d bytes", name, code, out.Len())
		}
		if n := longestRun(errb.String(), 'a'); errb.Len() > 1500 || n > termsafe.EchoRunes {
			t.Errorf("%s: stderr of %d bytes repeats %d bytes of the argument:\n%.600s", name, errb.Len(), n, errb.String())
		}
	}
}

// Escape and bidi characters the user gave are never written raw to
// stderr, on an error or on a line that says what was done.
func TestHostileArgumentsSafe(t *testing.T) {
	hostile := "x\x1b]0;pwned\x07\u202eevil\x9b2J.yml"
	idle := fixtures + "idle.prom"
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"rules", "--dialect", "vllm", "--tests", "--rules-file", hostile}, ExitOK},
		{[]string{"-o", hostile, idle}, ExitError},
		{[]string{"--" + hostile, idle}, ExitError},
		{[]string{"help", hostile}, ExitError},
		{[]string{"--at", hostile, idle}, ExitError},
		{[]string{"--dialect", hostile, idle}, ExitError},
		{[]string{"fleet", "--prometheus", "http://127.0.0.1:1", "--sort", hostile}, ExitError},
		{[]string{hostile}, ExitError},
		{[]string{"rules", "--runbook-base", hostile, "--dialect", "vllm"}, ExitError},
	} {
		io, _, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), c.args, io)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d: %s", c.args, code, c.code, errb)
		}
		if s := errb.String(); strings.ContainsAny(s, "\x1b\x07\u202e\u009b") {
			t.Errorf("%q: stderr holds a raw control: %q", c.args, s)
		}
	}
}

// longestRun is the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
