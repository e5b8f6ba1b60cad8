package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/dashboard"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// dashboardUsage is the help text of inferscope dashboard.
var dashboardUsage = fill(`inferscope dashboard: a Grafana or Perses dashboard of the report's figures,
for the series names one server publishes

Usage:
  inferscope dashboard --from TARGET --format grafana > dashboard.json
  inferscope dashboard --from TARGET --format perses > dashboard.yaml
  inferscope dashboard --dialect NAME --format grafana                   a server's newest names

One panel per figure of the report, one row per section, a variable per --by label
($instance, $model); every query over $__rate_interval.

Flags:
{source-flags}
  --format F          grafana (JSON to import) or perses (a Dashboard resource); required
  --title TEXT        the dashboard's title (default inferscope · SERVER)
  --uid ID            Grafana's uid and Perses' name (default inferscope-DIALECT)
`,
	"source-flags", strings.Replace(sourceUsage, "{window-flag}", "", 1),
)

// dashboardOptions are the flags of inferscope dashboard.
type dashboardOptions struct {
	sourceOptions
	format, title, uid string
}

func (o *dashboardOptions) flags() *flag.FlagSet {
	fs := newFlagSet("dashboard")
	o.sourceOptions.define(fs, false)
	fs.StringVar(&o.format, "format", "", "")
	fs.StringVar(&o.title, "title", "", "")
	fs.StringVar(&o.uid, "uid", "", "")
	return fs
}

func parseDashboard(args []string) (*dashboardOptions, promql.Options, error) {
	o := &dashboardOptions{}
	fs := o.flags()
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, promql.Options{}, flagError(err, "dashboard")
	}
	if len(pos) > 0 {
		return nil, promql.Options{}, usagef("give the server with --from "+termsafe.ShellQuote(pos[0]), "inferscope dashboard takes no arguments, only flags: %s", strings.Join(pos, " "))
	}
	set := given(fs)
	lo, err := o.libraryOptions("dashboard", set)
	if err != nil {
		return nil, lo, err
	}
	formats := make([]string, len(dashboard.Formats))
	for i, f := range dashboard.Formats {
		formats[i] = string(f)
	}
	switch {
	case o.format == "":
		return nil, lo, usagef("add --format grafana (JSON to import) or --format perses", "give the dashboard's --format")
	case !slices.Contains(formats, o.format):
		return nil, lo, usagef("--format takes grafana or perses", "unknown dashboard format %q", o.format)
	case o.uid != "" && !validUID(o.uid):
		return nil, lo, usagef("use letters, digits, - and _ only, at most 40 of them", "--uid %q cannot name a dashboard", o.uid)
	}
	return o, lo, nil
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

func runDashboard(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, dashboardUsage)
		return nil
	}
	o, lo, err := parseDashboard(args)
	if err != nil {
		return err
	}
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
	panels := 0
	for _, r := range dashboard.Rows(l) {
		panels += len(r.Panels)
	}
	fmt.Fprintf(io.Err, "inferscope: a %s dashboard of %d panels for %s, %s\n", o.format, panels, l.Dialect(), src.names())
	return nil
}

// title is a dialect's name as people spell its server.
func title(name string) string {
	if i := slices.Index(dialect.Names(), name); i >= 0 {
		return dialect.Titles()[i]
	}
	return name
}
