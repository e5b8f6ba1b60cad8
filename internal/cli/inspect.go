package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/watch"
)

const usage = `inferscope: what an LLM inference server's /metrics say

Usage:
  inferscope [flags] [target]        one report (target: URL, host:port, file, or - for stdin)
  inferscope --watch 2s [target]     a live view with wall-clock rates over windows
  inferscope --since before.prom [target|after.prom]
                                     rates between a saved scrape and now (or another file)
  inferscope demo [flags]            a simulated server, watched (see inferscope demo --help)

The target defaults to http://127.0.0.1:5000/metrics (tabbyAPI); host:port gets
http:// and /metrics filled in.

Flags:
  --json               one JSON object (docs/json.md); with --watch, one per line per refresh
  --hist               add the distributions (one bar per bucket)
  --columns N          sections side by side in N columns (default: 2 from 150 cells)
  --width COLS         layout width (default: the terminal's, 160 when piped)
  --no-color           no colours (also NO_COLOR=1)
  --timeout D          how long a scrape may wait (default 30s; a busy tabbyAPI holds scrapes)
  --max-bytes N        largest body accepted, in bytes (default 64 MiB)
  --header 'K: V'      an HTTP header to send (repeatable); INFERSCOPE_BEARER_TOKEN sets
                       Authorization: Bearer
  --fail-on warn|bad   exit 1 when a note of that severity (or worse) fires
  --dialect NAME       read the series as tabbyapi, vllm, llamacpp, sglang or tgi (default: detect)
  --model NAME         with several models served, report this one (default: all together)
  --watch D            re-scrape every D and redraw (keys: q quit, h distributions,
                       space pause, +/- interval, r reset history)
  --windows LIST       rate windows for --watch (default 30s,1m,5m,15m,1h,24h)
  --since FILE         rates since a scrape saved with --save
  --save FILE          also write the raw scrape, with its time, to FILE

Exit status: 0 report printed; 1 --fail-on tripped; 2 could not produce a report.
`

type inspectOptions struct {
	json, hist, noColor bool
	columns, width      int
	timeout             time.Duration
	maxBytes            int64
	headers             headerList  // --header as given
	httpHeaders         http.Header // the same, parsed
	failOn              string
	dialect, model      string
	watch               time.Duration
	windows             string
	since, save         string
	target              string
	// header lines every report of this run carries (set by the demo).
	header []string
}

func parseInspect(args []string) (*inspectOptions, error) {
	o := &inspectOptions{timeout: 30 * time.Second, maxBytes: 64 << 20, windows: watch.DefaultWindows}
	fs := newFlagSet("inferscope")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.hist, "hist", false, "")
	fs.BoolVar(&o.noColor, "no-color", false, "")
	fs.IntVar(&o.columns, "columns", 0, "")
	fs.IntVar(&o.width, "width", 0, "")
	fs.Var(durationFlag{&o.timeout}, "timeout", "")
	fs.Int64Var(&o.maxBytes, "max-bytes", o.maxBytes, "")
	fs.Var(&o.headers, "header", "")
	fs.StringVar(&o.failOn, "fail-on", "", "")
	fs.StringVar(&o.dialect, "dialect", "", "")
	fs.StringVar(&o.model, "model", "", "")
	fs.Var(durationFlag{&o.watch}, "watch", "")
	fs.StringVar(&o.windows, "windows", o.windows, "")
	fs.StringVar(&o.since, "since", "", "")
	fs.StringVar(&o.save, "save", "", "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(pos) > 1 && o.since == "":
		return nil, usagef("give one target: a URL, host:port, a file or -", "too many targets: %s", strings.Join(pos, " "))
	case len(pos) > 1:
		return nil, usagef("--since FILE takes the earlier scrape; give one later target", "too many targets: %s", strings.Join(pos, " "))
	case len(pos) == 1:
		o.target = pos[0]
	}
	switch o.failOn {
	case "", "warn", "bad":
	default:
		return nil, usagef("use --fail-on warn or --fail-on bad", "--fail-on %q is not a severity", o.failOn)
	}
	if o.columns < 0 || o.columns > 4 {
		return nil, usagef("use --columns 1 to 4, or leave it out to fit the width", "--columns %d is out of range", o.columns)
	}
	if o.width != 0 && o.width < 40 {
		return nil, usagef("use --width 40 or more", "--width %d is too narrow for a report", o.width)
	}
	if o.timeout <= 0 {
		return nil, usagef("use a positive duration such as --timeout 30s", "--timeout must be positive")
	}
	if o.maxBytes <= 0 {
		return nil, usagef("use a positive size in bytes such as --max-bytes 67108864", "--max-bytes must be positive")
	}
	watchSet := false
	fs.Visit(func(f *flag.Flag) { watchSet = watchSet || f.Name == "watch" })
	if o.watch < 0 || watchSet && o.watch == 0 {
		return nil, usagef("use a positive interval such as --watch 2s", "--watch must be positive")
	}
	if o.watch > 0 && o.since != "" {
		return nil, usagef("run --since on its own; --watch keeps its own history", "--watch and --since do not go together")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.save != "" && o.watch > 0 {
		return nil, usagef("save a scrape with a one-shot run (inferscope --save FILE target), then compare with --since FILE", "--save does not go with --watch")
	}
	if set["windows"] && o.watch == 0 {
		return nil, usagef("add an interval, e.g. --watch 2s --windows "+o.windows, "--windows sets the windows of --watch")
	}
	o.httpHeaders = http.Header{}
	for _, h := range o.headers {
		k, v, err := scrape.ParseHeader(h)
		if err != nil {
			return nil, usagef("write it as --header 'Name: value'", "--header %q: %v", h, err)
		}
		o.httpHeaders.Add(k, v)
	}
	return o, nil
}

func (o *inspectOptions) scrapeOptions(io *iostreams.IO) scrape.Options {
	h := o.httpHeaders.Clone()
	if h == nil {
		h = http.Header{}
	}
	// An explicit --header Authorization wins over the environment.
	if tok := io.Getenv("INFERSCOPE_BEARER_TOKEN"); tok != "" && h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return scrape.Options{Timeout: o.timeout, MaxBytes: o.maxBytes, Headers: h, Stdin: io.In}
}

func runInspect(ctx context.Context, args []string, io *iostreams.IO) int {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, usage)
		return ExitOK
	}
	o, err := parseInspect(args)
	if err != nil {
		var us *usageError
		if !errors.As(err, &us) {
			err = flagError(err, "")
		}
		printError(io.Err, err)
		return ExitError
	}
	so := o.scrapeOptions(io)
	if o.watch > 0 {
		return o.runWatch(ctx, io, so)
	}
	if o.since != "" {
		return o.runSince(ctx, io, so)
	}
	snap, ok := o.loadTarget(ctx, io, so)
	if !ok {
		return ExitError
	}
	return o.emit(io, o.build(snap, snap.ScrapedAt, o.hist))
}

// emit renders a report and applies --fail-on.
func (o *inspectOptions) emit(io *iostreams.IO, rep *report.Report) int {
	var err error
	if o.json {
		err = render.JSON(io.Out, rep)
	} else {
		err = render.Text(io.Out, rep, o.renderOptions(io))
	}
	if err != nil {
		printError(io.Err, fmt.Errorf("writing the report: %w", err))
		return ExitError
	}
	return o.failCode(rep)
}

func (o *inspectOptions) renderOptions(io *iostreams.IO) render.Options {
	w := o.width
	if w == 0 {
		w = io.LayoutWidth()
	}
	return render.Options{Width: w, Columns: o.columns, Color: io.ColorEnabled(o.noColor)}
}

func (o *inspectOptions) failCode(rep *report.Report) int {
	want := report.Severity(o.failOn)
	if o.failOn != "" && rep.Worst().Rank() >= want.Rank() {
		return ExitFailOn
	}
	return ExitOK
}

// loadTarget scrapes the target, saves the raw scrape when --save asks, and
// reads it into a snapshot; on failure it has printed why.
func (o *inspectOptions) loadTarget(ctx context.Context, io *iostreams.IO, so scrape.Options) (*snapshot.Snapshot, bool) {
	snap, res, err := load(ctx, o.target, so, dialect.Options{Dialect: o.dialect, Model: o.model})
	if err != nil {
		printError(io.Err, err)
		return nil, false
	}
	if o.save != "" {
		if err := saveScrape(o.save, res); err != nil {
			printError(io.Err, err)
			return nil, false
		}
		fmt.Fprintf(io.Err, "inferscope: saved the scrape to %s\n", o.save)
	}
	return snap, true
}

// load scrapes a target and reads it into a canonical snapshot.
func load(ctx context.Context, target string, so scrape.Options, do dialect.Options) (*snapshot.Snapshot, *scrape.Result, error) {
	res, err := scrape.Fetch(ctx, target, so)
	if err != nil {
		return nil, nil, err
	}
	snap, err := parse(res, do)
	if err != nil {
		return nil, res, &readError{source: res.Source, fromFile: res.FromFile, err: err}
	}
	return snap, res, nil
}

// readError is a body that arrived but could not be read as metrics; it
// knows where the body came from, so the hint can say how to look at it.
type readError struct {
	source   string
	fromFile bool
	err      error
}

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// lookHint says how to see what was read.
func (e *readError) lookHint() string {
	switch {
	case e.source == "-":
		return "check what was piped in: inferscope reads a Prometheus exposition on stdin"
	case e.fromFile:
		return "check the file: head " + e.source
	}
	return "check what the endpoint sends: curl -s " + e.source + " | head"
}

// parse reads a scrape result's body into a snapshot.
func parse(res *scrape.Result, do dialect.Options) (*snapshot.Snapshot, error) {
	f, err := exposition.DetectFormat(res.ContentType, res.Body)
	if err != nil {
		return nil, err
	}
	fams, err := exposition.Parse(res.Body, f)
	if err != nil {
		return nil, err
	}
	do.StartHeader = res.HeaderStart
	snap, err := dialect.Map(fams, do)
	if err != nil {
		return nil, err
	}
	snap.Source = res.Source
	snap.ScrapedAt = res.ScrapedAt
	snap.ScrapeSeconds = res.Waited.Seconds()
	snap.StartToken = res.StartToken
	return snap, nil
}

func saveScrape(path string, res *scrape.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return usagef("check that the folder exists and is writable", "cannot save the scrape: %v", err)
	}
	if err := scrape.Save(f, res); err != nil {
		f.Close()
		return fmt.Errorf("saving the scrape to %s: %w", path, err)
	}
	return f.Close()
}
