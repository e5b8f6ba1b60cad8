package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/fleet"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/version"
	"github.com/inferscope/inferscope/internal/watch"
)

const fleetLong = `Reads every inference server a Prometheus-compatible store (Prometheus, Thanos,
Mimir, VictoriaMetrics) scrapes, through its HTTP API, and reports on each the
way inferscope reports on a scrape: a table of every instance now (the rates
over --window), or over a past range (--last, or --from and --to), with the
fleet's own notes. The store computes the table: each quantity it reads, summed
per instance (--by) at the window's two ends; an instance whose window those
cannot give (restarted, born or gone inside it) is read whole. -o json writes
the table's rows from the same read; --instance reads one instance whole for
its full report, and --read-whole every instance (at many times the cost).
docs/fleet.md lists every query it sends.

The store is --prometheus URL (user:password@ in it is basic auth), or
INFERSCOPE_PROMETHEUS. --timeout bounds one whole report: every query to the
store and the analysis.`

const fleetExample = `  inferscope fleet --prometheus http://prom:9090                  every instance, now
  inferscope fleet --prometheus URL --last 1h                      the last hour
  inferscope fleet --prometheus URL --from 2026-12-01T02:00Z --to 2026-12-01T03:00Z
  inferscope fleet --prometheus URL --instance pod=vllm-7          one instance's full report
  inferscope fleet --prometheus URL --selector '{namespace="llm"}' --by namespace,pod
  inferscope fleet --prometheus URL -w 30s                         a live fleet table
  inferscope fleet --prometheus URL --header 'X-Scope-OrgID: team' (Mimir's tenant)`

// maxWindow is the longest window read: a past range beyond it reads
// more samples than a store answers within a request's time.
const maxWindow = 31 * 24 * time.Hour

type fleetOptions struct {
	outputFlags
	store       string
	last        time.Duration
	from, to    string
	at          string
	window      time.Duration
	selector    string
	instance    string
	by          string
	model       string
	sort        string
	watch       time.Duration
	failOn      string
	headers     []string
	dedup       bool
	readWhole   bool
	replicas    []string
	timeout     time.Duration
	showQueries bool
	maxBytes    int64
	maxInst     int
	gpuJoin     string

	// parsed
	sel      fleet.Selector
	one      bool
	byLabels []string
	start    time.Time // zero: a window ending now
	end      time.Time
	httpHdr  http.Header
}

// newFleetCmd is inferscope fleet.
func newFleetCmd(io *iostreams.IO) *cobra.Command {
	o := &fleetOptions{window: defaultWindow, maxBytes: scrape.DefaultMaxBytes, maxInst: fleet.DefaultMaxInstances}
	cmd := newCommand(commandSpec{
		use:     "fleet --prometheus URL [flags]",
		short:   "every inference server a Prometheus-compatible store scrapes, now or over a past range",
		long:    fleetLong,
		example: fleetExample,
		exits:   []exitStatus{{ExitOK, "the fleet written (a --watch ends only by a signal or --fail-on)"}, exitFailOnTripped},
		args:    noArgs,
		run: func(cmd *cobra.Command, _ []string) error {
			if err := o.parse(cmd, io, time.Now()); err != nil {
				return err
			}
			return o.run(cmd.Context(), io)
		},
	})
	o.define(cmd)
	return cmd
}

func (o *fleetOptions) define(cmd *cobra.Command) {
	flagDef{name: "prometheus", noFiles: true, usage: "the store's API base `URL` (http://prom:9090, http://mimir/prometheus); " +
		"user:password@ in it is basic auth (default: INFERSCOPE_PROMETHEUS)"}.string(cmd, &o.store)
	flagLast.duration(cmd, &o.last)
	flagFrom.string(cmd, &o.from)
	flagTo.string(cmd, &o.to)
	flagAt.string(cmd, &o.at)
	flagWindow.duration(cmd, &o.window)
	flagSelector.string(cmd, &o.selector)
	flagDef{name: "instance", noFiles: true, usage: "one instance's full report: `SEL`, label=value pairs (pod=vllm-7) or matchers"}.string(cmd, &o.instance)
	flagBy.string(cmd, &o.by)
	flagModel.string(cmd, &o.model)
	flagDef{name: "sort", choices: fleet.SortKeys, usage: "order the table by `KEY`: " + orList(fleet.SortKeys()) + " (default instance)"}.string(cmd, &o.sort)
	flagWatch.duration(cmd, &o.watch)
	o.outputFlags.define(cmd)
	flagFailOn.string(cmd, &o.failOn)
	flagHeader.list(cmd, &o.headers)
	flagTimeout.duration(cmd, &o.timeout)
	flagDef{name: "dedup", usage: "ask a Thanos querier to merge HA replicas (dedup=true)"}.bool(cmd, &o.dedup)
	flagDef{name: "read-whole", usage: "read every instance's series whole instead of the store's sums: each one's full report " +
		"(in -o json too), at about 20 times the table's time and memory"}.bool(cmd, &o.readWhole)
	flagDef{name: "replica-label", noFiles: true, usage: "a `LABEL` that tells HA replicas' copies apart (repeatable): dropped, one copy read; " +
		"a Thanos querier is asked to deduplicate on it too"}.list(cmd, &o.replicas)
	flagDef{name: "show-queries", usage: "write every query sent, and how long it took, to stderr"}.bool(cmd, &o.showQueries)
	flagDef{name: "gpu-join", noFiles: true, choices: fleet.GPUJoins, usage: "join the store's GPUs (dcgm-exporter's series) to the instances by `HOW`: " +
		"auto (a GPU its pod mapping gives to a pod by that pod's namespace and pod, one given to none by its host), pod, host, or off (no GPU read) (default auto)"}.string(cmd, &o.gpuJoin)
	flagMaxBytes.size(cmd, &o.maxBytes)
	flagDef{name: "max-instances", noFiles: true, usage: fmt.Sprintf("read at most `N` instances whole (--instance, --read-whole, and those "+
		"the store's sums cannot give), and list %d series for each: more is an error that says how to narrow --selector "+
		"(the store's sums of the table are not bounded by it)", fleet.SeriesPerInstance)}.int(cmd, &o.maxInst)
}

// parse checks the flags cmd was given (now is the clock of the window).
func (o *fleetOptions) parse(cmd *cobra.Command, io *iostreams.IO, now time.Time) error {
	set := given(cmd)
	if !set["prometheus"] {
		o.store = io.Getenv("INFERSCOPE_PROMETHEUS")
	}
	o.timeout = timeoutFor(set, o.timeout, o.watch)
	for _, step := range []func() error{
		o.checkStore,
		func() error { return checkFailOn(o.failOn) },
		func() error { return o.outputFlags.check(set) },
		func() error { return o.checkWindow(set, now) },
		o.checkSelectors,
		o.checkSort,
		o.checkGPUJoin,
		func() error { return o.checkWatch(set) },
		func() error { return o.setHeaders(io) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (o *fleetOptions) checkStore() error {
	if strings.TrimSpace(o.store) == "" {
		return usagef("give the store's API base, such as --prometheus http://prometheus:9090 (or set INFERSCOPE_PROMETHEUS)",
			"inferscope fleet needs --prometheus URL")
	}
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	return o.checkBounds()
}

// maxMaxInstances bounds --max-instances: a report past it would take
// tens of gigabytes.
const maxMaxInstances = 100_000

// checkBounds refuses a --max-bytes or --max-instances that cannot work.
func (o *fleetOptions) checkBounds() error {
	switch {
	case o.maxBytes <= 0:
		return usagef("use a positive size such as --max-bytes 256M", "--max-bytes must be positive")
	case o.maxBytes > MaxMaxBytes:
		return usagef("the default is "+units.Size(scrape.DefaultMaxBytes)+"; read less with a narrower --selector",
			"--max-bytes %s is more than inferscope reads (at most %s)", units.Size(o.maxBytes), units.Size(MaxMaxBytes))
	case o.maxInst <= 0:
		return usagef("use a positive count such as --max-instances 2000", "--max-instances must be positive")
	case o.maxInst > maxMaxInstances:
		return usagef(fmt.Sprintf("read part of the fleet at a time with --selector; at most --max-instances %d", maxMaxInstances),
			"--max-instances %d is more than inferscope reads at once", o.maxInst)
	}
	return nil
}

// checkWindow reads --last, --from, --to, --at and --window into the
// window.
func (o *fleetOptions) checkWindow(set map[string]bool, now time.Time) error {
	if err := o.checkWindowFlags(set); err != nil {
		return err
	}
	o.end = now
	var err error
	switch {
	case set["last"]:
		o.start = now.Add(-o.last)
	case set["from"]:
		err = o.setRange(set["to"], now)
	default:
		err = o.setNow(set["at"], now)
	}
	if err != nil {
		return err
	}
	if w := o.end.Sub(o.start); w < fleet.MinWindow {
		// A store reads ranges in whole milliseconds: less is [0ms],
		// which it refuses, in words that would blame --selector.
		said, example := "--window "+units.Duration(w), "--window 5m"
		switch {
		case set["last"]:
			said, example = "--last "+units.Duration(w), "--last 1h"
		case set["from"]:
			said, example = "the range --from to --to ("+units.Duration(w)+")", "--from T --to T+1h"
		}
		return usagef("give a window of at least "+units.Duration(fleet.MinWindow)+", such as "+example,
			"%s is shorter than the shortest range a store reads (%s)", whole(said), units.Duration(fleet.MinWindow))
	} else if w > maxWindow {
		return usagef("read at most "+units.Duration(maxWindow)+" at once, such as --last 7d", "the window is %s, longer than inferscope reads (at most %s)", units.Duration(w), units.Duration(maxWindow))
	}
	return nil
}

// checkWindowFlags refuses window flags that do not go together.
func (o *fleetOptions) checkWindowFlags(set map[string]bool) error {
	switch {
	case set["last"] && (set["from"] || set["to"]):
		return usagef("give either --last D, or --from T (and --to T)", "--last does not go with --from or --to")
	case set["to"] && !set["from"]:
		return usagef("add --from T, or use --last D for a window ending now", "--to needs --from")
	case set["at"] && (set["last"] || set["from"]):
		return usagef("--at is the time of \"now\"; a past range has its own end (--to)", "--at does not go with --last or --from")
	case set["window"] && (set["last"] || set["from"]):
		return usagef("a past range is its own window: leave out --window", "--window sets the window of \"now\"; --last and --from give a range")
	case set["last"] && o.last <= 0:
		return usagef("use a positive duration such as --last 1h", "--last must be positive")
	case o.window <= 0:
		return usagef("use a positive duration such as --window 5m", "--window must be positive")
	}
	return nil
}

// setRange reads --from and --to (now when not given).
func (o *fleetOptions) setRange(to bool, now time.Time) error {
	t, err := parseTime("from", o.from, now)
	if err != nil {
		return err
	}
	o.start = t
	if to {
		if o.end, err = parseTime("to", o.to, now); err != nil {
			return err
		}
	}
	if !o.end.After(o.start) {
		return usagef("--to must be after --from", "--from %s is not before --to %s", o.start.UTC().Format(time.RFC3339), o.end.UTC().Format(time.RFC3339))
	}
	return nil
}

// setNow reads --at, the end of "now" (now when not given).
func (o *fleetOptions) setNow(at bool, now time.Time) error {
	if at {
		t, err := parseTime("at", o.at, now)
		if err != nil {
			return err
		}
		o.end = t
	}
	o.start = o.end.Add(-o.window)
	return nil
}

func (o *fleetOptions) checkSelectors() error {
	var err error
	if o.sel, err = fleet.ParseSelector(o.selector); err != nil {
		return usagef(`write label matchers as PromQL does inside braces: --selector '{namespace="llm",pod=~"vllm-.*"}'`, "--selector: %v", err)
	}
	if o.instance != "" {
		one, err := fleet.ParseInstance(o.instance)
		if err != nil {
			return usagef("name the instance by its labels: --instance pod=vllm-7 (the table's first column lists them)", "--instance: %v", err)
		}
		o.sel, o.one = o.sel.With(one...), true
	}
	if o.by != "" {
		for _, l := range strings.Split(o.by, ",") {
			l = strings.TrimSpace(l)
			if _, err := fleet.ParseInstance(l + "=x"); err != nil || l == "" {
				return usagef("list label names: --by namespace,pod", "--by %q: %q is not a label name", o.by, l)
			}
			o.byLabels = append(o.byLabels, l)
		}
	}
	return nil
}

func (o *fleetOptions) checkSort() error {
	if o.sort == "" {
		return nil
	}
	for _, k := range fleet.SortKeys() {
		if k == o.sort {
			return nil
		}
	}
	return usagef("--sort takes one of: "+strings.Join(fleet.SortKeys(), ", "), "--sort %q is not a column", o.sort)
}

func (o *fleetOptions) checkGPUJoin() error {
	if o.gpuJoin == "" {
		o.gpuJoin = string(fleet.GPUJoinAuto)
	}
	for _, k := range fleet.GPUJoins() {
		if k == o.gpuJoin {
			return nil
		}
	}
	return usagef("--gpu-join takes one of: "+strings.Join(fleet.GPUJoins(), ", "), "--gpu-join %q is no way to join GPUs", o.gpuJoin)
}

func (o *fleetOptions) checkWatch(set map[string]bool) error {
	switch {
	case !set["watch"]:
		return nil
	case o.watch < watch.MinInterval:
		return (&watchFlags{watch: o.watch}).check(set)
	case set["last"] || set["from"] || set["at"]:
		return usagef("watch the fleet now (--watch 30s), or read a past time once", "--watch does not go with a past range or --at")
	}
	return nil
}

// setHeaders parses --header, and adds the bearer token from the
// environment unless a header gives Authorization.
func (o *fleetOptions) setHeaders(io *iostreams.IO) error {
	o.httpHdr = http.Header{}
	for _, h := range o.headers {
		k, v, err := parseHeaderFlag(h)
		if err != nil {
			return err
		}
		o.httpHdr.Add(k, v)
	}
	if tok := io.Getenv("INFERSCOPE_BEARER_TOKEN"); tok != "" && o.httpHdr.Get("Authorization") == "" {
		if err := checkToken(tok); err != nil {
			return err
		}
		o.httpHdr.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

func parseHeaderFlag(h string) (string, string, error) {
	i := inspectOptions{headers: []string{h}}
	if err := i.setHeaders(); err != nil {
		return "", "", err
	}
	for k, vs := range i.httpHeaders {
		return k, vs[0], nil
	}
	return "", "", usagef("write it as --header 'Name: value'", "--header %q is empty", h)
}

func (o *fleetOptions) fleetOptions(from, to time.Time, rng bool) fleet.Options {
	read := fleet.Pushdown
	if o.readWhole || o.one {
		// A report with every figure: each instance read whole.
		read = fleet.Rebuild
	}
	return fleet.Options{Selector: o.sel, By: o.byLabels, Read: read, From: from, To: to, Range: rng, Hist: o.hist, Raw: o.json && read == fleet.Rebuild, Model: o.model,
		ReplicaLabels: o.replicas, MaxInstances: o.maxInst, MaxBytes: o.maxBytes, Trend: rng || o.watch > 0, GPUJoin: fleet.GPUJoin(o.gpuJoin)}
}

// run reads the fleet once, or every --watch.
func (o *fleetOptions) run(ctx context.Context, io *iostreams.IO) error {
	client, err := promapi.New(promapi.Options{URL: o.store, Headers: o.httpHdr, UserAgent: userAgent(), Timeout: o.timeout,
		Dedup: o.dedup, ReplicaLabels: o.replicas, MaxBytes: o.maxBytes, MaxSeries: fleet.MaxSeries(o.maxInst)})
	if err != nil {
		return o.storeError(err)
	}
	if _, err := client.Detect(ctx); err != nil {
		return o.storeError(err)
	}
	if o.watch > 0 {
		return o.runWatch(ctx, io, client)
	}
	rng := o.last > 0 || o.from != ""
	out, trip, err := o.once(ctx, io, client, o.start, o.end, rng)
	if err != nil {
		return err
	}
	if _, err := io.Out.Write(out); err != nil {
		return writeError(err)
	}
	return failedOn(o.failOn, trip)
}

// once reads the fleet within --timeout and renders it at the layout
// width; trip are the notes at --fail-on's severity or worse among the
// fleet's and the instances' (the one's, with --instance).
func (o *fleetOptions) once(ctx context.Context, io *iostreams.IO, client *promapi.Client, from, to time.Time, rng bool) ([]byte, []firedNote, error) {
	f, err := o.read(ctx, io, client, from, to, rng)
	if err != nil {
		return nil, nil, err
	}
	out, err := o.render(f, o.outputFlags.layoutWidth(io), io, false)
	return out, o.tripping(f), err
}

// read reads the fleet within --timeout, the queries on stderr with
// --show-queries, and orders it by --sort.
func (o *fleetOptions) read(ctx context.Context, io *iostreams.IO, client *promapi.Client, from, to time.Time, rng bool) (*fleet.Fleet, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	f, err := fleet.Run(ctx, client, o.fleetOptions(from, to, rng))
	if o.showQueries && f != nil {
		for _, q := range f.Queries {
			fmt.Fprintf(io.Err, "inferscope: query (%s, %s): %s\n", q.Purpose, units.Seconds(q.Took.Seconds()), termsafe.Line(q.Text, 0))
		}
	}
	if err != nil {
		return nil, o.storeError(err)
	}
	stamp(f)
	if err := f.Sort(o.sort); err != nil {
		return nil, usagef("--sort takes one of: "+strings.Join(fleet.SortKeys(), ", "), "%v", err)
	}
	if o.one && len(f.Instances) != 1 {
		return nil, o.notOne(f)
	}
	return f, nil
}

// render writes the fleet: its JSON document (on one line in a watch), the
// one instance's report with --instance, else the table.
func (o *fleetOptions) render(f *fleet.Fleet, width int, io *iostreams.IO, compact bool) ([]byte, error) {
	var b bytes.Buffer
	var err error
	switch {
	case o.json:
		err = f.JSON(&b, compact)
	case o.one:
		r := *f.Instances[0].Report
		r.Header = append([]string{fleetTitle(f)}, r.Header...)
		err = render.Text(&b, watch.ForText(&r), o.renderOptions(io, width))
	default:
		err = f.Text(&b, fleet.TextOptions{Width: width, Glyphs: o.glyphs(io)})
	}
	if err != nil {
		return nil, fmt.Errorf("rendering the fleet: %w", err)
	}
	return b.Bytes(), nil
}

// stamp sets the version on the fleet and every report of it.
func stamp(f *fleet.Fleet) {
	v := version.String()
	f.Version = v
	for _, in := range f.Instances {
		in.Report.Version = v
	}
	if f.Totals != nil {
		f.Totals.Report.Version = v
	}
}

func fleetTitle(f *fleet.Fleet) string {
	if f.Range {
		return fmt.Sprintf("from %s (%s) · %s", f.Store, f.Backend, f.From.UTC().Format(time.RFC3339)+" to "+f.To.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("from %s (%s)", f.Store, f.Backend)
}

// tripping are the notes of f at --fail-on's severity or worse: every
// instance's, each named by its instance, and the fleet's own (but for
// --instance, which reports one).
func (o *fleetOptions) tripping(f *fleet.Fleet) []firedNote {
	var out []firedNote
	for _, in := range f.Instances {
		out = append(out, tripping(in.Report, o.failOn, in.ID)...)
	}
	if !o.one {
		out = append(out, tripping(&report.Report{Notes: f.Notes}, o.failOn, "")...)
	}
	return out
}

// notOne is --instance matching none, or several, instances.
func (o *fleetOptions) notOne(f *fleet.Fleet) error {
	if len(f.Instances) == 0 {
		return usagef("the table of inferscope fleet --prometheus URL lists the instances", "--instance %s matches no instance serving %s", o.instance, o.model)
	}
	ids := make([]string, 0, len(f.Instances))
	for i, in := range f.Instances {
		if i == 8 {
			ids = append(ids, fmt.Sprintf("and %d more", len(f.Instances)-8))
			break
		}
		ids = append(ids, in.ID)
	}
	return usagef("add labels until one is left, such as --instance namespace=llm,pod=vllm-7, or group with --by",
		"--instance %s matches %d instances: %s", o.instance, len(f.Instances), whole(strings.Join(ids, ", ")))
}

// runWatch redraws the fleet every --watch, as the single-server watch
// does (internal/watch's frames view: q quits, space pauses, the interval
// in the status line): full screen on a terminal, one frame after another
// when piped, one JSON document per line with --json. A failed refresh is
// said and the next one tries again; the first must succeed.
func (o *fleetOptions) runWatch(ctx context.Context, io *iostreams.IO, client *promapi.Client) error {
	return watch.RunFrames(ctx, io, watch.FramesConfig{
		Interval: o.watch, JSON: o.json, Width: o.width, Title: "inferscope fleet --watch",
		Refresh: func(ctx context.Context) (watch.Frame, error) {
			now := time.Now()
			f, err := o.read(ctx, io, client, now.Add(-o.window), now, false)
			if err != nil {
				return watch.Frame{}, err
			}
			fr := watch.Frame{Trip: failedOn(o.failOn, o.tripping(f))}
			if o.json {
				fr.JSON, err = o.render(f, 0, io, true)
				return fr, err
			}
			if !o.one {
				fr.FixedAt = func(width int) int { return f.HeaderLines(min(width, MaxWidth)) } // the title and the table's header stay
			}
			fr.Text = func(width int) string {
				out, err := o.render(f, min(width, MaxWidth), io, false)
				if err != nil {
					return err.Error()
				}
				return string(out)
			}
			return fr, nil
		},
	})
}

// storeError puts a store's or the fleet's failure in the user's terms:
// one line, and what to try.
func (o *fleetOptions) storeError(err error) error {
	var (
		pe *promapi.Error
		ns *fleet.NoSeriesError
		le *fleet.LimitError
	)
	switch {
	case errors.As(err, &ns):
		return usagef(noSeriesHint(ns, o), "%v", ns)
	case errors.As(err, &le):
		return usagef(limitHint(le), "%v", le)
	case errors.As(err, &pe):
		if pe.Kind == promapi.Canceled {
			return context.Canceled
		}
		return usagef(o.storeHint(pe), "%v", pe)
	}
	return err
}

// limitHint says how to narrow a fleet past --max-instances: the
// namespaces (or jobs) holding the most instances, as selectors.
func limitHint(le *fleet.LimitError) string {
	raise := "or raise --max-instances (each instance read whole costs about half a megabyte)"
	switch le.What {
	case "series":
		raise = fmt.Sprintf("or raise --max-instances, which allows %d series for each", fleet.SeriesPerInstance)
	case "values":
		return fmt.Sprintf("narrow --selector to fewer values of %s, such as --selector %s; or raise --max-instances",
			le.Label, termsafe.ShellQuote("{"+le.Selector.With(fleet.Matcher{Name: le.Label, Op: "=~", Value: "…"}).String()+"}"))
	}
	if len(le.Largest) == 0 {
		return "narrow with --selector, such as --selector '{namespace=\"llm\"}', " + raise
	}
	var ways []string
	for i, n := range le.Largest {
		sel := termsafe.ShellQuote("{" + n.Selector.String() + "}")
		if i == 0 {
			sel = "--selector " + sel
		}
		ways = append(ways, fmt.Sprintf("%s (%s)", sel, units.Plural(float64(n.Instances), "instance")))
	}
	return "narrow with " + strings.Join(ways, " or ") + "; " + raise
}

// storeLimit names the store's own limit its refusal says it passed, ""
// where it names none this knows.
func storeLimit(e *promapi.Error) string {
	low := strings.ToLower(e.Msg)
	series := "VictoriaMetrics' -search.maxUniqueTimeseries"
	if e.Endpoint == "/api/v1/series" {
		series = "VictoriaMetrics' -search.maxSeries (30,000 series listed by default)"
	}
	for _, l := range []struct{ says, flag string }{
		{"search.maxseries", "VictoriaMetrics' -search.maxSeries (30,000 series listed by default)"},
		{"the number of matching timeseries", series},
		{"maxuniquetimeseries", "VictoriaMetrics' -search.maxUniqueTimeseries"},
		{"maxsamplesperquery", "VictoriaMetrics' -search.maxSamplesPerQuery"},
		{"too many samples", "Prometheus' --query.max-samples"},
		{"the query hit the max number", "Mimir's or Cortex's per-query limits (-querier.max-fetched-series-per-query, …)"},
	} {
		if strings.Contains(low, l.says) {
			return l.flag
		}
	}
	return ""
}

func noSeriesHint(ns *fleet.NoSeriesError, o *fleetOptions) string {
	past := o.last > 0 || o.from != "" || o.at != ""
	switch {
	case o.one:
		return "check --instance against the table of inferscope fleet --prometheus URL without it"
	case past && len(ns.Prefixes) == 0 && len(ns.Selector) > 0:
		// Nothing at all then: the range is as likely wrong as the selector.
		return "check the range (within the store's retention, after the servers were first scraped) and --selector: without it, does the store hold series then?"
	case past && len(ns.Prefixes) == 0:
		return "check the range: the store holds nothing then; is it within the store's retention, and after the servers were first scraped?"
	case len(ns.Selector) > 0:
		return "check --selector: without it, does the store hold the servers' series?"
	}
	return "inferscope reads tabbyAPI, vLLM, llama.cpp, SGLang and TGI series: is the store scraping the servers' /metrics?"
}

func (o *fleetOptions) storeHint(e *promapi.Error) string {
	switch e.Kind {
	case promapi.BadURL:
		return "give the store's API base, such as --prometheus http://prometheus:9090"
	case promapi.Unreachable:
		return "check --prometheus: the Prometheus, Thanos, Mimir or VictoriaMetrics HTTP address, such as http://prometheus:9090"
	case promapi.Timeout:
		return fmt.Sprintf("the store took longer than --timeout %s: allow more (--timeout %s), or read less (a shorter window, a narrower --selector)",
			units.Duration(o.timeout), units.Duration(2*o.timeout))
	case promapi.TooMuchData:
		limit := storeLimit(e)
		if limit == "" {
			limit = "Prometheus --query.max-samples, VictoriaMetrics -search.maxSamplesPerQuery"
		}
		w := o.end.Sub(o.start)
		if o.last > 0 || o.from != "" {
			return fmt.Sprintf("the store refused past its own limit (%s): shorten the window (--last %s instead of %s) or narrow --selector",
				limit, units.Duration((w / 2).Round(time.Minute)), units.Duration(w))
		}
		return "the store refused past its own limit (" + limit + "): narrow --selector, or raise it"
	case promapi.NoTenant:
		return "name the tenant: --header 'X-Scope-OrgID: TENANT'"
	case promapi.Unauthorized:
		return "give credentials: user:password@ in --prometheus, INFERSCOPE_BEARER_TOKEN, or --header 'Authorization: …'"
	case promapi.Status:
		if e.Status == 404 {
			return "is --prometheus the API's base? Mimir serves it under /prometheus, vmselect under /select/0/prometheus"
		}
		return "the store (or a proxy before it) failed; its log should say why"
	case promapi.BadAnswer:
		return "is --prometheus the API's base URL? the answer was another page (a login, a proxy's)"
	case promapi.Redirect:
		return "if you trust the other host, give it as --prometheus; inferscope does not send credentials to a host it was not given"
	case promapi.TooLarge:
		if o.maxBytes >= MaxMaxBytes {
			return "read less: a narrower --selector, a shorter window"
		}
		return fmt.Sprintf("read less (a narrower --selector, a shorter window), or raise the cap: --max-bytes %s", units.Size(min(2*o.maxBytes, MaxMaxBytes)))
	}
	return "inferscope fleet --show-queries writes every query sent; check --selector"
}
