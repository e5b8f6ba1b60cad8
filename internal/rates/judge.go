package rates

import (
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Judge makes r, the one-shot report of end (the scrape at a window's
// end), the report of a windowed view over d: its notes on what happened
// (preemptions, errors, offload thrashing, a low draft acceptance …) made
// from the window's increases through the report's own table, those only
// before the window said as information (analysis.JudgeWindow). label
// names the window in the notes ("the last 5m"); d nil is no window yet.
// r is not changed.
func Judge(r *report.Report, end *snapshot.Snapshot, d *Delta, label string) *report.Report {
	if d == nil {
		return analysis.JudgeWindow(r, end, nil)
	}
	return analysis.JudgeWindow(r, end, &analysis.Window{Label: label, Counters: d.Counters, Hists: d.Hists})
}

// Judge makes r, the one-shot report of the newest sample's scrape (end),
// the watch view's: its notes on what happened judged on the longest of
// the windows shown that has a baseline (or all of a session younger than
// it), as the rates table's rightmost figures are; with one sample there
// is no window yet. r is not changed.
func (h *History) Judge(r *report.Report, end *snapshot.Snapshot, windows []time.Duration) *report.Report {
	if h.Len() < 2 {
		return Judge(r, end, nil, "")
	}
	var d *Delta
	for _, c := range h.columns(windows) {
		if c.Delta != nil && (d == nil || c.Delta.Seconds > d.Seconds) {
			d = c.Delta
		}
	}
	if d == nil {
		return Judge(r, end, nil, "")
	}
	label := "the last " + span(time.Duration(d.Seconds*float64(time.Second)))
	readings, waiting := h.gpuReadings(h.Newest().At.Add(-time.Duration(d.Seconds * float64(time.Second))))
	return judgeGPU(Judge(r, end, d, label), d, waiting, end, readings, label)
}
