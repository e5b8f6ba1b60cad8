package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// bracketGrowth is how far past a bound that still met the target the
// search tries next, and bracketTries how many times, before it says the
// knee lies beyond the sweep.
const (
	bracketGrowth = 1.5
	bracketTries  = 2
)

// knee searches for the highest rate that meets the target: one request
// at a time (which must meet it, or nothing will), the ceiling, then open
// loops from the ceiling down, halving the bracket.
func (r *runner) knee(ctx context.Context) error {
	sync, err := r.step(ctx, PhaseSynchronous, 1, 0)
	if err != nil {
		return err
	}
	if !sync.SLO.Meets {
		r.res.Knee = r.kneeAt(nil, sync)
		return nil
	}
	tput, err := r.step(ctx, PhaseThroughput, r.cfg.Ceiling, 0)
	if err != nil {
		return err
	}
	lo, loStep := float64(sync.Summary.RequestRate.Mean), sync.Index
	ceiling := float64(tput.Summary.RequestRate.Mean)
	if math.IsNaN(ceiling) || ceiling <= 0 {
		r.res.Knee = r.kneeAt(sync, nil)
		return nil
	}
	hi := math.Max(ceiling, lo*bracketGrowth)
	var broke *Step
	left := r.cfg.Steps
	for try := 0; ; try++ {
		s, err := r.step(ctx, PhaseBracket, r.cfg.Cap, hi)
		if err != nil {
			return err
		}
		left--
		if !s.SLO.Meets {
			broke = s
			break
		}
		lo, loStep = hi, s.Index
		if try+1 >= bracketTries || left <= 0 {
			r.res.Knee = r.kneeAt(r.stepAt(loStep), nil)
			return nil
		}
		hi *= bracketGrowth
	}
	for left > 0 && hi-lo > r.cfg.Precision*ceiling {
		mid := (lo + hi) / 2
		s, err := r.step(ctx, PhaseRefine, r.cfg.Cap, mid)
		if err != nil {
			return err
		}
		left--
		if s.SLO.Meets {
			lo, loStep = mid, s.Index
		} else {
			hi, broke = mid, s
		}
	}
	r.res.Knee = r.kneeAt(r.stepAt(loStep), broke)
	return nil
}

func (r *runner) stepAt(index int) *Step { return &r.res.Steps[index-1] }

// loadOf is a step's load on the sweep's axis: its concurrency on a list
// of closed loops, else its rate, a closed loop's being the requests it
// completed a second.
func loadOf(axis string, s *Step) float64 {
	if axis == AxisConcurrency {
		return float64(s.Concurrency)
	}
	if s.Mode == "closed" {
		return float64(s.Summary.RequestRate.Mean)
	}
	return float64(s.Rate)
}

// orderOf is a step's place in the order of load: its load, the
// throughput step's (as many at once as the sweep sends) above every
// rate, a step with no load known first.
func orderOf(axis string, s *Step) float64 {
	if s.Phase == PhaseThroughput && axis == AxisRate {
		return math.Inf(1)
	}
	if v := loadOf(axis, s); !math.IsNaN(v) {
		return v
	}
	return math.Inf(-1)
}

// byLoad orders two steps by their load, the one run first among equals.
func byLoad(axis string, a, b *Step) int {
	x, y := orderOf(axis, a), orderOf(axis, b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return a.Index - b.Index
}

// kneeOfList is the knee of steps run as given (a list, or a search cut
// short): the highest load met below the lowest missed.
func kneeOfList(res *Result) *Knee {
	steps := make([]*Step, 0, len(res.Steps))
	for i := range res.Steps {
		if res.Steps[i].SLO != nil {
			steps = append(steps, &res.Steps[i])
		}
	}
	if len(steps) == 0 {
		return nil
	}
	slices.SortStableFunc(steps, func(a, b *Step) int { return byLoad(res.Axis, a, b) })
	var met, broke *Step
	for _, s := range steps {
		if !s.SLO.Meets {
			broke = s
			break
		}
		met = s
	}
	return kneeOf(res.Axis, met, broke)
}

func (r *runner) kneeAt(met, broke *Step) *Knee { return kneeOf(r.res.Axis, met, broke) }

// kneeOf states the knee between the step that met the target (nil:
// none did) and the one above it that broke (nil: none did).
func kneeOf(axis string, met, broke *Step) *Knee {
	nan := report.Number(math.NaN())
	k := &Knee{Axis: axis, Load: nan, Broke: nan, Width: nan}
	if met != nil {
		k.Load, k.Step = report.Number(loadOf(axis, met)), met.Index
	}
	if broke != nil {
		k.Broke, k.BrokeStep = report.Number(loadOf(axis, broke)), broke.Index
	}
	if met != nil && broke != nil {
		k.Width = k.Broke - k.Load
	}
	switch {
	case broke == nil && met == nil:
		k.Reason, k.Why = ReasonUnknown, "no step was judged"
	case broke == nil:
		k.Why = "every step met the target: the knee lies beyond the sweep"
	default:
		k.Reason, k.Phase, k.Verdict, k.Why = reason(met, broke)
	}
	return k
}

// reason says what gave way at the step that broke, against the step
// below it that met the target (nil: none did).
func reason(met, broke *Step) (why, phase, verdict, words string) {
	b := broke.Summary
	verdict = b.Verdict
	phase = phaseOf(broke)
	slo := broke.SLO
	missedShare := 1 - float64(slo.Share)
	head := fmt.Sprintf("%s of the requests missed the target", units.Percent(missedShare))
	failed, notSent := slo.Missed["failed"], slo.Missed["not_sent"]
	lat := map[string]int{"ttft": slo.Missed["ttft"], "tpot": slo.Missed["tpot"], "e2e": slo.Missed["e2e"]}
	most := max(lat["ttft"], lat["tpot"], lat["e2e"])
	clientBound := slices.ContainsFunc(broke.Runs, func(r *bench.Report) bool { return r.ClientBound })
	if strings.TrimSpace(phase) != "" {
		defer func() { words += "; the engine spent more of its request time in " + phase }()
	}
	switch {
	case clientBound:
		return ReasonClient, phase, verdict, head + ": the generator could not keep up (its run's notes say how), and the figures measure the machine that sent the load as much as the server"
	case notSent > most && notSent >= failed:
		return ReasonClient, phase, verdict, head + ": the generator could not send the load asked: " + units.Plural(float64(notSent), "arrival") + " were never sent"
	case failed > most:
		return ReasonErrors, phase, verdict, head + ": " + units.Plural(float64(failed), "request") + " failed"
	case slices.Contains(b.Verdicts, analysis.VerdictKVBound):
		return ReasonKVCache, phase, analysis.VerdictKVBound, head + fmt.Sprintf(": the KV cache was full (its usage reached %s with requests waiting): they waited for cache pages, not compute",
			units.Percent(float64(b.KVPeak.Max)))
	}
	// Which part of a request's time grew.
	ttftGrew := lat["ttft"]
	decodeGrew := lat["tpot"]
	if lat["e2e"] > max(lat["ttft"], lat["tpot"]) && met != nil {
		// E2E is the time to first token and the decode after it: the
		// part that grew more from the step below.
		m := met.Summary
		dt := grew(m.TTFTP50.Mean, b.TTFTP50.Mean)
		dd := grew(m.E2EP50.Mean-m.TTFTP50.Mean, b.E2EP50.Mean-b.TTFTP50.Mean)
		if dd > dt {
			decodeGrew = lat["e2e"]
		} else {
			ttftGrew = lat["e2e"]
		}
	}
	if decodeGrew > ttftGrew {
		return ReasonDecode, phase, verdict, head + fmt.Sprintf(": the time per output token reached %s at p50 (%s at the step below): each token took longer as more requests decoded together",
			units.Seconds(float64(b.TPOTP50.Mean)), stepValue(met, func(s Summary) report.Number { return s.TPOTP50.Mean }))
	}
	// The time to first token: the server's queue or its prefill.
	q, p := b.Queue.Mean, b.Prefill.Mean
	if known(q) && known(p) {
		var q0, p0 report.Number
		if met != nil {
			q0, p0 = met.Summary.Queue.Mean, met.Summary.Prefill.Mean
		}
		if q-q0 >= p-p0 {
			return ReasonQueue, phase, verdict, head + fmt.Sprintf(": the server's mean queue time rose to %s (%s at the step below) while prefill took %s: requests waited to be taken",
				units.Seconds(float64(q)), stepValue(met, func(s Summary) report.Number { return s.Queue.Mean }), units.Seconds(float64(p)))
		}
		return ReasonPrefill, phase, verdict, head + fmt.Sprintf(": the server's mean prefill time rose to %s (%s at the step below) while its queue took %s: prompts waited for prefill compute",
			units.Seconds(float64(p)), stepValue(met, func(s Summary) report.Number { return s.Prefill.Mean }), units.Seconds(float64(q)))
	}
	if w := b.Waiting.Mean; known(w) && w > 0 {
		return ReasonQueue, phase, verdict, head + fmt.Sprintf(": %s requests waited on average for the server to take them (its waiting gauge), the time to first token with them", mean2(float64(w)))
	}
	if phase != "" && ttftGrew > 0 {
		if phase == "prefill" {
			return ReasonPrefill, phase, verdict, head + ": the time to first token grew and the server publishes no queue time; prefill took the larger share of its request time"
		}
		return ReasonQueue, phase, verdict, head + ": the time to first token grew and the server publishes no queue time; decode took the larger share of its request time, so requests most likely waited behind it"
	}
	return ReasonUnknown, phase, verdict, head + ": the server publishes nothing that says why"
}

// grew is how much a figure rose from a to b (0 where either is not
// known).
func grew(a, b report.Number) float64 {
	if !known(a) || !known(b) {
		return 0
	}
	return float64(b - a)
}

func stepValue(s *Step, f func(Summary) report.Number) string {
	if s == nil {
		return "no step below"
	}
	return units.Seconds(float64(f(s.Summary)))
}

// phaseOf is the engine's larger phase over the step's runs, by the
// server's own prefill and decode time summed over the requests ("" where
// it publishes neither).
func phaseOf(s *Step) string {
	p, d := s.prefillSeconds, s.decodeSeconds
	switch {
	case !(p+d > 0):
		return ""
	case p >= d:
		return "prefill"
	}
	return "decode"
}

func known(v report.Number) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

func mean2(v float64) string {
	if v < 9.995 && v >= 0 {
		return fmt.Sprintf("%.2f", v)
	}
	return units.Count(v)
}
