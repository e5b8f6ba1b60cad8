package analysis

import (
	"fmt"
	"slices"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Window is what a windowed view (--watch, --since, the fleet) judges: how
// much each of a server's counters and histograms grew over a window.
// rates.Delta holds the same and turns into one.
type Window struct {
	// Label names the window in the notes: "the last 5m", "the 10m
	// between the two scrapes".
	Label string
	// Counters holds each counter's increase over the window by its
	// canonical name (a Scalars name or an Extra key): counted from zero
	// where it restarted, or where it was absent at the window's start
	// and present at its end. A counter not known at the window's end has
	// no entry.
	Counters map[string]float64
	// Hists holds each histogram's increase, bucket by bucket; one not
	// known at the end, or reset inside the window, has no entry.
	Hists map[string]histogram.Histogram
}

// NoteBeforeWindow is the note a windowed view makes, as information, for
// a note on what happened that the lifetime makes and the window does not:
// the event happened, but only before the window.
const NoteBeforeWindow = "before_window"

// windowed are the bands whose notes judge what happened (a counter that
// rose, a ratio of two counters) rather than the server's state now, and
// ask for action: a windowed view makes them from the window's figures.
// Their rows are coloured from the window too. Gauge bands (KV pressure,
// the queue) judge the scrape at the window's end, the same in either
// view, and info notes explain the lifetime rows they sit beside.
var windowed = []band{preemptions, retractedWork, requestsErrored, kvOffloadColdAllocs, kvOffloadThrashing,
	recurrentLiveKVEvictions, recurrentRaiseBudget, draftAcceptanceLow, requestsRefused}

// WindowedNotes lists the ids of the notes a windowed view judges on the
// window: the notes that act on what happened, not on the state now.
func WindowedNotes() []string {
	out := make([]string, len(windowed))
	for i, b := range windowed {
		out[i] = judgements[b].note
	}
	return out
}

// peakCounters are counters that hold a largest value, not a count: a window
// keeps them as at its end.
var peakCounters = []string{snapshot.NTokensMax, snapshot.TokensPredictedMax, snapshot.ExtraLargestSequence}

// IsWindowCounter reports whether a canonical name (Scalars or Extra) is
// a counter whose increase a window holds: a declared counter that is not
// a peak.
func IsWindowCounter(name string) bool {
	n, ok := snapshot.Declared(name)
	return ok && n.Kind == snapshot.Counter && !slices.Contains(peakCounters, name)
}

// WindowSnapshot is the snapshot a window is judged from: s, the scrape
// at the window's end, with every counter replaced by its increase over
// w and every histogram by its increase, so that the report's own
// judgements read the window. A counter or histogram w does not know is
// absent (its figures with it); gauges and peaks are as at the end; the
// process start is left out (a window has no uptime).
func WindowSnapshot(s *snapshot.Snapshot, w Window) *snapshot.Snapshot {
	out := *s
	out.Scalars = make(map[string]float64, len(s.Scalars))
	out.Extra = make(map[string]float64, len(s.Extra))
	out.Histograms = make(map[string]*histogram.Histogram, len(w.Hists))
	out.Raw = nil
	keep := func(into, from map[string]float64) {
		for k, v := range from {
			if k == snapshot.ProcessStartTimeSeconds {
				continue
			}
			if IsWindowCounter(k) {
				inc, ok := w.Counters[k]
				if !ok {
					continue
				}
				v = inc
			}
			into[k] = v
		}
	}
	keep(out.Scalars, s.Scalars)
	keep(out.Extra, s.Extra)
	for k := range s.Histograms {
		if h, ok := w.Hists[k]; ok {
			out.Histograms[k] = &h
		}
	}
	return &out
}

// JudgeWindow makes r, the one-shot report of s (the scrape at the
// window's end), a windowed view's report: each note on what happened is
// made from the window's figures instead of the lifetime's (through the
// same table, by the same code, over [WindowSnapshot]), said to be about
// the window; one the lifetime makes and the window does not becomes a
// [NoteBeforeWindow] note, information; and the rows those notes judge
// take the window's colour (a colour the lifetime alone gave them is
// dropped). Every other note and row is r's. With w nil (no window yet)
// every note on what happened is before the window. r is not changed.
func JudgeWindow(r *report.Report, s *snapshot.Snapshot, w *Window) *report.Report {
	ids, rows := map[string]bool{}, map[string]bool{}
	for _, b := range windowed {
		ids[judgements[b].note] = true
		for _, row := range judgements[b].rows {
			rows[row] = true
		}
	}
	label := "the window"
	var wr *report.Report
	if w != nil {
		label = w.Label
		wr = Analyze(WindowSnapshot(s, *w), Options{Now: s.ScrapedAt})
	}
	out := *r
	out.Notes = make([]report.Note, 0, len(r.Notes))
	now := map[string]bool{}
	if wr != nil {
		for _, n := range wr.Notes {
			if ids[n.ID] {
				now[n.ID] = true
			}
		}
	}
	for _, n := range r.Notes {
		switch {
		case !ids[n.ID]:
			out.Notes = append(out.Notes, n)
		case !now[n.ID]:
			out.Notes = append(out.Notes, report.Note{ID: NoteBeforeWindow, Severity: report.Info,
				Text: fmt.Sprintf("not in %s, only before it: %s", label, n.Text)})
		}
	}
	if wr != nil {
		for _, n := range wr.Notes {
			if ids[n.ID] {
				n.Text = "in " + label + ": " + n.Text
				out.Notes = append(out.Notes, n)
			}
		}
	}
	out.Sections = recolour(r.Sections, wr, rows)
	return &out
}

// recolour copies sections, each row in judged taking the colour the
// window's report gives it where that asks for action or agrees with the
// lifetime's, and none otherwise (a lifetime count coloured good while the
// window is what was judged would say the wrong thing either way).
func recolour(secs []report.Section, wr *report.Report, judged map[string]bool) []report.Section {
	colour := map[string]report.Severity{}
	if wr != nil {
		for _, sec := range wr.Sections {
			for _, row := range sec.Rows {
				colour[sec.ID+"/"+row.ID] = row.Severity
			}
		}
	}
	out := make([]report.Section, len(secs))
	for i, sec := range secs {
		out[i] = sec
		changed := false
		for j, row := range sec.Rows {
			if !judged[sec.ID+"/"+row.ID] {
				continue
			}
			c := colour[sec.ID+"/"+row.ID]
			if c != report.Warn && c != report.Bad && c != row.Severity {
				c = report.None
			}
			if c == row.Severity {
				continue
			}
			if !changed {
				out[i].Rows = slices.Clone(sec.Rows)
				changed = true
			}
			out[i].Rows[j].Severity = c
		}
	}
	return out
}
