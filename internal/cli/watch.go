package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/watch"
)

// build is the report of one scrape, for every mode: one-shot, --since, the
// watch view (which redraws it) and the demo. It carries the header lines
// the command adds (the demo says it runs faster than the wall clock), and
// the server's raw families only when they will be written as JSON.
func (o *inspectOptions) build(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
	r := analysis.Analyze(s, analysis.Options{Now: now, Hist: hist, Raw: o.json})
	r.Header = append(o.header, r.Header...)
	return r
}

func (o *inspectOptions) runWatch(ctx context.Context, io *iostreams.IO, so scrape.Options) int {
	windows, err := watch.ParseWindows(o.windows)
	if err != nil {
		printError(io.Err, usagef("write windows as durations or seconds: --windows 30s,5m,1h", "%v", err))
		return ExitError
	}
	do := dialect.Options{Dialect: o.dialect, Model: o.model}
	target := o.target
	err = watch.Run(ctx, io, watch.Config{
		Interval: o.watch,
		Windows:  windows,
		JSON:     o.json,
		Hist:     o.hist,
		Columns:  o.columns,
		Width:    o.width,
		NoColor:  o.noColor,
		Fetch: func(ctx context.Context) (*snapshot.Snapshot, error) {
			s, _, err := load(ctx, target, so, do)
			return s, err
		},
		Build: o.build,
	})
	if err != nil && ctx.Err() == nil {
		printError(io.Err, err)
		return ExitError
	}
	return ExitOK
}

// runSince reports the rates between a saved scrape and the target (a live
// server or a second saved file).
func (o *inspectOptions) runSince(ctx context.Context, io *iostreams.IO, so scrape.Options) int {
	do := dialect.Options{Dialect: o.dialect, Model: o.model}
	before, _, err := load(ctx, o.since, so, do)
	if err != nil {
		printError(io.Err, fmt.Errorf("--since %s: %w", o.since, err))
		return ExitError
	}
	after, ok := o.loadTarget(ctx, io, so)
	if !ok {
		return ExitError
	}
	if !after.ScrapedAt.After(before.ScrapedAt) {
		printError(io.Err, usagef("the file given to --since must be the earlier scrape", "--since %s was scraped at %s, not before the target (%s)",
			o.since, before.ScrapedAt.UTC().Format(time.RFC3339), after.ScrapedAt.UTC().Format(time.RFC3339)))
		return ExitError
	}
	rep := o.build(after, after.ScrapedAt, o.hist)
	sec, rates := watch.Since(before, after)
	// First, as in the watch view: the window is what --since is run for.
	rep.Sections = append([]report.Section{sec}, rep.Sections...)
	rep.Rates = rates
	return o.emit(io, rep)
}
