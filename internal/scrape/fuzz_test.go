package scrape

import (
	"bytes"
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// printable reports text with no control, escape or bidi characters and no
// line break.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidiControl(r) || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"", "-", "gpu-box", "gpu-box:5000", "gpu-box:5000/custom?x=1", ":5000", "::1", "[::1]:5000", "[fe80::1%25eth0]:80",
		"http://gpu-box:5000", "https://u:p@h/m#f", "HTTP://X", "ftp://x", "file:///tmp/a.prom", "file://h/x",
		"scrape.prom", "runs/a", "./a", `C:\a`, "~/a.prom", "a b", "a:b:c", "gpu-box:abc", "[zz]", "http://",
		"http://h:99999", "exists", "dir", "h\x1b[2J:1", "\xff\xfe", "http://[::1", "x/../../etc/passwd",
		"localhost/metrics", strings.Repeat("a.", 200), "file://", "file:",
	} {
		f.Add(s)
	}
	stat := fakeStat("exists", "dir/")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := resolve(in, stat)
		again, err2 := resolve(in, stat)
		if (err == nil) != (err2 == nil) || (got.URL == nil) != (again.URL == nil) || got.Path != again.Path {
			t.Fatalf("resolve(%q) is not deterministic", in)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != BadTarget {
				t.Fatalf("resolve(%q) error %v is not a BadTarget *Error", in, err)
			}
			if !printable(e.Msg) || !utf8.ValidString(e.Msg) {
				t.Fatalf("resolve(%q) message %q is not printable", in, e.Msg)
			}
			if len(e.Hints) == 0 {
				t.Fatalf("resolve(%q): %q has no hint", in, e.Msg)
			}
			return
		}
		kinds := 0
		if got.URL != nil {
			kinds++
		}
		if got.Path != "" {
			kinds++
		}
		if got.Stdin {
			kinds++
		}
		if kinds != 1 {
			t.Fatalf("resolve(%q) = %+v: want exactly one of URL, Path, Stdin", in, got)
		}
		if u := got.URL; u != nil {
			if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.Path == "" {
				t.Fatalf("resolve(%q) = URL %q", in, u)
			}
			back, err := url.Parse(u.String())
			if err != nil || back.Host != u.Host {
				t.Fatalf("resolve(%q) = URL %q that does not parse back: %v", in, u, err)
			}
			if !printable(sourceOf(got)) {
				t.Fatalf("source %q is not printable", sourceOf(got))
			}
		}
	})
}

func FuzzSavedLine(f *testing.F) {
	for _, s := range []string{
		"# inferscope: scraped_at=2026-01-02T03:04:05Z source=http://h:5000/metrics",
		"# inferscope: scraped_at=2026-01-02T03:04:05.123456789+05:30 source=a b\r",
		"# inferscope: v=2 scraped_at=2026-01-02T03:04:05Z",
		"# inferscope: scraped_at=bad",
		"# inferscope:",
		"# inferscope: source=\x1b]0;x\x07 scraped_at=2026-01-02T03:04:05Z",
		"# HELP a b\n# TYPE a counter\na 1\n",
		"# inferscope: scraped_at=2026-01-02T03:04:05Z source=x\n# TYPE a counter\na_total 1\n# EOF\n",
		"# inferscope: scraped_at=2026-01-02T03:04:05Z start=1767322000.25 start_token=432000123456 source=x",
		"# inferscope: scraped_at=2026-01-02T03:04:05Z start=1e99 start_token=%zz%20%E2%80%A6 source=x",
		"# inferscope: scraped_at=2026-01-02T03:04:05Z start=NaN start_token=a%1Bb%0A source=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// The first line as a whole file.
		rest, m, ok := splitSaved([]byte(in))
		if !bytes.HasSuffix([]byte(in), rest) {
			t.Fatalf("splitSaved(%q) rest %q is not a suffix", in, rest)
		}
		if !strings.HasPrefix(in, savedPrefix) && len(rest) != len(in) {
			t.Fatalf("splitSaved(%q) removed a line that is not ours", in)
		}
		if !ok {
			return
		}
		if !printable(m.source) || !printable(m.token) || utf8.RuneCountInString(m.token) > 64 {
			t.Fatalf("source %q or token %q is not printable", m.source, m.token)
		}
		if m.start != 0 && (math.IsNaN(m.start) || m.start < epoch2000 || m.start > float64(m.at.Add(24*time.Hour).UnixNano())/1e9) {
			t.Fatalf("implausible start %v accepted", m.start)
		}
		// What was read writes back to a line that reads the same.
		line := savedLine(m)
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("savedLine wrote %q: want one line", line)
		}
		m2, ok2 := parseSavedLine(strings.TrimSuffix(line, "\n"))
		if !ok2 || !m2.at.Equal(m.at) || m2.source != m.source || m2.start != m.start || m2.token != m.token {
			t.Fatalf("round trip of %q: %+v %v, want %+v", line, m2, ok2, m)
		}
		if m.at.Unix() < epoch2000 {
			t.Fatalf("implausible time %v accepted", m.at)
		}
	})
}
