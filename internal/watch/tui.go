package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// steps are the intervals the + and - keys move between, from MinInterval.
var steps = []time.Duration{
	MinInterval, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
}

// frameRate is the terminal renderer's frames per second at most.
const frameRate = 10

// fallbackHeight is the screen height when the output is not a terminal.
const fallbackHeight = 50

// Help is the key line at the foot of the terminal view.
const Help = "q quit · h distributions · l latency · u units · space pause · +/- interval · r reset"

// scrapedMsg is one scrape's result, folded in by Update.
type scrapedMsg struct {
	snap *snapshot.Snapshot
	at   time.Time
	took time.Duration
	err  error
}

// tickMsg starts the next scrape unless gen is stale (the interval changed
// or the view was paused since it was scheduled).
type tickMsg struct{ gen int }

// model is the terminal view. It does no I/O: scrapes run in tea.Cmds and
// come back as scrapedMsg; View draws with the same renderer as the piped
// mode.
type model struct {
	screen
	cfg   Config
	s     *session
	color bool
	// tripped is set when --fail-on tripped: the view quits, and the
	// frame that tripped it is written to the normal screen.
	tripped *TrippedError
}

func newModel(ctx context.Context, c Config, color bool) *model {
	return &model{screen: screen{ctx: ctx, now: c.Now()}, cfg: c, s: newSession(c), color: color}
}

// Init starts the first scrape.
func (m *model) Init() tea.Cmd {
	m.inflight = true
	return m.fetch()
}

func (m *model) fetch() tea.Cmd {
	ctx, c := m.ctx, m.cfg
	return func() tea.Msg {
		snap, at, took, err := scrape(ctx, c)
		return scrapedMsg{snap: snap, at: at, took: took, err: err}
	}
}

// Update folds a message into the state.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.now = m.cfg.Now()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		return m, m.key(msg.String())
	case scrapedMsg:
		m.inflight = false
		if m.ctx.Err() != nil {
			return m, nil
		}
		if msg.err != nil {
			m.s.fail(msg.err, msg.took)
		} else {
			m.s.observe(msg.snap, msg.at, msg.took)
			if m.tripped = tripped(m.s.report(m.now), m.cfg.FailOn, msg.at); m.tripped != nil {
				return m, tea.Quit
			}
		}
		if !m.paused {
			return m, m.tick(m.s.interval - msg.took)
		}
	case tickMsg:
		if m.due(msg) {
			return m, m.fetch()
		}
	}
	return m, nil
}

// key acts on one key press. One function: the key map, one case per key.
func (m *model) key(k string) tea.Cmd {
	switch k {
	case "h":
		m.s.toggleHist()
		m.top = 0
	case "l":
		m.s.toggleHeat()
	case "u":
		m.s.toggleUnits()
	case "r":
		m.s.reset()
	case "space":
		if m.togglePause() {
			return m.fetch()
		}
		if m.paused {
			m.s.pause()
		}
	default:
		cmd, _ := m.keys(k, m.s.interval, m.s.setInterval)
		return cmd
	}
	return nil
}

// stepUp is the next longer step, stepDown the next shorter; an interval
// between steps moves to the neighbouring one.
func stepUp(d time.Duration) time.Duration {
	i, _ := slices.BinarySearch(steps, d+1)
	if i < len(steps) {
		return steps[i]
	}
	return d
}

func stepDown(d time.Duration) time.Duration {
	i, _ := slices.BinarySearch(steps, d)
	if i > 0 {
		return steps[i-1]
	}
	return d
}

// View draws the frame: a status line, the report, the key line, cut to
// the terminal's height.
func (m *model) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	v.WindowTitle = "inferscope --watch"
	return v
}

// renderOptions is the layout of the view at its current size.
func (m *model) renderOptions() render.Options {
	return render.Options{Width: m.layoutWidth(m.cfg.Width), Columns: m.cfg.Columns, Color: m.color, Glyphs: m.cfg.Glyphs}
}

func (m *model) frame() string {
	o := m.renderOptions()
	width := o.Width
	var b bytes.Buffer
	if err := m.cfg.Render(&b, ForText(m.s.report(m.now)), o); err != nil {
		fmt.Fprintf(&b, "cannot draw the report: %v\n", err)
	}
	status := fmt.Sprintf("%s · every %s", m.now.Format("15:04:05"), units.Duration(m.s.interval))
	switch {
	case m.paused:
		status += " · paused"
	case m.inflight:
		status += " · scraping…"
	}
	// Leave the status and key lines and show one screenful from top; the
	// status says where it is.
	lines, where := paged(strings.Split(strings.TrimRight(b.String(), "\n"), "\n"), &m.top, m.page(), m.height > 0)
	status += where
	return strings.Join(append(append([]string{cut(status, width)}, lines...), cut(Help, width)), "\n")
}

// cut shortens a plain line to width cells (the status and help lines are
// ASCII but for · and …, one cell each).
func cut(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	if width <= 1 {
		return string(r[:max(width, 0)])
	}
	return string(r[:width-1]) + "…"
}

// runTerminal runs the full-screen view until q, Ctrl-C or ctx ends.
func runTerminal(ctx context.Context, ios *iostreams.IO, c Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, c, ios.ColorEnabled(c.NoColor))
	if ended, err := runProgram(ctx, ios, m); ended || m.tripped == nil {
		return err
	}
	// The full-screen view is gone with the alternate screen: leave the
	// frame that tripped --fail-on where the user can read it.
	var buf bytes.Buffer
	if err := writeFrame(ios.Out, &buf, m.s.report(m.now), m.now, m.s.interval, c, m.renderOptions()); err != nil {
		return err
	}
	return m.tripped
}

// runProgram runs a terminal view (both: the single server's and redrawn
// frames'). ended is true where it ended otherwise than by the view's own
// quitting (Ctrl-C, ctx, a failure), with the error to return: nil where
// ctx ended (the caller knows why).
func runProgram(ctx context.Context, ios *iostreams.IO, m tea.Model) (ended bool, err error) {
	// The view changes about once an interval, so a low frame rate loses
	// nothing and saves the renderer waking 60 times a second.
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(ios.Out), tea.WithFPS(frameRate)}
	if _, ok := ios.In.(*os.File); !ok && ios.In != nil {
		// Not the process's stdin (a test): read keys from it. For a real
		// stdin Bubble Tea opens the terminal itself when stdin is a pipe.
		opts = append(opts, tea.WithInput(ios.In))
	}
	if _, ok := ios.Out.(*os.File); !ok {
		// No terminal to ask for its size (a test): a fixed one.
		opts = append(opts, tea.WithWindowSize(ios.LayoutWidth(), fallbackHeight))
	}
	_, err = tea.NewProgram(m, opts...).Run()
	switch {
	case errors.Is(err, tea.ErrInterrupted):
		// Ctrl-C as a key, or SIGINT from outside the terminal.
		return true, ErrInterrupted
	case errors.Is(err, tea.ErrProgramKilled):
		return true, nil
	case err != nil:
		return true, fmt.Errorf("watch: terminal view: %w", err)
	}
	return false, nil
}
