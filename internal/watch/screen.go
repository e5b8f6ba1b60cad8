package watch

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
)

// screen is what both terminal views (the single server's, model; and
// redrawn frames', framesModel) keep of the terminal and their refresh
// loop.
type screen struct {
	ctx           context.Context
	width, height int
	now           time.Time // the clock at the last message, for the frame
	paused        bool
	inflight      bool // a scrape or refresh is under way
	// gen is the generation of the tick scheduled: a tick of an older one
	// (scheduled before a pause or an interval change) is dropped.
	gen int
	// top is the first line shown: the view scrolls when it is taller
	// than the screen (distributions usually are).
	top int
}

func (v *screen) tick(after time.Duration) tea.Cmd {
	gen := v.gen
	return tea.Tick(max(after, 0), func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// due says whether a tick starts a refresh now (it is of the generation
// scheduled last, the view runs and none is under way), which is then
// marked under way.
func (v *screen) due(t tickMsg) bool {
	if t.gen != v.gen || v.paused || v.inflight {
		return false
	}
	v.inflight = true
	return true
}

// togglePause pauses or resumes; true when resuming must start a refresh
// now (none is under way), which is then marked under way.
func (v *screen) togglePause() bool {
	v.paused = !v.paused
	v.gen++
	if v.paused || v.inflight {
		return false
	}
	v.inflight = true
	return true
}

// retimed follows an interval change to d: the tick already scheduled was
// for the old one; the next comes after d unless paused or a refresh is
// under way (its end schedules one).
func (v *screen) retimed(d time.Duration) tea.Cmd {
	v.gen++
	if v.paused || v.inflight {
		return nil
	}
	return v.tick(d)
}

// page is how many lines fit between the status and key lines.
func (v *screen) page() int {
	if v.height <= 0 {
		return fallbackHeight
	}
	return max(v.height-2, 1)
}

// layoutWidth is the width a view is drawn at: fixed (--width) when set,
// else the terminal's, 80 until the terminal says its size.
func (v *screen) layoutWidth(fixed int) int {
	switch {
	case fixed > 0:
		return fixed
	case v.width > 0:
		return v.width
	}
	return 80
}

// keys acts on the keys both terminal views share: q, Ctrl-C, the
// interval's steps (set gives the view the new interval) and scrolling.
// ok is false for any other key.
func (v *screen) keys(k string, interval time.Duration, set func(time.Duration)) (cmd tea.Cmd, ok bool) {
	switch k {
	case "q":
		return tea.Quit, true
	case "ctrl+c":
		// Read as a key in raw mode; ends the watch as the signal would.
		return tea.Interrupt, true
	case "+", "=", "-", "_":
		d := stepUp(interval)
		if k == "-" || k == "_" {
			d = stepDown(interval)
		}
		if d == interval {
			return nil, true
		}
		set(d)
		return v.retimed(d), true
	}
	return nil, scroll(&v.top, v.page(), k)
}
