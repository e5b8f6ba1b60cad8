package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/fleet"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// fleetUsage is the fleet command's help text.
var fleetUsage = fill(`inferscope fleet: every inference server a Prometheus-compatible store scrapes

Usage:
  inferscope fleet --prometheus URL                    every instance, now
  inferscope fleet --prometheus URL --last 1h          what happened in the last hour
  inferscope fleet --prometheus URL --from 2026-12-01T02:00Z --to 2026-12-01T03:00Z
  inferscope fleet --prometheus URL --instance pod=vllm-7     one instance's full report
  inferscope fleet --prometheus URL --selector '{namespace="llm"}' --by namespace,pod
  inferscope fleet --prometheus URL --watch 30s        a live fleet table

It reads Prometheus, Thanos, Mimir and VictoriaMetrics through the HTTP API;
docs/fleet.md lists every query it sends.

Flags:
  --prometheus URL     the store's API base (http://prom:9090, http://mimir/prometheus);
                       user:password@ in it is basic auth (also INFERSCOPE_PROMETHEUS)
  --last D             a past range: the last D, ending now
  --from T, --to T     a past range between two times (RFC 3339, such as 2026-12-01T02:00Z,
                       or Unix seconds; --to defaults to now)
  --window D           "now": the rates' window (default {window})
  --at T               "now" as of a past time T (as --from takes it)
  --selector SEL       label matchers every query carries: '{namespace="llm"}'
  --instance SEL       one instance's full report: pod=vllm-7 (label=value pairs) or matchers
  --by LIST            labels that make an instance (default: namespace,pod where a series
                       has both, else job,instance)
  --model NAME         with several models served, report this one
  --sort KEY           order the table by {sort-keys} (default instance)
  --watch D            refresh every D, at least {min-watch}
  --json               one JSON document: {schema, backend, at|from/to, instances, totals, notes}
  --fail-on warn|bad   exit {fail-on} when a note of that severity (or worse) fires
  --header 'K: V'      an HTTP header for the store (repeatable): 'X-Scope-OrgID: team' for
                       Mimir; INFERSCOPE_BEARER_TOKEN sets Authorization: Bearer
  --dedup              ask a Thanos querier to merge HA replicas (dedup=true)
  --replica-label L    a label that tells HA replicas' copies apart (repeatable): dropped, one
                       copy read; a Thanos querier is asked to deduplicate on it too
  --timeout D          how long one request to the store may take (default {timeout})
  --max-bytes N        the largest answer read from the store, after decompression, in bytes or
                       with k, M or G (x1024), at most {max-max-bytes} (default {max-bytes})
  --max-instances N    the most instances read (default {max-instances}), and {series-each} series listed
                       for each; more is an error that says how to narrow --selector
  --show-queries       write every query sent, and how long it took, to stderr
  --hist, --width, --columns, --no-color   as for inferscope itself

Exit status: {ok} report printed; {fail-on} --fail-on tripped; {error} could not produce a report;
{interrupted} interrupted (Ctrl-C).
`,
	"window", units.Duration(fleet.DefaultWindow),
	"sort-keys", orList(fleet.SortKeys()),
	"min-watch", units.Duration(minFleetWatch),
	"timeout", units.Duration(promapi.DefaultTimeout),
	"max-max-bytes", spellSize(MaxMaxBytes),
	"max-bytes", spellSize(promapi.DefaultMaxBytes),
	"max-instances", strconv.Itoa(fleet.DefaultMaxInstances),
	"series-each", strconv.Itoa(fleet.SeriesPerInstance),
	"ok", strconv.Itoa(ExitOK),
	"fail-on", strconv.Itoa(ExitFailOn),
	"error", strconv.Itoa(ExitError),
	"interrupted", strconv.Itoa(ExitInterrupted),
)

// minFleetWatch is the shortest refresh of the fleet table: each one
// queries the store.
const minFleetWatch = 5 * time.Second

// maxMaxInstances bounds --max-instances: a report past it would take
// tens of gigabytes.
const maxMaxInstances = 100_000

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
	headers     headerList
	dedup       bool
	replicas    headerList
	timeout     time.Duration
	showQueries bool
	maxBytes    int64
	maxInst     int

	// parsed
	sel      fleet.Selector
	one      bool
	byLabels []string
	start    time.Time // zero: a window ending now
	end      time.Time
	httpHdr  http.Header
}

func (o *fleetOptions) flags() *flag.FlagSet {
	fs := newFlagSet("fleet")
	o.outputFlags.define(fs)
	fs.StringVar(&o.store, "prometheus", o.store, "")
	fs.Var(durationFlag{&o.last}, "last", "")
	fs.StringVar(&o.from, "from", "", "")
	fs.StringVar(&o.to, "to", "", "")
	fs.StringVar(&o.at, "at", "", "")
	fs.Var(durationFlag{&o.window}, "window", "")
	fs.StringVar(&o.selector, "selector", "", "")
	fs.StringVar(&o.instance, "instance", "", "")
	fs.StringVar(&o.by, "by", "", "")
	fs.StringVar(&o.model, "model", "", "")
	fs.StringVar(&o.sort, "sort", "", "")
	fs.Var(durationFlag{&o.watch}, "watch", "")
	fs.StringVar(&o.failOn, "fail-on", "", "")
	fs.Var(&o.headers, "header", "")
	fs.BoolVar(&o.dedup, "dedup", false, "")
	fs.Var(&o.replicas, "replica-label", "")
	fs.Var(durationFlag{&o.timeout}, "timeout", "")
	fs.BoolVar(&o.showQueries, "show-queries", false, "")
	fs.Var(sizeFlag{&o.maxBytes}, "max-bytes", "")
	fs.IntVar(&o.maxInst, "max-instances", o.maxInst, "")
	return fs
}

func parseFleet(args []string, io *iostreams.IO, now time.Time) (*fleetOptions, error) {
	o := &fleetOptions{window: fleet.DefaultWindow, timeout: promapi.DefaultTimeout, store: io.Getenv("INFERSCOPE_PROMETHEUS"),
		maxBytes: promapi.DefaultMaxBytes, maxInst: fleet.DefaultMaxInstances}
	fs := o.flags()
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, flagError(err, "fleet")
	}
	if len(pos) > 0 {
		return nil, usagef("give the store with --prometheus URL; inferscope fleet takes flags only", "unexpected argument %q", pos[0])
	}
	set := given(fs)
	for _, step := range []func() error{
		o.checkStore,
		func() error { return (&inspectOptions{failOn: o.failOn}).checkFailOn() },
		o.outputFlags.check,
		func() error { return o.checkWindow(set, now) },
		o.checkSelectors,
		o.checkSort,
		func() error { return o.checkWatch(set) },
		func() error { return o.setHeaders(io) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *fleetOptions) checkStore() error {
	if strings.TrimSpace(o.store) == "" {
		return usagef("give the store's API base, such as --prometheus http://prometheus:9090 (or set INFERSCOPE_PROMETHEUS)",
			"inferscope fleet needs --prometheus URL")
	}
	if o.timeout <= 0 {
		return usagef("use a positive duration such as --timeout 30s", "--timeout must be positive")
	}
	return o.checkBounds()
}

// checkBounds refuses a --max-bytes or --max-instances that cannot work.
func (o *fleetOptions) checkBounds() error {
	switch {
	case o.maxBytes <= 0:
		return usagef("use a positive size such as --max-bytes 256M", "--max-bytes must be positive")
	case o.maxBytes > MaxMaxBytes:
		return usagef("the default is "+spellSize(promapi.DefaultMaxBytes)+", enough for the state of about 1,900 vLLM pods in one answer",
			"--max-bytes %s is more than inferscope reads (at most %s)", spellSize(o.maxBytes), spellSize(MaxMaxBytes))
	case o.maxInst <= 0:
		return usagef("use a positive count such as --max-instances 2000", "--max-instances must be positive")
	case o.maxInst > maxMaxInstances:
		return usagef(fmt.Sprintf("read part of the fleet at a time with --selector; at most --max-instances %d", maxMaxInstances),
			"--max-instances %d is more than inferscope reads at once", o.maxInst)
	}
	return nil
}

// timeHint is the hint of a time that cannot be read.
const timeHint = "give a time as RFC 3339 (2026-12-01T02:00Z, 2026-12-01T02:00:00+01:00) or Unix seconds"

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
	if w := o.end.Sub(o.start); w > maxWindow {
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
	t, err := parseTime(o.from, now)
	if err != nil {
		return usagef(timeHint, "--from %q: %v", o.from, err)
	}
	o.start = t
	if to {
		if o.end, err = parseTime(o.to, now); err != nil {
			return usagef(timeHint, "--to %q: %v", o.to, err)
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
		t, err := parseTime(o.at, now)
		if err != nil {
			return usagef(timeHint, "--at %q: %v", o.at, err)
		}
		o.end = t
	}
	o.start = o.end.Add(-o.window)
	return nil
}

// timeLayouts are the times --from and --to take besides Unix seconds.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04Z07:00"}

// parseTime reads a time with a zone (or Z), or Unix seconds, not in the
// future.
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return checkPast(t, now)
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
		return checkPast(time.Unix(0, int64(f*1e9)).UTC(), now)
	}
	if _, err := time.Parse("2006-01-02T15:04", s); err == nil {
		return time.Time{}, errors.New("no time zone: add Z for UTC or an offset such as +01:00")
	}
	return time.Time{}, errors.New("not a time")
}

func checkPast(t, now time.Time) (time.Time, error) {
	if t.After(now.Add(time.Minute)) {
		return time.Time{}, errors.New("in the future")
	}
	return t, nil
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

func (o *fleetOptions) checkWatch(set map[string]bool) error {
	switch {
	case !set["watch"]:
		return nil
	case o.watch < minFleetWatch:
		return usagef("use --watch "+units.Duration(minFleetWatch)+" or longer: each refresh queries the store",
			"--watch %s is shorter than the fleet view refreshes (%s)", units.Duration(o.watch), units.Duration(minFleetWatch))
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
	i := inspectOptions{headers: headerList{h}}
	if err := i.setHeaders(); err != nil {
		return "", "", err
	}
	for k, vs := range i.httpHeaders {
		return k, vs[0], nil
	}
	return "", "", usagef("write it as --header 'Name: value'", "--header %q is empty", h)
}

func (o *fleetOptions) fleetOptions(from, to time.Time, rng bool) fleet.Options {
	return fleet.Options{Selector: o.sel, By: o.byLabels, From: from, To: to, Range: rng, Hist: o.hist, Raw: o.json, Model: o.model,
		ReplicaLabels: o.replicas, MaxInstances: o.maxInst}
}

func runFleet(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, fleetUsage)
		return nil
	}
	o, err := parseFleet(args, io, time.Now())
	if err != nil {
		return err
	}
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
	out, worst, err := o.once(ctx, io, client, o.start, o.end, rng)
	if err != nil {
		return err
	}
	if _, err := io.Out.Write(out); err != nil {
		return writeError(err)
	}
	return o.failed(worst)
}

func (o *fleetOptions) failed(worst report.Severity) error {
	if o.failOn != "" && worst.Rank() >= report.Severity(o.failOn).Rank() {
		return &failOnError{failOn: report.Severity(o.failOn), worst: worst}
	}
	return nil
}

// once reads the fleet and renders it; worst is the worst note's
// severity among the fleet's and the instances' (the one's, with
// --instance).
func (o *fleetOptions) once(ctx context.Context, io *iostreams.IO, client *promapi.Client, from, to time.Time, rng bool) ([]byte, report.Severity, error) {
	f, err := fleet.Run(ctx, client, o.fleetOptions(from, to, rng))
	if o.showQueries && f != nil {
		for _, q := range f.Queries {
			fmt.Fprintf(io.Err, "inferscope: query (%s, %s): %s\n", q.Purpose, units.Seconds(q.Took.Seconds()), termsafe.Line(q.Text, 0))
		}
	}
	if err != nil {
		return nil, "", o.storeError(err)
	}
	if err := f.Sort(o.sort); err != nil {
		return nil, "", usagef("--sort takes one of: "+strings.Join(fleet.SortKeys(), ", "), "%v", err)
	}
	if o.one {
		if len(f.Instances) != 1 {
			return nil, "", o.notOne(f)
		}
	}
	var b bytes.Buffer
	switch {
	case o.json:
		err = f.JSON(&b, o.watch > 0)
	case o.one:
		r := f.Instances[0].Report
		r.Header = append([]string{fleetTitle(f)}, r.Header...)
		err = render.Text(&b, watch.ForText(r), render.Options{Width: o.layoutWidth(io), Columns: o.columns, Color: io.ColorEnabled(o.noColor)})
	default:
		err = f.Text(&b, fleet.TextOptions{Width: o.layoutWidth(io)})
	}
	if err != nil {
		return nil, "", fmt.Errorf("rendering the fleet: %w", err)
	}
	return b.Bytes(), worstOf(f, o.one), nil
}

func fleetTitle(f *fleet.Fleet) string {
	if f.Range {
		return fmt.Sprintf("from %s (%s) · %s", f.Store, f.Backend, f.From.UTC().Format(time.RFC3339)+" to "+f.To.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("from %s (%s)", f.Store, f.Backend)
}

func (o *fleetOptions) layoutWidth(io *iostreams.IO) int {
	if o.width != 0 {
		return o.width
	}
	return min(io.LayoutWidth(), MaxWidth)
}

func worstOf(f *fleet.Fleet, one bool) report.Severity {
	w := report.None
	bump := func(s report.Severity) {
		if s.Rank() > w.Rank() {
			w = s
		}
	}
	for _, in := range f.Instances {
		bump(in.Report.Worst())
	}
	if !one {
		for _, n := range f.Notes {
			bump(n.Severity)
		}
	}
	return w
}

// notOne is --instance matching none, or several, instances.
func (o *fleetOptions) notOne(f *fleet.Fleet) error {
	if len(f.Instances) == 0 {
		return usagef("the table of inferscope fleet --prometheus URL lists the instances", "--instance %s matches no instance serving %s", termsafe.Line(o.instance, 120), o.model)
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
		"--instance %s matches %d instances: %s", termsafe.Line(o.instance, 120), len(f.Instances), strings.Join(ids, ", "))
}

// runWatch redraws the fleet every --watch: the whole screen on a
// terminal, one frame after another when piped, one JSON document per
// line with --json. A failed refresh says so on stderr and the next one
// tries again; the first must succeed.
func (o *fleetOptions) runWatch(ctx context.Context, io *iostreams.IO, client *promapi.Client) error {
	t := time.NewTicker(o.watch)
	defer t.Stop()
	for frame := 0; ; frame++ {
		now := time.Now()
		out, worst, err := o.once(ctx, io, client, now.Add(-o.window), now, false)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && frame == 0:
			return err
		case err != nil:
			msg, _ := explain(err)
			fmt.Fprintf(io.Err, "inferscope: refresh at %s failed: %s; retrying in %s\n", now.Format("15:04:05"), oneLine(msg), units.Duration(o.watch))
		default:
			if err := o.writeFrame(io.Out, io.OutTTY, out); err != nil {
				return writeError(err)
			}
			if err := o.failed(worst); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (o *fleetOptions) writeFrame(w io.Writer, tty bool, out []byte) error {
	switch {
	case o.json:
	case tty:
		out = append([]byte("\x1b[H\x1b[2J"), out...)
	default:
		out = append(out, '\n')
	}
	_, err := w.Write(out)
	return err
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
	raise := "or raise --max-instances (each instance read costs about half a megabyte)"
	if le.What == "series" {
		raise = fmt.Sprintf("or raise --max-instances, which allows %d series for each", fleet.SeriesPerInstance)
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
		ways = append(ways, fmt.Sprintf("%s (%d instances)", sel, n.Instances))
	}
	return "narrow with " + strings.Join(ways, " or ") + "; " + raise
}

func noSeriesHint(ns *fleet.NoSeriesError, o *fleetOptions) string {
	switch {
	case o.one:
		return "check --instance against the table of inferscope fleet --prometheus URL without it"
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
		w := o.end.Sub(o.start)
		if o.last > 0 || o.from != "" {
			return fmt.Sprintf("the store's sample limit was hit: shorten the window (--last %s instead of %s) or narrow --selector", units.Duration((w / 2).Round(time.Minute)), units.Duration(w))
		}
		return "the store's sample limit was hit: narrow --selector, or raise the limit (Prometheus --query.max-samples, VictoriaMetrics -search.maxSamplesPerQuery)"
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
		return fmt.Sprintf("read less (a narrower --selector, a shorter window), or raise the cap: --max-bytes %s", spellSize(min(2*o.maxBytes, MaxMaxBytes)))
	}
	return "inferscope fleet --show-queries writes every query sent; check --selector"
}
