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

// MaxWindows is the most windows --windows takes: more columns than a
// screen holds would only be cut from the right.
const MaxWindows = 12

// ParseWindows reads a --windows list: comma-separated PromQL durations
// ("30s", "1h30m", "2d"), Go durations ("1.5s", "1.5m") or bare numbers of
// seconds ("90", "0.5"). Two spellings of one length ("60s,1m") count once;
// the column is labelled by [Label]. Every window must be longer than
// [MinInterval]: a window needs a scrape at its start and one at its end,
// and no refresh interval is shorter. The result is sorted from shortest to
// longest, since each column's overflow rule looks at the column before it.
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
	if len(out) > MaxWindows {
		return nil, fmt.Errorf("--windows: %d windows given; at most %d are shown", len(out), MaxWindows)
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
	if f, err := strconv.ParseFloat(tok, 64); err == nil && (tok[0] == '.' || tok[0] >= '0' && tok[0] <= '9') {
		// A bare number is seconds, as in PromQL.
		if math.IsInf(f, 0) || f*float64(time.Second) >= math.MaxInt64 {
			return 0, bad
		}
		d = time.Duration(math.Round(f * float64(time.Second)))
	} else if md, err := promodel.ParseDuration(tok); err == nil {
		d = time.Duration(md)
	} else if gd, err := time.ParseDuration(tok); err == nil {
		// Go's spelling adds fractions ("1.5s") and units below a
		// millisecond, which the check below then refuses with a reason.
		d = gd
	} else {
		return 0, bad
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("--windows: %q is not longer than zero", tok)
	case d <= MinInterval:
		return 0, fmt.Errorf("--windows: %q is too short: a window spans at least two scrapes, and scrapes are at least %s apart", tok, Label(MinInterval))
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
// divide it ("90s" is "1m30s", "24h" stays hours), with any fraction of a
// second written as a decimal ("1.5s", "1m30.25s"; "250ms" under a second):
// one length always has one label, so the JSON keys do not depend on how
// the flag was typed, and every label reads back as the same length.
func Label(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d%time.Millisecond != 0 {
		return d.String() // below PromQL's smallest unit
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	if d > 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
		b.WriteString("s")
	}
	return b.String()
}
