package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
)

// table is a frame that lays itself out for a width, as the fleet table
// does: wide, every column; narrow, the notes column kept and others left
// out.
func table(rows int) func(width int) string {
	return func(width int) string {
		wide := width >= 100
		var b strings.Builder
		if wide {
			b.WriteString("instance          state  KV     req/s  gen tok/s  TTFT p99  notes\n")
		} else {
			b.WriteString("instance          state  req/s  TTFT p99  notes\n")
		}
		for i := range rows {
			notes := ""
			if i == 2 {
				notes = "preemptions"
			}
			if wide {
				fmt.Fprintf(&b, "vllm/10.0.0.%-5d  up     %2d%%    %5.1f  %9d  %5d ms  %s\n", i, 40+i, 1.5*float64(i+1), 100*(i+1), 200+i, notes)
			} else {
				fmt.Fprintf(&b, "vllm/10.0.0.%-5d  up     %5.1f  %5d ms  %s\n", i, 1.5*float64(i+1), 200+i, notes)
			}
		}
		return b.String()
	}
}

// redrawModel is a frames view on a fake clock whose Refresh counts calls,
// failing where fail says.
func redrawModel(t *testing.T, rows int, fail func(n int) error) (*framesModel, *clock, *int) {
	t.Helper()
	clk := &clock{t: t0}
	n := 0
	c := FramesConfig{Interval: 30 * time.Second, Title: "inferscope fleet --watch", Now: clk.Now,
		Refresh: func(context.Context) (Frame, error) {
			n++
			if fail != nil {
				if err := fail(n); err != nil {
					return Frame{}, err
				}
			}
			return Frame{Text: table(rows), Fixed: 1}, nil
		}}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	return newFramesModel(context.Background(), c), clk, &n
}

// redrawStep runs a command as the program would and folds its message in.
func redrawStep(m *framesModel, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	_, next := m.Update(cmd())
	return next
}

// The fleet's watch as the single-server watch: the status line says the
// time and "every 30s", the key line ends the screen, the frame between
// them at the terminal's width (at 80 cells the notes column is kept),
// scrolled when taller than the screen.
func TestRedrawFrames(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		rows          int
	}{
		{"80x24", 80, 24, 30},
		{"160x50", 160, 50, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, _ := redrawModel(t, tc.rows, nil)
			m.Update(tea.WindowSizeMsg{Width: tc.width, Height: tc.height})
			cmd := m.Init()
			first := m.View().Content
			if !strings.Contains(first, "refreshing…") || !strings.Contains(first, "reading…") {
				t.Errorf("before the first refresh:\n%s", first)
			}
			redrawStep(m, cmd)
			clk.advance(time.Second)
			m.Update(press("j")) // one line down
			frame := m.View().Content
			lines := strings.Split(frame, "\n")
			if len(lines) > tc.height {
				t.Errorf("%d lines on a screen of %d", len(lines), tc.height)
			}
			if !strings.Contains(lines[0], "every 30s") || lines[len(lines)-1] != cut(FramesHelp, tc.width) || !strings.Contains(frame, "notes") {
				t.Errorf("frame:\n%s", frame)
			}
			golden.Check(t, "redraw-"+tc.name+".txt", frame+"\n")
		})
	}
}

// The keys: space pauses and resumes (a refresh at once), + and - step
// the interval, q quits; a failed refresh keeps the last frame and says
// why in the status line.
func TestRedrawKeys(t *testing.T) {
	m, clk, n := redrawModel(t, 3, func(n int) error {
		if n == 2 {
			return errors.New("the store took longer than --timeout 30s")
		}
		return nil
	})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	tick := redrawStep(m, m.Init())
	if tick == nil || *n != 1 {
		t.Fatalf("after the first refresh: %d refreshes, tick %v", *n, tick != nil)
	}
	clk.advance(30 * time.Second)
	_, refresh := m.Update(tickMsg{gen: m.gen}) // the tick (not slept here)
	redrawStep(m, refresh)                      // the failed refresh
	v := m.View().Content
	if *n != 2 || !strings.Contains(v, "refresh failed: the store took longer") || !strings.Contains(v, "vllm/10.0.0.2") {
		t.Errorf("after a failed refresh (%d):\n%s", *n, v)
	}
	m.Update(press("space"))
	if !strings.Contains(m.View().Content, "paused") {
		t.Errorf("space did not pause:\n%s", m.View().Content)
	}
	if cmd := m.key("space"); cmd == nil || m.paused {
		t.Error("space did not resume with a refresh")
	} else {
		redrawStep(m, cmd)
	}
	if *n != 3 || strings.Contains(m.View().Content, "failed") {
		t.Errorf("after resuming: %d refreshes\n%s", *n, m.View().Content)
	}
	m.key("+")
	if m.interval != time.Minute || !strings.Contains(m.View().Content, "every 1m") {
		t.Errorf("+: every %s", m.interval)
	}
	m.key("-")
	m.key("-")
	if m.interval != 15*time.Second {
		t.Errorf("- twice: every %s", m.interval)
	}
	if cmd := m.key("q"); cmd == nil {
		t.Error("q does not quit")
	}
}

// A frame that trips --fail-on ends the view; piped, each refresh is one
// frame under its timestamp, a failure said on stderr, and the trip ends
// the watch after its frame.
func TestRedrawPiped(t *testing.T) {
	clk := &clock{t: t0}
	n := 0
	tripped := errors.New("a warn note fired (--fail-on warn): preemptions")
	io, out, errb := iostreams.Test("", false, 0)
	err := RunFrames(context.Background(), io, FramesConfig{Interval: 30 * time.Second, Width: 80, Now: clk.Now, sleep: clk.sleep,
		Refresh: func(context.Context) (Frame, error) {
			n++
			switch n {
			case 2:
				return Frame{}, errors.New("the store is down\nsecond line")
			case 3:
				return Frame{Text: table(2), Trip: tripped}, nil
			}
			return Frame{Text: table(2)}, nil
		}})
	if !errors.Is(err, tripped) || n != 3 {
		t.Fatalf("RunFrames: %v after %d refreshes", err, n)
	}
	if got := strings.Count(out.String(), "=== "); got != 2 || !strings.Contains(out.String(), "every 30s") {
		t.Errorf("%d frames:\n%s", got, out)
	}
	if !strings.Contains(errb.String(), "failed: the store is down; retrying in 30s") || strings.Contains(errb.String(), "second line") {
		t.Errorf("stderr: %s", errb)
	}
	// The first refresh must work: nothing to show otherwise.
	io, _, _ = iostreams.Test("", false, 0)
	down := errors.New("cannot reach the store")
	if err := RunFrames(context.Background(), io, FramesConfig{Interval: time.Second, Refresh: func(context.Context) (Frame, error) { return Frame{}, down }}); !errors.Is(err, down) {
		t.Errorf("a first failure: %v", err)
	}
}

// A frame's fixed lines may depend on its width (FixedAt): the fleet's
// line of what every row shares wraps on a narrow screen, and stays on
// it with the table's header while the rows scroll.
func TestRedrawFixedAtWidth(t *testing.T) {
	text := func(width int) string {
		var b strings.Builder
		if width < 100 {
			b.WriteString("instances serviceMonitor/llm/…-engine/0/10.0.0.… (job/instance;\neach row names the …)\n")
		} else {
			b.WriteString("instances serviceMonitor/llm/…-engine/0/10.0.0.… (job/instance; each row names the …)\n")
		}
		b.WriteString("instance  state\n")
		for i := range 40 {
			fmt.Fprintf(&b, "vllm/%d    up\n", i)
		}
		return b.String()
	}
	c := FramesConfig{Interval: 30 * time.Second, Title: "t", Now: (&clock{t: t0}).Now,
		Refresh: func(context.Context) (Frame, error) {
			return Frame{Text: text, FixedAt: func(w int) int {
				if w < 100 {
					return 3
				}
				return 2
			}}, nil
		}}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 120} {
		m := newFramesModel(context.Background(), c)
		m.Update(tea.WindowSizeMsg{Width: width, Height: 12})
		redrawStep(m, m.Init())
		for range 10 {
			m.Update(press("j"))
		}
		lines := strings.Split(m.View().Content, "\n")
		fixed := map[int]int{80: 3, 120: 2}[width]
		if !strings.HasPrefix(lines[1], "instances ") || lines[fixed] != "instance  state" || strings.HasPrefix(lines[fixed+1], "vllm/0 ") {
			t.Errorf("at %d, scrolled:\n%s", width, strings.Join(lines, "\n"))
		}
	}
}
