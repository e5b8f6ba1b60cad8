package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/watch"
)

const demoUsage = `inferscope demo: a simulated inference server, so you can see inferscope without a GPU

Usage:
  inferscope demo [--scenario S] [--speed 20] [--seed N]    serve it and open the watch view
  inferscope demo --listen 127.0.0.1:9400 --no-ui          only serve /metrics (for curl, Prometheus,
                                                           or another inferscope)
  inferscope demo --once --sim-time 10m [--json]           simulate as fast as possible, print one report

Scenarios: %s

Flags:
  --scenario S     the workload (default chat)
  --speed X        simulated seconds per wall second, at most %d (default 20)
  --seed N         random seed; the same seed gives the same run (default 1)
  --listen ADDR    where to serve /metrics (default a free loopback port)
  --no-ui          serve only; print the URL and wait for Ctrl-C
  --once           simulate --sim-time in virtual time and print the report
  --sim-time D     how much to simulate with --once, at most %s (default 10m)
  --watch D        refresh interval of the view, at least 0.2s (default 1s)
  --windows LIST   rate windows of the view
  --json, --hist, --width, --columns, --no-color   as for inferscope itself

Ctrl-C ends every form (exit status 130).
`

// demoModes says which flags each form of the demo reads: a flag given to
// a form that does not read it is refused, never ignored.
var demoModes = map[string][]string{
	"once":  {"listen", "no-ui", "speed", "watch", "windows"},
	"no-ui": {"once", "sim-time", "watch", "windows", "json", "hist", "width", "columns", "no-color"},
	"view":  {"sim-time"},
}

func runDemo(ctx context.Context, args []string, io *iostreams.IO) int {
	if wantsHelp(args) {
		fmt.Fprintf(io.Out, demoUsage, strings.Join(demo.Scenarios(), ", "), demo.MaxSpeed, spell(demo.MaxSimTime))
		return ExitOK
	}
	o := &inspectOptions{windows: "", watch: time.Second}
	d := demo.Options{Scenario: "chat", Speed: 20, Seed: 1, SimTime: 10 * time.Minute}
	var noUI, once bool
	fs := demoFlags(o, &d, &noUI, &once)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		printError(io.Err, flagError(err, "demo"))
		return ExitError
	}
	if err := checkDemo(fs, pos, d, o, once, noUI); err != nil {
		printError(io.Err, err)
		return ExitError
	}
	if once {
		got, err := bounded(ctx, 0, func(ctx context.Context) (*outcome, error) {
			body, now, err := demo.Once(ctx, d)
			if err != nil {
				return nil, err
			}
			snap, err := parse(ctx, &scrape.Result{Source: "demo:" + d.Scenario, Body: body, ScrapedAt: now}, dialect.Options{Dialect: "tabbyapi"})
			if err != nil {
				return nil, usagef("this is a bug in inferscope's simulator or reader: please report it with the command you ran",
					"reading the simulator's own exposition: %v", err)
			}
			return o.rendered(io, o.build(snap, now, o.hist), nil)
		})
		return o.finish(ctx, io, got, err)
	}
	srv, err := demo.Start(ctx, d)
	if err != nil {
		printError(io.Err, usagef("pick another address with --listen, or leave it out for a free port", "%v", err))
		return ExitError
	}
	fmt.Fprintf(io.Err, "inferscope: demo: simulated %q server at %s (%gx speed, seed %d)\n", d.Scenario, srv.URL(), d.Speed, d.Seed)
	if noUI {
		fmt.Fprintf(io.Err, "inferscope: demo: serving until Ctrl-C; try: inferscope %s\n", srv.URL())
		<-ctx.Done()
		return ExitInterrupted
	}
	if o.windows == "" {
		o.windows = watch.DefaultWindows
	}
	o.target = srv.URL()
	if d.Speed != 1 {
		o.header = []string{fmt.Sprintf("simulated at %gx speed: request times and rates run %gx faster than the wall clock, so utilization reads overlapped", d.Speed, d.Speed)}
	}
	o.timeout = 30 * time.Second
	o.maxBytes = 64 << 20
	return o.runWatch(ctx, io, scrape.Options{Timeout: o.timeout, MaxBytes: o.maxBytes})
}

// demoFlags defines the demo's flags into o, d, noUI and once.
func demoFlags(o *inspectOptions, d *demo.Options, noUI, once *bool) *flag.FlagSet {
	fs := newFlagSet("demo")
	fs.StringVar(&d.Scenario, "scenario", d.Scenario, "")
	fs.Float64Var(&d.Speed, "speed", d.Speed, "")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "")
	fs.StringVar(&d.Listen, "listen", "", "")
	fs.BoolVar(noUI, "no-ui", false, "")
	fs.BoolVar(once, "once", false, "")
	fs.Var(durationFlag{&d.SimTime}, "sim-time", "")
	fs.Var(durationFlag{&o.watch}, "watch", "")
	fs.StringVar(&o.windows, "windows", "", "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.hist, "hist", false, "")
	fs.IntVar(&o.width, "width", 0, "")
	fs.IntVar(&o.columns, "columns", 0, "")
	fs.BoolVar(&o.noColor, "no-color", false, "")
	return fs
}

// checkDemo refuses what the demo cannot do as asked: arguments, flags the
// chosen form does not read, and values out of range.
func checkDemo(fs *flag.FlagSet, pos []string, d demo.Options, o *inspectOptions, once, noUI bool) error {
	const help = "inferscope demo --help lists the scenarios and flags"
	if len(pos) > 0 {
		return usagef("inferscope demo takes flags only; "+help, "unexpected argument %q", pos[0])
	}
	if once && noUI {
		return usagef("--once prints one report and exits; --no-ui serves until Ctrl-C: pick one", "--once and --no-ui do not go together")
	}
	mode := "view"
	switch {
	case once:
		mode = "once"
	case noUI:
		mode = "no-ui"
	}
	var refused error
	fs.Visit(func(f *flag.Flag) {
		if refused == nil && slices.Contains(demoModes[mode], f.Name) {
			form := map[string]string{"once": "--once", "no-ui": "--no-ui", "view": "the watch view (it simulates until Ctrl-C)"}[mode]
			refused = usagef(help, "--%s does nothing with %s", f.Name, form)
		}
	})
	if refused != nil {
		return refused
	}
	switch {
	case once && d.SimTime <= 0:
		return usagef("simulate some time, such as --sim-time 10m (a simulated day takes about a second)", "--sim-time must be positive")
	case d.SimTime > demo.MaxSimTime:
		return usagef("simulate at most "+spell(demo.MaxSimTime)+" (a week), such as --sim-time 24h: it covers the longest rate window",
			"--sim-time %s is more than the demo simulates (at most %s)", spell(d.SimTime), spell(demo.MaxSimTime))
	}
	if err := d.Validate(); err != nil {
		return usagef(help, "%v", err)
	}
	if err := checkLayout(o.columns, o.width); err != nil {
		return err
	}
	if !once {
		if err := checkInterval(o.watch); err != nil {
			return err
		}
	}
	if o.windows != "" {
		if _, err := parseWindows(o.windows); err != nil {
			return err
		}
	}
	return nil
}
