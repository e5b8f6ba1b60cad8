package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/units"
)

// A frames watch redraws something read whole at each refresh, such as
// the fleet table, with the single-server watch's model and keys: q quits,
// space pauses, + and - change the interval, the arrows and PgUp/PgDn
// scroll, a status line says when and "every N s", a key line ends it.
// Piped, each refresh is one complete frame (or one JSON document per
// line). What a frame shows is the caller's (FramesConfig.Refresh).

// FramesHelp is the key line at the foot of a frames watch.
const FramesHelp = "q quit · space pause · +/- interval · ↑↓ PgUp PgDn scroll"

// Frame is one refresh's result.
type Frame struct {
	// Text draws the frame at a width in cells (the terminal's, or
	// --width): the table lays itself out for it.
	Text func(width int) string
	// Fixed is how many of its first lines stay on screen while the rest
	// scrolls: a title and a table's header; FixedAt, where set, says it
	// at a width (a title that wraps).
	Fixed   int
	FixedAt func(width int) int
	// JSON is the frame as one JSON document, for the JSON mode.
	JSON []byte
	// Trip, when set, ends the watch after this frame is shown (a note
	// at --fail-on's severity): Run returns it.
	Trip error
}

// FramesConfig is one frames watch.
type FramesConfig struct {
	Interval time.Duration
	JSON     bool // one compact JSON document per line per refresh
	Width    int  // layout width; 0 follows the terminal
	// Title is the terminal window's title.
	Title string
	// Refresh reads once and returns the frame; an error is a failed
	// refresh, shown, and the next one tries again. Its context ends with
	// the watch.
	Refresh func(ctx context.Context) (Frame, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// sleep waits d or until ctx ends (tests advance a fake clock).
	sleep func(ctx context.Context, d time.Duration) error
}

func (c *FramesConfig) defaults() error {
	if c.Refresh == nil {
		return errors.New("watch: Refresh is required")
	}
	if c.Interval <= 0 {
		return fmt.Errorf("watch: the interval must be positive, not %s", c.Interval)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return nil
}

// RunFrames watches until ctx ends or the user quits the terminal view. It
// returns nil then; [ErrInterrupted] for Ctrl-C in the terminal view; the
// Trip of the frame that set one; a [*WriteError] when a frame cannot be
// written. A failed refresh is shown and retried, never returned, but for
// the first: a watch that cannot read once has nothing to show.
func RunFrames(ctx context.Context, ios *iostreams.IO, c FramesConfig) error {
	if err := c.defaults(); err != nil {
		return err
	}
	if ios.FullScreen() && !c.JSON {
		return runFramesTerminal(ctx, ios, c)
	}
	return runFramesPiped(ctx, ios, c)
}

// runFramesPiped writes one frame per refresh, each in one Write: text
// frames under a timestamp line, or compact JSON lines. A failed refresh
// is said on stderr.
func runFramesPiped(ctx context.Context, ios *iostreams.IO, c FramesConfig) error {
	width := c.Width
	if width <= 0 {
		width = ios.LayoutWidth()
	}
	interval := c.Interval
	for n := 0; ; n++ {
		start := c.Now()
		f, err := c.Refresh(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && n == 0:
			return err
		case err != nil:
			fmt.Fprintf(ios.Err, "inferscope: refresh at %s failed: %s; retrying in %s\n", start.Format("15:04:05"), oneLine(err.Error()), units.Duration(interval))
		default:
			var b bytes.Buffer
			if c.JSON {
				b.Write(bytes.TrimRight(f.JSON, "\n"))
				b.WriteByte('\n')
			} else {
				b.WriteString(stamp(c.Now(), interval) + strings.TrimRight(f.Text(width), "\n") + "\n")
				b.WriteByte('\n')
			}
			if err := emit(ios.Out, b.Bytes()); err != nil {
				return err
			}
			if f.Trip != nil {
				return f.Trip
			}
		}
		if c.sleep(ctx, interval-c.Now().Sub(start)) != nil {
			return nil
		}
	}
}

// oneLine keeps an error's first line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// refreshedMsg is one refresh's result, folded in by Update.
type refreshedMsg struct {
	frame Frame
	at    time.Time
	took  time.Duration
	err   error
}

// framesModel is the frames watch's terminal view. Like the single-server
// view it does no I/O: refreshes run in tea.Cmds and come back as
// refreshedMsg.
type framesModel struct {
	screen
	cfg FramesConfig

	interval time.Duration
	frame    *Frame    // the last good one
	at       time.Time // when it was read
	failed   error     // the last refresh's failure, until one works
	// tripped is the frame's Trip that ends the view.
	tripped error
	// drawn is frame's text at drawnWidth, in lines: the view is drawn
	// after every message (a key, a tick), the frame once a refresh.
	drawn      []string
	drawnOf    *Frame
	drawnWidth int
}

func newFramesModel(ctx context.Context, c FramesConfig) *framesModel {
	return &framesModel{screen: screen{ctx: ctx, now: c.Now()}, cfg: c, interval: c.Interval}
}

// Init starts the first refresh.
func (m *framesModel) Init() tea.Cmd {
	m.inflight = true
	return m.refresh()
}

func (m *framesModel) refresh() tea.Cmd {
	ctx, c := m.ctx, m.cfg
	return func() tea.Msg {
		start := c.Now()
		f, err := c.Refresh(ctx)
		at := c.Now()
		return refreshedMsg{frame: f, at: at, took: at.Sub(start), err: err}
	}
}

// Update folds a message into the state.
func (m *framesModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.now = m.cfg.Now()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		return m, m.key(msg.String())
	case refreshedMsg:
		m.inflight = false
		if m.ctx.Err() != nil {
			return m, nil
		}
		if msg.err != nil {
			m.failed = msg.err
		} else {
			m.frame, m.at, m.failed = &msg.frame, msg.at, nil
			if msg.frame.Trip != nil {
				m.tripped = msg.frame.Trip
				return m, tea.Quit
			}
		}
		if !m.paused {
			return m, m.tick(m.interval - msg.took)
		}
	case tickMsg:
		if m.due(msg) {
			return m, m.refresh()
		}
	}
	return m, nil
}

// key acts on one key press: the single-server view's keys, but h and r
// (a table has no distributions, and nothing accumulates to reset).
func (m *framesModel) key(k string) tea.Cmd {
	if k == "space" {
		if m.togglePause() {
			return m.refresh()
		}
		return nil
	}
	cmd, _ := m.keys(k, m.interval, func(d time.Duration) { m.interval = d })
	return cmd
}

// scroll moves the first line shown, for a scroll key (both terminal
// views' keys); false for any other key.
func scroll(top *int, page int, k string) bool {
	switch k {
	case "up", "k":
		*top--
	case "down", "j":
		*top++
	case "pgup", "b":
		*top -= page
	case "pgdown", "f":
		*top += page
	case "home", "g":
		*top = 0
	case "end", "G":
		*top = 1 << 30 // clamped to the last page when drawn
	default:
		return false
	}
	return true
}

// paged is a screenful of lines from *top, clamped so that the last page
// is full, and what the status line says of it ("lines 3–24 of 40"); all
// of them and "" where they fit in room (or the height is not known).
func paged(lines []string, top *int, room int, known bool) ([]string, string) {
	if !known || len(lines) <= room || room <= 0 {
		*top = 0
		return lines, ""
	}
	*top = min(max(*top, 0), len(lines)-room)
	return lines[*top : *top+room], fmt.Sprintf(" · lines %d–%d of %d", *top+1, *top+room, len(lines))
}

// View draws the frame: the status line, the frame, the key line.
func (m *framesModel) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.cfg.Title
	return v
}

func (m *framesModel) render() string {
	width := m.layoutWidth(m.cfg.Width)
	status := fmt.Sprintf("%s · every %s", m.now.Format("15:04:05"), units.Duration(m.interval))
	switch {
	case m.paused:
		status += " · paused"
	case m.inflight:
		status += " · refreshing…"
	}
	var lines []string
	switch {
	case m.frame != nil:
		lines = m.lines(width)
	case m.failed == nil:
		lines = []string{"reading…"}
	}
	if m.failed != nil {
		// The last good frame stays; the failure is said above it.
		status += " · refresh failed: " + oneLine(m.failed.Error())
	} else if m.frame != nil && m.now.Sub(m.at) >= time.Second {
		status += " · read at " + m.at.Format("15:04:05")
	}
	var fixed []string
	if m.frame != nil {
		keep := m.frame.Fixed
		if m.frame.FixedAt != nil {
			keep = m.frame.FixedAt(width)
		}
		n := min(keep, len(lines))
		fixed, lines = lines[:n], lines[n:]
	}
	lines, where := paged(lines, &m.top, m.page()-len(fixed), m.height > 0)
	status += where
	out := append(append([]string{cut(status, width)}, fixed...), lines...)
	return strings.Join(append(out, cut(FramesHelp, width)), "\n")
}

// lines are the frame's text at width, in lines, drawn again only for a
// new frame or width. The caller slices them, never writes into them.
func (m *framesModel) lines(width int) []string {
	if m.drawnOf != m.frame || m.drawnWidth != width {
		m.drawn = strings.Split(strings.TrimRight(m.frame.Text(width), "\n"), "\n")
		m.drawnOf, m.drawnWidth = m.frame, width
	}
	return m.drawn
}

// runFramesTerminal runs the full-screen view until q, Ctrl-C or ctx ends.
func runFramesTerminal(ctx context.Context, ios *iostreams.IO, c FramesConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newFramesModel(ctx, c)
	if ended, err := runProgram(ctx, ios, m); ended || m.tripped == nil {
		return err
	}
	// The view is gone with the alternate screen: leave the frame that
	// tripped --fail-on where the user can read it.
	if _, err := fmt.Fprintln(ios.Out, strings.TrimRight(m.frame.Text(m.layoutWidth(m.cfg.Width)), "\n")); err != nil {
		return &WriteError{err}
	}
	return m.tripped
}
