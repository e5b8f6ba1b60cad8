package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/slots"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// rootLong is inferscope's own help, its defaults filled in from where
// they are declared.
var rootLong = `inferscope reads an LLM inference server's Prometheus /metrics (tabbyAPI,
vLLM, llama.cpp's server, SGLang, TGI, TensorRT-LLM's trtllm-serve, NVIDIA
Dynamo's frontend, LMDeploy) and shows the figures worth looking at, each
with a note where it implies an action: one report, a live view with
wall-clock rates over windows (--watch), or the rates between a saved scrape
and now (--since).

TARGET is a URL, host:port (http:// and /metrics are filled in; where that
/metrics answers JSON, as trtllm-serve's does, /prometheus/metrics is read), a
saved scrape (a file, such as one --save wrote), or - for stdin; it defaults to
` + scrape.DefaultURL + ` (tabbyAPI) or, where nothing listens
there, the one server found on this machine's default ports (inferscope
discover lists them; several are listed, and none read). --watch re-reads
its target and --since reads two: neither takes stdin twice. A llama.cpp
router (one llama-server serving several models) is read one model at a
time: --model NAME.

` + watchKeys

// watchKeys are the keys of the full-screen watch view.
const watchKeys = `Keys of the --watch view on a terminal: q quit, h distributions, l latency heat
strips, u each unit (slots, engines), space pause, +/- interval, r reset history,
arrows and PgUp/PgDn scroll.`

const rootExample = `  inferscope                                   this machine's server, found on its default ports
  inferscope gpu-box:5000                      one report
  inferscope -w 2s gpu-box:5000                a live view, refreshed every 2s
  inferscope --save before.prom gpu-box:5000   a report, and the raw scrape kept
  inferscope --since before.prom gpu-box:5000  every rate between then and now
  inferscope -o json gpu-box:5000 | jq .figures
  inferscope --fail-on bad gpu-box:5000        exit 1 when a bad note fires (cron, CI)`

type inspectOptions struct {
	outputFlags
	watchFlags
	timeout     time.Duration
	maxBytes    int64
	headers     []string    // --header as given
	httpHeaders http.Header // the same, parsed
	failOn      string
	dialect     string
	model       string
	atFlag      string    // --at as given
	at          time.Time // --at; zero when not given
	since, save string
	target      string
	// probeFiles are --probe-file's; probe the speeds they give the phase
	// trade (set by parse).
	probeFiles []string
	probe      *analysis.PhaseSpeeds
	// breakdown shows the breakdowns' tables; noSlots leaves llama.cpp's
	// /slots unread.
	breakdown, noSlots bool
	// gpu is where the GPUs are read from (--gpu); noGPU leaves the
	// look beside the target out.
	gpu   string
	noGPU bool
	// header lines every report of this run carries (set by the demo).
	header []string
	// withRates says the report is shown under windowed rates (a watch
	// view, --since).
	withRates bool
	// clock, when set, is the target's own clock, which each scrape is
	// read by (the demo's simulated server, whose clock runs --speed times
	// the wall clock): its start time, uptime and request times are all
	// on it.
	clock func() time.Time
}

// defaultOptions are the defaults of inferscope's flags, for every command
// that takes them.
func defaultOptions() inspectOptions {
	return inspectOptions{
		maxBytes:   scrape.DefaultMaxBytes,
		watchFlags: watchFlags{windows: watch.DefaultWindows},
	}
}

// newInspectCmd is inferscope itself: a report on a target, in its
// one-shot, --watch and --since modes. args are the command line's.
func newInspectCmd(io *iostreams.IO, args []string) *cobra.Command {
	o := defaultOptions()
	cmd := newCommand(commandSpec{
		use:     "inferscope [TARGET] [flags]",
		short:   "what an LLM inference server's /metrics say",
		long:    rootLong,
		example: rootExample,
		exits: []exitStatus{
			{ExitOK, "a report written (with --watch: the view closed with q)"},
			exitFailOnTripped,
			{ExitSeveral, "no target given, and several servers answer on this machine's default ports: each listed on stdout with its command, none read"},
		},
		args: cobra.ArbitraryArgs,
		moved: map[string]string{
			"windows": "--windows is now --watch-windows",
		},
		run: func(cmd *cobra.Command, pos []string) error {
			if err := commandTypo(cmd, args); err != nil {
				return err
			}
			if err := o.parse(cmd, pos); err != nil {
				return err
			}
			return o.run(cmd.Context(), io)
		},
	})
	o.define(cmd)
	return cmd
}

// define defines the flags of inferscope itself on cmd.
func (o *inspectOptions) define(cmd *cobra.Command) {
	o.outputFlags.define(cmd)
	o.watchFlags.define(cmd)
	flagTimeout.duration(cmd, &o.timeout)
	flagMaxBytes.size(cmd, &o.maxBytes)
	flagHeader.list(cmd, &o.headers)
	flagFailOn.string(cmd, &o.failOn)
	flagDialect.string(cmd, &o.dialect)
	flagModel.string(cmd, &o.model)
	flagAt.string(cmd, &o.atFlag)
	flagDef{name: "breakdown", usage: "show the breakdowns unit by unit: llama.cpp's slots, vLLM's data-parallel engines, SGLang's DP ranks (in --watch, the u key)"}.bool(cmd, &o.breakdown)
	flagDef{name: "no-slots", usage: "do not read llama.cpp's /slots beside its /metrics (read where the target is a llama.cpp server over HTTP)"}.bool(cmd, &o.noSlots)
	flagGPU.string(cmd, &o.gpu)
	flagNoGPU.bool(cmd, &o.noGPU)
	flagDef{name: "since", usage: "report the rates since `FILE`, a scrape saved with --save"}.string(cmd, &o.since)
	flagDef{name: "save", usage: "also write the raw scrape, with its time and the server's start header, to `FILE`"}.string(cmd, &o.save)
	flagDef{name: "probe-file", usage: "weigh the exchange rate and break-even with the speeds of a saved probe, `FILE` (inferscope bench --probe prefill,decode -o json); " +
		"give it twice for a prefill probe and a decode probe"}.list(cmd, &o.probeFiles)
}

// parse checks the flags cmd was given and takes the target from pos.
func (o *inspectOptions) parse(cmd *cobra.Command, pos []string) error {
	set := given(cmd)
	o.timeout = timeoutFor(set, o.timeout, o.watch)
	for _, step := range []func() error{
		func() error { return o.setTarget(pos) },
		func() error { return checkFailOn(o.failOn) },
		func() error { return o.outputFlags.check(set) },
		o.checkLimits,
		func() error { return o.watchFlags.check(set) },
		func() error { return o.checkModes(set) },
		func() error { return o.setAt(set["at"]) },
		o.setHeaders,
		o.readProbes,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	o.withRates = o.watch > 0 || o.since != ""
	return nil
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

// checkLimits refuses a --timeout or --max-bytes that cannot work.
func (o *inspectOptions) checkLimits() error {
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	switch {
	case o.maxBytes <= 0:
		return usagef("use a positive size such as --max-bytes 64M", "--max-bytes must be positive")
	case o.maxBytes > MaxMaxBytes:
		return usagef("real scrapes are kilobytes to a few megabytes; the default is "+units.Size(defaultOptions().maxBytes),
			"--max-bytes %s is more than inferscope reads (at most %s)", units.Size(o.maxBytes), units.Size(MaxMaxBytes))
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
	case set["watch-windows"] && o.watch == 0:
		return usagef("add an interval, e.g. --watch 2s --watch-windows "+o.windows, "--watch-windows sets the windows of --watch")
	case set["heat"] && o.watch == 0:
		return usagef("add an interval, e.g. --watch 2s --heat", "--heat draws the latency of each --watch interval")
	case o.gpu != "" && o.noGPU:
		return usagef("give one of them", "--gpu and --no-gpu do not go together")
	case o.gpu == "-":
		return usagef("give the GPU reading as a URL, a saved file or nvidia-smi", "--gpu - would read stdin, which is the engine's")
	}
	return nil
}

// setAt reads --at where given.
func (o *inspectOptions) setAt(given bool) error {
	if !given {
		return nil
	}
	t, err := parseTime("at", o.atFlag, time.Now())
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
			"--at gives the time of a file or stdin; a live scrape of %s has its own", t.URL.Redacted())
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

// run runs the mode the flags chose.
func (o *inspectOptions) run(ctx context.Context, io *iostreams.IO) error {
	so, err := o.scrapeOptions(io)
	if err != nil {
		return err
	}
	if err := o.locate(ctx, io, so); err != nil {
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
	// gpu is the GPU reading beside the scrape, which --save keeps too.
	gpu *snapshot.GPUs
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
		o.readSlots(ctx, snap, res, so)
		o.readGPU(ctx, snap, o.target, so)
		got, err := o.rendered(io, o.fold(o.build(snap, snap.ScrapedAt, o.hist)), res)
		if got != nil {
			got.gpu = snap.GPU
		}
		return got, err
	})
	return o.deliver(ctx, io, got, err)
}

// fold leaves the breakdowns' tables out unless --breakdown asks for them.
func (o *inspectOptions) fold(r *report.Report) *report.Report {
	if o.breakdown {
		return r
	}
	return r.Folded("--breakdown")
}

// readSlots reads llama.cpp's /slots beside a live scrape of one, with the
// scrape's headers, cap and clock, or records that --no-slots left it
// unread. A file, stdin or another server has no slots to read.
func (o *inspectOptions) readSlots(ctx context.Context, snap *snapshot.Snapshot, res *scrape.Result, so scrape.Options) {
	if snap.Dialect != "llamacpp" || res == nil || res.FromFile || snap.Via != "" {
		return
	}
	if o.noSlots {
		snap.Slots = &snapshot.Slots{Status: snapshot.SlotsOff}
		return
	}
	t, err := scrape.Resolve(o.target)
	if err != nil || t.URL == nil {
		return
	}
	var tr http.RoundTripper
	if so.Client != nil {
		tr = so.Client.Transport
	}
	maxBytes := so.MaxBytes
	if maxBytes <= 0 {
		maxBytes = scrape.DefaultMaxBytes
	}
	var query url.Values
	if o.model != "" {
		// A llama.cpp snapshot with --model is a router's model (one
		// server's refuses --model): its /slots is asked for the same.
		query = discover.RouterQuery(o.model)
	}
	snap.Slots = slots.Read(ctx, t.URL, slots.Options{Headers: so.Headers, MaxBytes: maxBytes, Transport: tr, UserAgent: so.UserAgent, Now: so.Now, Query: query})
}

func (o *inspectOptions) dialectOptions() dialect.Options {
	return dialect.Options{Dialect: o.dialect, Model: o.model, Parts: true}
}

// rendered renders rep into an outcome.
func (o *inspectOptions) rendered(io *iostreams.IO, rep *report.Report, res *scrape.Result) (*outcome, error) {
	var b bytes.Buffer
	var err error
	if o.json {
		err = render.JSON(&b, rep)
	} else {
		err = render.Text(&b, rep, o.renderOptions(io, o.layoutWidth(io)))
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
		notice(io.Err, "saved the scrape to %s", o.save)
		if err := saveGPU(io, o.save, got.gpu); err != nil {
			return err
		}
	}
	if _, err := io.Out.Write(got.out); err != nil {
		return writeError(err)
	}
	return failedOn(o.failOn, tripping(got.rep, o.failOn, ""))
}

// load scrapes a target and reads it into a canonical snapshot; a non-zero
// at is the scrape's time as the user gave it (--at).
func load(ctx context.Context, target string, so scrape.Options, do dialect.Options, at time.Time) (*snapshot.Snapshot, *scrape.Result, error) {
	return loadVia(ctx, target, so, do, at, "")
}

// loadVia is load for a command that takes no --model (via, "rules"), so
// that a llama.cpp router's hints name what that command can read.
func loadVia(ctx context.Context, target string, so scrape.Options, do dialect.Options, at time.Time, via string) (*snapshot.Snapshot, *scrape.Result, error) {
	res, routed, err := fetch(ctx, target, so, do.Model, via)
	if err != nil {
		return nil, nil, err
	}
	if routed != "" {
		do.Model = "" // a router's child labels nothing: its series are the model's
	}
	if !at.IsZero() {
		res.ScrapedAt, res.TimeSource, res.TimeUnknown = at, scrape.TimeGiven, ""
	}
	snap, err := parse(ctx, res, do)
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C or --timeout during the parse: not the body's fault.
			return nil, res, err
		}
		return nil, res, &readError{source: res.Source, fromFile: res.FromFile, tried: res.TextPathFailed, err: err}
	}
	if routed != "" {
		snap.Models = []string{routed}
	}
	return snap, res, nil
}

// readError is a body that arrived but could not be read as metrics; it
// knows where the body came from, so the hint can say how to look at it.
type readError struct {
	source   string
	fromFile bool
	// tried says what the server's other text path gave, where the body
	// was JSON and that path was tried in vain (scrape.TextPath).
	tried string
	err   error
}

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// lookHint says how to see what was read, as a command to paste.
func (e *readError) lookHint() string {
	switch {
	case e.source == "-":
		return "check what was piped in: inferscope reads a Prometheus exposition on stdin"
	case e.fromFile:
		return "check the file: head " + termsafe.ShellEcho(e.source)
	}
	return "check what the endpoint sends: curl -s " + termsafe.ShellEcho(e.source) + " | head"
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
	snap.AnsweredJSON = res.AnsweredJSON
	snap.ScrapedAt = res.ScrapedAt
	snap.TimeSource = res.TimeSource
	snap.TimeUnknown = res.TimeUnknown
	snap.ScrapeSeconds = res.Waited.Seconds()
	snap.StartToken = res.StartToken
	return snap, nil
}

func saveScrape(path string, res *scrape.Result) error {
	if res.ScrapedAt.IsZero() {
		return usagef("give it its time with --at TIME", "cannot save the scrape without its time: %s", whole(res.TimeUnknown))
	}
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
