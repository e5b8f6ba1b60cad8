package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// Limits of the size flags: a layout wider than any screen only writes
// spaces, and a body cap beyond memory protects nothing.
const (
	MinWidth    = 40
	MaxWidth    = 1000
	MaxColumns  = 4
	MaxMaxBytes = 1 << 30
)

// outputFlags are the flags of every command that writes a report (inspect
// in each of its modes, and the demo): how the report is drawn. They are
// defined by [outputFlags.define] and checked by [outputFlags.check] for
// every command alike.
type outputFlags struct {
	json, hist, noColor bool
	columns, width      int
}

func (f *outputFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", f.json, "")
	fs.BoolVar(&f.hist, "hist", f.hist, "")
	fs.BoolVar(&f.noColor, "no-color", f.noColor, "")
	fs.IntVar(&f.columns, "columns", f.columns, "")
	fs.IntVar(&f.width, "width", f.width, "")
}

// check refuses a column count or width the layout cannot honour.
func (f *outputFlags) check() error {
	if f.columns < 0 || f.columns > MaxColumns {
		return usagef(fmt.Sprintf("use --columns 1 to %d, or leave it out to fit the width", MaxColumns), "--columns %d is out of range", f.columns)
	}
	switch {
	case f.width < 0, f.width != 0 && f.width < MinWidth:
		return usagef(fmt.Sprintf("use --width %d or more", MinWidth), "--width %d is too narrow for a report", f.width)
	case f.width > MaxWidth:
		return usagef(fmt.Sprintf("use --width %d to %d, or leave it out to follow the terminal", MinWidth, MaxWidth),
			"--width %d is wider than inferscope lays out (at most %d)", f.width, MaxWidth)
	}
	return nil
}

// watchFlags are the flags of the live view, which inspect --watch and
// the demo both open: its refresh interval and its rate windows.
type watchFlags struct {
	watch   time.Duration
	windows string
}

func (f *watchFlags) define(fs *flag.FlagSet) {
	fs.Var(durationFlag{&f.watch}, "watch", "")
	fs.StringVar(&f.windows, "windows", f.windows, "")
}

// check refuses an interval below the view's floor and windows it cannot
// read, each where given (set holds the names of the flags given).
func (f *watchFlags) check(set map[string]bool) error {
	if set["watch"] && f.watch < watch.MinInterval {
		return usagef("use --watch "+units.Duration(watch.MinInterval)+" or longer, such as --watch 2s",
			"--watch %s is shorter than the shortest refresh interval (%s)", units.Duration(f.watch), units.Duration(watch.MinInterval))
	}
	if set["windows"] {
		if _, err := parseWindows(f.windows); err != nil {
			return err
		}
	}
	return nil
}

// given returns the names of the flags fs was given.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments (`inferscope host:5000 --json` as well as `--json host:5000`).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wantsHelp reports a help flag anywhere among the arguments (flags may
// stand after the target).
func wantsHelp(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" })
}

// badBool is the flag package's error for a boolean flag given a value
// that is not one.
var badBool = regexp.MustCompile(`^invalid boolean value "(.*)" for -(\S+): `)

// flagError turns the flag package's error into a usage error with a hint.
func flagError(err error, cmd string) error {
	help := "inferscope " + strings.TrimSpace(cmd+" --help") + " lists the flags"
	msg := err.Error()
	if m := badBool.FindStringSubmatch(msg); m != nil {
		return usagef(help, "--%s takes no value (or --%s=true, --%s=false), not %q", m[2], m[2], m[2], m[1])
	}
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	msg = strings.Replace(msg, " for flag -", " for --", 1)
	msg = strings.Replace(msg, "flag needs an argument: -", "flag needs an argument: --", 1)
	// The flag package's own words for a number it could not read.
	msg = strings.Replace(msg, ": parse error", ": not a number", 1)
	msg = strings.Replace(msg, ": value out of range", ": out of range", 1)
	return usagef(help, "%s", msg)
}

// durationFlag accepts Go durations and bare seconds.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (use 500ms, 2s, 1m or seconds)")
	}
	return d, nil
}

// sizeFlag reads a byte count: a whole or decimal number with an optional
// unit, B, k (KB, KiB), M (MB, MiB) or G (GB, GiB), case aside. Every unit
// is a power of 1024, as curl and Prometheus read them: 64M is 64 MiB.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return strconv.FormatInt(*f.n, 10)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

func parseSize(s string) (int64, error) {
	bad := errors.New("not a size (use bytes, or k, M or G: 512k, 64M, 1G)")
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, bad
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad
	}
	v *= mul
	if v >= math.MaxInt64 {
		return math.MaxInt64, nil // refused as too large by the caller, in its words
	}
	return int64(math.Round(v)), nil
}

// spellSize writes a byte count the way --max-bytes takes it: "64M", "1G",
// "1536k", or bytes when no unit divides it.
func spellSize(n int64) string {
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

// headerList collects repeated --header flags.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }
func (h *headerList) Set(s string) error {
	*h = append(*h, s)
	return nil
}
