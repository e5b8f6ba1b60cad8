// Package units is inferscope's one spelling of every quantity it writes
// for a person, and its one reading of a duration.
//
// A figure is spelled one way wherever it appears, in the report, the
// watch table and error messages: durations with [Seconds] ("850 ms",
// "1.20 s", "4.1 min"), counts and rates with [Count] ("950", "1.2K"),
// sizes with [Bytes] ("1.5 KiB"), shares with [Percent], multipliers with
// [Factor], exact counts with [Integer], a count's noun with [Noun] (or
// both at once, [Plural]). A missing figure is [Missing].
//
// A duration has a second spelling when it is a setting rather than a
// measurement: a flag's value, a rate window's label, a limit the user
// gave or is told to give. [Duration] writes those as the flags take them
// ("30s", "1m30s", "250ms"), and [ParseDuration] reads every duration flag
// (--watch, --watch-windows, --timeout, the demo's --sim-time) with one grammar,
// so what inferscope suggests can be typed back.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Missing is what a figure that does not exist prints as.
const Missing = "—"

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// sci writes an absurd magnitude compactly ("1.4e16"): a hostile or broken
// server can publish 1e300, and three hundred digits help nobody.
func sci(v float64) string {
	m, e, _ := strings.Cut(strconv.FormatFloat(v, 'e', 1, 64), "e")
	return m + "e" + strings.TrimLeft(strings.TrimPrefix(e, "+"), "0")
}

// hugeCount is where counts stop taking a suffix and go to sci.
const hugeCount = 999.95e12

// Seconds formats a duration given in seconds: "850 ms", "0.42 ms",
// "1.20 s", "12.3 s", "4.1 min", "2.5 h", "3.2 d".
func Seconds(s float64) string {
	if bad(s) {
		return Missing
	}
	if s < 0 {
		return "-" + Seconds(-s)
	}
	switch {
	case s == 0:
		return "0 s"
	case s < 0.001:
		return trim(s*1000, 2) + " ms"
	case s < 0.01:
		return trim(s*1000, 1) + " ms"
	case s < 0.9995:
		return strconv.FormatFloat(math.Round(s*1000), 'f', 0, 64) + " ms"
	// Each step is decided on the rounded value: 9.999 s is "10.0 s",
	// never "10.00 s", and 59.97 s is "1.0 min".
	case s < 9.995:
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	case s < 59.95:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 59.95*60:
		return strconv.FormatFloat(s/60, 'f', 1, 64) + " min"
	case s < 86400*2:
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + " h"
	case s < 86400*99999.5:
		return strconv.FormatFloat(s/86400, 'f', 1, 64) + " d"
	}
	return sci(s/86400) + " d"
}

// trim formats with at most prec decimals, dropping trailing zeros.
func trim(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Count formats a count of tokens, requests or steps, or a rate of them:
// "950", "1.2K", "12.3K", "203K", "4.5M", "1.2B", "3.0T", then "1.4e16".
// Fractions below 1000 keep one decimal; one below 0.05 that is not zero
// keeps two ("0.04", or "<0.01"), so a real rate never reads as 0.
func Count(v float64) string {
	if bad(v) {
		return Missing
	}
	if v < 0 {
		return "-" + Count(-v)
	}
	if v >= hugeCount {
		return sci(v)
	}
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if v >= u.div*0.9995 {
			return scaled(v/u.div) + u.sfx
		}
	}
	switch {
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 0.005:
		return "<0.01"
	case v < 0.05:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return trim(v, 1)
}

func scaled(x float64) string {
	if x >= 99.95 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// Bytes formats a size 1024-based: "512 B", "1.5 KiB", "8.0 GiB".
func Bytes(v float64) string {
	if bad(v) {
		return Missing
	}
	if v < 0 {
		return "-" + Bytes(-v)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if v < 1024 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	if v >= 999.95*(1<<60) {
		return sci(v) + " B"
	}
	u := -1
	for v >= 1023.95 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return scaled(v) + " " + units[u]
}

// Percent formats a fraction as a percentage with one decimal: 0.133 →
// "13.3%".
// A share below 0.1% that is not zero keeps two decimals ("0.02%", or
// "<0.01%"), so a real count never reads as 0.0%.
func Percent(f float64) string {
	if bad(f) {
		return Missing
	}
	if f > 0 && f < 0.0005 {
		if f < 0.00005 {
			return "<0.01%"
		}
		return strconv.FormatFloat(f*100, 'f', 2, 64) + "%"
	}
	if math.Abs(f) >= 9999.5 {
		return sci(f*100) + "%"
	}
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

// Factor formats a multiplier: one decimal below 10, a whole number from 10,
// with thousands separators ("1.9x", "12x", "1,250x").
func Factor(f float64) string {
	if bad(f) {
		return Missing
	}
	if f < 9.95 {
		return strconv.FormatFloat(f, 'f', 1, 64) + "x"
	}
	return Integer(f) + "x"
}

// Integer formats a value rounded to a whole number with comma separators
// ("1,234"); from a quadrillion on, compactly ("1.2e15").
func Integer(v float64) string {
	if bad(v) {
		return Missing
	}
	if math.Abs(v) >= 1e15 {
		return sci(v)
	}
	neg := v < 0
	s := strconv.FormatFloat(math.Abs(math.Round(v)), 'f', 0, 64)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Noun is the noun one in agreement with the count n: one where n is 1,
// else its plural: many where given (a noun whose plural is not one+"s":
// "series"; "instance's histograms"), else one+"s". A number spelled any
// way ([Count], [Integer]) takes its noun from here, so that no line says
// "1 requests".
func Noun(n float64, one string, many ...string) string {
	switch {
	case n == 1:
		return one
	case len(many) > 0:
		return many[0]
	}
	return one + "s"
}

// Plural writes an exact count and its noun in agreement ([Noun]) with the
// count as written: "1 request", "0 requests", "1,204 requests".
func Plural(n float64, one string, many ...string) string {
	if !bad(n) {
		n = math.Round(n)
	}
	return Integer(n) + " " + Noun(n, one, many...)
}

// Duration writes d as the duration flags take it and PromQL writes it, in
// the largest units that divide it ("90s" is "1m30s"; "24h" stays hours, as
// the rate windows' JSON keys always have), a fraction of a second as a
// decimal ("1.5s", "1m30.25s") and under a second in milliseconds
// ("250ms"). One length has one spelling, and [ParseDuration] reads it back
// as that length. It is for settings (flag values, window labels, limits);
// a measured time is [Seconds].
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Duration(-d)
	case d == 0:
		return "0s"
	case d%time.Millisecond != 0:
		return d.String() // below PromQL's smallest unit
	case d < time.Second:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.d
		}
	}
	if d > 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s")
	}
	return b.String()
}

// Size writes a byte count as the size flags (--max-bytes) take it, in the
// largest of k, M and G (x1024) that divides it ("64M", "1G", "3k"), else
// in bytes ("1536"). It is for settings; a measured size is [Bytes].
func Size(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// SizeHolding is the least size that holds n bytes in whole units of the
// largest of k, M and G below n, spelled as [Size] spells it: a cap to
// suggest for a body of n bytes (18,997 bytes: "19k").
func SizeHolding(n int64) string {
	for _, u := range []int64{1 << 30, 1 << 20, 1 << 10} {
		if n > u {
			return Size((n + u - 1) / u * u)
		}
	}
	return Size(max(n, 1))
}

// days are the PromQL units longer than Go's hour.
var days = map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}

// ParseDuration reads a duration as every duration flag takes one: a bare
// number of seconds ("30", "0.5"), or numbers with units in Go's spelling
// ("500ms", "1m30s", "1.5h") and PromQL's longer units, d, w and y (a year
// is 365 days, as in PromQL): "2d", "1w", "1d12h". A leading sign is kept
// (callers judge it); a length beyond about 290 years is refused.
func ParseDuration(s string) (time.Duration, error) {
	// One function: a tokenizer, one number and its unit at a time.
	if s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9') {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if math.IsInf(f, 0) || f*float64(time.Second) >= math.MaxInt64 {
				return 0, fmt.Errorf("%q is too long", s)
			}
			return time.Duration(math.Round(f * float64(time.Second))), nil
		}
	}
	notDuration := fmt.Errorf("%q is not a duration", s)
	rest, neg := s, false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		rest, neg = rest[1:], rest[0] == '-'
	}
	switch rest {
	case "":
		return 0, notDuration
	case "0":
		return 0, nil // Go's one unitless duration
	}
	var total time.Duration
	for rest != "" {
		// One number and its unit; Go's parser reads each, and the units
		// it lacks are whole multiples of an hour.
		n := strings.IndexFunc(rest, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if n <= 0 {
			return 0, notDuration
		}
		u := n + strings.IndexAny(rest[n:], ".0123456789")
		if u < n {
			u = len(rest)
		}
		num, unit := rest[:n], rest[n:u]
		rest = rest[u:]
		if unit == "" {
			return 0, notDuration
		}
		var d time.Duration
		if mult, ok := days[unit]; ok {
			h, err := time.ParseDuration(num + "h")
			if err != nil {
				return 0, notDuration
			}
			if h > math.MaxInt64/(mult/time.Hour) {
				return 0, fmt.Errorf("%q is too long", s)
			}
			d = h * (mult / time.Hour)
		} else {
			var err error
			if d, err = time.ParseDuration(num + unit); err != nil {
				return 0, notDuration
			}
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("%q is too long", s)
		}
		total += d
	}
	if neg {
		return -total, nil
	}
	return total, nil
}
