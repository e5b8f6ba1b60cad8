package analysis

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// ProbeRun is what a probe (`inferscope bench --probe`) measured, as its
// notes judge it: each point's spread of speeds, its cold request beside
// them, and what makes its speeds other than they seem. A figure the
// probe could not have is NaN.
type ProbeRun struct {
	Points []ProbePoint
	// Busy counts the server's readings over which it counted work that
	// was not the probe's: no server figure came from them.
	Busy int
	// Partial says Ctrl-C stopped the probe.
	Partial bool
}

// ProbePoint is one prompt length of the prefill probe, or one batch size
// of the decode probe.
type ProbePoint struct {
	// What names it in the notes: "prefill at 2,048 tokens", "decode at
	// batch 4".
	What string
	// Min, Median and Max are the measured requests' speeds (prefill), or
	// the rounds' totals (decode), in tokens a second as the client timed
	// them; Cold is the cold one's, set aside.
	Min, Median, Max, Cold float64
	// Cached is the mean prompt tokens a cache served (prefill).
	Cached float64
	// Overlap is the least share of a round its requests decoded together
	// (decode); NaN (never judged) for prefill.
	Overlap float64
	// Failed counts the measured requests that failed; Short those that
	// ended before the output asked (decode).
	Failed, Short int
}

// JudgeProbe makes a probe's notes through the one table.
func JudgeProbe(in ProbeRun) []report.Note {
	var out []report.Note
	note := func(b band, format string, args ...any) {
		j := judgements[b]
		out = append(out, report.Note{ID: j.note, Severity: j.severity(), Text: fmt.Sprintf(format, args...)})
	}
	var overlap, spread, cold, cached, short, failed []string
	for _, p := range in.Points {
		if p.Overlap < overlapLow {
			overlap = append(overlap, fmt.Sprintf("%s for %s of a round", p.What, units.Percent(p.Overlap)))
		}
		if p.Min > 0 && p.Max/p.Min >= spreadWide {
			spread = append(spread, fmt.Sprintf("%s from %s to %s tok/s", p.What, units.Count(p.Min), units.Count(p.Max)))
		}
		if p.Cold > 0 && p.Median/p.Cold >= coldSlow {
			cold = append(cold, fmt.Sprintf("%s: %s tok/s against %s", p.What, units.Count(p.Cold), units.Count(p.Median)))
		}
		if p.Cached > 0 {
			cached = append(cached, p.What+": "+units.Count(p.Cached)+" "+units.Noun(p.Cached, "token"))
		}
		if p.Short > 0 {
			short = append(short, fmt.Sprintf("%s: %d", p.What, p.Short))
		}
		if p.Failed > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d", p.What, p.Failed))
		}
	}
	if len(overlap) > 0 {
		note(probeOverlapLow, "the requests of a round decoded together only part of the time (%s): the server ran fewer of them at once than asked (its slots or its batch), or prefilled them one after another; the total is what they did together, not what the batch size would",
			strings.Join(overlap, "; "))
	}
	if len(spread) > 0 {
		note(probeSpreadWide, "the measured speeds are spread wide (%s): the server, or the machine it shares, did other work meanwhile. Probe again with more --probe-repeat, or on a quieter server",
			strings.Join(spread, "; "))
	}
	if in.Busy > 0 {
		note(probeServerBusy, "over %s the server counted work that was not the probe's (another client): the server-side speeds leave them out, and the client's speeds shared the server with it",
			units.Plural(float64(in.Busy), "reading"))
	}
	if len(cold) > 0 {
		note(probeColdSlow, "the cold request was slower than the measured ones (%s): the first of its size paid for a warm-up (kernel tuning, a graph captured, memory mapped), and was set aside",
			strings.Join(cold, "; "))
	}
	if len(cached) > 0 {
		note(probeCached, "the server served part of each prompt from a cache (%s on average: a chat template, a BOS token before the prompt's own first words); the speeds count the tokens computed, without them",
			strings.Join(cached, "; "))
	}
	if len(short) > 0 {
		note(probeEarlyStops, "answers ended before the output asked (%s): the server does not honour ignore_eos; their speeds are of the tokens they had, and a round's total holds fewer tokens towards its end",
			strings.Join(short, "; "))
	}
	if len(failed) > 0 {
		note(probeErrors, "requests failed (%s): the speeds are of the others, and a round with a failure gives no total",
			strings.Join(failed, "; "))
	}
	if in.Partial {
		note(probePartial, "the probe was interrupted: the points it finished are reported")
	}
	return out
}
