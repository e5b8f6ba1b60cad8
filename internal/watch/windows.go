package watch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/units"
)

// DefaultWindows is the --watch-windows default.
const DefaultWindows = "30s,1m,5m,15m,1h,24h"

// MaxWindows is the most windows --watch-windows takes: more columns than a
// screen holds would only be cut from the right.
const MaxWindows = 12

// ParseWindows reads a --watch-windows list: comma-separated durations as every
// duration flag takes them ([units.ParseDuration]: "30s", "1h30m", "2d",
// "1.5m" or bare seconds, "90"). Two spellings of one length ("60s,1m")
// count once; the column is labelled by [units.Duration]. Every window
// must be longer than [MinInterval]: a window needs a scrape at its start
// and one at its end, and no refresh interval is shorter. The result is sorted from shortest to
// longest, since each column's overflow rule looks at the column before it.
func ParseWindows(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--watch-windows: no window given (use e.g. 30s,5m,1h)")
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
		return nil, fmt.Errorf("--watch-windows: %d windows given; at most %d are shown", len(out), MaxWindows)
	}
	slices.Sort(out)
	return out, nil
}

func parseWindow(tok string) (time.Duration, error) {
	d, err := units.ParseDuration(tok)
	if err != nil {
		return 0, fmt.Errorf("--watch-windows: %w (use 30s, 5m, 1h or seconds)", err)
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("--watch-windows: %q is not longer than zero", tok)
	case d <= MinInterval:
		return 0, fmt.Errorf("--watch-windows: %q is too short: a window spans at least two scrapes, and scrapes are at least %s apart", tok, units.Duration(MinInterval))
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
