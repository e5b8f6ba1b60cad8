package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// demoRefresh is the demo view's refresh interval unless --watch says
// otherwise.
const demoRefresh = time.Second

// demoUsage is the demo's help text, its defaults and limits filled in
// from where they are declared.
var demoUsage = fill(`inferscope demo: a simulated inference server, so you can see inferscope without a GPU

Usage:
  inferscope demo [--scenario S] [--speed {speed}] [--seed N]    serve it and open the watch view
  inferscope demo --listen 127.0.0.1:9400 --no-ui          only serve /metrics (for curl, Prometheus,
                                                           or another inferscope)
  inferscope demo --once --sim-time {sim-time} [--json]           simulate as fast as possible, print one report
  inferscope demo --servers 4 --prometheus-config prometheus.yml
                                                           a fleet of servers and a prometheus.yml
                                                           scraping them (for inferscope fleet)
  inferscope demo --api 127.0.0.1:11434 --no-ui            also serve an OpenAI- and Ollama-compatible API on the
                                                           simulated engine (for inferscope proxy, or any client)

Scenarios: {scenarios}

Flags:
  --scenario S     the workload (default {scenario})
  --speed X        simulated seconds per wall second, at most {max-speed} (default {speed})
  --seed N         random seed; the same seed gives the same run (default {seed})
  --listen ADDR    where to serve /metrics (default a free loopback port)
  --api ADDR       serve /v1/chat/completions, /v1/completions, /api/chat and /api/generate on ADDR,
                   streamed at the simulated pace; only its requests arrive (the scenario's own
                   users are off), and --speed defaults to 1
  --no-ui          serve only; print the URL and wait for Ctrl-C
  --once           simulate --sim-time in virtual time and print the report
  --sim-time D     how much to simulate with --once, at most {max-sim-time} (default {sim-time})
  --watch D        refresh interval of the view, at least {min-interval} (default {refresh})
  --windows LIST   rate windows of the view
  --servers N      serve N simulated servers (1 to {max-servers}), each a scenario in turn
  --prometheus-config FILE   with --servers: write a prometheus.yml scraping them to FILE
  --json, --hist, --width, --columns, --no-color   as for inferscope itself

Ctrl-C ends every form (exit status {interrupted}).
`,
	"scenarios", strings.Join(demo.Scenarios(), ", "),
	"scenario", demo.DefaultScenario,
	"speed", strconv.FormatFloat(demo.DefaultSpeed, 'g', -1, 64),
	"max-speed", strconv.Itoa(demo.MaxSpeed),
	"seed", strconv.Itoa(demo.DefaultSeed),
	"sim-time", units.Duration(demo.DefaultSimTime),
	"max-sim-time", units.Duration(demo.MaxSimTime),
	"min-interval", seconds(watch.MinInterval),
	"refresh", units.Duration(demoRefresh),
	"interrupted", strconv.Itoa(ExitInterrupted),
	"max-servers", strconv.Itoa(demo.MaxFleet),
)

// demoOptions are the demo's flags: what to simulate, which form to run,
// and the report's and the view's flags as inspect takes them.
type demoOptions struct {
	sim        demo.Options
	once, noUI bool
	view       inspectOptions
	fleet      demoFleet
}

// defaultDemo is the demo as it runs without flags.
func defaultDemo() *demoOptions {
	d := &demoOptions{
		sim:  demo.Options{Scenario: demo.DefaultScenario, Speed: demo.DefaultSpeed, Seed: demo.DefaultSeed, SimTime: demo.DefaultSimTime},
		view: defaultOptions(),
	}
	d.view.watch = demoRefresh
	return d
}

// flags defines the demo's flags into d.
func (d *demoOptions) flags() *flag.FlagSet {
	fs := newFlagSet("demo")
	fs.StringVar(&d.sim.Scenario, "scenario", d.sim.Scenario, "")
	fs.Float64Var(&d.sim.Speed, "speed", d.sim.Speed, "")
	fs.Uint64Var(&d.sim.Seed, "seed", d.sim.Seed, "")
	fs.StringVar(&d.sim.Listen, "listen", d.sim.Listen, "")
	fs.StringVar(&d.sim.API, "api", d.sim.API, "")
	fs.BoolVar(&d.noUI, "no-ui", d.noUI, "")
	fs.BoolVar(&d.once, "once", d.once, "")
	fs.Var(durationFlag{&d.sim.SimTime}, "sim-time", "")
	d.view.outputFlags.define(fs)
	d.view.watchFlags.define(fs)
	d.fleet.define(fs)
	return fs
}

// demoModes says which flags each form of the demo does not read: a flag
// given to a form that does not read it is refused, never ignored.
var demoModes = map[string][]string{
	"once":  {"listen", "no-ui", "speed", "watch", "windows", "api"},
	"no-ui": {"once", "sim-time", "watch", "windows", "json", "hist", "width", "columns", "no-color"},
	"view":  {"sim-time"},
	"fleet": fleetRefuses,
}

// check refuses what the demo cannot do as asked: arguments, flags the
// chosen form does not read, and values out of range.
func (d *demoOptions) check(fs *flag.FlagSet, pos []string) error {
	const help = "inferscope demo --help lists the scenarios and flags"
	if len(pos) > 0 {
		return usagef("inferscope demo takes flags only; "+help, "unexpected argument %q", pos[0])
	}
	if d.once && d.noUI {
		return usagef("--once prints one report and exits; --no-ui serves until Ctrl-C: pick one", "--once and --no-ui do not go together")
	}
	mode, form := "view", "the watch view (it simulates until Ctrl-C)"
	switch {
	case d.fleet.servers != 0:
		mode, form = "fleet", "--servers"
	case d.once:
		mode, form = "once", "--once"
	case d.noUI:
		mode, form = "no-ui", "--no-ui"
	}
	var refused error
	fs.Visit(func(f *flag.Flag) {
		if refused == nil && slices.Contains(demoModes[mode], f.Name) {
			refused = usagef(help, "--%s does nothing with %s", f.Name, form)
		}
	})
	if refused != nil {
		return refused
	}
	switch {
	case d.once && d.sim.SimTime <= 0:
		return usagef("simulate some time, such as --sim-time 10m (a simulated day takes about a second)", "--sim-time must be positive")
	case d.sim.SimTime > demo.MaxSimTime:
		return usagef("simulate at most "+units.Duration(demo.MaxSimTime)+" (a week), such as --sim-time 24h: it covers the longest rate window",
			"--sim-time %s is more than the demo simulates (at most %s)", units.Duration(d.sim.SimTime), units.Duration(demo.MaxSimTime))
	}
	if err := d.sim.Validate(); err != nil {
		return usagef(help, "%v", err)
	}
	if err := d.view.outputFlags.check(); err != nil {
		return err
	}
	return d.view.watchFlags.check(given(fs))
}

func runDemo(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, demoUsage)
		return nil
	}
	d := defaultDemo()
	fs := d.flags()
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err, "demo")
	}
	if err := d.check(fs, pos); err != nil {
		return err
	}
	if err := d.fleet.check(given(fs)); err != nil {
		return err
	}
	if d.fleet.servers != 0 {
		return d.runFleet(ctx, io)
	}
	if d.sim.API != "" && !given(fs)["speed"] {
		d.sim.Speed = 1 // an API streams at the pace a client would see
	}
	o := &d.view
	if d.once {
		got, err := bounded(ctx, 0, func(ctx context.Context) (*outcome, error) {
			body, now, err := demo.Once(ctx, d.sim)
			if err != nil {
				return nil, err
			}
			snap, err := parse(ctx, &scrape.Result{Source: "demo:" + d.sim.Scenario, Body: body, ScrapedAt: now}, dialect.Options{Dialect: "tabbyapi"})
			if err != nil {
				return nil, usagef("this is a bug in inferscope's simulator or reader: please report it with the command you ran",
					"reading the simulator's own exposition: %v", err)
			}
			return o.rendered(io, o.build(snap, now, o.hist), nil)
		})
		return o.deliver(ctx, io, got, err)
	}
	srv, err := demo.Start(ctx, d.sim)
	if err != nil {
		// An address it cannot listen on explains itself; the options were
		// checked above, so anything else is the simulator's fault.
		var le *demo.ListenError
		if !errors.As(err, &le) {
			err = usagef("this is a bug in inferscope's simulator: please report it with the command you ran", "starting the simulator: %v", err)
		}
		return err
	}
	fmt.Fprintf(io.Err, "inferscope: demo: simulated %q server at %s (%gx speed, seed %d)\n", d.sim.Scenario, srv.URL(), d.sim.Speed, d.sim.Seed)
	if api := srv.APIURL(); api != "" {
		fmt.Fprintf(io.Err, "inferscope: demo: OpenAI- and Ollama-compatible API at %s (model %s; only its requests arrive)\n", api, demo.DefaultModel)
	}
	if d.noUI {
		fmt.Fprintf(io.Err, "inferscope: demo: serving until Ctrl-C; try: inferscope %s\n", srv.URL())
		<-ctx.Done()
		return ctx.Err()
	}
	o.target = srv.URL()
	if d.sim.Speed != 1 {
		o.header = []string{fmt.Sprintf("simulated at %gx speed: request times and rates run %gx faster than the wall clock, so requests in flight read %gx too many", d.sim.Speed, d.sim.Speed, d.sim.Speed)}
	}
	// The demo's own server: no user headers, no token.
	so := scrape.Options{Timeout: o.timeout, MaxBytes: o.maxBytes, UserAgent: userAgent()}
	return o.runWatch(ctx, io, so)
}
