package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// demoFleetScrape is the scrape interval of the prometheus.yml the demo
// fleet writes: short, so that a window of a minute has many samples.
const demoFleetScrape = 2 * time.Second

// fleetRefuses are the demo's flags a fleet of servers does not read: it
// draws no report (--heat and --ascii were accepted and ignored).
var fleetRefuses = append([]string{"once", "sim-time", "listen", "no-ui", "scenario", "watch"}, viewFlags...)

// demoFleet is demo --servers N [--prometheus-config FILE].
type demoFleet struct {
	servers int
	config  string
}

func (f *demoFleet) define(cmd *cobra.Command) {
	flagDef{name: "servers", noFiles: true, usage: fmt.Sprintf("serve `N` simulated servers (1 to %d), each a scenario in turn", demo.MaxFleet)}.int(cmd, &f.servers)
	flagDef{name: "prometheus-config", usage: "with --servers: write a prometheus.yml scraping them to `FILE`"}.string(cmd, &f.config)
}

func (f *demoFleet) check(set map[string]bool) error {
	switch {
	case set["prometheus-config"] && f.servers == 0:
		return usagef("add --servers N: the file scrapes a fleet of simulated servers", "--prometheus-config goes with --servers")
	case set["servers"] && (f.servers < 1 || f.servers > demo.MaxFleet):
		return usagef(fmt.Sprintf("use --servers 1 to %d", demo.MaxFleet), "--servers %d is out of range", f.servers)
	}
	return nil
}

// runFleet serves a fleet of simulated servers until Ctrl-C, having
// written a prometheus.yml that scrapes them where asked.
func (d *demoOptions) runFleet(ctx context.Context, io *iostreams.IO) error {
	servers, err := demo.StartFleet(ctx, d.fleet.servers, d.sim)
	if err != nil {
		return usagef("this is a bug in inferscope's simulator: please report it with the command you ran", "starting the simulators: %v", err)
	}
	fmt.Fprintf(io.Err, "inferscope: demo: %d simulated servers (%gx speed, seed %d):\n", len(servers), d.sim.Speed, d.sim.Seed)
	for _, s := range servers {
		fmt.Fprintf(io.Err, "inferscope: demo:   %-20s %s\n", s.Pod(), s.URL())
	}
	if d.fleet.config != "" {
		conf := demo.FleetConfig(servers, demoFleetScrape)
		if err := os.WriteFile(d.fleet.config, []byte(conf), 0o644); err != nil {
			return usagef("check that the folder exists and is writable", "cannot write %s: %v", d.fleet.config, err)
		}
		notice(io.Err, "demo: wrote %s; next:", d.fleet.config)
		notice(io.Err, "demo:   prometheus --config.file=%s --storage.tsdb.path=\"$(mktemp -d)\" --web.listen-address=127.0.0.1:9090", whole(termsafe.ShellEcho(d.fleet.config)))
		fmt.Fprintf(io.Err, "inferscope: demo:   %s\n", demo.FleetCommand)
	}
	fmt.Fprintln(io.Err, "inferscope: demo: serving until Ctrl-C")
	<-ctx.Done()
	return ctx.Err()
}
