package sweep

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/spark"
	"github.com/inferscope/inferscope/internal/units"
)

// TextOptions lay the text report out.
type TextOptions struct {
	Render render.Options
}

// Text writes res for a person: what ran and the knee, the steps in a
// table ordered by load (their spread over the repeats in another), each
// figure's curve against the load as the watch view draws a trend, the
// notes, then a small block chart of the requests completed a second at
// each load, each step marked met or missed.
func Text(w io.Writer, res *Result, o TextOptions) error {
	if err := render.Text(w, res.Sections(o.Render.Glyphs), o.Render); err != nil {
		return err
	}
	chart := res.chart(o.Render.Glyphs, o.Render.Width)
	if len(chart) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"+strings.Join(chart, "\n")+"\n"); err != nil {
		return fmt.Errorf("render: writing report: %w", err)
	}
	return nil
}

// JSON writes res as one indented JSON object (docs/json.md).
func JSON(w io.Writer, res *Result) error {
	return render.JSONValue(w, res, render.JSONOptions{})
}

// ByLoad is the steps in the order of their load on the sweep's axis (the
// throughput step, as many at once as the sweep sends, above every rate),
// the run order among equals: the order the text draws its curves in.
func (res *Result) ByLoad() []*Step {
	out := make([]*Step, len(res.Steps))
	for i := range res.Steps {
		out[i] = &res.Steps[i]
	}
	slices.SortStableFunc(out, func(a, b *Step) int { return byLoad(res.Axis, a, b) })
	return out
}

// Sections is the sweep as a report: its sections and notes.
func (res *Result) Sections(g spark.Glyphs) *report.Report {
	src := res.Target
	for _, s := range []string{res.API, res.Model} {
		if s != "" {
			src += " · " + s
		}
	}
	out := &report.Report{Schema: analysis.Schema, Dialect: "bench sweep", SourceKind: "bench", Source: src, Version: res.Version}
	if !res.StartedAt.IsZero() {
		out.Header = append(out.Header, "started "+res.StartedAt.Format("2006-01-02 15:04:05 MST")+" · "+res.profileWords())
	}
	if res.Partial {
		out.Header = append(out.Header, "interrupted: the steps run are reported (partial)")
	}
	out.Sections = append(out.Sections, res.sweepSection())
	if len(res.Steps) > 0 {
		out.Sections = append(out.Sections, res.stepsSection())
		if res.Repeat > 1 {
			out.Sections = append(out.Sections, res.spreadSection())
		}
		if s, ok := res.curvesSection(); ok {
			out.Sections = append(out.Sections, s)
		}
	}
	out.Notes = res.Notes
	return out
}

// profileWords says how the steps were chosen.
func (res *Result) profileWords() string {
	var s string
	switch res.Profile {
	case ProfileConcurrency:
		s = "concurrency list"
	case ProfileRate:
		s = "rate list"
	case ProfileAuto:
		s = "automatic profile: one at a time, the ceiling, then rates between"
	case ProfileKnee:
		s = "knee search: one at a time, the ceiling, rates bracketed and halved"
	case ProfileRepeat:
		s = "one load, repeated"
	}
	return s
}

// sayLoad writes a load on the sweep's axis.
func (res *Result) sayLoad(v float64) string {
	if math.IsNaN(v) {
		return units.Missing
	}
	if res.Axis == AxisConcurrency {
		return units.Integer(v) + " in flight"
	}
	return units.Count(v) + " req/s"
}

// stepLoad writes a step's load as it was asked: in flight, or a rate.
func stepLoad(s *Step) string {
	switch s.Mode {
	case "closed":
		return units.Integer(float64(s.Concurrency)) + " in flight"
	case "open, capped":
		return units.Count(float64(s.Rate)) + " req/s, ≤ " + units.Integer(float64(s.Concurrency)) + " in flight"
	}
	return units.Count(float64(s.Rate)) + " req/s"
}

// stepLabel names a step in a table: its index and load, and the two
// steps of the automatic profile that are not rates by what they are.
func stepLabel(s *Step) string {
	return fmt.Sprintf("%d. %s", s.Index, stepLabelLoad(s))
}

func (res *Result) sweepSection() report.Section {
	sec := report.Section{ID: "sweep", Title: "Sweep", Wide: true}
	n := len(res.Steps)
	runs := 0
	for _, s := range res.Steps {
		runs += len(s.Runs)
	}
	note := units.Plural(float64(runs), "run") + ", each reported as one bench run is"
	if res.Repeat > 1 {
		note = fmt.Sprintf("%s, each step run %d times; each run reported as one bench run is", units.Plural(float64(runs), "run"), res.Repeat)
	}
	sec.Rows = append(sec.Rows, report.Row{ID: "steps", Label: "steps", Value: units.Integer(float64(n)), Note: note})
	if t := res.SLO; t != nil {
		sec.Rows = append(sec.Rows, report.Row{ID: "slo", Label: "target", Value: t.Limits, Note: units.Percent(float64(t.Share)) + " of a step's requests within every limit (failed and unsent ones miss it)"})
	}
	k := res.Knee
	if k == nil {
		return sec
	}
	switch {
	case k.Step > 0 && k.BrokeStep > 0:
		sec.Rows = append(sec.Rows,
			report.Row{ID: "knee", Label: "knee", Value: res.sayLoad(float64(k.Load)), Note: fmt.Sprintf("met at step %d; missed at %s (step %d): known within %s", k.Step, res.sayLoad(float64(k.Broke)), k.BrokeStep, res.sayLoad(float64(k.Width)))})
	case k.BrokeStep > 0:
		sec.Rows = append(sec.Rows, report.Row{ID: "knee", Label: "knee", Value: "none", Note: fmt.Sprintf("missed from the lowest load, %s (step %d)", res.sayLoad(float64(k.Broke)), k.BrokeStep), Severity: report.Warn})
	case k.Step > 0:
		sec.Rows = append(sec.Rows, report.Row{ID: "knee", Label: "knee", Value: "≥ " + res.sayLoad(float64(k.Load)), Note: fmt.Sprintf("met at every step, up to step %d: beyond the sweep", k.Step)})
	}
	if k.BrokeStep > 0 {
		reason := reasonWords[k.Reason]
		note := ""
		if k.Phase != "" {
			note = "the engine's larger phase: " + k.Phase
		}
		sec.Rows = append(sec.Rows, report.Row{ID: "reason", Label: "reason", Value: reason, Note: note})
	}
	return sec
}

// reasonWords name each reason in a row.
var reasonWords = map[string]string{
	ReasonKVCache: "the KV cache",
	ReasonQueue:   "the queue",
	ReasonPrefill: "prefill time",
	ReasonDecode:  "decode time",
	ReasonErrors:  "errors",
	ReasonClient:  "the generator",
	ReasonUnknown: "not published",
}

// verdictWords name each verdict in a cell: what bound the run.
var verdictWords = map[string]string{
	analysis.VerdictSaturated:    "saturated",
	analysis.VerdictKVBound:      "KV cache",
	analysis.VerdictPrefillBound: "prefill",
	analysis.VerdictDecodeBound:  "decode",
	"mixed":                      "mixed",
	"":                           units.Missing,
}

func say(v report.Number) string { return units.Seconds(float64(v)) }

func sayCount(v report.Number) string { return units.Count(float64(v)) }

func sayPercent(v report.Number) string { return units.Percent(float64(v)) }

// columns are the steps table's figures, each a Spread of the summary
// and how to write it.
var columns = []struct {
	head string
	get  func(Summary) Spread
	say  func(report.Number) string
}{
	{"req/s", func(s Summary) Spread { return s.RequestRate }, sayCount},
	{"TTFT p50", func(s Summary) Spread { return s.TTFTP50 }, say},
	{"TTFT p99", func(s Summary) Spread { return s.TTFTP99 }, say},
	{"TPOT p50", func(s Summary) Spread { return s.TPOTP50 }, say},
	{"TPOT p99", func(s Summary) Spread { return s.TPOTP99 }, say},
}

func (res *Result) stepsSection() report.Section {
	t := &report.Table{Header: report.List[string]{"step, load"}}
	for _, c := range columns {
		t.Header = append(t.Header, c.head)
	}
	if res.SLO != nil {
		t.Header = append(t.Header, "good")
	}
	t.Header = append(t.Header, "verdict")
	for _, s := range res.ByLoad() {
		var cells report.List[string]
		for _, c := range columns {
			cells = append(cells, c.say(c.get(s.Summary).Mean))
		}
		if res.SLO != nil {
			g := units.Missing
			if s.SLO != nil {
				g = sayPercent(s.SLO.Share)
				if !s.SLO.Meets {
					g += " ✗"
				}
			}
			cells = append(cells, g)
		}
		cells = append(cells, verdictWords[s.Summary.Verdict])
		t.Rows = append(t.Rows, report.TableRow{ID: fmt.Sprint(s.Index), Label: stepLabel(s), Cells: cells})
	}
	sec := report.Section{ID: "steps", Title: "Steps, by load", Wide: true, Table: t}
	if res.Repeat > 1 {
		sec.Rows = append(sec.Rows, report.Row{Note: fmt.Sprintf("each figure the mean of the step's %d runs; their spread below", res.Repeat)})
	}
	return sec
}

func (res *Result) spreadSection() report.Section {
	t := &report.Table{Header: report.List[string]{"step, load", "runs"}}
	for _, c := range columns {
		t.Header = append(t.Header, c.head)
	}
	for _, s := range res.ByLoad() {
		cells := report.List[string]{units.Integer(float64(s.Summary.Runs))}
		for _, c := range columns {
			sp := c.get(s.Summary)
			cells = append(cells, spreadWords(sp, c.say))
		}
		t.Rows = append(t.Rows, report.TableRow{ID: fmt.Sprint(s.Index), Label: stepLabel(s), Cells: cells})
	}
	return report.Section{ID: "spread", Title: "Spread over the runs: lowest–highest", Wide: true, Table: t}
}

// spreadWords writes a figure's range over the runs ("35 ms–41 ms"), one
// value where they agree.
func spreadWords(s Spread, f func(report.Number) string) string {
	if s.N == 0 {
		return units.Missing
	}
	lo, hi := f(s.Min), f(s.Max)
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

// curves are the figures drawn against the load.
var curves = []struct {
	id, label string
	get       func(Summary) Spread
	say       func(float64) string
	floor     bool
}{
	{"request_rate", "completed", func(s Summary) Spread { return s.RequestRate }, func(v float64) string { return units.Count(v) + "/s" }, false},
	{"goodput_rate", "goodput", func(s Summary) Spread { return s.GoodputRate }, func(v float64) string { return units.Count(v) + "/s" }, false},
	{"output_rate", "output tokens", func(s Summary) Spread { return s.OutputRate }, func(v float64) string { return units.Count(v) + "/s" }, false},
	{"ttft_p50", "TTFT p50", func(s Summary) Spread { return s.TTFTP50 }, units.Seconds, true},
	{"ttft_p99", "TTFT p99", func(s Summary) Spread { return s.TTFTP99 }, units.Seconds, true},
	{"tpot_p50", "TPOT p50", func(s Summary) Spread { return s.TPOTP50 }, units.Seconds, true},
	{"tpot_p99", "TPOT p99", func(s Summary) Spread { return s.TPOTP99 }, units.Seconds, true},
	{"waiting", "server waiting", func(s Summary) Spread { return s.Waiting }, units.Count, false},
	{"kv_peak", "server KV peak", func(s Summary) Spread { return s.KVPeak }, units.Percent, false},
}

// curvesSection draws each figure over the steps by load, one cell a
// step, as the watch view draws a trend; the value is the figure at the
// highest load.
func (res *Result) curvesSection() (report.Section, bool) {
	steps := res.ByLoad()
	sec := report.Section{ID: "curves", Title: "Against load, " + stepLoad(steps[0]) + " to " + stepLoad(steps[len(steps)-1]), Wide: true}
	if len(steps) < 2 {
		return sec, false
	}
	for _, c := range curves {
		vals := make(report.List[report.Number], len(steps))
		have := 0
		for i, s := range steps {
			// Four figures: the picture draws the curve, not the noise
			// of the last digits (a flat line stays flat).
			vals[i] = round4(c.get(s.Summary).Mean)
			if known(vals[i]) {
				have++
			}
		}
		if have == 0 {
			continue
		}
		last := vals[len(vals)-1]
		value := units.Missing
		if known(last) {
			value = c.say(float64(last))
		}
		sec.Rows = append(sec.Rows, report.Row{ID: c.id, Label: c.label, Value: value,
			Trend: &report.Trend{Values: vals, FromFloor: c.floor, Say: c.say}})
	}
	sec.Rows = append(sec.Rows, report.Row{Note: "one cell a step in the order of the table above; the value is the last step's"})
	return sec, len(sec.Rows) > 1
}

// round4 rounds v to four significant figures.
func round4(v report.Number) report.Number {
	f := float64(v)
	if !known(v) || f == 0 {
		return v
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(f))))
	return report.Number(math.Round(f*scale) / scale)
}

// chartHeight is the block chart's height in rows.
const chartHeight = 6

// chart draws the requests completed a second at each load as columns of
// blocks, chartHeight rows high (a cell is eighths), each step marked
// under the axis: met or missed the target where one was given.
func (res *Result) chart(g spark.Glyphs, width int) []string {
	steps := res.ByLoad()
	if len(steps) < 2 {
		return nil
	}
	vals := make([]float64, len(steps))
	top := 0.0
	for i, s := range steps {
		vals[i] = float64(s.Summary.RequestRate.Mean)
		if !math.IsNaN(vals[i]) {
			top = math.Max(top, vals[i])
		}
	}
	if !(top > 0) {
		return nil
	}
	const colW = 3
	labelW := max(len([]rune(units.Count(top))), 1)
	if w := 2 + labelW + 2 + colW*len(steps); width > 0 && w > width {
		return nil
	}
	out := []string{"Completed against load (req/s), a column a step"}
	pad := strings.Repeat(" ", 2)
	for row := chartHeight; row >= 1; row-- {
		label := strings.Repeat(" ", labelW)
		if row == chartHeight {
			label = fmt.Sprintf("%*s", labelW, units.Count(top))
		}
		var b strings.Builder
		b.WriteString(pad + label + " │")
		for _, v := range vals {
			b.WriteString(cellOf(v, top, row, g) + cellOf(v, top, row, g) + " ")
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	axis, corner := "─", "└"
	if g == spark.ASCII {
		axis, corner = "-", "+"
	}
	out = append(out, pad+fmt.Sprintf("%*s", labelW, "0")+" "+corner+strings.Repeat(axis, colW*len(steps)))
	if res.SLO != nil {
		met, missed := "✓", "✗"
		if g == spark.ASCII {
			met, missed = "+", "x"
		}
		var b strings.Builder
		b.WriteString(pad + strings.Repeat(" ", labelW+2))
		for _, s := range steps {
			m := " "
			if s.SLO != nil {
				m = missed
				if s.SLO.Meets {
					m = met
				}
			}
			b.WriteString(m + "  ")
		}
		out = append(out, strings.TrimRight(b.String(), " ")+"   "+met+" met the target, "+missed+" missed it")
	}
	out = append(out, pad+strings.Repeat(" ", labelW+2)+stepLoad(steps[0])+" to "+stepLoad(steps[len(steps)-1])+", in the order of the steps' table")
	return out
}

// cellOf is the glyph of a column of value v (top the chart's top) at
// row (1 the bottom): full below the value's height, a part of eighths at
// it, blank above.
func cellOf(v, top float64, row int, g spark.Glyphs) string {
	if math.IsNaN(v) {
		return " "
	}
	eighths := int(math.Round(v / top * chartHeight * spark.Levels))
	if v > 0 {
		eighths = max(eighths, 1) // nothing above zero reads as zero
	}
	full := (row - 1) * spark.Levels
	switch {
	case eighths >= full+spark.Levels:
		return g.Level(spark.Levels)
	case eighths <= full:
		return " "
	}
	return g.Level(eighths - full)
}
