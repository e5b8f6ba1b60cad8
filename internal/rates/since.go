package rates

import (
	"fmt"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Since computes every figure between two scrapes of one server (a saved
// one and a later one) as a single column headed by the elapsed time, with
// the watch view's rows and reset handling. Its figures go under [KeySince]
// in Report.Rates. When the two cannot be compared (no scrape time, wrong
// order, a restart between them) the section says why and there are no
// figures.
func Since(before, after *snapshot.Snapshot) (report.Section, map[string]map[string]*float64) {
	sec, figs, _ := since(before, after)
	return sec, figs
}

// SinceReport makes r, the one-shot report of after, the --since report:
// the rates between the two scrapes first (as [Since] gives them, under
// Report.Rates), and the notes on what happened judged on what happened
// between them ([Judge]). Where the two cannot be compared the notes are
// r's: after a restart between them, all the later process counted
// happened between the two; without a scrape time there is no window to
// judge. r is not changed.
func SinceReport(r *report.Report, before, after *snapshot.Snapshot) *report.Report {
	sec, figs, d := since(before, after)
	out := r
	if d != nil {
		label := "the " + span(time.Duration(d.Seconds*float64(time.Second))) + " between the two scrapes"
		out = judgeGPU(Judge(r, after, d, label), d, waitingOf(before), after, []*snapshot.GPUs{before.GPU, after.GPU}, label)
	} else {
		cp := *r
		out = &cp
	}
	out.Sections = append([]report.Section{sec}, out.Sections...)
	out.Rates = figs
	return out
}

// Between is the increase from a to b, two scrapes of one server, b the
// later, as --since and the watch view count it, every histogram with it;
// ok is false after a restart between them. Their scrape times are not
// read: Seconds is 0.
func Between(a, b *snapshot.Snapshot) (d Delta, ok bool) {
	h, restarted := pair(a, time.Unix(0, 0), b, time.Unix(1, 0))
	if restarted {
		return Delta{}, false
	}
	d = h.delta(h.At(0), h.At(1))
	d.Seconds = 0
	allHists(&d, a, b)
	return d, true
}

// pair is a history of two scrapes taken at ta and tb, and whether the
// server restarted between them.
func pair(a *snapshot.Snapshot, ta time.Time, b *snapshot.Snapshot, tb time.Time) (*History, bool) {
	h := NewHistory(0)
	h.Add(a, ta)
	return h, h.Add(b, tb) == Restarted
}

// since is Since, and the window's increase (nil where there is none).
func since(before, after *snapshot.Snapshot) (report.Section, map[string]map[string]*float64, *Delta) {
	sec := report.Section{ID: "rates", Title: "Rates between two scrapes", Wide: true}
	say := func(label, value, note string) (report.Section, map[string]map[string]*float64, *Delta) {
		sec.Rows = append(sec.Rows, report.Row{ID: "since", Label: label, Value: value, Note: note, Severity: report.Warn})
		return sec, nil, nil
	}
	if before == nil || after == nil {
		return say("no rates", "a scrape is missing", "")
	}
	if before.ScrapedAt.IsZero() || after.ScrapedAt.IsZero() {
		return say("no rates", "a scrape has no time", "save scrapes with --save, which records it")
	}
	if !after.ScrapedAt.After(before.ScrapedAt) {
		return say("no rates", "the saved scrape is not the older one",
			fmt.Sprintf("%s vs. %s", before.ScrapedAt.Format("2006-01-02 15:04:05"), after.ScrapedAt.Format("2006-01-02 15:04:05")))
	}
	h, _ := pair(before, before.ScrapedAt, after, after.ScrapedAt)
	return over(sec, h, before, after, "between the two scrapes", "the later one")
}

// over is the rates section of the window from h's oldest sample (the
// scrape first) to its newest (last), every scrape between them counted
// (the sampled busy share), or the reason it has none: a restart inside
// it. between names the window in the rows ("between the two scrapes"),
// end its last scrape ("the later one").
func over(sec report.Section, h *History, first, last *snapshot.Snapshot, between, end string) (report.Section, map[string]map[string]*float64, *Delta) {
	if !h.RestartedAt.IsZero() || h.RestartUnknown {
		row := report.Row{ID: "since", Label: "no rates", Value: "server restarted " + between, Severity: report.Warn}
		if h.RestartUnknown {
			row.Note = "its start time is unknown (the start header is no clock time); counters are not comparable across it"
		} else {
			ago := last.ScrapedAt.Sub(h.RestartedAt)
			row.Note = fmt.Sprintf("%s before %s; counters are not comparable across it", units.Seconds(ago.Seconds()), end)
		}
		sec.Rows = append(sec.Rows, row)
		return sec, nil, nil
	}
	d := h.delta(h.At(0), h.Newest())
	allHists(&d, first, last)
	if d.Reset {
		sec.Rows = append(sec.Rows, report.Row{ID: "since_reset", Label: "counters reset",
			Value: between, Note: "counted from zero, as rate() does", Severity: report.Dim})
	}
	t, figs := Table(h.rows.rows(), []Column{{Key: KeySince, Header: "Δ " + span(h.Newest().At.Sub(h.At(0).At)), Delta: &d}})
	sec.Table = t
	return sec, figs, &d
}

// Session is [SinceReport] over a session of scrapes kept in h, oldest
// to newest, such as a load test's window (`inferscope bench`): the rates
// between the oldest sample (the scrape first) and the newest (last), with
// every scrape between them in the sampled busy share, and r's notes
// judged on that window, which label names ("the 2m0s of the run"). d is
// the window's increase, nil where there is none (a restart inside it:
// the section says so, and the notes are r's). r is not changed.
func Session(r *report.Report, h *History, first, last *snapshot.Snapshot, label string) (out *report.Report, d *Delta) {
	sec := report.Section{ID: "rates", Title: "Rates over the run", Wide: true}
	var figs map[string]map[string]*float64
	if h.Len() < 2 {
		sec.Rows = append(sec.Rows, report.Row{ID: "since", Label: "no rates", Value: "the run has one scrape", Severity: report.Warn})
	} else {
		sec, figs, d = over(sec, h, first, last, "during the run", "the run's last scrape")
	}
	if d != nil {
		out = Judge(r, last, d, label)
	} else {
		cp := *r
		out = &cp
	}
	out.Sections = append([]report.Section{sec}, out.Sections...)
	out.Rates = figs
	return out, d
}

// allHists sets the increase of every histogram after carries, not only
// the rows' (a History keeps those alone): its difference from before, or
// all of it where before lacks it; none across a reset.
func allHists(d *Delta, before, after *snapshot.Snapshot) {
	d.Hists = nil
	if d.Reset {
		return
	}
	for name, h := range after.Histograms {
		if h == nil {
			continue
		}
		inc := *h
		if p := before.Hist(name); p != nil {
			var ok bool
			if inc, ok = h.Sub(*p); !ok {
				continue
			}
		}
		if d.Hists == nil {
			d.Hists = map[string]histogram.Histogram{}
		}
		d.Hists[name] = inc
	}
}
