// Package watch is inferscope's live view: it re-scrapes a server on an
// interval, keeps the scrapes in a rates.History, and adds to the one-shot
// report a table of wall-clock rates, ratios and latency percentiles over
// staggered windows (package rates says how each figure is computed and
// how resets and restarts are handled).
//
// # Windows
//
// --watch-windows is read by [ParseWindows]; a window not longer than the refresh
// interval is not shown ([Effective]). The table's header labels are padded
// to [CellWidth] when drawn ([ForText]), so that columns keep their width
// from one frame to the next; JSON keeps the labels as they are.
//
// # Loops
//
// [Run] draws on a terminal with Bubble Tea (full screen, keys q, h, l, u,
// space, + and -, r) and, when stdout is not a terminal (or is TERM=dumb), prints
// one complete frame per refresh, or with JSON one object per line. A failed
// scrape is a frame that says so, never an exit. With [Config.FailOn] the
// watch ends at the first refresh whose report holds a note that severe,
// after writing that frame (a canary).
//
// # Trends and breakdowns
//
// Beside each rates row, and the KV cache and queue rows, a frame draws
// that figure interval by interval over the session (rates.History.Trends:
// the last 60 refreshes, a failed scrape, a pause or a restart a gap), and
// with l the latency histograms per interval as heat strips; a new
// interval starts them over. Each unit of a breakdown (llama.cpp's slots,
// vLLM's engines, SGLang's ranks) gets its figures over the last interval
// (rates.Breakdown); u shows their tables, folded otherwise. JSON lines
// carry the series behind every picture (trends, heat, breakdowns).
//
// # Notes
//
// A frame's notes on what happened (preemptions, errors, offload
// thrashing, a low draft acceptance) judge the longest window shown, not
// the server's lifetime (rates.History.Judge): one that happened only
// before it is information, and trips no --fail-on. Notes on the state now
// (KV pressure, the queue) judge the last scrape, as the one-shot does.
package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/units"
)

// MinInterval is the shortest refresh interval a user may ask for: the
// floor of --watch (the command line refuses less) and of the view's - key.
// Shorter would only load the server (some render /metrics on their
// generation loop) and, piped, write frames faster than anyone reads them.
const MinInterval = 200 * time.Millisecond

// Config is one watch session's settings and the work it is given.
type Config struct {
	Interval time.Duration
	// Windows are the configured windows (see [ParseWindows]); those not
	// longer than the interval are not shown.
	Windows []time.Duration
	JSON    bool // one compact JSON object per line per refresh
	Hist    bool // start with the distributions shown
	Heat    bool // start with the latency heat strips shown
	// Breakdown starts with the breakdowns' tables (each slot, engine or
	// rank) shown; folded, their sections show only their summary rows.
	Breakdown bool
	// Glyphs draws the pictures: render.Options.Glyphs.
	Glyphs  spark.Glyphs
	Columns int // render.Options.Columns
	Width   int // layout width; 0 follows the terminal
	NoColor bool
	// FailOn ends the watch with a [*TrippedError] at the first good
	// scrape whose report has a note of this severity or worse ("" never).
	FailOn report.Severity

	// Fetch scrapes the target into a canonical snapshot.
	Fetch func(context.Context) (*snapshot.Snapshot, error)
	// Build makes the one-shot report of a scrape.
	Build func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Render draws a text frame; nil means render.Text.
	Render func(w io.Writer, r *report.Report, o render.Options) error

	// sleep waits d or until ctx ends (tests advance a fake clock).
	sleep func(ctx context.Context, d time.Duration) error
}

func (c *Config) defaults() error {
	if c.Fetch == nil || c.Build == nil {
		return errors.New("watch: Fetch and Build are required")
	}
	if c.Interval <= 0 {
		return fmt.Errorf("watch: the interval must be positive, not %s", c.Interval)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Render == nil {
		c.Render = render.Text
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrInterrupted is returned by [Run] when the user pressed Ctrl-C in the
// terminal view (which reads it as a key, not a signal).
var ErrInterrupted = errors.New("interrupted")

// TrippedError is returned by [Run] when a refresh's report holds a note of
// [Config.FailOn]'s severity or worse. The frame that tripped it has been
// written (in the terminal view, to the normal screen once the view closed).
type TrippedError struct {
	FailOn report.Severity
	At     time.Time   // when the tripping scrape was taken
	Note   report.Note // the first note that severe
}

func (e *TrippedError) Error() string {
	return fmt.Sprintf("a %s note fired (--fail-on %s): %s", e.Note.Severity, e.FailOn, e.Note.ID)
}

// WriteError is a frame that could not be written to the output (a full
// disk, a closed pipe): the watch cannot go on.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "watch: writing a frame: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// tripped returns the error that ends a watch when r has a note at least
// as severe as failOn, else nil.
func tripped(r *report.Report, failOn report.Severity, at time.Time) *TrippedError {
	if failOn == "" {
		return nil
	}
	for _, n := range r.Notes {
		if n.Severity.Rank() >= failOn.Rank() {
			return &TrippedError{FailOn: failOn, At: at, Note: n}
		}
	}
	return nil
}

// Run watches until ctx ends (or the user quits the terminal view). It
// returns nil then; [ErrInterrupted] when the user pressed Ctrl-C in the
// terminal view; a [*TrippedError] when [Config.FailOn] tripped; a
// [*WriteError] when a frame cannot be written; any other error only for a
// bad Config or a terminal the view cannot run on. Scrape failures are
// shown, not returned.
func Run(ctx context.Context, ios *iostreams.IO, c Config) error {
	if err := c.defaults(); err != nil {
		return err
	}
	if ios.FullScreen() && !c.JSON {
		return runTerminal(ctx, ios, c)
	}
	return runPiped(ctx, ios, c)
}

// scrape runs one Fetch, timing it on the session clock.
func scrape(ctx context.Context, c Config) (snap *snapshot.Snapshot, at time.Time, took time.Duration, err error) {
	start := c.Now()
	snap, err = c.Fetch(ctx)
	at = c.Now()
	took = at.Sub(start)
	if err == nil && snap == nil {
		err = errors.New("the scrape returned nothing")
	}
	return snap, at, took, err
}

// runPiped prints one complete frame per refresh: text frames that start
// with a timestamp line and hold no cursor movement, or compact JSON lines.
// Each frame goes out in one Write, so a line-buffered reader never sees
// half of one.
func runPiped(ctx context.Context, ios *iostreams.IO, c Config) error {
	s := newSession(c)
	opts := render.Options{Width: c.Width, Columns: c.Columns, Color: ios.ColorEnabled(c.NoColor), Glyphs: c.Glyphs}
	if opts.Width <= 0 {
		opts.Width = ios.LayoutWidth()
	}
	var buf bytes.Buffer
	for {
		snap, at, took, scrapeErr := scrape(ctx, c)
		if ctx.Err() != nil {
			return nil // interrupted mid-scrape: not a failure to show
		}
		if scrapeErr != nil {
			s.fail(scrapeErr, took)
		} else {
			s.observe(snap, at, took)
		}
		now := c.Now()
		r := s.report(now)
		if err := writeFrame(ios.Out, &buf, r, now, s.interval, c, opts); err != nil {
			return err
		}
		// Only a good scrape can trip --fail-on: a failure frame repeats
		// the report that was already checked.
		if t := tripped(r, c.FailOn, at); scrapeErr == nil && t != nil {
			return t
		}
		// The next scrape starts an interval after this one started, or
		// at once when the scrape itself took longer.
		if c.sleep(ctx, c.Interval-took) != nil {
			return nil
		}
	}
}

// writeFrame renders one frame of the piped mode into buf and writes it to
// out in one Write.
func writeFrame(out io.Writer, buf *bytes.Buffer, r *report.Report, now time.Time, interval time.Duration, c Config, o render.Options) error {
	buf.Reset()
	if err := pipedFrame(buf, r, now, interval, c, o); err != nil {
		return err
	}
	return emit(out, buf.Bytes())
}

// emit writes a piped frame to out in one Write, and flushes out where it
// buffers.
func emit(out io.Writer, b []byte) error {
	if _, err := out.Write(b); err != nil {
		return &WriteError{err}
	}
	if f, ok := out.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return &WriteError{err}
		}
	}
	return nil
}

// stamp is the line over each piped text frame.
func stamp(now time.Time, interval time.Duration) string {
	return "=== " + now.Format("2006-01-02 15:04:05 MST") + " · every " + units.Duration(interval) + "\n"
}

// pipedFrame writes one frame of the piped mode into w.
func pipedFrame(w *bytes.Buffer, r *report.Report, now time.Time, interval time.Duration, c Config, o render.Options) error {
	if c.JSON {
		return writeJSON(w, r)
	}
	w.WriteString(stamp(now, interval))
	if err := c.Render(w, ForText(r), o); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	w.WriteByte('\n')
	return nil
}

// writeJSON writes r as one compact line, its rates the report's last
// field: an empty object before the first good scrape, since every line of
// the stream has one.
func writeJSON(w *bytes.Buffer, r *report.Report) error {
	if r.Rates == nil {
		cp := *r
		cp.Rates = map[string]map[string]*float64{}
		r = &cp
	}
	if err := render.JSONWith(w, r, render.JSONOptions{Compact: true}); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}
