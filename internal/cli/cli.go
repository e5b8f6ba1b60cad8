// Package cli is inferscope's command line: it parses flags, drives the
// scrape → parse → analyze → render pipeline, and maps failures to the
// `inferscope: error:` / `inferscope: hint:` lines and exit codes. It never
// exits the process itself, so tests run it many times in one process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/units"
)

// Version is set at build time with -ldflags "-X …/internal/cli.Version=v1.2.3";
// otherwise it is the module version go install recorded, else "dev".
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Main runs inferscope with args (without the program name) and returns the
// exit code. Ctrl-C (SIGINT) ends any mode at once with ExitInterrupted,
// having written nothing half-done; a second Ctrl-C kills the process.
func Main(args []string, io *iostreams.IO) int {
	ctx, stop := interruptible()
	defer stop()
	return run(ctx, args, io)
}

// interruptible returns a context that SIGINT ends. Once it has, SIGINT is
// given back its default action, so that a second one kills the process
// whatever is still running.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

func run(ctx context.Context, args []string, io *iostreams.IO) int {
	if len(args) > 0 {
		switch args[0] {
		case "demo":
			return runDemo(ctx, args[1:], io)
		case "version", "--version":
			fmt.Fprintln(io.Out, "inferscope", version())
			return ExitOK
		case "help":
			fmt.Fprint(io.Out, usage)
			return ExitOK
		}
	}
	return runInspect(ctx, args, io)
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

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
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

// spell writes a duration as a flag takes it: "2s", "1m", "1m30s", "500ms".
func spell(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
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
