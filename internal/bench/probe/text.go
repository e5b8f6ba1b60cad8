package probe

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// Text writes r for a person: a row a point, its bar the point's speed
// beside the fastest (the curve, drawn as the report draws its bars), its
// note the spread, the server's own figure and the cold one set aside.
func Text(w io.Writer, r *Result, o render.Options) error {
	return render.Text(w, r.Sections(), o)
}

// Sections is the probe as a report's sections and notes.
func (r *Result) Sections() *report.Report {
	src := r.Target
	for _, s := range []string{r.API, r.Model} {
		if s != "" {
			src += " · " + s
		}
	}
	out := &report.Report{Schema: analysis.Schema, Dialect: "probe", SourceKind: "bench", Source: src, Version: r.Version}
	if !r.StartedAt.IsZero() {
		out.Header = append(out.Header, "started "+r.StartedAt.Format("2006-01-02 15:04:05 MST")+" · "+r.words())
	}
	if r.Partial {
		out.Header = append(out.Header, "interrupted: the points finished are reported (partial)")
	}
	out.Sections = append(out.Sections, r.runSection())
	if r.Prefill != nil {
		out.Sections = append(out.Sections, r.prefillSection())
	}
	if r.Decode != nil {
		out.Sections = append(out.Sections, r.decodeSection())
	}
	out.Notes = r.Notes
	return out
}

// words says the probe in a line.
func (r *Result) words() string {
	var s []string
	if r.Prefill != nil {
		s = append(s, "prefill")
	}
	if r.Decode != nil {
		s = append(s, "decode")
	}
	return strings.Join(s, " and ") + fmt.Sprintf(" · %s measured after a cold one, at each point", units.Integer(float64(r.Repeat)))
}

func (r *Result) runSection() report.Section {
	sec := report.Section{ID: "probe", Title: "Probe"}
	add := func(id, label, value, note string) {
		sec.Rows = append(sec.Rows, report.Row{ID: id, Label: label, Value: value, Note: note})
	}
	if r.Made != "" {
		add("workload", "prompts", "unique from their first words", r.Made)
	}
	if r.Decode != nil {
		add("decode_lengths", "decode requests", fmt.Sprintf("%s + %s tokens", units.Integer(float64(r.Decode.PromptTokens)), units.Integer(float64(r.Decode.OutputTokens))),
			"prompt and fixed output; a request's speed counts its output but the first token")
	}
	switch {
	case r.Metrics == "":
		add("metrics", "server figures", "the answers' own", "the server publishes no /metrics")
	case r.Dialect != "":
		add("metrics", "server figures", r.Metrics, "read before and after each request or round ("+r.Dialect+")")
	default:
		add("metrics", "server figures", r.Metrics, "read before and after each request or round")
	}
	return sec
}

// tokS writes a speed: "7,752 tok/s"; a dash where there is none.
func tokS(v report.Number) string {
	if !known(v) {
		return "—"
	}
	return units.Count(float64(v)) + " tok/s"
}

// between writes a spread's range: "7,600–7,800".
func between(s Spread) string {
	if s.N < 2 {
		return ""
	}
	return units.Count(float64(s.Min)) + "–" + units.Count(float64(s.Max))
}

func fromWords(from string) string {
	if from == FromTimings {
		return "the answers' timings"
	}
	return "its /metrics"
}

func (r *Result) prefillSection() report.Section {
	sec := report.Section{ID: "prefill", Title: "Prefill: tokens a second by prompt length", Wide: true}
	most := 0.0
	for _, p := range r.Prefill.Points {
		most = math.Max(most, fig(p.Client.Median))
	}
	for _, p := range r.Prefill.Points {
		row := report.Row{ID: fmt.Sprintf("prefill_%d", p.Length), Label: units.Integer(float64(p.Length)) + " tokens", Value: tokS(p.Client.Median)}
		var note []string
		if p.Requests > 0 {
			n := "TTFT " + units.Seconds(fig(p.TTFT.Median))
			if b := between(p.Client); b != "" {
				n += ", " + b
			}
			note = append(note, n)
			if most > 0 {
				row.Bar = num(fig(p.Client.Median) / most)
			}
		} else {
			note = append(note, "no measured request completed")
		}
		if p.Server != nil {
			note = append(note, "server "+tokS(p.Server.Median)+" by "+fromWords(p.ServerFrom))
		}
		if p.Cold != nil {
			note = append(note, "cold "+tokS(p.Cold.Client))
		}
		if p.Failed > 0 {
			note = append(note, units.Plural(float64(p.Failed), "failed", "failed"))
		}
		row.Note = strings.Join(note, "; ")
		sec.Rows = append(sec.Rows, row)
	}
	return sec
}

func (r *Result) decodeSection() report.Section {
	sec := report.Section{ID: "decode", Title: "Decode: tokens a second by batch size", Wide: true}
	most := 0.0
	for _, p := range r.Decode.Points {
		most = math.Max(most, fig(p.Total.Median))
	}
	for _, p := range r.Decode.Points {
		row := report.Row{ID: fmt.Sprintf("decode_%d", p.Batch), Label: "batch " + units.Integer(float64(p.Batch)), Value: tokS(p.Total.Median)}
		var note []string
		if p.Requests > 0 {
			n := tokS(p.PerRequest.Median) + " a request"
			if b := between(p.PerRequest); b != "" {
				n += " (" + b + ")"
			}
			note = append(note, n)
		} else {
			note = append(note, "no measured request completed")
		}
		if known(p.Total.Median) && most > 0 {
			row.Bar = num(fig(p.Total.Median) / most)
		}
		if p.Server != nil {
			note = append(note, "server "+tokS(p.Server.Median)+" a request by "+fromWords(p.ServerFrom))
		}
		if known(p.Overlap) && p.Batch > 1 {
			note = append(note, "together "+units.Percent(fig(p.Overlap))+" of a round")
		}
		if p.Cold != nil {
			note = append(note, "cold "+tokS(p.Cold.Total))
		}
		if p.Failed > 0 {
			note = append(note, units.Plural(float64(p.Failed), "failed", "failed"))
		}
		row.Note = strings.Join(note, "; ")
		sec.Rows = append(sec.Rows, row)
	}
	return sec
}

func fig(v report.Number) float64 { return float64(v) }

func num(v float64) *report.Number { n := report.Number(v); return &n }
