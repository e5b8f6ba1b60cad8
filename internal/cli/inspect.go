package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// usage is inferscope's help text, its defaults and limits filled in
// from where they are declared.
var usage = fill(`inferscope: what an LLM inference server's /metrics say

Usage:
  inferscope [flags] [target]        one report (target: URL, host:port, file, or - for stdin)
  inferscope --watch 2s [target]     a live view with wall-clock rates over windows
  inferscope --since before.prom [target|after.prom]
                                     rates between a saved scrape and now (or another file)
  inferscope demo [flags]            a simulated server, watched (see inferscope demo --help)
  inferscope fleet --prometheus URL  every server a Prometheus scrapes, now or over a past range
                                     (see inferscope fleet --help)
  inferscope proxy --upstream URL --listen ADDR
                                     measure a server without /metrics (Ollama, LM Studio) from in front
  inferscope rules --from TARGET     Prometheus rules and alerts for that server's series names
                                     (see inferscope rules --help)
  inferscope dashboard --from TARGET --format grafana|perses
                                     a dashboard of the report's figures (see inferscope dashboard --help)

The target defaults to {url} (tabbyAPI); host:port gets
http:// and /metrics filled in.

Flags:
  --json               one JSON object (docs/json.md); with --watch, one per line per refresh
  --hist               add the distributions (one bar per bucket)
  --columns N          sections side by side in 1 to {max-columns} columns (default: 2 from {two-columns} cells,
                       3 from {three-columns})
  --width COLS         layout width, {min-width} to {max-width} (default: the terminal's, {piped-width} when piped)
  --no-color           no colours (also NO_COLOR=1 or CLICOLOR=0, and TERM=dumb unless
                       CLICOLOR_FORCE=1)
  --timeout D          how long reading, parsing and analysing a scrape may take
                       (default {timeout}; a busy tabbyAPI holds scrapes)
  --max-bytes N        largest body accepted, in bytes or with k, M or G (x1024), at most {max-max-bytes}
                       (default {max-bytes})
  --header 'K: V'      an HTTP header to send (repeatable); INFERSCOPE_BEARER_TOKEN sets
                       Authorization: Bearer
  --fail-on warn|bad   exit {fail-on} when a note of that severity (or worse) fires; with --watch,
                       stop at the first refresh where one does, its frame left on screen
  --dialect NAME       read the series as {dialects} (default: detect)
  --model NAME         with several models served, report this one (default: all together)
  --at TIME            when a file or stdin was scraped, RFC 3339 or Unix seconds (default:
                       the time --save recorded, else the file's modification time, else now)
  --watch D            re-scrape every D, at least {min-interval}, and redraw (keys: q quit,
                       h distributions, space pause, +/- interval, r reset history,
                       up/down PgUp/PgDn scroll)
  --windows LIST       up to {max-windows} rate windows for --watch (default {windows})
  --since FILE         rates since a scrape saved with --save
  --save FILE          also write the raw scrape, with its time, to FILE

--watch re-reads its target and --since reads two: neither takes stdin twice.

Exit status: {ok} report printed; {fail-on} --fail-on tripped; {error} could not produce a report;
{interrupted} interrupted (Ctrl-C).
`,
	"url", scrape.DefaultURL,
	"max-columns", strconv.Itoa(MaxColumns),
	"two-columns", strconv.Itoa(render.TwoColumnsFrom),
	"three-columns", strconv.Itoa(render.ThreeColumnsFrom),
	"min-width", strconv.Itoa(MinWidth),
	"max-width", strconv.Itoa(MaxWidth),
	"piped-width", strconv.Itoa(iostreams.PipedWidth),
	"timeout", units.Duration(defaultOptions().timeout),
	"max-max-bytes", spellSize(MaxMaxBytes),
	"max-bytes", spellSize(defaultOptions().maxBytes),
	"dialects", orList(dialect.Names()),
	"min-interval", seconds(watch.MinInterval),
	"max-windows", strconv.Itoa(watch.MaxWindows),
	"windows", defaultOptions().windows,
	"ok", strconv.Itoa(ExitOK),
	"fail-on", strconv.Itoa(ExitFailOn),
	"error", strconv.Itoa(ExitError),
	"interrupted", strconv.Itoa(ExitInterrupted),
)

// fill replaces each {name} in text with its value; vars holds the names
// and values in turn.
func fill(text string, vars ...string) string {
	pairs := make([]string, len(vars))
	for i := 0; i+1 < len(vars); i += 2 {
		pairs[i], pairs[i+1] = "{"+vars[i]+"}", vars[i+1]
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// seconds writes a duration in seconds, as "0.2s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

type inspectOptions struct {
	outputFlags
	watchFlags
	timeout     time.Duration
	maxBytes    int64
	headers     headerList  // --header as given
	httpHeaders http.Header // the same, parsed
	failOn      string
	dialect     string
	model       string
	at          time.Time // --at; zero when not given
	since, save string
	target      string
	// header lines every report of this run carries (set by the demo).
	header []string
}

// defaultOptions are the defaults of inferscope's flags, for every command
// that takes them.
func defaultOptions() inspectOptions {
	return inspectOptions{
		timeout:    scrape.DefaultTimeout,
		maxBytes:   scrape.DefaultMaxBytes,
		watchFlags: watchFlags{windows: watch.DefaultWindows},
	}
}

// inspectFlags defines the flags of inferscope itself into o (--at as
// given, into at).
func inspectFlags(o *inspectOptions, at *string) *flag.FlagSet {
	fs := newFlagSet("inferscope")
	o.outputFlags.define(fs)
	o.watchFlags.define(fs)
	fs.Var(durationFlag{&o.timeout}, "timeout", "")
	fs.Var(sizeFlag{&o.maxBytes}, "max-bytes", "")
	fs.Var(&o.headers, "header", "")
	fs.StringVar(&o.failOn, "fail-on", "", "")
	fs.StringVar(&o.dialect, "dialect", "", "")
	fs.StringVar(&o.model, "model", "", "")
	fs.StringVar(at, "at", "", "")
	fs.StringVar(&o.since, "since", "", "")
	fs.StringVar(&o.save, "save", "", "")
	return fs
}

func parseInspect(args []string) (*inspectOptions, error) {
	o := defaultOptions()
	var at string
	fs := inspectFlags(&o, &at)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, flagError(err, "")
	}
	set := given(fs)
	for _, step := range []func() error{
		func() error { return o.setTarget(pos) },
		o.checkFailOn,
		o.outputFlags.check,
		o.checkLimits,
		func() error { return o.watchFlags.check(set) },
		func() error { return o.checkModes(set) },
		func() error { return o.setAt(at, set["at"]) },
		o.setHeaders,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &o, nil
}

// setTarget takes the target from the arguments: one, or none for the
// default.
func (o *inspectOptions) setTarget(pos []string) error {
	switch {
	case len(pos) > 1 && o.since == "":
		return usagef("give one target: a URL, host:port, a file or -", "too many targets: %s", strings.Join(pos, " "))
	case len(pos) > 1:
		return usagef("--since FILE takes the earlier scrape; give one later target", "too many targets: %s", strings.Join(pos, " "))
	case len(pos) == 1:
		o.target = pos[0]
	}
	return nil
}

func (o *inspectOptions) checkFailOn() error {
	switch o.failOn {
	case "", "warn", "bad":
		return nil
	}
	return usagef("use --fail-on warn or --fail-on bad", "--fail-on %q is not a severity", o.failOn)
}

// checkLimits refuses a --timeout or --max-bytes that cannot work.
func (o *inspectOptions) checkLimits() error {
	switch {
	case o.timeout <= 0:
		return usagef("use a positive duration such as --timeout 30s", "--timeout must be positive")
	case o.maxBytes <= 0:
		return usagef("use a positive size such as --max-bytes 64M", "--max-bytes must be positive")
	case o.maxBytes > MaxMaxBytes:
		return usagef("real scrapes are kilobytes to a few megabytes; the default is "+spellSize(defaultOptions().maxBytes),
			"--max-bytes %s is more than inferscope reads (at most %s)", spellSize(o.maxBytes), spellSize(MaxMaxBytes))
	}
	return nil
}

// checkModes refuses flags that do not go together (set holds the names
// of the flags given).
func (o *inspectOptions) checkModes(set map[string]bool) error {
	stdin := o.target == "-"
	switch {
	case o.watch > 0 && o.since != "":
		return usagef("run --since on its own; --watch keeps its own history", "--watch and --since do not go together")
	case o.watch > 0 && stdin:
		return usagef("watch a server (inferscope --watch 2s host:port), or compare two saved scrapes with --since",
			"--watch re-reads its target, and stdin can be read only once")
	case o.since == "-" && stdin:
		return usagef("save one scrape to a file first: inferscope --save before.prom - < scrape.prom",
			"--since - and the target - would both read stdin")
	case o.save != "" && o.watch > 0:
		return usagef("save a scrape with a one-shot run (inferscope --save FILE target), then compare with --since FILE", "--save does not go with --watch")
	case set["windows"] && o.watch == 0:
		return usagef("add an interval, e.g. --watch 2s --windows "+o.windows, "--windows sets the windows of --watch")
	}
	return nil
}

// setAt reads --at where given.
func (o *inspectOptions) setAt(at string, given bool) error {
	if !given {
		return nil
	}
	t, err := parseAt(at, time.Now())
	if err != nil {
		return err
	}
	o.at = t
	return o.checkAt()
}

// setHeaders parses the --header flags.
func (o *inspectOptions) setHeaders() error {
	o.httpHeaders = http.Header{}
	for _, h := range o.headers {
		k, v, err := scrape.ParseHeader(h)
		if err != nil {
			return usagef("write it as --header 'Name: value'", "--header %q: %v", h, err)
		}
		o.httpHeaders.Add(k, v)
	}
	return nil
}

// parseAt reads --at: an RFC 3339 time or Unix seconds, after 2000 and not
// in the future (now is the clock).
func parseAt(s string, now time.Time) (time.Time, error) {
	const hint = "give the scrape's time as RFC 3339 (2026-03-01T12:00:00Z) or Unix seconds (1772366400)"
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		f, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
			return time.Time{}, usagef(hint, "--at %q is not a time", s)
		}
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC()
	}
	switch {
	case t.Year() < 2000:
		return time.Time{}, usagef(hint, "--at %s is before 2000, older than any inference server", t.UTC().Format(time.RFC3339))
	case t.After(now.Add(time.Minute)):
		hint := hint
		if t.Year() > 9999 || t.Sub(now) > 100*365*24*time.Hour {
			hint = "that reads as Unix milliseconds or finer; --at takes seconds"
		}
		return time.Time{}, usagef(hint, "--at %s is in the future", s)
	}
	return t, nil
}

// checkAt refuses --at where there is no file or stdin for it to date.
func (o *inspectOptions) checkAt() error {
	switch {
	case o.watch > 0:
		return usagef("leave out --at: a watch times its own scrapes", "--at does not go with --watch")
	case o.since != "":
		return usagef("give each file its time with --at and --save first (inferscope --at TIME --save dated.prom FILE), then compare with --since",
			"--at gives one scrape's time, and --since reads two")
	}
	if t, err := scrape.Resolve(o.target); err == nil && t.URL != nil {
		return usagef("leave out --at, or give a saved file or - for stdin",
			"--at gives the time of a file or stdin; a live scrape of %s has its own", termsafe.ShellQuote(t.URL.Redacted()))
	}
	return nil
}

// scrapeOptions are the options of every scrape of this run. The bearer
// token from the environment is checked here when a URL will be scraped: a
// value Go's HTTP client cannot send would otherwise surface as a failure to
// reach the server.
func (o *inspectOptions) scrapeOptions(io *iostreams.IO) (scrape.Options, error) {
	h := o.httpHeaders.Clone()
	if h == nil {
		h = http.Header{}
	}
	// An explicit --header Authorization wins over the environment.
	if tok := io.Getenv("INFERSCOPE_BEARER_TOKEN"); tok != "" && h.Get("Authorization") == "" {
		if o.scrapesURL() {
			if err := checkToken(tok); err != nil {
				return scrape.Options{}, err
			}
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	return scrape.Options{Timeout: o.timeout, MaxBytes: o.maxBytes, Headers: h, Stdin: io.In, UserAgent: userAgent()}, nil
}

// scrapesURL reports whether a target of this run is a URL.
func (o *inspectOptions) scrapesURL() bool {
	targets := []string{o.target}
	if o.since != "" {
		targets = append(targets, o.since)
	}
	for _, target := range targets {
		if t, err := scrape.Resolve(target); err == nil && t.URL != nil {
			return true
		}
	}
	return false
}

// checkToken refuses a bearer token an HTTP header cannot carry (Go's
// client refuses control characters other than tab). The token is a
// secret: it is never quoted.
func checkToken(tok string) error {
	bad := strings.IndexFunc(tok, notInHeader)
	if bad < 0 {
		return nil
	}
	if trimmed := strings.TrimRight(tok, "\r\n"); strings.IndexFunc(trimmed, notInHeader) < 0 {
		return usagef(`strip it: export INFERSCOPE_BEARER_TOKEN="$(printf %s "$INFERSCOPE_BEARER_TOKEN" | tr -d '\r\n')"`,
			"INFERSCOPE_BEARER_TOKEN holds a character not allowed in an HTTP header (a trailing newline?)")
	}
	return usagef("set it to the token alone, as the server expects it after \"Bearer \"",
		"INFERSCOPE_BEARER_TOKEN holds a character not allowed in an HTTP header (a control character, byte %d of %d)", bad+1, len(tok))
}

// notInHeader reports a character an HTTP header value cannot hold.
func notInHeader(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }

func runInspect(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, usage)
		return nil
	}
	o, err := parseInspect(args)
	if err != nil {
		return err
	}
	so, err := o.scrapeOptions(io)
	if err != nil {
		return err
	}
	switch {
	case o.watch > 0:
		return o.runWatch(ctx, io, so)
	case o.since != "":
		return o.runSince(ctx, io, so)
	}
	return o.runOnce(ctx, io, so)
}

// outcome is a report rendered and ready to write, with the scrape it came
// from (for --save).
type outcome struct {
	rep *report.Report
	out []byte
	res *scrape.Result
}

// runOnce is the one-shot report: the read, parse, analysis and rendering
// run within --timeout and give way to Ctrl-C at once; only a finished
// report is written, in one piece.
func (o *inspectOptions) runOnce(ctx context.Context, io *iostreams.IO, so scrape.Options) error {
	got, err := bounded(ctx, o.timeout, func(ctx context.Context) (*outcome, error) {
		snap, res, err := load(ctx, o.target, so, o.dialectOptions(), o.at)
		if err != nil {
			return nil, err
		}
		return o.rendered(io, o.build(snap, snap.ScrapedAt, o.hist), res)
	})
	return o.deliver(ctx, io, got, err)
}

func (o *inspectOptions) dialectOptions() dialect.Options {
	return dialect.Options{Dialect: o.dialect, Model: o.model}
}

// rendered renders rep into an outcome.
func (o *inspectOptions) rendered(io *iostreams.IO, rep *report.Report, res *scrape.Result) (*outcome, error) {
	var b bytes.Buffer
	var err error
	if o.json {
		err = render.JSON(&b, rep)
	} else {
		err = render.Text(&b, rep, o.renderOptions(io))
	}
	if err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	return &outcome{rep: rep, out: b.Bytes(), res: res}, nil
}

// deliver ends a one-shot run (a report, --since, the demo's --once):
// nothing is written once ctx has ended; else the scrape is saved when
// --save asks, the report written and --fail-on applied.
func (o *inspectOptions) deliver(ctx context.Context, io *iostreams.IO, got *outcome, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	}
	if o.save != "" && got.res != nil {
		if err := saveScrape(o.save, got.res); err != nil {
			return err
		}
		fmt.Fprintf(io.Err, "inferscope: saved the scrape to %s\n", termsafe.Text(o.save))
	}
	if _, err := io.Out.Write(got.out); err != nil {
		return writeError(err)
	}
	if worst := got.rep.Worst(); o.failOn != "" && worst.Rank() >= report.Severity(o.failOn).Rank() {
		return &failOnError{failOn: report.Severity(o.failOn), worst: worst}
	}
	return nil
}

func (o *inspectOptions) renderOptions(io *iostreams.IO) render.Options {
	w := o.width
	if w == 0 {
		w = min(io.LayoutWidth(), MaxWidth)
	}
	return render.Options{Width: w, Columns: o.columns, Color: io.ColorEnabled(o.noColor)}
}

// load scrapes a target and reads it into a canonical snapshot; a non-zero
// at is the scrape's time as the user gave it (--at).
func load(ctx context.Context, target string, so scrape.Options, do dialect.Options, at time.Time) (*snapshot.Snapshot, *scrape.Result, error) {
	res, err := scrape.Fetch(ctx, target, so)
	if err != nil {
		return nil, nil, err
	}
	if !at.IsZero() {
		res.ScrapedAt, res.TimeSource = at, scrape.TimeGiven
	}
	snap, err := parse(ctx, res, do)
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C or --timeout during the parse: not the body's fault.
			return nil, res, err
		}
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

// lookHint says how to see what was read, as a command to paste.
func (e *readError) lookHint() string {
	switch {
	case e.source == "-":
		return "check what was piped in: inferscope reads a Prometheus exposition on stdin"
	case e.fromFile:
		return "check the file: head " + termsafe.ShellQuote(e.source)
	}
	return "check what the endpoint sends: curl -s " + termsafe.ShellQuote(e.source) + " | head"
}

// parse reads a scrape result's body into a snapshot; the parse stops when
// ctx ends (a body within the byte cap can take seconds).
func parse(ctx context.Context, res *scrape.Result, do dialect.Options) (*snapshot.Snapshot, error) {
	f, err := exposition.DetectFormat(res.ContentType, res.Body)
	if err != nil {
		return nil, err
	}
	fams, err := exposition.ParseContext(ctx, res.Body, f)
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
	snap.TimeSource = res.TimeSource
	snap.ScrapeSeconds = res.Waited.Seconds()
	snap.StartToken = res.StartToken
	return snap, nil
}

func saveScrape(path string, res *scrape.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return usagef("check that the folder exists and is writable", "cannot save the scrape: %v", termsafe.Text(err.Error()))
	}
	err = scrape.Save(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return usagef("check that the disk has room and the file is writable",
			"cannot save the scrape to %s: %v", termsafe.Text(path), err)
	}
	return nil
}
