package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/internal/units"
)

// ProgressLine draws a run's state on one terminal line, redrawn in place
// (a carriage return, the line, the rest cleared): sent, in flight, done,
// errors, the current request and token rates, elapsed and left, and the
// server's queue and KV usage. It writes nothing once cleared.
type ProgressLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	drawn bool
	done  bool
}

// NewProgressLine draws on w, at most width cells wide.
func NewProgressLine(w io.Writer, width int) *ProgressLine {
	return &ProgressLine{w: w, width: width}
}

// Draw redraws the line for s.
func (p *ProgressLine) Draw(s Status) {
	if p == nil {
		return
	}
	p.Say(progressText(s))
}

// Say redraws the line as line (a probe's step).
func (p *ProgressLine) Say(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if p.width > 1 && len([]rune(line)) > p.width-1 {
		line = string([]rune(line)[:p.width-2]) + "…"
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// Clear removes the line and stops drawing.
func (p *ProgressLine) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.done = true
}

// progressText is the line's text for s.
func progressText(s Status) string {
	var b strings.Builder
	if s.Warmup {
		b.WriteString("warm-up · ")
	}
	fmt.Fprintf(&b, "sent %s · in flight %d · done %s", units.Integer(float64(s.Sent)), s.InFlight, units.Integer(float64(s.Done)))
	if s.Errors > 0 {
		fmt.Fprintf(&b, " · errors %s", units.Integer(float64(s.Errors)))
	}
	fmt.Fprintf(&b, " · %s req/s · %s tok/s · %s", units.Count(s.ReqRate), units.Count(s.TokRate), clock(s.Elapsed))
	if left, ok := s.left(); ok {
		b.WriteString(" · " + clock(left) + " left")
	}
	if !math.IsNaN(s.Waiting) {
		fmt.Fprintf(&b, " · server: %s waiting", units.Integer(s.Waiting))
	}
	if !math.IsNaN(s.KV) {
		b.WriteString(", KV " + units.Percent(s.KV))
	}
	return b.String()
}

// left is what remains of the measured part: by time, or by requests at
// the rate they are being done.
func (s Status) left() (time.Duration, bool) {
	switch {
	case s.Warmup:
		return 0, false
	case s.Duration > 0:
		return max(s.Duration-s.measured(), 0), true
	case s.Requests > 0 && s.ReqRate > 0:
		rest := s.Requests - s.MeasuredDone
		return time.Duration(float64(max(rest, 0)) / s.ReqRate * float64(time.Second)), true
	}
	return 0, false
}

// measured is the time since the measured part began, as well as the
// progress knows it (the elapsed time: a warm-up's end is not in it).
func (s Status) measured() time.Duration { return s.Elapsed - s.WarmupElapsed }

// clock writes a duration as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}
