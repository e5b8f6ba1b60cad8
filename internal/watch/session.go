package watch

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// SlowScrape is how long a scrape may wait before the view says so (why,
// the dialect's advice says: tabbyAPI renders /metrics on the loop that
// drives generation).
const SlowScrape = time.Second

// session is the state of a watch that the terminal and piped loops share:
// the history, the last good scrape and what went wrong since. It does no
// I/O; each refresh folds one scrape result in and [session.report] turns
// the state into the report a frame shows.
type session struct {
	build    func(s *snapshot.Snapshot, now time.Time, hist bool) *report.Report
	windows  []time.Duration // as configured
	interval time.Duration
	showHist bool
	showHeat bool
	showUnit bool // the breakdowns' tables

	h      *rates.History
	last   *snapshot.Snapshot // last good scrape
	lastAt time.Time
	waited time.Duration // how long the last good scrape waited
	base   *report.Report
	// judged is base with its notes on what happened judged on the
	// longest window shown: made when what it depends on changes, not at
	// every redraw (refigure).
	judged *report.Report
	rates  report.Section
	figs   map[string]map[string]*float64
	// trends and heat are the series behind the sparklines and the
	// latency heat strips, as of the last refresh.
	trends map[string]*report.Trend
	heat   map[string]*report.Heat

	failure string // the current frame's failure line, "" after a good scrape
}

func newSession(c Config) *session {
	s := &session{build: c.Build, windows: c.Windows, interval: c.Interval, showHist: c.Hist, showHeat: c.Heat, showUnit: c.Breakdown}
	s.h = rates.NewHistory(longest(c.Windows, c.Interval))
	s.h.SetTrendStep(c.Interval)
	return s
}

// longest is the longest window shown at this interval.
func longest(windows []time.Duration, interval time.Duration) time.Duration {
	var l time.Duration
	for _, w := range Effective(windows, interval) {
		l = max(l, w)
	}
	return l
}

// effective is the windows shown at the current interval.
func (s *session) effective() []time.Duration { return Effective(s.windows, s.interval) }

// observe folds in a good scrape taken at at that waited took.
func (s *session) observe(snap *snapshot.Snapshot, at time.Time, took time.Duration) {
	// Each unit's figures over the interval since the last good scrape,
	// before the report of this one is built.
	if s.last != nil {
		rates.Breakdown(s.last, snap, at.Sub(s.lastAt).Seconds())
	}
	s.h.Add(snap, at)
	s.last, s.lastAt, s.failure = snap, at, ""
	s.waited = took
	if snap.ScrapeSeconds > 0 {
		s.waited = time.Duration(snap.ScrapeSeconds * float64(time.Second))
	}
	s.rebuild()
	s.refigure()
	s.series()
}

// series takes the trends and heat strips from the history.
func (s *session) series() {
	s.trends, s.heat = s.h.Trends(), s.h.Heat()
}

// fail records a scrape that failed after took; the last good report stays.
func (s *session) fail(err error, took time.Duration) {
	reason := "unknown error"
	if err != nil {
		reason = firstLine(err.Error())
	}
	s.failure = fmt.Sprintf("scrape failed after %s (%s) — retrying", units.Seconds(took.Seconds()), reason)
	s.h.Missed()
	s.series()
}

// pause marks the refreshes a pause skips: a gap in the trends.
func (s *session) pause() {
	s.h.Missed()
	s.series()
}

// setInterval changes the refresh interval, and with it which windows show.
func (s *session) setInterval(d time.Duration) {
	s.interval = d
	s.h.SetLongest(longest(s.windows, d))
	// A trend's values are one interval apart: a new one starts them over.
	s.h.SetTrendStep(d)
	s.series()
	s.refigure()
}

// toggleHist shows or hides the distributions.
func (s *session) toggleHist() {
	s.showHist = !s.showHist
	s.rebuild()
	s.judge() // the figures over the windows do not show distributions
}

// toggleHeat shows or hides the latency heat strips.
func (s *session) toggleHeat() { s.showHeat = !s.showHeat }

// toggleUnits shows or hides the breakdowns' tables.
func (s *session) toggleUnits() { s.showUnit = !s.showUnit }

// reset forgets the history but the last scrape.
func (s *session) reset() {
	s.h.Reset()
	s.series()
	s.refigure()
}

// rebuild makes the one-shot report of the last good scrape.
func (s *session) rebuild() {
	if s.last != nil {
		s.base = s.build(s.last, s.lastAt, s.showHist)
	}
}

// refigure takes the rates table from the history, and judges the notes.
func (s *session) refigure() {
	if s.h.Len() > 0 {
		s.rates, s.figs = s.h.Section(s.effective())
	}
	s.judge()
}

// judge judges the one-shot report's notes on what happened on the
// longest window shown (rates.History.Judge), not the server's lifetime
// (--fail-on with them).
func (s *session) judge() {
	s.judged = s.base
	if s.base != nil && s.last != nil {
		s.judged = s.h.Judge(s.base, s.last, s.effective())
	}
}

// report is the report a frame drawn at now shows: the one-shot report of
// the last good scrape, its notes on what happened judged on the longest
// window shown (rates.History.Judge), with the rates table first and the
// watch's own header lines (failure, restart, reset, slow scrape) before
// its own. It shares nothing mutable with the session's copy.
func (s *session) report(now time.Time) *report.Report {
	var r report.Report
	if s.judged != nil {
		r = *s.judged
	}
	var head []string
	if s.failure != "" {
		head = append(head, s.failure)
	}
	if s.last == nil {
		if s.failure == "" {
			head = append(head, "waiting for the first scrape")
		}
		r.Header = head
		return &r
	}
	switch {
	case s.h.RestartUnknown:
		head = append(head, "server restart seen "+ago(now.Sub(s.h.RestartedAt))+" (its start time is unknown): windows start there")
	case !s.h.RestartedAt.IsZero():
		head = append(head, "server restarted "+ago(now.Sub(s.h.RestartedAt))+": windows start there")
	}
	if !s.h.ResetAt.IsZero() && now.Sub(s.h.ResetAt) <= longest(s.windows, s.interval) {
		head = append(head, "counters reset "+ago(now.Sub(s.h.ResetAt))+" (model reload?): counted from zero, as rate() does")
	}
	if s.waited > SlowScrape && !mentions(r.Header, "waited") {
		why := s.last.Advice.WhySlow()
		head = append(head, fmt.Sprintf("the scrape waited %s (%s)", units.Seconds(s.waited.Seconds()), why))
	}
	r.Header = append(head, r.Header...)
	lead := []report.Section{s.ratesSection()}
	if s.showHeat {
		lead = append(lead, s.heatSection())
	}
	r.Sections = append(lead, withGaugeTrends(r.Sections, s.trends)...)
	r.Rates = s.figs
	r.Trends, r.Heat = s.trends, s.heat
	if !s.showUnit {
		return r.Folded("the u key")
	}
	return &r
}

// ratesSection is the rates table, or, while no cell has a figure yet (one
// scrape since the start or a restart), a line saying when there will be:
// a grid of blank rows says nothing.
func (s *session) ratesSection() report.Section {
	sec := s.rates
	if sec.Table != nil && s.trends != nil {
		t := *sec.Table
		t.Rows = slices.Clone(t.Rows)
		for i := range t.Rows {
			t.Rows[i].Trend = s.trends[t.Rows[i].ID]
		}
		sec.Table = &t
	}
	if sec.Table != nil && hasFigure(sec.Table) {
		if note := s.sessionNote(sec.Table); note != "" {
			sec.Rows = append(sec.Rows[:len(sec.Rows):len(sec.Rows)], report.Row{ID: "rates_session", Note: note, Severity: report.Dim})
		}
		return sec
	}
	if sec.Table == nil {
		return sec
	}
	note := "rates appear after the next scrape, in " + units.Duration(s.interval)
	switch {
	case len(sec.Table.Rows) == 0 && s.last != nil && s.last.Via != "":
		// A proxy publishes each counter once a request has reported it.
		note = "no rates yet: no request has finished through the proxy, and its counters appear with the first"
	case len(sec.Table.Rows) == 0:
		note = "no rates: this server publishes none of the counters they are computed from"
	}
	sec.Table = nil
	sec.Rows = append(sec.Rows[:len(sec.Rows):len(sec.Rows)], report.Row{ID: "rates_pending", Note: note, Severity: report.Dim})
	return sec
}

// gaugeRows are the rows of the live section that get a trend of their
// gauge, by the trend's key.
var gaugeRows = map[string]string{"kv_cache": rates.TrendKV, "state": rates.TrendQueue}

// gpuGaugeRows are the GPU section's rows that get a trend (issue 32).
var gpuGaugeRows = map[string]string{"utilization": rates.TrendGPUUtilization, "dram_active": rates.TrendGPUDRAM,
	"power": rates.TrendGPUPower, "memory": rates.TrendGPUMemory}

// withGaugeTrends returns secs with the trends of the gauges beside the
// live section's rows that show them; secs is not changed.
func withGaugeTrends(secs []report.Section, trends map[string]*report.Trend) []report.Section {
	out := slices.Clone(secs)
	for i, sec := range out {
		rows := map[string]map[string]string{"live": gaugeRows, "gpu": gpuGaugeRows}[sec.ID]
		if rows == nil || trends == nil {
			continue
		}
		sec.Rows = slices.Clone(sec.Rows)
		for j, row := range sec.Rows {
			if key, ok := rows[row.ID]; ok {
				sec.Rows[j].Trend = trends[key]
			}
		}
		out[i] = sec
	}
	return out
}

// heatSection is the latency heat strips, TTFT then end-to-end, or a line
// saying why there are none.
func (s *session) heatSection() report.Section {
	sec := report.Section{ID: "latency_heat", Title: "Latency over the session", Wide: true}
	for _, name := range []string{snapshot.TimeToFirstTokenSeconds, snapshot.E2ERequestLatencySeconds} {
		if h := s.heat[name]; h != nil {
			sec.Heat = append(sec.Heat, h)
		}
	}
	if len(sec.Heat) == 0 {
		note := "no latency histogram has an increase yet: the strips start after the next scrape"
		if s.last != nil && s.last.Hist(snapshot.TimeToFirstTokenSeconds) == nil && s.last.Hist(snapshot.E2ERequestLatencySeconds) == nil {
			note = "no strips: this server publishes no time-to-first-token or end-to-end histogram"
		}
		sec.Rows = report.List[report.Row]{{ID: "latency_heat_pending", Note: note, Severity: report.Dim}}
	}
	return sec
}

// sessionNote says what a ~span column is, where the table has one: all
// of a session younger than the window it stands in for (the first window
// the table does not show).
func (s *session) sessionNote(t *report.Table) string {
	span := ""
	shown := map[string]bool{}
	for _, h := range t.Header {
		if strings.HasPrefix(h, "~") {
			span = h
		}
		shown[h] = true
	}
	if span == "" {
		return ""
	}
	for _, w := range s.effective() {
		if label := units.Duration(w); !shown[label] {
			return span + " is the whole session so far, standing in for " + label + " until that window fills"
		}
	}
	return span + " is the whole session so far"
}

// hasFigure reports whether some cell of t says something.
func hasFigure(t *report.Table) bool {
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			if c != "" {
				return true
			}
		}
	}
	return false
}

// ago says how long ago something happened, "just now" within a second.
func ago(d time.Duration) string {
	if d < time.Second {
		return "just now"
	}
	return units.Seconds(d.Seconds()) + " ago"
}

func mentions(lines []string, word string) bool {
	for _, l := range lines {
		if strings.Contains(l, word) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if s == "" {
		return "no reason given"
	}
	return s
}
