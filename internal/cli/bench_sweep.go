package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/sweep"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// sweepFlags are the bench's flags for a series of runs: a sweep of
// loads, repeats, the knee under --slo.
type sweepFlags struct {
	sweep  string
	steps  int
	share  string
	repeat int
	csv    string

	// Set by check.
	profile string
	loads   []float64
	shareV  float64
}

// maxSweepSteps bounds a list's loads, --steps and --repeat.
const maxSweepSteps = 100

func (f *sweepFlags) define(cmd *cobra.Command) {
	fd := func(name, usage string) flagDef { return flagDef{name: name, noFiles: true, usage: usage} }
	flagDef{name: "sweep", choices: fixed("auto", "concurrency=", "rate="), usage: "run a series of steps, each a run: `S` is auto (one at a time, " +
		"the ceiling at --concurrency in flight, default " + strconv.Itoa(sweep.DefaultCeiling) + ", then rates between; with --slo a search for the knee), " +
		"concurrency=LIST (closed loops: 1,4,16) or rate=LIST (open loops, capped by --concurrency where given)"}.string(cmd, &f.sweep)
	fd("steps", "the rates --sweep auto spreads between its first two steps, and the most steps its knee search takes after them: `N` (default "+
		strconv.Itoa(sweep.DefaultSteps)+")").int(cmd, &f.steps)
	fd("slo-share", "the share `P` of a step's requests that must meet every --slo limit for the step to meet the target: 95% or 0.95 (default "+
		units.Percent(sweep.DefaultShare)+")").string(cmd, &f.share)
	fd("repeat", "run each step `N` times and state every figure's spread over the runs (default 1)").int(cmd, &f.repeat)
	flagDef{name: "csv", usage: "also write the sweep's steps to `FILE` as CSV, a row a step (with --sweep or --repeat)"}.string(cmd, &f.csv)
}

// open says --sweep runs open loops (its arrivals spaced as --arrival
// says), read before the flags are checked.
func (f *sweepFlags) open() bool {
	spec := strings.TrimSpace(f.sweep)
	kind, _, _ := strings.Cut(spec, "=")
	kind = strings.TrimSpace(kind)
	return spec == "auto" || kind == "rate" || kind == "r"
}

// sweeping says the run is a series: a sweep, or one load repeated.
func (f *sweepFlags) sweeping() bool { return f.profile != "" }

// check reads the sweep's flags beside the run's.
func (f *sweepFlags) check(o *benchOptions, set map[string]bool) error {
	spec := strings.TrimSpace(f.sweep)
	switch {
	case set["steps"] && spec != "auto":
		return usagef("add --sweep auto, or leave out --steps", "--steps sets the automatic profile's steps")
	case set["steps"] && (f.steps < 1 || f.steps > maxSweepSteps):
		return usagef(fmt.Sprintf("use --steps 1 to %d", maxSweepSteps), "--steps %d is out of range", f.steps)
	case set["repeat"] && (f.repeat < 1 || f.repeat > maxSweepSteps):
		return usagef(fmt.Sprintf("use --repeat 1 to %d", maxSweepSteps), "--repeat %d is out of range", f.repeat)
	case set["slo-share"] && o.slo == "":
		return usagef("add --slo with the limits, such as --slo ttft=500ms", "--slo-share is the share of requests that must meet --slo")
	}
	if f.repeat == 0 {
		f.repeat = 1
	}
	f.shareV = sweep.DefaultShare
	if set["slo-share"] {
		v, err := parseShare(f.share)
		if err != nil {
			return usagef("give a share such as 95% or 0.95", "--slo-share %q: %v", f.share, err)
		}
		f.shareV = v
	}
	switch {
	case spec == "auto":
		f.profile = sweep.ProfileAuto
		if set["rate"] {
			return usagef("leave out --rate: the automatic profile chooses its rates", "--sweep auto and --rate do not go together")
		}
	case spec != "":
		kind, list, ok := strings.Cut(spec, "=")
		kind = strings.TrimSpace(kind)
		switch {
		case !ok:
			return usagef("write --sweep auto, concurrency=1,4,16 or rate=2,4,8", "--sweep %q is not a profile or a list", f.sweep)
		case kind == "concurrency" || kind == "c":
			f.profile = sweep.ProfileConcurrency
			if set["rate"] || set["concurrency"] {
				return usagef("leave out --rate and --concurrency: the list sets the concurrency", "--sweep concurrency=… sets the load")
			}
		case kind == "rate" || kind == "r":
			f.profile = sweep.ProfileRate
			if set["rate"] {
				return usagef("leave out --rate: the list sets the rates", "--sweep rate=… sets the load")
			}
		default:
			return usagef("write --sweep auto, concurrency=1,4,16 or rate=2,4,8", "--sweep %q: %q is not concurrency or rate", f.sweep, kind)
		}
		loads, err := parseLoads(list, f.profile == sweep.ProfileConcurrency)
		if err != nil {
			return usagef("give a comma-separated list, such as "+map[bool]string{true: "concurrency=1,4,16", false: "rate=2,4,8"}[f.profile == sweep.ProfileConcurrency],
				"--sweep %s: %v", kind, err)
		}
		f.loads = loads
	case f.repeat > 1:
		f.profile = sweep.ProfileRepeat
	}
	switch {
	case f.csv != "" && !f.sweeping():
		return usagef("add --sweep or --repeat: the CSV has a row a step", "--csv writes a sweep's steps")
	case o.records != "" && f.sweeping():
		return usagef("leave out --records, or run one step once", "--records writes one run's requests, and a sweep has many")
	}
	return nil
}

// parseShare reads a share: 95% or 0.95.
func parseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number")
	}
	if pct {
		v /= 100
	}
	if !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("a share is above 0 and at most 100%%")
	}
	return v, nil
}

// parseLoads reads a list of concurrencies (whole, at least 1) or rates
// (above 0).
func parseLoads(list string, whole bool) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		v, err := strconv.ParseFloat(part, 64)
		switch {
		case part == "":
			return nil, fmt.Errorf("an empty value in the list")
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%q is not a number", part)
		case whole && (v < 1 || v != math.Trunc(v) || v > maxBenchConcurrency):
			return nil, fmt.Errorf("%q is not a concurrency from 1 to %s", part, units.Integer(maxBenchConcurrency))
		case !whole && v <= 0:
			return nil, fmt.Errorf("%q is not a rate above 0", part)
		}
		out = append(out, v)
	}
	if len(out) > maxSweepSteps {
		return nil, fmt.Errorf("%d steps, more than %d", len(out), maxSweepSteps)
	}
	return out, nil
}

// runSweep runs the series cfg is every step of and writes its report.
func (o *benchOptions) runSweep(ctx context.Context, io *iostreams.IO, cfg bench.Config, set map[string]bool) error {
	f := &o.sweepFlags
	if build := cfg.Build; build != nil {
		// A sweep's runs keep the server's figures, not its series as
		// sent: --json's raw families, a run's worth each, say nothing a
		// sweep reads.
		cfg.Build = func(s *snapshot.Snapshot, now time.Time) *report.Report {
			r := build(s, now)
			r.Raw = nil
			return r
		}
	}
	sc := sweep.Config{Base: cfg, Profile: f.profile, Loads: f.loads, Steps: f.steps, Repeat: f.repeat, Share: f.shareV, Drain: o.drain}
	switch f.profile {
	case sweep.ProfileRate:
		if set["concurrency"] {
			sc.Cap = o.concurrency
		}
	case sweep.ProfileAuto:
		if set["concurrency"] {
			sc.Ceiling = o.concurrency
		}
	}
	var csvFile *os.File
	if f.csv != "" {
		var err error
		if csvFile, err = os.Create(f.csv); err != nil {
			return usagef("check that the folder exists and is writable", "cannot write the CSV: %v", termsafe.Text(err.Error()))
		}
		defer csvFile.Close()
	}
	// On a terminal: a line a run as it starts, and the run's progress
	// line under it.
	var mu sync.Mutex
	var line *bench.ProgressLine
	if io.OutTTY && io.Getenv("TERM") != "dumb" {
		width := o.layoutWidth(io)
		sc.Progress = func(s sweep.Status) {
			mu.Lock()
			defer mu.Unlock()
			line.Clear()
			if s.Draining {
				line = bench.NewProgressLine(io.Err, width)
				fmt.Fprintf(io.Err, "\r%s\x1b[K", clip(s.Words(), width))
				return
			}
			fmt.Fprintf(io.Err, "\r%s\x1b[K\n", clip(s.Words(), width))
			line = bench.NewProgressLine(io.Err, width)
		}
		sc.Base.Progress = func(s bench.Status) {
			mu.Lock()
			l := line
			mu.Unlock()
			l.Draw(s)
		}
	}
	res, runErr := sweep.Run(ctx, sc)
	mu.Lock()
	line.Clear()
	mu.Unlock()
	if res == nil {
		return runErr
	}
	if csvFile != nil {
		if err := sweep.CSV(csvFile, res); err != nil {
			return usagef("check the disk", "writing the CSV: %v", termsafe.Text(err.Error()))
		}
		if err := csvFile.Close(); err != nil {
			return usagef("check the disk", "writing the CSV: %v", termsafe.Text(err.Error()))
		}
	}
	var err error
	switch {
	case o.html:
		return writeHTML(io, res)
	case o.json:
		err = sweep.JSON(io.Out, res)
	default:
		err = sweep.Text(io.Out, res, sweep.TextOptions{Render: o.renderOptions(io, o.layoutWidth(io))})
	}
	if err != nil {
		return writeError(err)
	}
	// The steps that ran are written; what stopped the rest is said after.
	return runErr
}

// clip cuts s to fit a line of width cells, leaving the last for the
// cursor.
func clip(s string, width int) string {
	r := []rune(s)
	if width > 1 && len(r) > width-1 {
		return string(r[:width-2]) + "…"
	}
	return s
}
