package analysis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// --- Where the time goes ---------------------------------------------------
//
// Servers publish time two ways. Most sum each request's own prefill and
// decode time: request time. Over the uptime that sum is the mean number of
// requests in prefill or decode at once (Little's law), not the engine's
// busy share: ten requests decoding together for a minute add ten minutes.
// It bounds the busy share from above (the engine is busy at least while
// one request is in flight, and the mean counts each one), so "busy at most"
// is said only while the mean is at most 1. SGLang's GPU execution time
// (gpu_execution_seconds_total, with its device timer on) is the engine's
// own busy time: only that is called utilization.

// phases is the "Where the time goes" section: the engine's own busy time
// where the server publishes one, request time and its prefill/decode
// split, and what the split means for a change of layout.
func (a *analyzer) phases() {
	var rows []report.Row
	if busy, ok := a.s.Scalar(snapshot.EngineBusySecondsTotal); ok && busy >= 0 {
		rows = append(rows, a.engineBusyRow(busy))
		rows = append(rows, a.enginePhaseRows(busy)...)
	}
	pre, okP := a.s.Scalar(snapshot.PromptSecondsTotal)
	dec, okD := a.s.Scalar(snapshot.TokensPredictedSecondsTotal)
	// Seconds below zero are no time (only a histogram with negative
	// bounds can sum to them): the shares below are then fractions 0..1.
	split := okP && okD && pre >= 0 && dec >= 0 && pre+dec > 0
	if split {
		rows = append(rows, a.requestTimeRow(pre+dec))
		rows = append(rows, a.phaseRows(pre, dec)...)
	}
	switch {
	case a.o.Probe != nil:
		rows = append(rows, a.probeRows(a.o.Probe, split, pre, dec)...)
	case split:
		rows = append(rows, a.tradeRows(pre/(pre+dec), dec/(pre+dec), "request time", "", TradeRequestTime)...)
	}
	a.section("phases", "Where the time goes", rows)
}

// uptime is the seconds from the process start to the report's time; ok is
// false when the start is unknown, with why where one was published but
// cannot be this process's.
func (a *analyzer) uptime() (up float64, ok bool, why string) {
	start, why := a.s.Start()
	switch {
	case start <= 0:
		return 0, false, why
	case a.o.Now.IsZero():
		return 0, false, noScrapeTime
	}
	up = float64(a.o.Now.UnixNano())/1e9 - start
	if up <= 0 {
		return 0, false, "the start time is after the report's time"
	}
	return up, true, ""
}

// noScrapeTime is why there is no uptime where the start is known but the
// scrape's time is not (a file that claimed a time in the future).
const noScrapeTime = "scrape time unknown"

// noUptime says why a figure over the uptime cannot be given.
func noUptime(why string) string {
	if why == noScrapeTime {
		return why
	}
	if why != "" {
		return "start time unknown (" + why + ")"
	}
	return "start time unknown"
}

// engineBusyRow is the engine's own busy time (SGLang's GPU execution
// time, TGI's batch calls) and, over the uptime, its utilization.
func (a *analyzer) engineBusyRow(busy float64) report.Row {
	f := &a.r.Figures
	f.EngineBusySeconds = num(busy)
	what := setting(a.s.Advice.EngineBusy, "GPU execution time")
	row := report.Row{ID: "engine_busy", Label: "engine busy", Value: units.Seconds(busy), Note: what}
	up, ok, why := a.uptime()
	switch {
	case !ok:
		row.Note = what + "; " + noUptime(why) + ": no utilization"
	case busy > up*(1+1e-9):
		// One scheduler's busy time cannot exceed the wall clock.
		row.Value = units.Seconds(busy) + " of " + units.Seconds(up) + " up"
		row.Note = "more than the uptime: counters out of step, no utilization"
	default:
		util := busy / up
		f.Utilization = num(util)
		row.Value = units.Seconds(busy) + " of " + units.Seconds(up) + " up"
		row.Bar, row.Note = bar(util), units.Percent(util)+" utilization ("+what+")"
	}
	return row
}

// enginePhaseRows split the engine's busy time into its prefill and
// decode passes (SGLang's forward modes) and the rest: passes of neither
// alone (mixed batches, idle data-parallel ranks, a drafter's own). Each
// is a share of the busy time, which the phases' times are parts of; a
// phase the server does not time is left out.
func (a *analyzer) enginePhaseRows(busy float64) []report.Row {
	pre, okP := a.s.Scalar(snapshot.EnginePrefillSecondsTotal)
	dec, okD := a.s.Scalar(snapshot.EngineDecodeSecondsTotal)
	if !(busy > 0) || (!okP && !okD) {
		return nil
	}
	var rows []report.Row
	rest := busy
	for _, ph := range []struct {
		id, label string
		v         float64
		ok        bool
	}{{"engine_prefill", "engine prefill", pre, okP}, {"engine_decode", "engine decode", dec, okD}} {
		if !ph.ok || ph.v < 0 {
			continue
		}
		share := ph.v / busy
		rest -= ph.v
		rows = append(rows, report.Row{ID: ph.id, Label: ph.label, Value: units.Percent(share), Bar: bar(share),
			Note: units.Seconds(ph.v) + " of engine time"})
	}
	// Other modes: what the two phases leave of the busy time (nothing
	// where they are the whole of it; below zero only from rounding).
	if okP && okD && rest > busy*1e-9 {
		share := rest / busy
		rows = append(rows, report.Row{ID: "engine_other", Label: "engine, other", Value: units.Percent(share), Bar: bar(share),
			Note: units.Seconds(rest) + ": mixed batches, idle data-parallel ranks, the drafter"})
	}
	return rows
}

// requestTimeRow is the summed request time and, over the uptime, the mean
// number of requests in prefill or decode; "busy at most" where that mean
// is at most 1. Behind the proxy the uptime is the proxy's, and the mean
// counts the requests through it only: no busy share follows.
func (a *analyzer) requestTimeRow(e float64) report.Row {
	f := &a.r.Figures
	f.RequestSeconds = num(e)
	row := report.Row{ID: "request_time", Label: "request time", Value: units.Seconds(e) + " summed"}
	up, ok, why := a.uptime()
	if !ok {
		row.Note = noUptime(why) + ": no mean in flight"
		return row
	}
	mean := e / up
	row.Value = units.Seconds(e) + " over " + units.Seconds(up) + " up"
	if a.timeGuessed() && mean < implausibleInFlight && a.get(snapshot.RequestsTotal) > 0 {
		// A capture copied long after it was taken: its file time makes a
		// busy server look idle. No figure from that.
		row.Note = "uptime runs to " + a.timeSourceWords() + ", which may not be the scrape time"
		a.judge(&row, fileTimeNotScrapeTime, "requests in flight would average %s, implausible for a server that finished %s: the scrape time was taken as %s, which may be much later than the scrape; give the real time with --at TIME",
			inFlight(mean), units.Plural(a.get(snapshot.RequestsTotal), "request"), a.timeSourceWords())
		return row
	}
	f.MeanInFlight = num(mean)
	switch {
	case a.s.Via != "":
		row.Note = "mean " + inFlight(mean) + " in flight through the proxy, over the proxy's uptime"
	case mean <= 1:
		f.BusyAtMost = num(mean)
		row.Note = "mean " + inFlight(mean) + " in flight: busy at most " + units.Percent(mean)
	default:
		row.Note = "mean " + inFlight(mean) + " in flight: requests overlap, so no busy share"
	}
	return row
}

// inFlight writes a mean number of requests: "0.87", "3.40", then a count.
func inFlight(v float64) string {
	if v < 9.995 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return units.Count(v)
}

// timeGuessed reports a scrape time that is only the file's modification
// time or the moment stdin was read.
func (a *analyzer) timeGuessed() bool {
	return a.s.TimeSource == "mtime" || a.s.TimeSource == "now"
}

func (a *analyzer) timeSourceWords() string {
	if a.s.TimeSource == "now" {
		return "the moment it was read"
	}
	return "the file's modification time"
}

// breakEvenFactors are the speed-ups of the dominant phase the break-even
// rows weigh.
var breakEvenFactors = []float64{1.5, 2}

// phaseRows are the prefill/decode split of request time and the queue
// time beside it.
func (a *analyzer) phaseRows(pre, dec float64) []report.Row {
	f := &a.r.Figures
	e := pre + dec
	ps, ds := pre/e, dec/e
	f.PrefillShare, f.DecodeShare = num(ps), num(ds)
	rows := []report.Row{
		{ID: "prefill_share", Label: "prefill", Value: units.Percent(ps), Bar: bar(ps), Note: units.Seconds(pre) + " of request time"},
		{ID: "decode_share", Label: "decode", Value: units.Percent(ds), Bar: bar(ds), Note: units.Seconds(dec) + " of request time"},
	}
	if q := a.hist(snapshot.RequestQueueTimeSeconds); q != nil && q.Total() > 0 && !q.NoSum {
		rows = append(rows, report.Row{ID: "queued", Label: "queued behind others", Value: units.Seconds(q.Sum), Note: "not request time"})
	}
	return rows
}

// tradeRows are what the split means for a change of layout: the
// exchange rate between the two phases and the break-even of speeding the
// dominant one up, each with a plain sentence of what it means for this
// server. ps and ds are the phases' shares of what they are shares of,
// of: "request time", or the engine time at a probe's speeds (by says
// so, and starts each note).
func (a *analyzer) tradeRows(ps, ds float64, of, by, basis string) []report.Row {
	f := &a.r.Figures
	f.TradeBasis = ptr(basis)
	win, lose, hi, lo := "prefill", "decode", ps, ds
	if ds > ps {
		win, lose, hi, lo = "decode", "prefill", ds, ps
	}
	f.DominantPhase = ptr(win)
	if lo == 0 {
		return []report.Row{{ID: "exchange_rate", Label: "exchange rate", Value: win + " is all of it",
			Note: by + "all " + of + " is " + win + ": only " + win + " speed matters"}}
	}
	rate := hi / lo
	f.ExchangeRate = num(rate)
	rows := []report.Row{{ID: "exchange_rate", Label: "exchange rate",
		Value: "1% " + win + " ≈ " + exchangePercent(rate) + " " + lose,
		Note:  fmt.Sprintf("%s%s is %s of %s: 1%% less %s time pays for %s more %s time", by, win, units.Percent(hi), of, win, exchangePercent(rate), lose)}}
	f.BreakEven = []report.BreakEven{}
	for _, factor := range breakEvenFactors {
		// hi ≤ 1 and factor ≥ 1.5, so 1 − hi/factor ≥ 1/3: every factor
		// has a floor.
		floor := lo / (1 - hi/factor)
		f.BreakEven = append(f.BreakEven, report.BreakEven{Factor: report.Number(factor), Floor: report.Number(floor)})
		row := report.Row{ID: "break_even_" + strconv.FormatFloat(factor, 'f', -1, 64),
			Label: "break-even, " + units.Factor(factor) + " " + win, Value: units.Percent(floor) + " " + lose + " speed"}
		if floor >= 1 {
			row.Note = fmt.Sprintf("%smaking %s %s faster cannot pay for any slower %s", by, win, times(factor), lose)
			a.judge(&row, breakEvenNone, "")
		} else {
			row.Note = fmt.Sprintf("%sa layout that makes %s %s faster wins even if %s gets %s slower", by, win, times(factor), lose, times(1/floor))
			a.judge(&row, breakEvenPays, "")
		}
		rows = append(rows, row)
	}
	return rows
}

// times writes a factor for a sentence: "1.5×", "2×", "11×".
func times(f float64) string {
	s := strings.TrimSuffix(units.Factor(f), "x")
	return strings.TrimSuffix(s, ".0") + "×"
}

// exchangePercent formats hi/lo as a percentage: one decimal below 100,
// whole with thousands separators from 100 up.
func exchangePercent(rate float64) string {
	if rate < 99.95 {
		return strconv.FormatFloat(rate, 'f', 1, 64) + "%"
	}
	return units.Integer(rate) + "%"
}
