package scrape

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// clean makes untrusted text safe to print on one terminal line: escape
// sequences (CSI, OSC, DCS and two-byte ESC forms) are removed whole, other
// C0/C1 controls and bidirectional overrides are dropped, invalid UTF-8
// becomes U+FFFD, runs of white space collapse to one space, and a result
// longer than max runes (0 = no limit) is cut to max runes ending in "…".
// Cleaning twice changes nothing.
func clean(s string, max int) string {
	var b strings.Builder
	b.Grow(min(len(s), 256))
	n := 0
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0x1b {
			i = skipEscape(s, i)
			continue
		}
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			r = '\uFFFD'
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
			space = n > 0
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			continue
		case isBidiControl(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
		if max > 0 && n > max {
			break // past the cut: the rest cannot show
		}
	}
	out := b.String()
	if max > 0 && n > max {
		runes := []rune(out)[:max-1]
		out = strings.TrimRight(string(runes), " ") + "…"
	}
	return out
}

// skipEscape returns the index just past the escape sequence that starts at
// s[i] (an ESC byte). An unterminated string sequence swallows the rest of s:
// printing half of one could still drive the terminal.
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch s[j] {
	case '[': // CSI: parameters and intermediates, then one final byte 0x40–0x7E
		for j++; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1
			}
		}
		return j
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ESC \
		for j++; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return j
	default:
		// Two-byte forms such as ESC c (reset) or ESC 7; skip a whole rune so
		// that a multi-byte character after ESC is not split.
		_, size := utf8.DecodeRuneInString(s[j:])
		return j + size
	}
}

func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// shellQuote quotes s for a POSIX shell when it holds anything but plainly
// safe characters, so that a hint such as `curl -s URL | head` can be pasted.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fmtDuration writes a duration the way a person says it: 250ms, 1.5s, 30s,
// 1m, 1m30s, 2h.
func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDuration(-d)
	case d < time.Millisecond:
		return d.String()
	case d < time.Second:
		return strconv.FormatInt(int64(d.Round(time.Millisecond)/time.Millisecond), 10) + "ms"
	case d < time.Minute:
		s := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + "s"
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fmtBytes writes a size in 1024-based units, as the rest of inferscope does.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[i]
}
