package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// Limits of the size flags: a layout wider than any screen only writes
// spaces, and a body cap beyond memory protects nothing.
const (
	MinWidth    = 40
	MaxWidth    = 1000
	MaxColumns  = 4
	MaxMaxBytes = 1 << 30
)

// defaultTimeout is --timeout outside watch modes.
const defaultTimeout = scrape.DefaultTimeout

// defaultWindow is --window's default: the range rates are taken over by
// fleet and by the rules.
const defaultWindow = 5 * time.Minute

// A flagDef is the one definition of a flag. Every command that takes the
// flag defines it through this value, so that its name, shorthand,
// argument and help are the same wherever it appears
// (TestSharedFlagsOneDefinition holds every command to it, and to the same
// default). The argument's name stands in backquotes in the usage, as
// pflag reads it.
//
// To add a flag: write its flagDef here (beside the flags it goes with),
// bind it in each command that takes it with the method for its type
// (def.duration(cmd, &o.field)), and check its value where the command
// checks its options. ARCHITECTURE.md has the checklist.
type flagDef struct {
	name, short, usage string
	// choices are the values shell completion offers; nil offers files
	// where the argument is a path, and nothing otherwise.
	choices func() []string
	// noFiles says the argument is not a path (no file completion).
	noFiles bool
}

func (d flagDef) define(cmd *cobra.Command, v pflag.Value) *pflag.Flag {
	f := cmd.Flags().VarPF(v, d.name, d.short, d.usage)
	switch {
	case d.choices != nil:
		choices := d.choices
		_ = cmd.RegisterFlagCompletionFunc(d.name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return choices(), cobra.ShellCompDirectiveNoFileComp
		})
	case d.noFiles:
		_ = cmd.RegisterFlagCompletionFunc(d.name, cobra.NoFileCompletions)
	}
	return f
}

// The binders, one per type of value. Each defines the flag with *p as its
// default.

func (d flagDef) bool(cmd *cobra.Command, p *bool) {
	d.define(cmd, (*boolValue)(p)).NoOptDefVal = "true"
}

func (d flagDef) string(cmd *cobra.Command, p *string) { d.define(cmd, (*stringValue)(p)) }
func (d flagDef) int(cmd *cobra.Command, p *int)       { d.define(cmd, (*intValue)(p)) }
func (d flagDef) uint64(cmd *cobra.Command, p *uint64) { d.define(cmd, (*uint64Value)(p)) }
func (d flagDef) float(cmd *cobra.Command, p *float64) { d.define(cmd, (*floatValue)(p)) }
func (d flagDef) duration(cmd *cobra.Command, p *time.Duration) {
	d.define(cmd, durationValue{p})
}
func (d flagDef) size(cmd *cobra.Command, p *int64)    { d.define(cmd, sizeValue{p}) }
func (d flagDef) list(cmd *cobra.Command, p *[]string) { d.define(cmd, (*listValue)(p)) }

// fixed is a completion list.
func fixed(values ...string) func() []string { return func() []string { return values } }

// The flags of more than one command, each defined once. A command's own
// flags are defined in its file.
var (
	// How a report is drawn: every command that writes one.
	flagOutput = flagDef{name: "output", short: "o", choices: fixed("text", "json"),
		usage: "the report's `FORMAT`: text, or json (one object, docs/json.md; with --watch, one per line per refresh); bench also html (one page to look at)"}
	flagJSON    = flagDef{name: "json", usage: "the same as -o json"}
	flagHist    = flagDef{name: "hist", usage: "add the distributions: one bar per histogram bucket"}
	flagColumns = flagDef{name: "columns", noFiles: true, usage: fmt.Sprintf(
		"lay sections out side by side in `N` columns, 1 to %d (default: 2 from %d cells, 3 from %d)", MaxColumns, render.TwoColumnsFrom, render.ThreeColumnsFrom)}
	flagWidth = flagDef{name: "width", noFiles: true, usage: fmt.Sprintf(
		"lay the report out `COLS` cells wide, %d to %d (default: the terminal's width, %d when piped)", MinWidth, MaxWidth, iostreams.PipedWidth)}
	flagNoColor = flagDef{name: "no-color", usage: "no colours (also NO_COLOR=1 or CLICOLOR=0, and TERM=dumb unless CLICOLOR_FORCE=1)"}
	flagASCII   = flagDef{name: "ascii", usage: "draw the bars, trends and heat strips in ASCII (also where the locale is not UTF-8, such as LANG=C)"}

	// The live view and its rates.
	flagWatch = flagDef{name: "watch", short: "w", noFiles: true, usage: "refresh every `D` (at least " + units.Duration(watch.MinInterval) +
		") and redraw: the whole screen on a terminal, one frame after another when piped (with -o json, one object per line)"}
	flagWatchWindows = flagDef{name: "watch-windows", noFiles: true, usage: fmt.Sprintf(
		"the --watch view's rate windows: a `LIST` of up to %d durations or seconds", watch.MaxWindows)}
	flagHeat = flagDef{name: "heat", usage: "start the --watch view with its latency heat strips shown (the l key shows and hides them)"}

	// Reading: what one report may take, and what it sends.
	flagTimeout = flagDef{name: "timeout", noFiles: true, usage: "give one report at most `D`: every request, the parse and the analysis in it " +
		"(default " + units.Duration(defaultTimeout) + "; with --watch, the interval; for discover, " + units.Duration(discover.DefaultTimeout) + ")"}
	flagMaxBytes = flagDef{name: "max-bytes", noFiles: true, usage: "accept a body of at most `N` bytes, or with k, M or G (x1024), up to " +
		units.Size(MaxMaxBytes)}
	flagHeader = flagDef{name: "header", noFiles: true, usage: "send the HTTP header `'K: V'` with every request (repeatable); " +
		"INFERSCOPE_BEARER_TOKEN sends Authorization: Bearer"}
	flagFailOn = flagDef{name: "fail-on", choices: fixed("warn", "bad"), usage: "exit 1 when a note of `SEVERITY` (warn or bad) or worse fires " +
		"(its id and severity on stderr); with --watch, stop at the first refresh where one does, its frame left on screen"}

	// Which server, which model.
	flagDialect = flagDef{name: "dialect", choices: dialect.Names, usage: "read or write the series as dialect `NAME`: " + orList(dialect.Names()) +
		" (default: detected from the target)"}
	flagModel = flagDef{name: "model", noFiles: true, usage: "with several models served, report `NAME` alone (default: all together); bench sends its requests to NAME (default: the one model served)"}

	// Times: every time flag takes RFC 3339 (2026-12-01T02:00Z) or Unix
	// seconds, read by [parseTime].
	flagAt = flagDef{name: "at", noFiles: true, usage: "the `TIME` the report is of (RFC 3339 or Unix seconds): a saved file's or stdin's " +
		"scrape time (default: the time --save recorded, else the file's modification time, else now); for fleet, now as of TIME"}
	flagFrom = flagDef{name: "from", noFiles: true, usage: "a past range from `TIME` (RFC 3339, such as 2026-12-01T02:00Z, or Unix seconds)"}
	flagTo   = flagDef{name: "to", noFiles: true, usage: "end the --from range at `TIME` (default: now)"}
	flagLast = flagDef{name: "last", noFiles: true, usage: "a past range: the last `D`, up to now"}

	// Which series, grouped how, over which window.
	flagSelector = flagDef{name: "selector", noFiles: true, usage: "read only series that match `SEL`, label matchers as PromQL writes them: '{namespace=\"llm\"}'"}
	flagBy       = flagDef{name: "by", noFiles: true, usage: "the `LABELS` that tell one server from another, comma-separated: every figure is summed to them, " +
		"one fleet row, recorded series or dashboard variable each (default job,instance: one scrape target; namespace,pod reads a Kubernetes fleet by its pods)"}
	flagWindow = flagDef{name: "window", noFiles: true, usage: "take rates over the last `D`"}

	// Serving.
	flagListen = flagDef{name: "listen", noFiles: true, usage: "serve on `ADDR` (host:port)"}
	flagFormat = flagDef{name: "format", choices: fixed("prometheus", "operator", "vmalert", "grafana", "perses"),
		usage: "write the format `F`: rules write prometheus (a rule file), operator (a PrometheusRule) or vmalert; dashboard writes grafana " +
			"(JSON to import) or perses (a Dashboard resource) (default: the first)"}
)

// outputFlags are how a report is drawn, for every command that writes
// one; [outputFlags.check] checks them alike for each.
type outputFlags struct {
	output         string // text or json (-o); json also by --json
	htmlOK, html   bool   // the command writes html too (bench); -o html asked it
	noHist         bool   // the command draws no histograms (bench compare): no --hist
	jsonAlias      bool
	json           bool // the report is written as JSON (set by check)
	hist, noColor  bool
	ascii          bool
	columns, width int
}

// define defines the output flags on cmd, --ascii last ([outputFlags.glyphs]
// reads it).
func (f *outputFlags) define(cmd *cobra.Command) {
	if f.output == "" {
		f.output = "text"
	}
	out := flagOutput
	if f.htmlOK {
		out.choices = fixed("text", "json", "html")
	}
	out.string(cmd, &f.output)
	flagJSON.bool(cmd, &f.jsonAlias)
	if !f.noHist {
		flagHist.bool(cmd, &f.hist)
	}
	flagColumns.int(cmd, &f.columns)
	flagWidth.int(cmd, &f.width)
	flagNoColor.bool(cmd, &f.noColor)
	flagASCII.bool(cmd, &f.ascii)
}

// viewFlags are the names of the flags only a report view reads (the
// output flags and the live view's windows and heat strips): a command
// form that draws no report refuses them.
var viewFlags = []string{flagWatchWindows.name, flagHeat.name, flagOutput.name, flagJSON.name, flagHist.name,
	flagWidth.name, flagColumns.name, flagNoColor.name, flagASCII.name}

// glyphs is what the pictures are drawn with: ASCII with --ascii or where
// the locale is not UTF-8, else the block characters.
func (f *outputFlags) glyphs(io *iostreams.IO) spark.Glyphs {
	if f.ascii {
		return spark.ASCII
	}
	return spark.LocaleGlyphs(io.Getenv)
}

// check refuses an output format, column count or width the layout cannot
// honour (set holds the names of the flags given).
func (f *outputFlags) check(set map[string]bool) error {
	switch {
	case f.htmlOK && f.output != "text" && f.output != "json" && f.output != "html":
		return usagef("use -o text, -o json or -o html", "--output %q is not a format", f.output)
	case !f.htmlOK && f.output != "text" && f.output != "json":
		return usagef("use -o text or -o json", "--output %q is not a format", f.output)
	case f.jsonAlias && set["output"] && f.output != "json":
		return usagef("give one of them: -o json (or --json), or -o text", "--json and --output %s disagree", f.output)
	}
	f.json = f.output == "json" || f.jsonAlias
	f.html = f.output == "html"
	// 0 is what the layout takes for "not given", never a value to give.
	if f.columns < 0 || f.columns > MaxColumns || set["columns"] && f.columns == 0 {
		return usagef(fmt.Sprintf("use --columns 1 to %d, or leave it out to fit the width", MaxColumns), "--columns %d is out of range", f.columns)
	}
	switch {
	case set["width"] && f.width == 0:
		return usagef(fmt.Sprintf("use --width %d to %d, or leave it out to follow the terminal", MinWidth, MaxWidth), "--width 0 is too narrow for a report")
	case f.width < 0, f.width != 0 && f.width < MinWidth:
		return usagef(fmt.Sprintf("use --width %d or more", MinWidth), "--width %d is too narrow for a report", f.width)
	case f.width > MaxWidth:
		return usagef(fmt.Sprintf("use --width %d to %d, or leave it out to follow the terminal", MinWidth, MaxWidth),
			"--width %d is wider than inferscope lays out (at most %d)", f.width, MaxWidth)
	}
	return nil
}

// renderOptions lay a report out width cells wide as the output flags
// say.
func (f *outputFlags) renderOptions(io *iostreams.IO, width int) render.Options {
	return render.Options{Width: width, Columns: f.columns, Color: io.ColorEnabled(f.noColor), Glyphs: f.glyphs(io)}
}

// layoutWidth is the width to lay a report out in.
func (f *outputFlags) layoutWidth(io *iostreams.IO) int {
	if f.width != 0 {
		return f.width
	}
	return min(io.LayoutWidth(), MaxWidth)
}

// watchFlags are the live view's: its refresh interval and, where the view
// is the single-server one, its rate windows.
type watchFlags struct {
	watch   time.Duration
	windows string
	heat    bool // start with the latency heat strips shown
}

func (f *watchFlags) define(cmd *cobra.Command) {
	flagWatch.duration(cmd, &f.watch)
	if f.windows == "" {
		f.windows = watch.DefaultWindows
	}
	flagWatchWindows.string(cmd, &f.windows)
	flagHeat.bool(cmd, &f.heat)
}

// check refuses an interval below the view's floor and windows it cannot
// read, each where given (set holds the names of the flags given).
func (f *watchFlags) check(set map[string]bool) error {
	if set["watch"] && f.watch < watch.MinInterval {
		return usagef("use --watch "+units.Duration(watch.MinInterval)+" or longer, such as --watch 2s",
			"--watch %s is shorter than the shortest refresh interval (%s)", units.Duration(f.watch), units.Duration(watch.MinInterval))
	}
	if set["watch-windows"] {
		if _, err := parseWindows(f.windows); err != nil {
			return err
		}
	}
	return nil
}

// failOn is --fail-on's value, checked.
func checkFailOn(s string) error {
	switch s {
	case "", "warn", "bad":
		return nil
	}
	return usagef("use --fail-on warn or --fail-on bad", "--fail-on %q is not a severity", s)
}

// timeoutFor is --timeout as given, or its default: in a watch mode the
// interval (a refresh that outlasts it is a failed frame, shown at once),
// else defaultTimeout.
func timeoutFor(set map[string]bool, given, interval time.Duration) time.Duration {
	switch {
	case set["timeout"]:
		return given
	case interval > 0:
		return interval
	}
	return defaultTimeout
}

// checkTimeout refuses a --timeout that cannot work.
func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return usagef("use a positive duration such as --timeout 30s", "--timeout must be positive")
	}
	return nil
}

// given returns the names of the flags cmd was given.
func given(cmd *cobra.Command) map[string]bool {
	set := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// The values behind the flags. pflag's own would do for the plain types,
// but these say "not a number" in inferscope's words, and leave a zero
// default unsaid (pflag prints a default unless it reads as zero).

type boolValue bool

func (b *boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b = boolValue(v)
	return nil
}
func (b *boolValue) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolValue) Type() string     { return "bool" }
func (b *boolValue) IsBoolFlag() bool { return true }

type stringValue string

func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Type() string       { return "string" }

type intValue int

func (i *intValue) Set(s string) error {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, strconv.IntSize)
	if err != nil {
		return numberError(err)
	}
	*i = intValue(v)
	return nil
}
func (i *intValue) String() string { return strconv.Itoa(int(*i)) }
func (i *intValue) Type() string   { return "int" }

type uint64Value uint64

func (u *uint64Value) Set(s string) error {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return numberError(err)
	}
	*u = uint64Value(v)
	return nil
}
func (u *uint64Value) String() string { return strconv.FormatUint(uint64(*u), 10) }
func (u *uint64Value) Type() string   { return "uint64" }

type floatValue float64

func (f *floatValue) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return numberError(err)
	}
	*f = floatValue(v)
	return nil
}
func (f *floatValue) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *floatValue) Type() string   { return "float" }

// numberError says why a number could not be read, without strconv's
// function names.
func numberError(err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("out of range")
	}
	return errors.New("not a number")
}

// durationValue accepts Go durations and bare seconds.
type durationValue struct{ d *time.Duration }

func (f durationValue) Type() string { return "duration" }
func (f durationValue) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return units.Duration(*f.d)
}

func (f durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (use 500ms, 2s, 1m or seconds)")
	}
	return d, nil
}

// sizeValue reads a byte count: a whole or decimal number with an optional
// unit, B, k (KB, KiB), M (MB, MiB) or G (GB, GiB), case aside. Every unit
// is a power of 1024, as curl and Prometheus read them: 64M is 64 MiB.
type sizeValue struct{ n *int64 }

func (f sizeValue) Type() string { return "size" }
func (f sizeValue) String() string {
	if f.n == nil || *f.n == 0 {
		return ""
	}
	return units.Size(*f.n)
}

func (f sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

func parseSize(s string) (int64, error) {
	bad := errors.New("not a size (use bytes, or k, M or G: 512k, 64M, 1G)")
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, bad
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad
	}
	v *= mul
	if v >= math.MaxInt64 {
		return math.MaxInt64, nil // refused as too large by the caller, in its words
	}
	return int64(math.Round(v)), nil
}

// listValue collects a repeated flag (--header, --replica-label).
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ", ") }
func (l *listValue) Type() string   { return "list" }
func (l *listValue) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// timeHint is the hint of a time flag that cannot be read.
const timeHint = "give a time as RFC 3339 (2026-12-01T02:00Z, 2026-12-01T02:00:00+01:00) or Unix seconds (1764554400)"

// timeLayouts are the times every time flag takes besides Unix seconds.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04Z07:00"}

// parseTime reads the time flag --name was given: a time with its zone (or
// Z), or Unix seconds; after 2000 (older than any inference server) and not
// in the future (now is the clock, scrape.Skew allowed, as for a file's time).
func parseTime(name, s string, now time.Time) (time.Time, error) {
	t, unix, ok := readTime(strings.TrimSpace(s))
	if !ok {
		if _, err := time.Parse("2006-01-02T15:04", strings.TrimSpace(s)); err == nil {
			return time.Time{}, usagef("add Z for UTC or an offset such as +01:00: "+strings.TrimSpace(s)+"Z", "--%s %q has no time zone", name, s)
		}
		if off := zoneOffset(strings.TrimSpace(s)); off != "" && badOffset(off) {
			return time.Time{}, usagef("write the offset as -23:59 to +23:59, such as +01:00, or Z for UTC", "--%s %q has the offset %s, outside RFC 3339's -23:59 to +23:59", name, s, off)
		}
		return time.Time{}, usagef(timeHint, "--%s %q is not a time", name, s)
	}
	switch {
	case t.Year() < 2000:
		return time.Time{}, usagef(timeHint, "--%s %s is before 2000, older than any inference server", name, t.UTC().Format(time.RFC3339))
	case t.After(now.Add(scrape.Skew)):
		hint := timeHint
		if unix && t.Sub(now) > 100*365*24*time.Hour {
			hint = "that reads as Unix milliseconds or finer; --" + name + " takes seconds"
		}
		return time.Time{}, usagef(hint, "--%s %s is in the future", name, s)
	}
	return t, nil
}

// zoneOffset is the numeric offset that ends s ("+01:00"), "" if none.
func zoneOffset(s string) string {
	if n := len(s); n >= 6 && (s[n-6] == '+' || s[n-6] == '-') && s[n-3] == ':' {
		return s[n-6:]
	}
	return ""
}

// badOffset reports an offset ("+24:00") outside RFC 3339's: hours 00 to
// 23, minutes 00 to 59.
func badOffset(off string) bool {
	if off == "" {
		return false
	}
	h, errH := strconv.Atoi(off[1:3])
	m, errM := strconv.Atoi(off[4:6])
	return errH != nil || errM != nil || h > 23 || m > 59
}

// readTime reads a time in one of timeLayouts or Unix seconds (unix). An
// offset RFC 3339 does not allow (+24:00, +23:60) is no time, though Go
// reads it, and would write it back.
func readTime(s string) (t time.Time, unix, ok bool) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, false, !badOffset(zoneOffset(s))
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return time.Time{}, true, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), true, true
}
