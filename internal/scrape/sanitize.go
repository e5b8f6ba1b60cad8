package scrape

import (
	"fmt"
	"github.com/inferscope/inferscope/internal/termsafe"
	"strconv"
	"strings"
	"time"
)

// clean makes untrusted text safe to print on one terminal line, cut to max
// runes (0 = no limit): see termsafe.Line.
func clean(s string, max int) string { return termsafe.Line(s, max) }

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
