package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// testModel is a terminal model on a fake clock whose Fetch counts calls
// and whose Build records the distributions flag.
func testModel(t *testing.T) (*model, *clock, *int, *bool) {
	clk := &clock{t: t0}
	fetches, hist := 0, false
	c := Config{
		Interval: 2 * time.Second, Windows: []time.Duration{30 * time.Second},
		Fetch: func(context.Context) (*snapshot.Snapshot, error) {
			fetches++
			return snap(start0, "requests_total", 10*fetches), nil
		},
		Build: func(s *snapshot.Snapshot, now time.Time, h bool) *report.Report {
			hist = h
			return fakeBuild(s, now, h)
		},
		Now: clk.Now, Render: plainRender,
	}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	m := newModel(context.Background(), c, false)
	m.Update(tea.WindowSizeMsg{Width: 90, Height: 40})
	return m, clk, &fetches, &hist
}

// run executes a command the way the program would and feeds its message
// back, returning the next command.
func run(m *model, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	_, next := m.Update(cmd())
	return next
}

func TestModelRefreshes(t *testing.T) {
	m, clk, fetches, _ := testModel(t)
	cmd := m.Init()
	if !m.inflight || !strings.Contains(m.View().Content, "scraping…") {
		t.Error("Init does not start a scrape")
	}
	if !strings.Contains(m.View().Content, "waiting for the first scrape") {
		t.Errorf("first view:\n%s", m.View().Content)
	}
	tick := run(m, cmd) // the scrape comes back: a tick is scheduled
	if *fetches != 1 || tick == nil || m.inflight {
		t.Fatalf("after the first scrape: %d fetches, tick %v", *fetches, tick != nil)
	}
	clk.advance(2 * time.Second)
	// The tick starts the next scrape; its result shows in the view.
	next := run(m, func() tea.Msg { return tickMsg{gen: m.gen} })
	run(m, next)
	v := m.View()
	if *fetches != 2 || !v.AltScreen {
		t.Errorf("%d fetches, alt screen %v", *fetches, v.AltScreen)
	}
	for _, want := range []string{"12:00:02 · every 2s\n", "requests /s            |5|", "requests finished: 20", Help} {
		if !strings.Contains(v.Content, want) {
			t.Errorf("view lacks %q:\n%s", want, v.Content)
		}
	}
	if lines := strings.Count(v.Content, "\n") + 1; lines > 40 {
		t.Errorf("view has %d lines for 40 rows", lines)
	}
}

func TestModelKeys(t *testing.T) {
	m, clk, fetches, hist := testModel(t)
	run(m, m.Init())
	clk.advance(2 * time.Second)

	// space pauses: ticks scheduled before are void, the view says so.
	gen := m.gen
	m.Update(press("space"))
	if !m.paused || !strings.Contains(m.View().Content, "paused") {
		t.Error("space does not pause")
	}
	if _, cmd := m.Update(tickMsg{gen: gen}); cmd != nil || *fetches != 1 {
		t.Error("a tick scrapes while paused")
	}
	// space again resumes with a scrape at once.
	_, cmd := m.Update(press("space"))
	if m.paused || cmd == nil {
		t.Fatal("space does not resume")
	}
	run(m, cmd)
	if *fetches != 2 {
		t.Errorf("%d fetches after resuming", *fetches)
	}

	// + and - step the interval, and with it the windows shown.
	for _, k := range []struct {
		key  string
		want time.Duration
	}{{"+", 5 * time.Second}, {"+", 10 * time.Second}, {"-", 5 * time.Second}, {"-", 2 * time.Second}, {"-", time.Second}} {
		m.Update(press(k.key))
		if m.s.interval != k.want {
			t.Errorf("after %s: interval %v, want %v", k.key, m.s.interval, k.want)
		}
	}
	if !strings.Contains(m.View().Content, "every 1s") {
		t.Error("the status line does not show the new interval")
	}

	// h asks Build for the distributions.
	m.Update(press("h"))
	if !*hist || !strings.Contains(m.View().Content, "distributions: true") {
		t.Error("h does not toggle the distributions")
	}

	// r forgets the history but the newest sample.
	if m.s.h.Len() != 2 {
		t.Fatalf("history has %d samples", m.s.h.Len())
	}
	m.Update(press("r"))
	if m.s.h.Len() != 1 {
		t.Errorf("after r: %d samples", m.s.h.Len())
	}

	// q quits; Ctrl-C interrupts, so that the watch ends as on SIGINT.
	for k, want := range map[string]tea.Msg{"q": tea.QuitMsg{}, "ctrl+c": tea.InterruptMsg{}} {
		_, cmd := m.Update(press(k))
		if cmd == nil {
			t.Fatalf("%s does nothing", k)
		}
		if got := cmd(); got != want {
			t.Errorf("%s sends %T, want %T", k, got, want)
		}
	}
}

// TestModelFailure: a failed scrape is a frame over the last good report,
// and the next tick retries.
func TestModelFailure(t *testing.T) {
	m, clk, _, _ := testModel(t)
	run(m, m.Init())
	clk.advance(3200 * time.Millisecond)
	_, cmd := m.Update(scrapedMsg{err: errors.New("context deadline exceeded"), took: 3200 * time.Millisecond})
	v := m.View().Content
	if !strings.Contains(v, "! scrape failed after 3.20 s (context deadline exceeded) — retrying") || !strings.Contains(v, "requests finished: 10") {
		t.Errorf("failure frame:\n%s", v)
	}
	if cmd == nil {
		t.Error("no retry scheduled after a failure")
	}
}

// TestModelResize: the view reflows to the new width and is cut to the
// height, keeping the status and key lines.
func TestModelResize(t *testing.T) {
	m, _, _, _ := testModel(t)
	run(m, m.Init())
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 6})
	lines := strings.Split(m.View().Content, "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines for 6 rows:\n%s", len(lines), m.View().Content)
	}
	if !strings.Contains(lines[1], "(width 50,") || lines[5] != cut(Help, 50) || len([]rune(lines[5])) != 50 {
		t.Errorf("view at 50×6:\n%s", m.View().Content)
	}
}

// TestTerminalProgram runs the real Bubble Tea program on buffers: it
// draws on the alternate screen, refreshes, and quits on q.
func TestTerminalProgram(t *testing.T) {
	keys, typist := io.Pipe()
	ios, out, _ := iostreams.Test("", true, 100)
	ios.In = keys
	var fetches atomic.Int32
	c := Config{
		Interval: 5 * time.Millisecond, Windows: []time.Duration{time.Minute},
		Fetch: func(context.Context) (*snapshot.Snapshot, error) {
			n := fetches.Add(1)
			if n == 40 { // after a few frames at 60 per second
				go typist.Write([]byte("q"))
			}
			return snap(start0, "requests_total", int(n)), nil
		},
		Build: fakeBuild, Render: plainRender,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := Run(ctx, ios, c); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("q did not quit")
	}
	got := out.String()
	for _, want := range []string{"\x1b[?1049h", "requests finished", Help} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q", want)
		}
	}
}

func TestSteps(t *testing.T) {
	const s = time.Second
	tests := []struct{ d, up, down time.Duration }{
		{2 * s, 5 * s, s},
		{3 * s, 5 * s, 2 * s}, // between steps: to the neighbours
		{250 * time.Millisecond, 500 * time.Millisecond, MinInterval},
		{MinInterval, 500 * time.Millisecond, MinInterval}, // the floor
		{100 * time.Millisecond, MinInterval, 100 * time.Millisecond},
		{5 * time.Minute, 5 * time.Minute, 2 * time.Minute},
		{time.Hour, time.Hour, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := stepUp(tt.d); got != tt.up {
			t.Errorf("stepUp(%v) = %v, want %v", tt.d, got, tt.up)
		}
		if got := stepDown(tt.d); got != tt.down {
			t.Errorf("stepDown(%v) = %v, want %v", tt.d, got, tt.down)
		}
	}
}

// A report taller than the screen scrolls: down, page down, end and home
// move the window over it, clamped to the last full page.
func TestModelScrolls(t *testing.T) {
	m, _, _, _ := testModel(t)
	m.cfg.Render = func(w io.Writer, r *report.Report, o render.Options) error {
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(w, "line %d\n", i)
		}
		return nil
	}
	run(m, m.Init())
	m.Update(tea.WindowSizeMsg{Width: 90, Height: 12}) // 10 report lines fit
	first := func() string {
		lines := strings.Split(m.View().Content, "\n")
		return lines[1]
	}
	steps := []struct {
		key, first, status string
	}{
		{"", "line 1", "lines 1–10 of 30"},
		{"j", "line 2", "lines 2–11 of 30"},
		{"pgdown", "line 12", "lines 12–21 of 30"},
		{"pgdown", "line 21", "lines 21–30 of 30"}, // clamped: the last page is full
		{"k", "line 20", "lines 20–29 of 30"},
		{"home", "line 1", "lines 1–10 of 30"},
		{"end", "line 21", "lines 21–30 of 30"},
	}
	for _, s := range steps {
		switch s.key {
		case "":
		case "pgdown":
			m.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
		case "home":
			m.Update(tea.KeyPressMsg{Code: tea.KeyHome})
		case "end":
			m.Update(tea.KeyPressMsg{Code: tea.KeyEnd})
		default:
			m.Update(press(s.key))
		}
		if got := first(); got != s.first || !strings.Contains(m.View().Content, s.status) {
			t.Errorf("after %q: first line %q, want %q; view:\n%s", s.key, got, s.first, m.View().Content)
		}
	}
}

// noteAt is a Build whose report has a note of sev once requests_total
// reaches n.
func noteAt(n float64, sev report.Severity) func(*snapshot.Snapshot, time.Time, bool) *report.Report {
	return func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
		r := fakeBuild(s, now, hist)
		if s.Get("requests_total") >= n {
			r.Notes = []report.Note{{ID: "info_first", Severity: report.Info, Text: "fyi"}, {ID: "queue", Severity: sev, Text: "requests queue"}}
		}
		return r
	}
}

// --fail-on in the terminal view: the view closes at the tripping scrape,
// and its frame is written after the alternate screen is left.
func TestTerminalFailOn(t *testing.T) {
	keys, _ := io.Pipe()
	ios, out, _ := iostreams.Test("", true, 100)
	ios.In = keys
	var fetches atomic.Int32
	c := Config{
		Interval: 5 * time.Millisecond, Windows: []time.Duration{time.Minute}, FailOn: report.Warn,
		Fetch: func(context.Context) (*snapshot.Snapshot, error) {
			return snap(start0, "requests_total", int(fetches.Add(1))), nil
		},
		Build: noteAt(3, report.Bad), Render: plainRender,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Run(ctx, ios, c)
	var tr *TrippedError
	if !errors.As(err, &tr) || tr.Note.ID != "queue" || tr.FailOn != report.Warn {
		t.Fatalf("Run = %v, want the queue note tripping --fail-on warn", err)
	}
	got := out.String()
	left := strings.LastIndex(got, "\x1b[?1049l")
	if left < 0 {
		t.Fatal("the alternate screen was not left")
	}
	if after := got[left:]; !strings.Contains(after, "=== ") || !strings.Contains(after, "requests finished: 3") {
		t.Errorf("the tripping frame is not on the normal screen:\n%q", after)
	}
}

// Ctrl-C pressed in the terminal view ends it as an interrupt, not a quit.
func TestTerminalCtrlC(t *testing.T) {
	keys, typist := io.Pipe()
	ios, _, _ := iostreams.Test("", true, 100)
	ios.In = keys
	var once atomic.Bool
	c := Config{
		Interval: 5 * time.Millisecond, Windows: []time.Duration{time.Minute},
		Fetch: func(context.Context) (*snapshot.Snapshot, error) {
			if once.CompareAndSwap(false, true) {
				go typist.Write([]byte{0x03})
			}
			return snap(start0, "requests_total", 1), nil
		},
		Build: fakeBuild, Render: plainRender,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := Run(ctx, ios, c); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run = %v, want ErrInterrupted", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Ctrl-C did not end the view")
	}
}

// TERM=dumb cannot draw a full-screen view: it gets the piped frames.
func TestDumbTerminalIsPiped(t *testing.T) {
	clk := &clock{t: t0}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, out, _ := iostreams.Test("", true, 100)
	ios.Getenv = func(k string) string {
		if k == "TERM" {
			return "dumb"
		}
		return ""
	}
	c := Config{
		Interval: time.Second, Windows: []time.Duration{time.Minute},
		Fetch: script(clk, cancel, []step{{s: snap(start0, "requests_total", 1)}}), Build: fakeBuild,
		Now: clk.Now, Render: plainRender, sleep: clk.sleep,
	}
	if err := Run(ctx, ios, c); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "=== ") || strings.Contains(got, "\x1b") || !strings.Contains(got, "colour false") {
		t.Errorf("TERM=dumb output:\n%q", got)
	}
}
