package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/units"
)

// demoRefresh is the demo view's refresh interval unless --watch says
// otherwise.
const demoRefresh = time.Second

// demoLong is the demo's help, its defaults and limits filled in from
// where they are declared.
var demoLong = `A simulated inference engine (requests arriving by scenario, batches of
prefill chunks and decode steps on its own clock, a paged KV cache keyed by
prefix hashes, optional KV offload, recurrent-state checkpoints and a
drafter) publishing tabbyAPI's metric set, so that inferscope can be seen
without a GPU. It runs in one of four forms: the watch view on it (the
default, refreshed every ` + units.Duration(demoRefresh) + ` unless --watch says), serving only (--no-ui),
one report of a simulated stretch as fast as possible (--once), or a fleet
of servers and a prometheus.yml scraping them (--servers). A flag the form
does not read is refused. /metrics is served on --listen, or on a free
loopback port.

Scenarios: ` + strings.Join(demo.Scenarios(), ", ") + `.

--api also serves /v1/chat/completions, /v1/completions, /api/chat and
/api/generate on the simulated engine, streamed at its pace (for inferscope
proxy or any client): only its requests arrive, and --speed defaults to 1.

` + watchKeys

const demoExample = `  inferscope demo                                   the chat scenario at 20x, watched
  inferscope demo --scenario offload-thrash          a thrashing KV offload
  inferscope demo --listen 127.0.0.1:9400 --no-ui    serve /metrics only, for curl or Prometheus
  inferscope demo --once --sim-time 10m -o json      simulate 10 minutes, one report
  inferscope demo --servers 4 --prometheus-config prometheus.yml
  inferscope demo --api 127.0.0.1:11434 --no-ui      an OpenAI- and Ollama-compatible API`

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
	return &demoOptions{
		sim:  demo.Options{Scenario: demo.DefaultScenario, Speed: demo.DefaultSpeed, Seed: demo.DefaultSeed, SimTime: demo.DefaultSimTime},
		view: defaultOptions(),
	}
}

// newDemoCmd is inferscope demo.
func newDemoCmd(io *iostreams.IO) *cobra.Command {
	d := defaultDemo()
	cmd := newCommand(commandSpec{
		use:     "demo [flags]",
		short:   "a simulated inference server, watched: inferscope without a GPU",
		long:    demoLong,
		example: demoExample,
		exits:   []exitStatus{{ExitOK, "with --once, the report written; the view closed with q"}},
		args:    noArgs,
		moved:   map[string]string{"windows": "--windows is now --watch-windows"},
		run: func(cmd *cobra.Command, _ []string) error {
			if err := d.check(cmd); err != nil {
				return err
			}
			return d.run(cmd.Context(), io, given(cmd))
		},
	})
	d.define(cmd)
	return cmd
}

// define defines the demo's flags on cmd.
func (d *demoOptions) define(cmd *cobra.Command) {
	flagDef{name: "scenario", choices: demo.Scenarios, usage: "the workload, `S`: " + strings.Join(demo.Scenarios(), ", ")}.string(cmd, &d.sim.Scenario)
	flagDef{name: "speed", noFiles: true, usage: fmt.Sprintf("simulated seconds per wall second, `X`, at most %d", demo.MaxSpeed)}.float(cmd, &d.sim.Speed)
	flagSeed.uint64(cmd, &d.sim.Seed)
	flagListen.string(cmd, &d.sim.Listen)
	flagDef{name: "api", noFiles: true, usage: "also serve an OpenAI- and Ollama-compatible API on `ADDR` (host:port)"}.string(cmd, &d.sim.API)
	flagDef{name: "no-ui", usage: "serve only: print the URL and wait for Ctrl-C"}.bool(cmd, &d.noUI)
	flagDef{name: "once", usage: "simulate --sim-time in virtual time and print one report"}.bool(cmd, &d.once)
	flagDef{name: "sim-time", noFiles: true, usage: "how much to simulate with --once, `D`, at most " + units.Duration(demo.MaxSimTime)}.duration(cmd, &d.sim.SimTime)
	d.fleet.define(cmd)
	d.view.outputFlags.define(cmd)
	d.view.watchFlags.define(cmd)
}

// demoModes says which flags each form of the demo does not read: a flag
// given to a form that does not read it is refused, never ignored.
var demoModes = map[string][]string{
	"once":  {"listen", "no-ui", "speed", "watch", "watch-windows", "heat", "api"},
	"no-ui": append([]string{"once", "sim-time", "watch"}, viewFlags...),
	"view":  {"sim-time"},
	"fleet": fleetRefuses,
}

// check refuses what the demo cannot do as asked: arguments, flags the
// chosen form does not read, and values out of range.
func (d *demoOptions) check(cmd *cobra.Command) error {
	const help = "inferscope demo --help lists the scenarios and flags"
	set := given(cmd)
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
	cmd.Flags().Visit(func(f *pflag.Flag) {
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
	if err := d.view.outputFlags.check(set); err != nil {
		return err
	}
	if err := d.view.watchFlags.check(set); err != nil {
		return err
	}
	return d.fleet.check(set)
}

// run runs the form the flags chose (set holds the names of the flags
// given).
func (d *demoOptions) run(ctx context.Context, io *iostreams.IO, set map[string]bool) error {
	if d.fleet.servers != 0 {
		return d.runFleet(ctx, io)
	}
	if d.sim.API != "" && !set["speed"] {
		d.sim.Speed = 1 // an API streams at the pace a client would see
	}
	o := &d.view
	if !set["watch"] {
		o.watch = demoRefresh
	}
	o.timeout = timeoutFor(set, 0, o.watch)
	o.withRates = true
	if d.once {
		o.withRates = false
		got, err := bounded(ctx, 0, func(ctx context.Context) (*outcome, error) {
			body, gpuBody, now, err := demo.OnceWithGPU(ctx, d.sim)
			if err != nil {
				return nil, err
			}
			snap, err := parse(ctx, &scrape.Result{Source: "demo:" + d.sim.Scenario, Body: body, ScrapedAt: now}, dialect.Options{Dialect: "tabbyapi"})
			if err == nil {
				// The simulated GPU under it (issue 32), read as a
				// dcgm-exporter's scrape is.
				snap.GPU, err = gpu.Parse(ctx, &scrape.Result{Source: "demo:gpu", Body: gpuBody, ScrapedAt: now})
			}
			if err != nil {
				return nil, usagef("this is a bug in inferscope's simulator or reader: please report it with the command you ran",
					"reading the simulator's own exposition: %v", err)
			}
			return o.rendered(io, o.build(snap, now, o.hist), nil)
		})
		return o.deliver(ctx, io, got, err)
	}
	// Served for other programs, a simulation run faster than the wall
	// clock publishes no start: no wall-clock uptime holds its requests'
	// simulated times, and a reader would say so at every scrape.
	d.sim.NoStart = d.noUI && d.sim.Speed != 1
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
		if d.sim.NoStart {
			fmt.Fprintf(io.Err, "inferscope: demo: no process start published: at %gx speed its requests' times outrun the wall clock's uptime\n", d.sim.Speed)
		}
		fmt.Fprintf(io.Err, "inferscope: demo: serving until Ctrl-C; try: inferscope %s\n", srv.URL())
		<-ctx.Done()
		return ctx.Err()
	}
	o.target = srv.URL()
	o.gpu = srv.GPUURL() // the simulated GPU under it (issue 32)
	// Read the simulated server on its own clock, as --once does: its
	// start, uptime and request times then agree (on the wall clock, a
	// request of 40 simulated seconds ran within 7 s of uptime).
	o.clock = srv.Now
	if d.sim.Speed != 1 {
		o.header = []string{fmt.Sprintf("simulated at %gx speed: times are the simulated server's own clock, and the rates, over the wall clock, run %gx faster", d.sim.Speed, d.sim.Speed)}
	}
	// The demo's own server: no user headers, no token.
	so := scrape.Options{Timeout: o.timeout, MaxBytes: o.maxBytes, UserAgent: userAgent()}
	return o.runWatch(ctx, io, so)
}
