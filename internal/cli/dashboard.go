package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/dashboard"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/units"
)

const dashboardLong = `Writes a Grafana or Perses dashboard of the report's figures for the series
names one server publishes: TARGET is a scrape of it, as inferscope reads one
(a URL, host:port, a saved scrape, or - for stdin); without one, --dialect
writes for a server's newest names. One panel per figure of the report, one
row per section, a variable per --by label ($instance, $model); every query
over $__rate_interval.`

const dashboardExample = `  inferscope dashboard gpu-box:8000 > dashboard.json                  Grafana JSON to import
  inferscope dashboard scrape.prom --format perses > dashboard.yaml    a Perses Dashboard
  inferscope dashboard --dialect sglang --title "LLM fleet"            a server's newest names`

// dashboardOptions are the flags of inferscope dashboard.
type dashboardOptions struct {
	sourceOptions
	title, uid string
	dcgm       bool
}

// newDashboardCmd is inferscope dashboard.
func newDashboardCmd(io *iostreams.IO) *cobra.Command {
	o := &dashboardOptions{}
	cmd := newCommand(commandSpec{
		use:     "dashboard [TARGET] [flags]",
		short:   "a Grafana or Perses dashboard of the report's figures for the series names a server publishes",
		long:    dashboardLong,
		example: dashboardExample,
		exits:   []exitStatus{{ExitOK, "the dashboard written, and a line on stderr saying what and for which names"}},
		args:    targetArg,
		moved:   map[string]string{"from": "the target is an argument now: inferscope dashboard TARGET"},
		run: func(cmd *cobra.Command, pos []string) error {
			lo, err := o.parse(cmd, pos)
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), io, lo)
		},
	})
	o.sourceOptions.define(cmd, false)
	flagDef{name: "title", noFiles: true, usage: "the dashboard's title, `TEXT` (default inferscope · SERVER)"}.string(cmd, &o.title)
	flagDef{name: "uid", noFiles: true, usage: "Grafana's uid and Perses' name, `ID` (default inferscope-DIALECT)"}.string(cmd, &o.uid)
	flagDCGM.bool(cmd, &o.dcgm)
	return cmd
}

func (o *dashboardOptions) parse(cmd *cobra.Command, pos []string) (promql.Options, error) {
	formats := make([]string, len(dashboard.Formats))
	for i, f := range dashboard.Formats {
		formats[i] = string(f)
	}
	lo, err := o.libraryOptions(cmd, pos, formats)
	if err != nil {
		return lo, err
	}
	if o.uid != "" && !validUID(o.uid) {
		return lo, usagef("use letters, digits, - and _ only, at most 40 of them", "--uid %q cannot name a dashboard", o.uid)
	}
	return lo, nil
}

// validUID reports an id both Grafana's uid and Perses' name accept.
func validUID(s string) bool {
	if len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func (o *dashboardOptions) run(ctx context.Context, io *iostreams.IO, lo promql.Options) error {
	f := dashboard.Format(o.format)
	// The labels to aggregate by decide the variables; they are the
	// dialect's default unless --by says, and the dialect may be known
	// only once the scrape is read.
	src, err := o.library(ctx, io, lo)
	if err != nil {
		return err
	}
	l, err := src.lib.With(dashboard.LibraryOptions(f, src.lib.By(), lo))
	if err != nil {
		return libraryError(err)
	}
	do := dashboard.Options{Title: o.title, UID: o.uid}
	if o.dcgm {
		// The GPU row over the user's selector alone: the engine's
		// variables name the engine's targets, not the exporter's.
		if do.GPU, err = promql.NewGPU(promql.Options{Selector: lo.Selector, Window: dashboard.RateInterval}); err != nil {
			return err
		}
	}
	if do.Title == "" {
		do.Title = "inferscope · " + title(l.Dialect())
	}
	var out []byte
	switch f {
	case dashboard.Grafana:
		out, err = dashboard.GrafanaJSON(l, lo.Selector, do)
	case dashboard.Perses:
		var d *dashboard.PersesDashboard
		if d, err = dashboard.NewPerses(l, lo.Selector, do); err == nil {
			out, err = dashboard.PersesYAML(d)
		}
	}
	if err != nil {
		return err
	}
	if _, err := io.Out.Write(out); err != nil {
		return writeError(err)
	}
	// The overview's panels, then a panel per report row.
	panels := dashboard.NewOverview(l).Panels(f)
	for _, r := range dashboard.Rows(l) {
		panels += len(r.Panels)
	}
	if do.GPU != nil {
		panels += len(dashboard.GPUPanels(do.GPU))
	}
	fmt.Fprintf(io.Err, "inferscope: a %s dashboard of %s for %s, %s\n", o.format, units.Plural(float64(panels), "panel"), l.Dialect(), src.names())
	return nil
}

// title is a dialect's name as people spell its server.
func title(name string) string {
	if i := slices.Index(dialect.Names(), name); i >= 0 {
		return dialect.Titles()[i]
	}
	return name
}
