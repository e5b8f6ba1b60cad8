package rates

import (
	"fmt"

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
	sec := report.Section{ID: "rates", Title: "Rates between two scrapes", Wide: true}
	say := func(label, value, note string) (report.Section, map[string]map[string]*float64) {
		sec.Rows = append(sec.Rows, report.Row{ID: "since", Label: label, Value: value, Note: note, Severity: report.Warn})
		return sec, nil
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
	h := NewHistory(0)
	h.Add(before, before.ScrapedAt)
	if h.Add(after, after.ScrapedAt) == Restarted {
		if h.RestartUnknown {
			return say("no rates", "server restarted between the two scrapes",
				"its start time is unknown (the start header is no clock time); counters are not comparable across it")
		}
		ago := after.ScrapedAt.Sub(h.RestartedAt)
		return say("no rates", "server restarted between the two scrapes",
			fmt.Sprintf("%s before the later one; counters are not comparable across it", units.Seconds(ago.Seconds())))
	}
	d := delta(h.At(0), h.At(1))
	if d.Reset {
		sec.Rows = append(sec.Rows, report.Row{ID: "since_reset", Label: "counters reset",
			Value: "between the two scrapes", Note: "counted from zero, as rate() does", Severity: report.Dim})
	}
	t, figs := Table(h.rows.rows(), []Column{{Key: KeySince, Header: "Δ " + span(after.ScrapedAt.Sub(before.ScrapedAt)), Delta: &d}})
	sec.Table = t
	return sec, figs
}
