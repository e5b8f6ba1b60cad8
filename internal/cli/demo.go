package cli

import (
	"context"
	"errors"
	"fmt"
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
  --speed X        simulated seconds per wall second (default 20)
  --seed N         random seed; the same seed gives the same run (default 1)
  --listen ADDR    where to serve /metrics (default a free loopback port)
  --no-ui          serve only; print the URL and wait for Ctrl-C
  --once           simulate --sim-time in virtual time and print the report
  --sim-time D     how much to simulate with --once (default 10m)
  --watch D        refresh interval of the view (default 1s)
  --windows LIST   rate windows of the view
  --json, --hist, --width, --columns, --no-color   as for inferscope itself
`

func runDemo(ctx context.Context, args []string, io *iostreams.IO) int {
	if wantsHelp(args) {
		fmt.Fprintf(io.Out, demoUsage, strings.Join(demo.Scenarios(), ", "))
		return ExitOK
	}
	o := &inspectOptions{windows: "", watch: time.Second}
	d := demo.Options{Scenario: "chat", Speed: 20, Seed: 1, SimTime: 10 * time.Minute}
	var noUI, once bool
	fs := newFlagSet("demo")
	fs.StringVar(&d.Scenario, "scenario", d.Scenario, "")
	fs.Float64Var(&d.Speed, "speed", d.Speed, "")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "")
	fs.StringVar(&d.Listen, "listen", "", "")
	fs.BoolVar(&noUI, "no-ui", false, "")
	fs.BoolVar(&once, "once", false, "")
	fs.Var(durationFlag{&d.SimTime}, "sim-time", "")
	fs.Var(durationFlag{&o.watch}, "watch", "")
	fs.StringVar(&o.windows, "windows", "", "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.hist, "hist", false, "")
	fs.IntVar(&o.width, "width", 0, "")
	fs.IntVar(&o.columns, "columns", 0, "")
	fs.BoolVar(&o.noColor, "no-color", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		printError(io.Err, flagError(err, "demo"))
		return ExitError
	}
	if len(pos) > 0 {
		printError(io.Err, usagef("inferscope demo takes flags only; inferscope demo --help lists them", "unexpected argument %q", pos[0]))
		return ExitError
	}
	if err := d.Validate(); err != nil {
		printError(io.Err, usagef("inferscope demo --help lists the scenarios and flags", "%v", err))
		return ExitError
	}
	if o.watch <= 0 {
		printError(io.Err, usagef("use a positive interval such as --watch 1s", "--watch must be positive"))
		return ExitError
	}
	if once {
		body, now, err := demo.Once(d)
		if err != nil {
			printError(io.Err, err)
			return ExitError
		}
		snap, err := parse(&scrape.Result{Source: "demo:" + d.Scenario, Body: body, ScrapedAt: now}, dialect.Options{Dialect: "tabbyapi"})
		if err != nil {
			printError(io.Err, fmt.Errorf("reading the simulator's own exposition: %w", err))
			return ExitError
		}
		return o.emit(io, o.build(snap, now, o.hist))
	}
	srv, err := demo.Start(ctx, d)
	if err != nil {
		var us *usageError
		if !errors.As(err, &us) {
			err = usagef("pick another address with --listen, or leave it out for a free port", "%v", err)
		}
		printError(io.Err, err)
		return ExitError
	}
	fmt.Fprintf(io.Err, "inferscope: demo: simulated %q server at %s (%gx speed, seed %d)\n", d.Scenario, srv.URL(), d.Speed, d.Seed)
	if noUI {
		fmt.Fprintf(io.Err, "inferscope: demo: serving until Ctrl-C; try: inferscope %s\n", srv.URL())
		<-ctx.Done()
		return ExitOK
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
