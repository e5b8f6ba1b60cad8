package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// plainRender draws a report in a form of this package's own, so frame
// tests do not depend on the real renderer's layout.
func plainRender(w io.Writer, r *report.Report, o render.Options) error {
	fmt.Fprintf(w, "report %q scraped %s (width %d, colour %v)\n", r.Source, r.ScrapedAt.Format("15:04:05"), o.Width, o.Color)
	for _, h := range r.Header {
		fmt.Fprintf(w, "! %s\n", h)
	}
	for _, s := range r.Sections {
		fmt.Fprintf(w, "[%s]\n", s.ID)
		for _, row := range s.Rows {
			if row.Label == "" && row.Value == "" {
				fmt.Fprintf(w, "  · %s\n", row.Note)
				continue
			}
			fmt.Fprintf(w, "  %s: %s\n", row.Label, row.Value)
		}
		if s.Table != nil {
			fmt.Fprintf(w, "  %s\n", strings.Join(s.Table.Header, "|"))
			for _, row := range s.Table.Rows {
				fmt.Fprintf(w, "  %-23s|%s\n", row.Label, strings.Join(row.Cells, "|"))
			}
		}
	}
	return nil
}

// scalars copies a snapshot's scalars into the report's form.
func scalars(m map[string]float64) report.Map[report.Number] {
	out := make(report.Map[report.Number], len(m))
	for k, v := range m {
		out[k] = report.Number(v)
	}
	return out
}

// fakeBuild stands in for analysis.Analyze: one section with the lifetime
// request count, and the distributions flag it was asked for.
func fakeBuild(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
	return &report.Report{
		Schema: 1, Source: s.Source, ScrapedAt: report.Time{Time: now}, ScrapeSeconds: report.Number(s.ScrapeSeconds),
		Scalars: scalars(s.Scalars),
		Sections: []report.Section{{ID: "live", Title: "Live", Rows: []report.Row{
			{Label: "requests finished", Value: fmt.Sprint(s.Get("requests_total"))},
			{Label: "distributions", Value: fmt.Sprint(hist)},
		}}},
	}
}

// clock is a fake clock that sleeping advances.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.advance(max(d, 0))
	return ctx.Err()
}

// step is one scripted scrape: it takes took and returns s or err.
type step struct {
	s    *snapshot.Snapshot
	err  error
	took time.Duration
}

// script is a Fetch that plays steps on a clock, then cancels the watch.
func script(clk *clock, cancel context.CancelFunc, steps []step) func(context.Context) (*snapshot.Snapshot, error) {
	i := 0
	return func(ctx context.Context) (*snapshot.Snapshot, error) {
		if i >= len(steps) {
			cancel()
			return nil, ctx.Err()
		}
		st := steps[i]
		i++
		clk.advance(st.took)
		if st.s != nil {
			st.s.Source = "http://test/metrics"
			st.s.ScrapeSeconds = st.took.Seconds()
		}
		return st.s, st.err
	}
}

// session script shared by the piped tests: counters advance, a scrape
// fails, a slow one, a reset, then a restart.
func watchScript() []step {
	fast := 50 * time.Millisecond
	restart := float64(t0.Add(10 * time.Second).Unix())
	return []step{
		{s: snap(start0, "requests_total", 10, "tokens_predicted_total", 1000), took: fast},
		{s: snap(start0, "requests_total", 14, "tokens_predicted_total", 1400), took: fast},
		{err: errors.New("dial tcp 127.0.0.1:5000: connection refused\nmore detail"), took: 3200 * time.Millisecond},
		{s: snap(start0, "requests_total", 20, "tokens_predicted_total", 2000), took: 1500 * time.Millisecond},
		{s: snap(start0, "requests_total", 2, "tokens_predicted_total", 200), took: fast},
		{s: snap(restart, "requests_total", 1, "tokens_predicted_total", 30), took: fast},
		{s: snap(restart, "requests_total", 3, "tokens_predicted_total", 230), took: fast},
	}
}

func runScript(t *testing.T, json bool) string {
	t.Helper()
	clk := &clock{t: t0}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, out, errb := iostreams.Test("", false, 0)
	c := Config{
		Interval: 2 * time.Second, Windows: []time.Duration{4 * time.Second, 10 * time.Second},
		JSON: json, Width: 100,
		Fetch: script(clk, cancel, watchScript()), Build: fakeBuild,
		Now: clk.Now, Render: plainRender, sleep: clk.sleep,
	}
	if err := Run(ctx, ios, c); err != nil {
		t.Fatal(err)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr: %s", errb)
	}
	return out.String()
}

// TestPipedFrames is the piped mode's output for a scripted session, one
// frame per refresh, each starting with its timestamp line.
func TestPipedFrames(t *testing.T) {
	got := runScript(t, false)
	if strings.ContainsRune(got, '\x1b') {
		t.Error("piped frames hold an escape code")
	}
	if n := strings.Count(got, "\n=== ") + 1; !strings.HasPrefix(got, "=== ") || n != len(watchScript()) {
		t.Errorf("%d frames, want %d", n, len(watchScript()))
	}
	// The first frame has one scrape: no table of blank rows, but when
	// rates will show.
	if first := got[:strings.Index(got, "\n=== ")]; !strings.Contains(first, "[rates]\n  · rates appear after the next scrape, in 2s\n[live]") {
		t.Errorf("first frame:\n%s", first)
	}
	// The clock: scrapes start every 2 s and take 50 ms, but the third
	// fails after 3.2 s (4.0 → 7.2 s) and the fourth starts at once and
	// waits 1.5 s (→ 8.7 s); the fifth starts 2 s after the fourth did.
	for _, want := range []string{
		// The failure frame keeps the last good report.
		"=== 2026-05-01 12:00:07 UTC · every 2s\nreport \"http://test/metrics\" scraped 12:00:02 (width 100, colour false)\n! scrape failed after 3.20 s (dial tcp 127.0.0.1:5000: connection refused) — retrying\n",
		"! the scrape waited 1.50 s (the server was slow to answer)",
		// The now column covers 2.05 → 8.7 s: 6 requests, 600 tokens in
		// 6.65 s; 4s has the same baseline; 10s has none, and the session
		// (8.65 s) is 1.25 × 4 s long enough to stand in, and the view
		// says what that column is (issue 21).
		"[rates]\n  · ~8.7s is the whole session so far, standing in for 10s until that window fills\n  |now 6.7s|      4s|   ~8.7s\n  generation tok/s       |90.2|90.2|115.6\n  requests /s            |0.9|0.9|1.2\n",
		// The counters fell 20 → 2 at 9.25 s: 2 requests in 0.55 s; 4s
		// from 2.05 s: 6 + 2 in 7.2 s.
		"! counters reset just now (model reload?): counted from zero, as rate() does\n[rates]\n" +
			"  · ~9.2s is the whole session so far, standing in for 10s until that window fills\n  |now 600ms|      4s|   ~9.2s\n  generation tok/s       |363.6|111.1|130.4\n  requests /s            |3.6|1.1|1.3\n",
		// The server started again at 10 s; the scrape at 11.25 s has
		// nothing to compare with, the next only itself.
		"! server restarted 1.25 s ago: windows start there\n[rates]\n  · rates appear after the next scrape, in 2s\n[live]",
		"! server restarted 3.25 s ago: windows start there\n[rates]\n  |  now 2s|      4s|     10s\n  generation tok/s       |100||\n  requests /s            |1||\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("frames lack %q", want)
		}
	}
	golden.Check(t, t.Name()+".golden", got)
}

// TestPipedJSON: one compact JSON object per line per refresh, the report
// and its rates.
func TestPipedJSON(t *testing.T) {
	got := runScript(t, true)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(watchScript()) {
		t.Fatalf("%d lines, want %d", len(lines), len(watchScript()))
	}
	type frame struct {
		Header []string                       `json:"header"`
		Rates  map[string]map[string]*float64 `json:"rates"`
	}
	var fs []frame
	for _, l := range lines {
		var f frame
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		fs = append(fs, f)
	}
	// Frame 2: 4 requests in 2 s.
	if v := fs[1].Rates["now"]["requests"]; v == nil || *v != 2 {
		t.Errorf("frame 2 now requests = %v, want 2", v)
	}
	if !strings.HasPrefix(fs[2].Header[0], "scrape failed after 3.20 s") || fs[2].Rates == nil {
		t.Errorf("failure frame %+v", fs[2])
	}
	// Frame 5: the counters fell from 20 to 2: counted from zero, 2 in
	// the 0.55 s since the slow scrape.
	if v := fs[4].Rates["now"]["requests"]; v == nil || math.Abs(*v-2/0.55) > 1e-9 {
		t.Errorf("after the reset now requests = %v, want %v", v, 2/0.55)
	}
	// Frame 6: the restart leaves nothing to compare with.
	if v := fs[5].Rates["now"]; v["requests"] != nil || v[rates.KeyElapsed] != nil {
		t.Errorf("after the restart now = %v", v)
	}
}

// TestFirstScrapeFails: before any good scrape a failure is still a frame,
// with nothing to repeat; a slow scrape the report already mentions is not
// said twice.
func TestFirstScrapeFails(t *testing.T) {
	for _, json := range []bool{false, true} {
		clk := &clock{t: t0}
		ctx, cancel := context.WithCancel(context.Background())
		ios, out, _ := iostreams.Test("", false, 0)
		steps := []step{
			{err: errors.New("HTTP 503"), took: 10 * time.Millisecond},
			{s: snap(start0, "requests_total", 1), took: 2 * time.Second},
		}
		build := func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
			r := fakeBuild(s, now, hist)
			r.Header = []string{"the scrape waited 2.0 s: the server was busy"}
			return r
		}
		c := Config{
			Interval: time.Second, Windows: []time.Duration{time.Minute}, JSON: json,
			Fetch: script(clk, cancel, steps), Build: build,
			Now: clk.Now, Render: plainRender, sleep: clk.sleep,
		}
		if err := Run(ctx, ios, c); err != nil {
			t.Fatal(err)
		}
		cancel()
		got := out.String()
		if json {
			first := strings.SplitN(got, "\n", 2)[0]
			if !strings.HasPrefix(first, `{"schema":0,`) || !strings.Contains(first, `"header":["scrape failed after 10 ms (HTTP 503) — retrying"]`) || !strings.HasSuffix(first, `"rates":{}}`) {
				t.Errorf("first JSON line: %s", first)
			}
			continue
		}
		want := "=== 2026-05-01 12:00:00 UTC · every 1s\nreport \"\" scraped 00:00:00 (width 160, colour false)\n! scrape failed after 10 ms (HTTP 503) — retrying\n\n=== "
		if !strings.HasPrefix(got, want) {
			t.Errorf("first frame:\n%s\nwant:\n%s", got, want)
		}
		if n := strings.Count(got, "waited"); n != 1 {
			t.Errorf("the slow scrape is said %d times:\n%s", n, got)
		}
	}
}

// --fail-on piped: the frame of the first scrape whose report holds a note
// that severe is written whole, then the watch ends with a TrippedError. A
// note below the severity does not trip it, nor does a failed scrape that
// repeats a report.
func TestPipedFailOn(t *testing.T) {
	for _, json := range []bool{false, true} {
		clk := &clock{t: t0}
		ctx, cancel := context.WithCancel(context.Background())
		ios, out, _ := iostreams.Test("", false, 0)
		steps := []step{
			{s: snap(start0, "requests_total", 1)},
			{s: snap(start0, "requests_total", 2)}, // a warn note: below bad
			{err: errors.New("HTTP 503")},
			{s: snap(start0, "requests_total", 3)}, // bad: trips
			{s: snap(start0, "requests_total", 4)},
		}
		build := func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
			r := fakeBuild(s, now, hist)
			switch v := s.Get("requests_total"); {
			case v >= 3:
				r.Notes = []report.Note{{ID: "kv_full", Severity: report.Bad, Text: "the KV cache is full"}}
			case v >= 2:
				r.Notes = []report.Note{{ID: "queue", Severity: report.Warn, Text: "requests queue"}}
			}
			return r
		}
		c := Config{
			Interval: time.Second, Windows: []time.Duration{time.Minute}, JSON: json, FailOn: report.Bad,
			Fetch: script(clk, cancel, steps), Build: build,
			Now: clk.Now, Render: plainRender, sleep: clk.sleep,
		}
		err := Run(ctx, ios, c)
		cancel()
		var tr *TrippedError
		if !errors.As(err, &tr) || tr.Note.ID != "kv_full" || !tr.At.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("json %v: Run = %v, want kv_full tripping at the fourth scrape", json, err)
		}
		got := out.String()
		frames := strings.Count(got, "=== ")
		if json {
			frames = strings.Count(got, "\n")
		}
		if frames != 4 || !strings.HasSuffix(got, "\n") {
			t.Errorf("json %v: %d frames, want 4 ending with the tripping one:\n%s", json, frames, got)
		}
	}
}

// --fail-on judges the window, through the real report: seven preemptions
// before the watch began are information and trip nothing; the one that
// happens while it watches trips it, its note naming the window.
func TestFailOnJudgesTheWindow(t *testing.T) {
	clk := &clock{t: t0}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ios, out, _ := iostreams.Test("", false, 0)
	preempted := func(requests, n float64) *snapshot.Snapshot {
		s := snap(start0, "requests_total", requests, "requests_processing", 1)
		s.Extra = map[string]float64{snapshot.ExtraPreemptions: n}
		return s
	}
	steps := []step{
		{s: preempted(100, 7)}, {s: preempted(101, 7)}, {s: preempted(102, 7)},
		{s: preempted(103, 8)}, // trips
		{s: preempted(104, 8)},
	}
	build := func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report {
		return analysis.Analyze(s, analysis.Options{Now: now, Hist: hist})
	}
	c := Config{
		Interval: time.Second, Windows: []time.Duration{time.Minute}, FailOn: report.Warn,
		Fetch: script(clk, cancel, steps), Build: build,
		Now: clk.Now, Render: plainRender, sleep: clk.sleep,
	}
	err := Run(ctx, ios, c)
	var tr *TrippedError
	if !errors.As(err, &tr) || tr.Note.ID != "preemptions" || !tr.At.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("Run = %v, want preemptions tripping at the fourth scrape\n%s", err, out.String())
	}
	if !strings.HasPrefix(tr.Note.Text, "in the last 3s: 1 request was preempted") {
		t.Errorf("the tripping note %q does not say it is about the window", tr.Note.Text)
	}
}
