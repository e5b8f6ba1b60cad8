package watch

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	promodel "github.com/prometheus/common/model"
)

// DefaultWindows is the --windows default.
const DefaultWindows = "30s,1m,5m,15m,1h,24h"

// ParseWindows reads a --windows list: comma-separated PromQL durations
// ("30s", "1h30m", "2d") or bare numbers of seconds ("90", "0.5"). Two
// spellings of one length ("60s,1m") count once; the column is labelled by
// [Label]. The result is sorted from shortest to longest, since each column's
// overflow rule looks at the column before it.
func ParseWindows(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--windows: no window given (use e.g. 30s,5m,1h)")
	}
	var out []time.Duration
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		d, err := parseWindow(tok)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

func parseWindow(tok string) (time.Duration, error) {
	bad := fmt.Errorf("--windows: %q is not a duration (use 30s, 5m, 1h or seconds)", tok)
	if tok == "" {
		return 0, bad
	}
	var d time.Duration
	if c := tok[0]; c == '.' || (c >= '0' && c <= '9') {
		if f, err := strconv.ParseFloat(tok, 64); err == nil {
			// A bare number is seconds, as in PromQL.
			if math.IsInf(f, 0) || f*float64(time.Second) >= math.MaxInt64 {
				return 0, bad
			}
			d = time.Duration(math.Round(f * float64(time.Second)))
		} else {
			md, err := promodel.ParseDuration(tok)
			if err != nil {
				return 0, bad
			}
			d = time.Duration(md)
		}
	} else {
		return 0, bad
	}
	if d <= 0 {
		return 0, fmt.Errorf("--windows: %q is not longer than zero", tok)
	}
	return d, nil
}

// Effective drops the windows not longer than the refresh interval (their
// baseline would be the previous scrape, which the now column already
// shows), keeping the longest if none would remain.
func Effective(windows []time.Duration, interval time.Duration) []time.Duration {
	var out []time.Duration
	for _, w := range windows {
		if w > interval {
			out = append(out, w)
		}
	}
	if len(out) == 0 && len(windows) > 0 {
		out = append(out, slices.Max(windows))
	}
	return out
}

// Label spells a window the way PromQL would, in the largest units that
// divide it ("90s" is "1m30s", "24h" stays hours): one length always has one
// label, so the JSON keys do not depend on how the flag was typed.
func Label(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d%time.Millisecond != 0 {
		return d.String() // below PromQL's smallest unit
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}
