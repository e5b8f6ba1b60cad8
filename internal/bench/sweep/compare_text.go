package sweep

import (
	"fmt"
	"io"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// CompareText writes c for a person: what was compared, then each load
// both ran with every figure's move (coloured where it went beyond the
// runs' spread: good for the better, warn for the worse; dim within it),
// the notes that appeared or cleared, and the knees.
func CompareText(w io.Writer, c *Comparison, o TextOptions) error {
	return render.Text(w, c.Sections(), o.Render)
}

// Sections is the comparison as a report.
func (c *Comparison) Sections() *report.Report {
	out := &report.Report{Schema: analysis.Schema, Dialect: "bench compare", SourceKind: "bench", Source: c.A.Name + " → " + c.B.Name}
	for _, s := range []struct {
		tag  string
		side Side
	}{{"A", c.A}, {"B", c.B}} {
		h := s.tag + ": " + s.side.Name
		for _, v := range []string{s.side.Target, s.side.Model} {
			if v != "" {
				h += " · " + v
			}
		}
		if !s.side.StartedAt.IsZero() {
			h += " · started " + s.side.StartedAt.Format("2006-01-02 15:04:05 MST")
		}
		h += fmt.Sprintf(" · %s a step", units.Plural(float64(s.side.Repeat), "run"))
		out.Header = append(out.Header, h)
	}
	out.Sections = append(out.Sections, c.summarySection())
	for _, s := range c.Steps {
		out.Sections = append(out.Sections, s.section())
	}
	return out
}

func (c *Comparison) summarySection() report.Section {
	sec := report.Section{ID: "compared", Title: "B against A", Wide: true}
	moved := fmt.Sprintf("%d better, %d worse", c.Better, c.Worse)
	if n := c.Moved - c.Better - c.Worse; n > 0 {
		moved += fmt.Sprintf(", %d neither", n)
	}
	sev := report.None
	switch {
	case c.Worse > 0:
		sev = report.Warn
	case c.Better > 0:
		sev = report.Good
	}
	sec.Rows = append(sec.Rows, report.Row{ID: "moved", Label: "beyond the spread", Value: units.Plural(float64(c.Moved), "figure"), Note: moved, Severity: sev})
	sec.Rows = append(sec.Rows, report.Row{ID: "steps", Label: "loads in both", Value: units.Integer(float64(len(c.Steps))),
		Note: onlyWords(c.OnlyA, "A") + onlyWords(c.OnlyB, "B")})
	if c.A.Repeat < 2 || c.B.Repeat < 2 {
		sec.Rows = append(sec.Rows, report.Row{Note: "a side ran each step once: no spread to judge a move by, so none is called one (run both with --repeat 3)"})
	}
	if k := c.Knee; k != nil {
		sayK := func(k *Knee) string {
			switch {
			case k.Step > 0 && k.BrokeStep > 0:
				return units.Count(float64(k.Load)) + "–" + kneeLoad(k, k.Broke)
			case k.Step > 0:
				return "≥ " + kneeLoad(k, k.Load)
			case k.BrokeStep > 0:
				return "< " + kneeLoad(k, k.Broke)
			}
			return units.Missing
		}
		note := "A met the target up to the first, and missed it at the second"
		sev := report.None
		switch k.Moved {
		case MovedUp:
			note, sev = "up: B met the target at a load A missed it", report.Good
		case MovedDown:
			note, sev = "down: B missed the target at a load A met it", report.Warn
		case MovedWithin:
			note = "within: the brackets overlap"
		}
		sec.Rows = append(sec.Rows, report.Row{ID: "knee", Label: "knee", Value: sayK(k.A) + " → " + sayK(k.B), Note: note, Severity: sev})
	}
	return sec
}

func kneeLoad(k *Knee, v report.Number) string {
	if k.Axis == AxisConcurrency {
		return units.Integer(float64(v)) + " in flight"
	}
	return units.Count(float64(v)) + " req/s"
}

func onlyWords(steps []int, side string) string {
	if len(steps) == 0 {
		return ""
	}
	s := make([]string, len(steps))
	for i, v := range steps {
		s[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("only in %s: step %s; ", side, strings.Join(s, ", "))
}

// section is one load's figures, A → B.
func (s StepChange) section() report.Section {
	sec := report.Section{ID: fmt.Sprintf("step_%d", s.StepA), Title: fmt.Sprintf("%s (A step %d, B step %d)", s.Load, s.StepA, s.StepB)}
	for _, f := range s.Figures {
		w := figureWords[f.Figure]
		row := report.Row{ID: f.Figure, Label: w.label, Value: w.say(f.A.Mean) + " → " + w.say(f.B.Mean)}
		change := changeWords(f, w.say)
		switch f.Moved {
		case MovedUp, MovedDown:
			row.Note = change + ": " + f.Better + " beyond the spread (A " + spreadWords(f.A, w.say) + ", B " + spreadWords(f.B, w.say) + ")"
			if f.Better == "" {
				row.Note = change + ": beyond the spread (A " + spreadWords(f.A, w.say) + ", B " + spreadWords(f.B, w.say) + ")"
			}
			switch f.Better {
			case "better":
				row.Severity = report.Good
			case "worse":
				row.Severity = report.Warn
			}
		case MovedWithin:
			row.Note, row.Severity = change+": within the spread", report.Dim
		default:
			row.Note = change
		}
		sec.Rows = append(sec.Rows, row)
	}
	if s.VerdictA != s.VerdictB {
		sec.Rows = append(sec.Rows, report.Row{ID: "verdict", Label: "verdict", Value: verdictWords[s.VerdictA] + " → " + verdictWords[s.VerdictB]})
	}
	if len(s.Appeared) > 0 {
		sec.Rows = append(sec.Rows, report.Row{ID: "appeared", Label: "notes appeared", Value: strings.Join(s.Appeared, ", ")})
	}
	if len(s.Cleared) > 0 {
		sec.Rows = append(sec.Rows, report.Row{ID: "cleared", Label: "notes cleared", Value: strings.Join(s.Cleared, ", ")})
	}
	return sec
}
