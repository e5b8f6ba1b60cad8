package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/sim"
)

// simSession scrapes the simulator's chat scenario every 2 s of its own
// clock: n refreshes, the one at fail a failed scrape.
type simSession struct {
	s    *sim.Sim
	m    *exporter.Metrics
	clk  *clock
	n    int
	fail int
}

func newSimSession(t *testing.T, scenario string, n, fail int) *simSession {
	t.Helper()
	cfg, err := sim.Scenario(scenario, 7)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Epoch = t0
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: t0})
	s.SetRecorder(m)
	return &simSession{s: s, m: m, clk: &clock{t: t0}, n: n, fail: fail}
}

// scrape advances the simulator by the interval and reads its exposition.
func (ss *simSession) scrape(t *testing.T, i int) scrapedMsg {
	t.Helper()
	ss.s.Run(2 * time.Second)
	ss.clk.t = ss.s.Now()
	if i == ss.fail {
		return scrapedMsg{at: ss.clk.t, took: 2 * time.Second, err: errors.New("context deadline exceeded")}
	}
	var b bytes.Buffer
	if err := ss.m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(b.Bytes(), exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap.Source, snap.ScrapedAt = "http://gpu-box:5000/metrics", ss.clk.t
	return scrapedMsg{snap: snap, at: ss.clk.t, took: 5 * time.Millisecond}
}

func realBuild(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
	return analysis.Analyze(s, analysis.Options{Now: now, Hist: hist, WithRates: true})
}

// TestGoldenFrames draws the terminal view of a simulated server, through
// the real analysis and renderer, at 80×24 and 160×50: the rates table
// with its trends (a failed scrape a gap in each), the KV cache's and the
// queue's, the latency heat strips (key l) and the ASCII pictures.
func TestGoldenFrames(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		keys          []string
		glyphs        spark.Glyphs
		scenario      string
	}{
		{name: "80x24", width: 80, height: 24, scenario: "chat"},
		{name: "160x50", width: 160, height: 50, scenario: "chat"},
		{name: "160x50-heat", width: 160, height: 50, keys: []string{"l"}, scenario: "chat"},
		{name: "80x24-heat", width: 80, height: 24, keys: []string{"l"}, scenario: "agent"},
		{name: "80x24-ascii", width: 80, height: 24, glyphs: spark.ASCII, scenario: "chat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := newSimSession(t, tc.scenario, 45, 30)
			c := Config{
				Interval: 2 * time.Second, Windows: []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute},
				Glyphs: tc.glyphs, Now: ss.clk.Now, Build: realBuild,
				Fetch: func(context.Context) (*snapshot.Snapshot, error) { return nil, errors.New("unused") },
			}
			if err := c.defaults(); err != nil {
				t.Fatal(err)
			}
			m := newModel(context.Background(), c, false)
			m.Update(tea.WindowSizeMsg{Width: tc.width, Height: tc.height})
			for _, k := range tc.keys {
				m.Update(press(k))
			}
			for i := range ss.n {
				m.Update(ss.scrape(t, i))
			}
			frame := m.View().Content
			lines := strings.Split(frame, "\n")
			if len(lines) > tc.height {
				t.Errorf("%d lines for a %d-line screen", len(lines), tc.height)
			}
			for i, l := range lines {
				if w := utf8.RuneCountInString(l); w > tc.width {
					t.Errorf("line %d is %d cells wide: %q", i+1, w, l)
				}
			}
			golden.Check(t, fmt.Sprintf("frame-%s.txt", tc.name), frame+"\n")
		})
	}
}

// TestKeysFold: l shows and hides the latency heat strips, u the
// breakdowns' tables; the JSON of a frame carries the trends and the
// strips' series whatever is shown.
func TestKeysFold(t *testing.T) {
	ss := newSimSession(t, "chat", 5, -1)
	c := Config{Interval: 2 * time.Second, Windows: []time.Duration{30 * time.Second}, Now: ss.clk.Now, Build: realBuild,
		Fetch: func(context.Context) (*snapshot.Snapshot, error) { return nil, errors.New("unused") }}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	m := newModel(context.Background(), c, false)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 200})
	for i := range ss.n {
		msg := ss.scrape(t, i)
		// Two engines, one breakdown to fold.
		msg.snap.Parts = []snapshot.Part{{Label: "engine", Value: "0", Snapshot: msg.snap}, {Label: "engine", Value: "1", Snapshot: msg.snap}}
		m.Update(msg)
	}
	view := func() string { return m.View().Content }
	if strings.Contains(view(), "Latency over the session") || !strings.Contains(view(), "a row for each: the u key") {
		t.Fatalf("first view:\n%s", view())
	}
	m.Update(press("l"))
	m.Update(press("u"))
	if v := view(); !strings.Contains(v, "Latency over the session") || !strings.Contains(v, "time to first token, per 2s") ||
		strings.Contains(v, "a row for each") || !strings.Contains(v, "engine    running") {
		t.Errorf("after l and u:\n%s", v)
	}
	r := m.s.report(m.now)
	if len(r.Trends) == 0 || r.Heat[snapshot.TimeToFirstTokenSeconds] == nil || r.Breakdowns["engines"] == nil {
		t.Errorf("the report lacks its series: %d trends, heat %v", len(r.Trends), r.Heat)
	}
}
