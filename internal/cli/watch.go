package cli

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/version"
	"github.com/inferscope/inferscope/internal/watch"
)

// build is the report of one scrape, for every mode: one-shot, --since, the
// watch view (which redraws it) and the demo. It carries the header lines
// the command adds (the demo says it runs faster than the wall clock), and
// the server's raw families only when they will be written as JSON.
func (o *inspectOptions) build(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
	if o.clock != nil {
		now = s.ScrapedAt // the target's clock, not the view's
	}
	r := analysis.Analyze(s, analysis.Options{Now: now, Hist: hist, Raw: o.json, WithRates: o.withRates, Probe: o.probe})
	r.Version = version.String()
	r.Header = append(o.header, r.Header...)
	return r
}

func (o *inspectOptions) runWatch(ctx context.Context, io *iostreams.IO, so scrape.Options) error {
	windows, err := parseWindows(o.windows)
	if err != nil {
		return err
	}
	do := o.dialectOptions()
	var mu sync.Mutex
	target, answered := o.target, ""
	return watch.Run(ctx, io, watch.Config{
		Interval: o.watch,
		Windows:  windows,
		JSON:     o.json,
		Hist:     o.hist,
		Heat:     o.heat,
		// Breakdown starts with the units' tables shown.
		Breakdown: o.breakdown,
		Glyphs:    o.glyphs(io),
		Columns:   o.columns,
		Width:     o.width,
		NoColor:   o.noColor,
		FailOn:    report.Severity(o.failOn),
		// Each scrape's read, parse and analysis within --timeout, and
		// given up at once on Ctrl-C, so neither a slow parse nor a slow
		// server holds the view.
		Fetch: func(ctx context.Context) (*snapshot.Snapshot, error) {
			// A read given up on (--timeout) may still run: each read takes
			// its own copy of where to read.
			mu.Lock()
			at := target
			mu.Unlock()
			type read struct {
				s   *snapshot.Snapshot
				res *scrape.Result
			}
			r, err := bounded(ctx, o.timeout, func(ctx context.Context) (read, error) {
				s, res, err := load(ctx, at, so, do, time.Time{})
				if err == nil {
					o.readSlots(ctx, s, res, so)
					o.readGPU(ctx, s, at, so)
					if o.clock != nil {
						s.ScrapedAt = o.clock()
					}
				}
				return read{s, res}, err
			})
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			// Found at the other text path (trtllm-serve): read there from
			// now on, and keep saying so.
			if r.res.AnsweredJSON != "" {
				answered = r.res.AnsweredJSON
				if t, ok := scrape.TextTarget(at); ok {
					target = t
				}
			}
			r.s.AnsweredJSON = answered
			return r.s, nil
		},
		Build: o.build,
	})
}

// parseWindows reads --watch-windows, with a hint when it cannot.
func parseWindows(s string) ([]time.Duration, error) {
	w, err := watch.ParseWindows(s)
	if err != nil {
		return nil, usagef(fmt.Sprintf("write up to %d windows as durations or seconds: --watch-windows 30s,5m,1h", watch.MaxWindows), "%v", err)
	}
	return w, nil
}

// runSince reports the rates between a saved scrape and the target (a live
// server or a second saved file), all of it within --timeout.
func (o *inspectOptions) runSince(ctx context.Context, io *iostreams.IO, so scrape.Options) error {
	got, err := bounded(ctx, o.timeout, func(ctx context.Context) (*outcome, error) {
		do := o.dialectOptions()
		before, _, err := load(ctx, o.since, so, do, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("--since %s: %w", termsafe.Echo(o.since), err)
		}
		// The GPU reading --save kept beside the earlier scrape, if any.
		if _, serr := os.Stat(o.since + gpuSuffix); serr == nil && !o.noGPU {
			if g, gerr := gpu.Read(ctx, o.since+gpuSuffix, gpu.Options{Scrape: so}); gerr == nil {
				before.GPU = g
			}
		}
		after, res, err := load(ctx, o.target, so, do, time.Time{})
		if err != nil {
			return nil, err
		}
		o.readSlots(ctx, after, res, so)
		o.readGPU(ctx, after, o.target, so)
		for _, s := range []struct {
			flag string
			snap *snapshot.Snapshot
		}{{"--since " + termsafe.Echo(o.since), before}, {termsafe.Echo(o.target), after}} {
			// No window from a time that cannot be the scrape's.
			if s.snap.ScrapedAt.IsZero() {
				return nil, usagef("give it its time first (inferscope --at TIME --save dated.prom FILE), then compare with --since",
					"%s has no scrape time to take a window from: %s", whole(s.flag), whole(s.snap.TimeUnknown))
			}
		}
		if !after.ScrapedAt.After(before.ScrapedAt) {
			return nil, usagef("the file given to --since must be the earlier scrape", "--since %s was scraped at %s, not before the target (%s)",
				o.since, before.ScrapedAt.UTC().Format(time.RFC3339), after.ScrapedAt.UTC().Format(time.RFC3339))
		}
		// The rates first, as in the watch view (the window is what
		// --since is run for), and the notes judged on the window.
		rep := rates.SinceReport(o.fold(o.build(after, after.ScrapedAt, o.hist)), before, after)
		if !o.json {
			rep = watch.ForText(rep) // its column drawn as the watch view's are
		}
		return o.rendered(io, rep, res)
	})
	return o.deliver(ctx, io, got, err)
}
