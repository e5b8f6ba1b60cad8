package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// Exit codes, each the outcome of one kind of error in [exitCode].
const (
	ExitOK     = 0 // report printed
	ExitFailOn = 1 // --fail-on tripped
	ExitError  = 2 // could not produce a report
	// ExitSeveral is a run given no target where several servers answer:
	// each is listed, none read.
	ExitSeveral = 3
	// ExitInterrupted is Ctrl-C (SIGINT, or the key in the watch view), as
	// a shell reports a command that SIGINT ended: 128 + 2.
	ExitInterrupted = 130
	// ExitTerminated is what a shell reports of a process SIGTERM ended
	// (128 + 15): inferscope leaves SIGTERM its default action.
	ExitTerminated = 143
)

// exitCode is the one way out of a command: it maps the error a command
// returned to the exit code, and writes to stderr what the user is to
// read of it.
//
//   - nil: ExitOK.
//   - an interrupt (ctx ended: SIGINT; context.Canceled; the watch view's
//     Ctrl-C key, [watch.ErrInterrupted]): ExitInterrupted, and nothing
//     more is said, since the user asked for it.
//   - [*failOnError], a one-shot report (or fleet) with a note at
//     --fail-on's severity: ExitFailOn, and one line naming the notes
//     (id, severity, and the instance in a fleet); a watch stopped by it
//     ([*watch.TrippedError]) says which note, when, and its text.
//   - [*severalError], no target given and several servers found (listed
//     on stdout): ExitSeveral, and one line saying so.
//   - anything else: ExitError, with one `inferscope: error:` line and
//     the `inferscope: hint:` lines of [printError].
func exitCode(ctx context.Context, stderr io.Writer, err error) int {
	var (
		failed  *failOnError
		tripped *watch.TrippedError
		werr    *watch.WriteError
		several *severalError
	)
	switch {
	case errors.Is(err, errStopped):
		return ExitOK
	case ctx.Err() != nil, errors.Is(err, context.Canceled), errors.Is(err, watch.ErrInterrupted):
		return ExitInterrupted
	case err == nil:
		return ExitOK
	case errors.As(err, &failed):
		fmt.Fprintf(stderr, "inferscope: %s\n", failed.Error())
		return ExitFailOn
	case errors.As(err, &tripped):
		fmt.Fprintf(stderr, "inferscope: --fail-on %s tripped at %s, the watch stopped: %s (%s): %s\n", tripped.FailOn,
			tripped.At.Format("2006-01-02 15:04:05 MST"), termsafe.Line(tripped.Note.ID, 80), tripped.Note.Severity, termsafe.Line(tripped.Note.Text, 300))
		return ExitFailOn
	case errors.As(err, &werr):
		err = writeError(werr.Err)
	case errors.As(err, &several):
		fmt.Fprintf(stderr, "inferscope: %s\n", several.Error())
		return ExitSeveral
	}
	printError(stderr, err)
	return ExitError
}

// errStopped is a service (the proxy) that was asked to stop by a signal
// and stopped cleanly, its work drained: exit 0 even after Ctrl-C, as a
// service manager expects of a stop it asked for.
var errStopped = errors.New("stopped as asked")

// usageError is an error whose words and hints the CLI writes itself: a
// mistake on the command line, or a failure it explains in its own terms.
type usageError struct {
	msg   string
	hints []string
}

func (e *usageError) Error() string { return e.msg }

// usagef is a usageError; every string among args is repeated as the
// user's text is (echo.go): one safe line, cut.
func usagef(hint, format string, args ...any) error {
	e := &usageError{msg: fmt.Sprintf(format, echoArgs(args)...)}
	if hint != "" {
		e.hints = []string{hint}
	}
	return e
}

// failOnError is a report written whole with notes at or above the
// severity --fail-on names.
type failOnError struct {
	failOn report.Severity
	notes  []firedNote // at least one
}

// maxFired is how many of the notes that tripped --fail-on its line names.
const maxFired = 5

func (e *failOnError) Error() string {
	names := make([]string, 0, min(len(e.notes), maxFired)+1)
	for i, n := range e.notes {
		if i == maxFired {
			names = append(names, fmt.Sprintf("and %d more", len(e.notes)-maxFired))
			break
		}
		s := fmt.Sprintf("%s (%s)", termsafe.Line(n.id, 80), n.severity)
		if n.where != "" {
			s += " on " + termsafe.Line(n.where, 80)
		}
		names = append(names, s)
	}
	return fmt.Sprintf("--fail-on %s tripped: %s", e.failOn, strings.Join(names, ", "))
}

// firedNote is a note that trips --fail-on: its id and severity, and
// where it fired (a fleet's instance; "" for the server reported on).
type firedNote struct {
	id       string
	severity report.Severity
	where    string
}

// tripping are r's notes at severity failOn or worse, the most severe
// first ("" trips on none); where says where r is of.
func tripping(r *report.Report, failOn, where string) []firedNote {
	if failOn == "" || r == nil {
		return nil
	}
	var out []firedNote
	for _, n := range r.Notes {
		if n.Severity.Rank() >= report.Severity(failOn).Rank() {
			out = append(out, firedNote{id: n.ID, severity: n.Severity, where: where})
		}
	}
	return out // failedOn orders them, worst first
}

// failedOn is the error of a run whose notes trip --fail-on, nil when
// none does.
func failedOn(failOn string, notes []firedNote) error {
	if failOn == "" || len(notes) == 0 {
		return nil
	}
	slices.SortStableFunc(notes, func(a, b firedNote) int { return b.severity.Rank() - a.severity.Rank() })
	return &failOnError{failOn: report.Severity(failOn), notes: notes}
}

// timeoutError is a scrape whose read, parse and analysis ran past
// --timeout (the HTTP exchange alone says so in the scrape's own words).
type timeoutError struct{ limit time.Duration }

func (e *timeoutError) Error() string {
	return "reading the scrape took longer than --timeout " + units.Duration(e.limit)
}

// printError writes err as one `inferscope: error:` line and the hints that
// say what to try; every error has at least one.
func printError(w io.Writer, err error) {
	msg, hints := explain(err)
	if len(hints) == 0 {
		hints = []string{"inferscope --help says what inferscope reads and lists the flags"}
	}
	fmt.Fprintf(w, "inferscope: error: %s\n", oneLine(msg))
	for _, h := range hints {
		fmt.Fprintf(w, "inferscope: hint: %s\n", oneLine(h))
	}
}

// explain says what err means to the user: the message, and the hints
// that say what to try.
func explain(err error) (string, []string) {
	var (
		se *scrape.Error
		ee *exposition.Error
		ue *dialect.UnknownError
		me *dialect.ModelError
		re *readError
		us *usageError
		te *timeoutError
		le *demo.ListenError
	)
	switch {
	case errors.As(err, &us):
		return us.msg, us.hints
	case errors.As(err, &te):
		return err.Error(), []string{"a very large or hostile exposition can take long to parse; allow more with --timeout " + units.Duration(2*te.limit)}
	case errors.As(err, &se):
		if len(se.Hints) > 0 {
			return err.Error(), se.Hints
		}
		return err.Error(), []string{kindHint(se.Kind)}
	case errors.As(err, &ee):
		hints := append([]string(nil), ee.Hints...)
		if errors.As(err, &re) {
			if re.tried != "" {
				hints = append(hints, "inferscope tried "+re.tried)
			}
			hints = append(hints, re.lookHint())
		} else if len(hints) == 0 {
			hints = append(hints, "check that the target serves Prometheus metrics")
		}
		return err.Error(), hints
	case errors.As(err, &ue):
		return err.Error(), dialectHints(ue)
	case errors.As(err, &me):
		if len(me.Models) == 0 {
			return err.Error(), []string{"leave out --model: a server that serves one model does not label its series"}
		}
		return err.Error(), []string{"--model takes one of: " + strings.Join(me.Models, ", ")}
	case errors.Is(err, dialect.ErrUnknownDialect):
		return err.Error(), []string{"--dialect takes one of: " + strings.Join(dialect.Names(), ", ")}
	case errors.As(err, &re):
		// Read into metrics but failed past the parser (the dialect's own
		// checks): the body is still what to look at.
		return err.Error(), []string{re.lookHint()}
	case errors.As(err, &le):
		return err.Error(), []string{listenHint(le)}
	}
	return err.Error(), nil
}

// listenHint is what to try when the demo cannot serve on --listen.
func listenHint(le *demo.ListenError) string {
	if le.InUse {
		return "pick another address with --listen, or leave it out for a free port"
	}
	return "give --listen a host:port of this machine (ports below 1024 need privileges), or leave it out for a free port"
}

// dialectHints are the hints for series no dialect reads, offering
// --dialect only where it would read something.
func dialectHints(ue *dialect.UnknownError) []string {
	titles := dialect.Titles()
	which := "inferscope reads " + strings.Join(titles[:len(titles)-1], ", ") + " and " + titles[len(titles)-1] + " metrics; is this the inference server's own /metrics?"
	switch {
	case len(ue.Readable) > 0 && ue.Wanted != "":
		return []string{"leave out --dialect: these series read as " + strings.Join(ue.Readable, " or ")}
	case len(ue.Readable) > 0:
		return []string{which, "--dialect " + ue.Readable[0] + " reads these series (readable as: " + strings.Join(ue.Readable, ", ") + ")"}
	}
	return []string{which}
}

// kindHint is what to try for a scrape error that came without hints.
func kindHint(k scrape.Kind) string {
	switch k {
	case scrape.Read:
		return "check that the file or stream can be read (permissions, a gzip file cut short) and holds a scrape"
	case scrape.HTTPStatus:
		return "the server refused the scrape; its log should say why"
	case scrape.TooLarge:
		return "raise the cap with --max-bytes, e.g. --max-bytes 256M"
	case scrape.Timeout:
		return "a busy server can hold a scrape for seconds; wait longer with --timeout"
	case scrape.BadTarget:
		return "give a URL, host:port, a file, or - for stdin"
	case scrape.Redirect:
		return "scrape the final address directly"
	case scrape.NoFile:
		return "check the path, or give host:port to scrape a server"
	}
	return "check the target: inferscope reads a URL, host:port, a saved scrape or - for stdin"
}

// writeError is the report (or a watch frame) that could not be written to
// stdout: one line with the operating system's reason, not the chain of
// wrappers around it.
func writeError(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	return usagef("check where stdout goes: a full disk, or a pipe whose reader has gone",
		"cannot write the report to stdout: %v", err)
}

// oneLine keeps a message on one printable line, no word of it longer than
// a value the user gave is repeated: it may quote what a server sent, or
// what the user typed.
func oneLine(s string) string { return strings.TrimRight(clipWords(termsafe.Line(s, 0)), ".") }
