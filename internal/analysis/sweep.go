package analysis

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// SweepRun is what a sweep (`inferscope bench --sweep`) found beyond its
// runs, each of which is judged as a load run ([JudgeBench]): where its
// target broke, and what makes its steps other than they seem. Words are
// the sweep's own (the loads, the reason), put in the notes as given.
type SweepRun struct {
	// Knee is the knee search's outcome; nil without a target.
	Knee *SweepKnee
	// NotIdle are the steps a run of which started before the server's
	// running and waiting requests read zero, within DrainLimit (as
	// written).
	NotIdle    []int
	DrainLimit string
	// NoRoom says the throughput step completed no more requests a
	// second than the synchronous one (Sync, Ceiling: as written).
	NoRoom        bool
	Sync, Ceiling string
	// Spreads are each step's completed requests a second over its runs.
	Spreads []SweepSpread
}

// SweepKnee is where a sweep's target broke.
type SweepKnee struct {
	// Target says the target ("ttft=500ms for 95% of requests").
	Target string
	// Met and Broke say the highest load that met the target and the
	// lowest above it that did not ("" where there is none); Why says
	// why it broke there.
	Met, Broke, Why string
}

// SweepSpread is one step's completed requests a second over its runs.
type SweepSpread struct {
	Step            int
	Runs            int
	Mean, Stdev     float64
	Lowest, Highest string // as written
}

// JudgeSweep judges a sweep through the table: its knee, then the flags on
// its steps.
func JudgeSweep(in SweepRun) []report.Note {
	var out []report.Note
	note := func(b band, format string, args ...any) {
		jd := judgements[b]
		out = append(out, report.Note{ID: jd.note, Severity: jd.severity(), Text: fmt.Sprintf(format, args...)})
	}
	if k := in.Knee; k != nil {
		switch {
		case k.Met != "" && k.Broke != "":
			note(sweepKnee, "the target (%s) held up to %s and broke at %s: %s", k.Target, k.Met, k.Broke, k.Why)
		case k.Met != "":
			note(sweepKneeBeyond, "the target (%s) held at every step, up to %s: the knee lies beyond the sweep. More load, or longer runs (a backlog grows with the run), would find it", k.Target, k.Met)
		case k.Broke != "":
			note(sweepTargetUnmet, "the target (%s) was missed from the lowest load, %s: %s. No lower load meets it: a looser target, or a faster server", k.Target, k.Broke, k.Why)
		}
	}
	if len(in.NotIdle) > 0 {
		steps := make([]string, len(in.NotIdle))
		for i, s := range in.NotIdle {
			steps[i] = fmt.Sprint(s)
		}
		note(sweepNotIdle, "a run of step %s started before the server was idle: its running or waiting requests did not return to zero within %s, and what it still ran lies in that run's figures. Another client, or requests the server kept running; give --drain longer",
			strings.Join(steps, ", "), in.DrainLimit)
	}
	if in.NoRoom {
		note(sweepNoRoom, "many requests at once completed %s req/s, no more than one at a time did (%s): the server gains nothing from running requests together at this workload, and there are no rates between to run", in.Ceiling, in.Sync)
	}
	for _, s := range in.Spreads {
		if s.Runs < 2 || !(s.Mean > 0) || s.Stdev < sweepSpread*s.Mean {
			continue
		}
		note(sweepSpreadWide, "the %d runs of step %d completed %s to %s req/s (a standard deviation of %s of their mean): the figures do not repeat at this length, and comparing them needs longer runs",
			s.Runs, s.Step, s.Lowest, s.Highest, units.Percent(s.Stdev/s.Mean))
	}
	return out
}
