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
	"github.com/inferscope/inferscope/internal/units"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
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
// exit code.
func Main(args []string, io *iostreams.IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, args, io)
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

// flagError turns the flag package's error into a usage error with a hint.
func flagError(err error, cmd string) error {
	msg := err.Error()
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	msg = strings.Replace(msg, " for flag -", " for --", 1)
	msg = strings.Replace(msg, "flag needs an argument: -", "flag needs an argument: --", 1)
	return usagef("inferscope "+strings.TrimSpace(cmd+" --help")+" lists the flags", "%s", msg)
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

// headerList collects repeated --header flags.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }
func (h *headerList) Set(s string) error {
	*h = append(*h, s)
	return nil
}
