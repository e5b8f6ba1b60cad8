package watch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// exposition builds a tabbyAPI-style scrape by hand: process start,
// requests, generated tokens and a TTFT histogram.
func expositionText(start float64, requests, tokens int, ttft [3]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE tabbyapi:process_start_time_seconds gauge\ntabbyapi:process_start_time_seconds %.0f\n", start)
	fmt.Fprintf(&b, "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total %d\n", requests)
	fmt.Fprintf(&b, "# TYPE tabbyapi:tokens_predicted_total counter\ntabbyapi:tokens_predicted_total %d\n", tokens)
	b.WriteString("# TYPE tabbyapi:time_to_first_token_seconds histogram\n")
	for i, le := range []string{"0.1", "1", "+Inf"} {
		fmt.Fprintf(&b, "tabbyapi:time_to_first_token_seconds_bucket{le=%q} %d\n", le, ttft[i])
	}
	fmt.Fprintf(&b, "tabbyapi:time_to_first_token_seconds_sum %d\ntabbyapi:time_to_first_token_seconds_count %d\n", ttft[2], ttft[2])
	return b.String()
}

// toSnapshot is a minimal stand-in for dialect.Map: tabbyAPI names without
// the prefix.
func toSnapshot(fams []*dto.MetricFamily) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}}
	for _, f := range fams {
		name := strings.TrimPrefix(f.GetName(), "tabbyapi:")
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Scalars[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Scalars[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := &histogram.Histogram{Count: float64(m.GetHistogram().GetSampleCount()), Sum: m.GetHistogram().GetSampleSum()}
				for _, bk := range m.GetHistogram().GetBucket() {
					h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: bk.GetUpperBound(), Count: float64(bk.GetCumulativeCount())})
				}
				h.Normalize()
				s.Histograms[name] = h
			}
		}
	}
	return s
}

// TestEndToEnd watches a test server through the piped mode: its counters
// advance, it fails once, its generator restarts (counters fall, the process
// does not) and then the process restarts.
func TestEndToEnd(t *testing.T) {
	restart := start0 + 3600 + 9 // 9 s into the session
	bodies := []string{
		expositionText(start0, 100, 10000, [3]int{5, 8, 10}),
		expositionText(start0, 104, 10400, [3]int{6, 12, 14}),
		"", // a 500
		expositionText(start0, 112, 11200, [3]int{6, 16, 22}),
		expositionText(start0, 4, 520, [3]int{1, 2, 4}), // generator recreated
		expositionText(restart, 0, 0, [3]int{0, 0, 0}),
		expositionText(restart, 2, 300, [3]int{1, 2, 2}),
	}
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(served.Add(1)) - 1
		if i >= len(bodies) || bodies[i] == "" {
			http.Error(w, "generator busy", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, bodies[i])
	}))
	defer srv.Close()

	for _, mode := range []string{"text", "json"} {
		t.Run(mode, func(t *testing.T) {
			served.Store(0)
			clk := &clock{t: t0}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			frames := 0
			fetch := func(ctx context.Context) (*snapshot.Snapshot, error) {
				if frames == len(bodies) {
					cancel()
					return nil, ctx.Err()
				}
				frames++
				defer clk.advance(20 * time.Millisecond)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
				if err != nil {
					return nil, err
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					return nil, err
				}
				if resp.StatusCode != http.StatusOK {
					return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
				}
				f, err := exposition.DetectFormat(resp.Header.Get("Content-Type"), body)
				if err != nil {
					return nil, err
				}
				fams, err := exposition.Parse(body, f)
				if err != nil {
					return nil, err
				}
				s := toSnapshot(fams)
				s.Source = srv.URL
				return s, nil
			}
			ios, out, _ := iostreams.Test("", false, 0)
			c := Config{
				Interval: 2 * time.Second, Windows: []time.Duration{5 * time.Second, time.Minute},
				JSON: mode == "json", Width: 120,
				Fetch: fetch, Build: fakeBuild, Now: clk.Now, sleep: clk.sleep,
			}
			if err := Run(ctx, ios, c); err != nil {
				t.Fatal(err)
			}
			if mode == "json" {
				checkJSONFrames(t, out.String(), len(bodies))
			} else {
				checkTextFrames(t, out.String(), len(bodies))
			}
		})
	}
}

// The frames below were worked out by hand: every scrape takes 20 ms and
// they end at 0.02, 2.02, 4.02 (failed), 6.02, 8.02, 10.02 and 12.02 s.
func checkTextFrames(t *testing.T, out string, n int) {
	frames := strings.Split(out, "=== ")[1:]
	if len(frames) != n {
		t.Fatalf("%d frames, want %d:\n%s", len(frames), n, out)
	}
	same := func(i int, label string, want ...string) {
		t.Helper()
		got, _ := tableRow(t, frames[i], label)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("frame %d %s = %q, want %q\n%s", i+1, label, got, want, frames[i])
		}
	}
	trend := func(i int, label, want string) {
		t.Helper()
		if _, got := tableRow(t, frames[i], label); got != want {
			t.Errorf("frame %d %s trend = %q, want %q\n%s", i+1, label, got, want, frames[i])
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Error("escape code in piped frames")
	}
	// 2: 4 requests in 2 s. TTFT Δ buckets 1,4,4: p50 rank 2 is 1/3 into
	// (0.1, 1] = 0.4; p99 rank 3.96 is 2.96/3 into it = 0.988.
	same(1, "requests /s", "2")
	same(1, "TTFT p50", "400", "ms")
	same(1, "TTFT p99", "988", "ms")
	// 3: the failure keeps frame 2's figures under the failure line.
	if !strings.Contains(frames[2], "scrape failed after 20 ms (HTTP 500: generator busy) — retrying") {
		t.Errorf("frame 3:\n%s", frames[2])
	}
	same(2, "requests /s", "2")
	// 4: now covers 2.02 → 6.02: 8 requests, 800 tokens in 4 s; 5s reaches
	// back to 0.02: 12 and 1200 in 6 s; the 6 s session is not 1.25 × 5 s,
	// so 1m stays blank.
	same(3, "requests /s", "2", "2")
	same(3, "generation tok/s", "200", "200")
	// 5: 112 → 4 is a restart from zero: 4 in 2 s now, 8 + 4 in 6 s for
	// 5s, 12 + 4 in 8 s over the session; tokens 520, 800 + 520 and
	// 1200 + 520. TTFT fell: blank across it.
	same(4, "requests /s", "2", "2", "2")
	same(4, "generation tok/s", "260", "220", "215")
	same(4, "TTFT p50")
	if !strings.Contains(frames[4], "counters reset just now") {
		t.Errorf("frame 5 does not say the counters reset:\n%s", frames[4])
	}
	// 6: the process started again at 9 s: nothing to compare with, and
	// no table of blank rows.
	if !strings.Contains(frames[5], "server restarted 1.02 s ago") || !strings.Contains(frames[5], "rates appear after the next scrape, in 2s") ||
		strings.Contains(frames[5], "requests /s") {
		t.Errorf("frame 6:\n%s", frames[5])
	}
	// 7: from the restart only: 2 requests, 300 tokens in 2 s; the 2 s
	// session is not 1.25 × the 2 s interval. TTFT Δ 1,2,2: p50 rank 1
	// tops the first bucket.
	same(6, "requests /s", "1")
	same(6, "generation tok/s", "150")
	same(6, "TTFT p50", "100", "ms")
	// The trends, one cell per refresh: the first scrape has no interval,
	// the failed one and the one after it (its increase spans two) are
	// gaps, the reset counts from zero (2/s), the restart is a gap. On a
	// scale from 0 to 2, 2 is the top and 1 is 1 + round(7 × 1/2) = 5.
	trend(1, "requests /s", "█ 0–2")
	trend(2, "requests /s", "█  0–2")
	trend(6, "requests /s", "█  █ ▅ 0–2")
	// 200, 260, 150 on 0–260: 200 is 1 + round(7 × 200/260) = 6, 150 is
	// 1 + round(7 × 150/260) = 5.
	trend(6, "generation tok/s", "▆  █ ▅ 0–260")
	// TTFT p50 from its floor: 400 ms, then 100 ms after the restart.
	trend(6, "TTFT p50", "█    ▁ 100 ms–400 ms")
}

// tableRow finds a rates table row by its label in a frame and returns
// its cells and its trend, each as the header places it: a cell
// right-aligned under its label, the trend (sparkline and range) from the
// trend label to the next column, with a young session's leading blanks
// trimmed.
func tableRow(t *testing.T, frame, label string) (cells []string, trend string) {
	t.Helper()
	var header, line []rune
	for _, l := range strings.Split(frame, "\n") {
		switch trimmed := strings.TrimSpace(l); {
		case strings.HasPrefix(trimmed, "now "):
			header = []rune(l)
		case strings.HasPrefix(trimmed, label+"  ") || trimmed == label:
			line = []rune(l)
		}
	}
	if header == nil || line == nil {
		t.Errorf("no header or no %q row in\n%s", label, frame)
		return nil, ""
	}
	at := func(a, b int) string {
		a, b = max(a, 0), min(b, len(line))
		if a >= b {
			return ""
		}
		return strings.TrimSpace(string(line[a:b]))
	}
	// The header's labels, where each ends, and the trend's start.
	loc := regexp.MustCompile(`\S+(?: \S+)*`)
	trendAt, trendEnd := -1, -1
	for _, m := range loc.FindAllStringIndex(string(header), -1) {
		start, end := len([]rune(string(header)[:m[0]])), len([]rune(string(header)[:m[1]]))
		name := string(header)[m[0]:m[1]]
		switch {
		case strings.HasPrefix(name, "trend"):
			trendAt = start
		case trendAt >= 0 && trendEnd < 0:
			trendEnd = end - CellWidth
			cells = appendCell(cells, at(end-CellWidth, end))
		case start > 2*CellWidth || strings.HasPrefix(name, "now"):
			cells = appendCell(cells, at(end-CellWidth, end))
		}
	}
	if trendAt >= 0 {
		if trendEnd < 0 {
			trendEnd = len(line)
		}
		trend = at(trendAt, trendEnd-2)
	}
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return strings.Fields(strings.Join(cells, " ")), trend
}

func appendCell(cells []string, c string) []string { return append(cells, c) }

func checkJSONFrames(t *testing.T, out string, n int) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, `{"schema":1,`) || !strings.Contains(l, `,"rates":{`) {
			t.Errorf("line %d: %.200s", i+1, l)
		}
	}
	if !strings.Contains(lines[4], `"5s":{"elapsed_seconds":6,"generation":220,"requests":2,"ttft_p50":null,"ttft_p99":null}`) {
		t.Errorf("line 5 rates: %s", lines[4][strings.Index(lines[4], `"rates"`):])
	}
}
