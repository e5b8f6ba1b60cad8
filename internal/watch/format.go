package watch

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// FormatNumber writes a rate or ratio in at most five cells: "0" only for a
// true zero, "<0.01" for anything smaller, then two decimals, one from 10,
// none from 100, and K and M suffixes with the same steps.
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return ""
	case v == 0:
		return "0"
	case v < 0:
		// Counters do not fall once resets are folded in; say it anyway.
		return "-" + FormatNumber(-v)
	case v < 0.01:
		return "<0.01"
	case v < 999.5:
		return sig(v)
	case v < 999.5e3:
		return sig(v/1e3) + "K"
	case v < 999.5e6:
		return sig(v/1e6) + "M"
	}
	return fmt.Sprintf("%.0fM", v/1e6)
}

// sig prints v (0.01 ≤ v < 999.5) with two decimals, one from 10, none from
// 100, deciding on the rounded value so that 9.999 reads "10.0", not "10.00".
func sig(v float64) string {
	switch {
	case v < 9.995:
		return fmt.Sprintf("%.2f", v)
	case v < 99.95:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// FormatSeconds writes a latency: milliseconds under a second, seconds under
// a minute, minutes beyond, each with FormatNumber's steps.
func FormatSeconds(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return ""
	case s == 0:
		return "0"
	case s < 0:
		return "-" + FormatSeconds(-s)
	case s*1e3 < 0.01:
		return "<0.01ms"
	case s*1e3 < 999.5:
		return sig(s*1e3) + "ms"
	case s < 59.95:
		return sig(s) + "s"
	case s/60 < 999.5:
		return sig(s/60) + "min"
	}
	return fmt.Sprintf("%.0fmin", s/60)
}

// Compact writes an elapsed time for a header: "50ms" under a tenth of a
// second, "2.0s" under ten seconds,
// then whole seconds, "4m12s", "2h5m".
func Compact(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < 100*time.Millisecond {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	if d < 9950*time.Millisecond {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		m, s := d/time.Minute, (d%time.Minute)/time.Second
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	}
	d = d.Round(time.Minute)
	h, m := d/time.Hour, (d%time.Hour)/time.Minute
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// pad right-aligns a header in CellWidth cells.
func pad(s string) string {
	if n := len([]rune(s)); n < CellWidth {
		return strings.Repeat(" ", CellWidth-n) + s
	}
	return s
}
