package sweep

import (
	"math"
	"slices"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// spreadOf states values (NaN ones left out: a run that had no such
// figure).
func spreadOf(values []float64) Spread {
	nan := report.Number(math.NaN())
	vs := slices.DeleteFunc(slices.Clone(values), func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
	if len(vs) == 0 {
		return Spread{Mean: nan, Min: nan, Max: nan, Stdev: nan}
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(len(vs))
	s := Spread{N: len(vs), Mean: report.Number(mean), Min: report.Number(slices.Min(vs)), Max: report.Number(slices.Max(vs)), Stdev: nan}
	if len(vs) > 1 {
		ss := 0.0
		for _, v := range vs {
			ss += (v - mean) * (v - mean)
		}
		s.Stdev = report.Number(math.Sqrt(ss / float64(len(vs)-1)))
	}
	return s
}

// over is f of every run, NaN where it has none.
func over[T any](xs []T, f func(T) float64) Spread {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return spreadOf(vs)
}

// summarize states a step's runs together.
func summarize(runs []*bench.Report, taps []*tap) Summary {
	s := Summary{Runs: len(runs), Verdicts: []string{}, Notes: []string{}}
	for _, r := range runs {
		s.Sent += r.Client.Sent
		s.Completed += r.Client.Completed
		s.Failed += r.Client.Failed
		s.Verdicts = append(s.Verdicts, r.Verdict)
		for _, n := range r.Notes {
			if !slices.Contains(s.Notes, n.ID) {
				s.Notes = append(s.Notes, n.ID)
			}
		}
	}
	slices.Sort(s.Notes)
	c := func(f func(bench.Client) report.Number) Spread {
		return over(runs, func(r *bench.Report) float64 { return float64(f(r.Client)) })
	}
	s.RequestRate = c(func(c bench.Client) report.Number { return c.RequestRate })
	s.OutputRate = c(func(c bench.Client) report.Number { return c.OutputRate })
	s.GoodputRate = c(func(c bench.Client) report.Number {
		if c.Goodput == nil {
			return report.Number(math.NaN())
		}
		return c.Goodput.Rate
	})
	s.GoodShare = c(func(c bench.Client) report.Number {
		if c.Goodput == nil {
			return report.Number(math.NaN())
		}
		return c.Goodput.Share
	})
	s.TTFTP50 = c(func(c bench.Client) report.Number { return c.TTFT.P50 })
	s.TTFTP99 = c(func(c bench.Client) report.Number { return c.TTFT.P99 })
	s.TPOTP50 = c(func(c bench.Client) report.Number { return c.TPOT.P50 })
	s.TPOTP99 = c(func(c bench.Client) report.Number { return c.TPOT.P99 })
	s.E2EP50 = c(func(c bench.Client) report.Number { return c.E2E.P50 })
	s.E2EP99 = c(func(c bench.Client) report.Number { return c.E2E.P99 })
	s.ITLP99 = c(func(c bench.Client) report.Number { return c.ITL.P99 })
	s.Waiting = over(taps, func(t *tap) float64 { return t.waiting })
	s.KVPeak = over(taps, func(t *tap) float64 { return t.kvPeak })
	s.Queue = over(taps, func(t *tap) float64 { return t.queue })
	s.Prefill = over(taps, func(t *tap) float64 { return t.prefill })
	s.Verdict = agreed(s.Verdicts)
	return s
}

// agreed is the verdict every run had, "mixed" where they differ.
func agreed(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return "mixed"
		}
	}
	return vs[0]
}

// stepSLO judges a step's runs together against the target.
func stepSLO(runs []*bench.Report, taps []*tap, share float64) *StepSLO {
	out := &StepSLO{Missed: map[string]int{}}
	for i, r := range runs {
		t := taps[i]
		out.Good += t.good
		out.Of += r.Client.Completed + r.Client.Failed + r.Client.Dropped
		for k, v := range t.missed {
			out.Missed[k] += v
		}
		if r.Client.Dropped > 0 {
			out.Missed["not_sent"] += r.Client.Dropped
		}
	}
	out.Share = report.Number(math.NaN())
	if out.Of > 0 {
		out.Share = report.Number(float64(out.Good) / float64(out.Of))
		out.Meets = float64(out.Good) >= share*float64(out.Of)
	}
	return out
}

// ttftBounds are the TTFT histogram's buckets: 1, 2 and 5 in each decade
// from a millisecond to ten minutes, alike in every step so that steps
// compare bucket by bucket.
var ttftBounds = []float64{
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
	1, 2, 5, 10, 20, 50, 100, 200, 500,
}

// ttftHistogram buckets the completed requests' TTFT of every run.
func ttftHistogram(taps []*tap) Histogram {
	h := Histogram{Bounds: make([]report.Number, len(ttftBounds)), Counts: make([]int, len(ttftBounds)+1)}
	for i, b := range ttftBounds {
		h.Bounds[i] = report.Number(b)
	}
	for _, t := range taps {
		for _, v := range t.ttfts {
			i, _ := slices.BinarySearch(ttftBounds, v)
			h.Counts[i]++
		}
	}
	return h
}

// finish reads the server's figures over the run's window from the
// scrapes the run took: those from the measured part's start on (the
// warm-up's left out), the last after the drain.
func (t *tap) finish(rep *bench.Report) {
	nan := math.NaN()
	t.waiting, t.kvPeak, t.queue, t.prefill, t.prefillSeconds, t.decodeSeconds = nan, nan, nan, nan, nan, nan
	win := t.scr
	if rep.Client.Warmup > 0 && !math.IsNaN(float64(rep.MeasuredFrom)) {
		// The window's first scrape is taken as the measured part
		// starts, its scrape begun within moments of it.
		from := rep.StartedAt.Add(time.Duration(float64(rep.MeasuredFrom)*float64(time.Second)) - 50*time.Millisecond)
		i := slices.IndexFunc(win, func(s scrapeAt) bool { return !s.at.Before(from) })
		if i < 0 {
			return
		}
		win = win[i:]
	}
	if len(win) < 2 {
		return
	}
	// The gauges while the load ran: the window's first scrape is taken
	// before its first request (the baseline, without a warm-up), its
	// last after the drain; with none between, the gauges say nothing
	// of the load.
	var waiting []float64
	for _, s := range win[1 : len(win)-1] {
		if v, ok := s.s.Scalar(snapshot.RequestsDeferred); ok {
			waiting = append(waiting, v)
		}
		if v, ok := analysis.KVUsage(s.s); ok && (math.IsNaN(t.kvPeak) || v > t.kvPeak) {
			t.kvPeak = v
		}
	}
	if len(waiting) > 0 {
		t.waiting = float64(spreadOf(waiting).Mean)
	}
	d, ok := rates.Between(win[0].s, win[len(win)-1].s)
	if !ok {
		return
	}
	mean := func(name string) float64 {
		h, ok := d.Hists[name]
		if !ok || h.Count <= 0 || h.NoSum {
			return nan
		}
		return h.Sum / h.Count
	}
	t.queue = mean(snapshot.RequestQueueTimeSeconds)
	t.prefill = mean(snapshot.RequestPrefillTimeSeconds)
	if v, ok := d.Counters[snapshot.PromptSecondsTotal]; ok {
		t.prefillSeconds = v
	}
	if v, ok := d.Counters[snapshot.TokensPredictedSecondsTotal]; ok {
		t.decodeSeconds = v
	}
}
