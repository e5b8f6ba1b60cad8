package page

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/bench/probe"
	"github.com/inferscope/inferscope/internal/chart"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// Probe writes a probe's page: prefill speed against prompt length (and
// the time to first token it gives), decode speed against batch size, per
// request and for the batch, as the client measured them and as the
// server's own time says where it publishes one; the cold requests set
// aside drawn apart; the notes in words.
func Probe(w io.Writer, res *probe.Result) error {
	src := strings.Join(nonEmpty(res.Target, res.API, res.Model), " · ")
	v := &view{Kind: "probe", Version: res.Version, Title: "inferscope bench probe · " + src, Heading: "Probe of " + src}
	v.Meta = probeMeta(res)
	v.Verdict = probeVerdict(res)
	v.FiguresTitle = "The probe"
	v.Figures = probeFigures(res)
	var charts []*chart.Chart
	if p := res.Prefill; p != nil {
		charts = append(charts, prefillChart(p), prefillTTFTChart(p))
	}
	if d := res.Decode; d != nil {
		charts = append(charts, decodeChart(d, false), decodeChart(d, true))
	}
	for _, c := range charts {
		v.Charts = append(v.Charts, template.HTML(c.HTML()))
	}
	v.NoteGroups = []noteGroup{{Title: "What the probe says", Notes: res.Notes}}
	return write(w, v)
}

func probeMeta(res *probe.Result) []string {
	line := ""
	if !res.StartedAt.IsZero() {
		line = "started " + res.StartedAt.Format("2006-01-02 15:04:05 MST") + " · "
	}
	line += fmt.Sprintf("%d measured a point, beside the cold one set aside", res.Repeat)
	out := []string{line}
	if res.Made != "" {
		out = append(out, "prompts: "+res.Made)
	}
	switch {
	case res.Metrics != "":
		out = append(out, "the server's own times from "+res.Metrics)
	default:
		out = append(out, "the server publishes no metrics: the client's times alone")
	}
	if res.Partial {
		out = append(out, "interrupted: what completed is reported (partial)")
	}
	return out
}

// probeVerdict sums the probe up: the speeds at its ends.
func probeVerdict(res *probe.Result) *verdict {
	v := &verdict{Label: "speeds", Word: "measured under control"}
	if p := res.Prefill; p != nil && len(p.Points) > 0 {
		first, last := p.Points[0], p.Points[len(p.Points)-1]
		v.Lines = append(v.Lines, fmt.Sprintf("Prefill: %s tok/s at %s tokens, %s tok/s at %s (the client's median; one request at a time).",
			plain(float64(prefillSpeed(first).Median)), units.Integer(float64(first.Length)), plain(float64(prefillSpeed(last).Median)), units.Integer(float64(last.Length))))
	}
	if d := res.Decode; d != nil && len(d.Points) > 0 {
		first, last := d.Points[0], d.Points[len(d.Points)-1]
		v.Lines = append(v.Lines, fmt.Sprintf("Decode: %s tok/s a request at a batch of %d; at %d, %s tok/s a request and %s tok/s in all.",
			plain(float64(first.PerRequest.Median)), first.Batch, last.Batch, plain(float64(last.PerRequest.Median)), plain(float64(last.Total.Median))))
	}
	return v
}

// prefillSpeed is a point's client speed (the chart's first series).
func prefillSpeed(p probe.PrefillPoint) probe.Spread { return p.Client }

func probeFigures(res *probe.Result) []figure {
	var out []figure
	if p := res.Prefill; p != nil {
		for i, pt := range p.Points {
			out = append(out, fig("prefill at "+units.Integer(float64(pt.Length)), "prefill.points."+strconv.Itoa(i)+".client_tokens_per_second.median",
				pt.Client.Median, func(v float64) string { return plain(v) + " tok/s" }))
		}
	}
	if d := res.Decode; d != nil {
		for i, pt := range d.Points {
			out = append(out, fig("decode, batch "+strconv.Itoa(pt.Batch), "decode.points."+strconv.Itoa(i)+".client_total_tokens_per_second.median",
				pt.Total.Median, func(v float64) string { return plain(v) + " tok/s in all" }))
		}
	}
	return out
}

// speedAxis is a speed's axis, from zero.
func speedAxis(label string) chart.Axis {
	return chart.Axis{Label: label, Zero: true, Format: plain}
}

// lengthAxis is the prompt length's axis, on a log scale where the
// lengths span a factor of 20 or more.
func lengthAxis(p *probe.PrefillProbe) chart.Axis {
	ax := chart.Axis{Label: "prompt length (tokens)", Zero: true, Format: plain}
	if n := len(p.Points); n > 1 && p.Points[0].Length > 0 && p.Points[n-1].Length >= 20*p.Points[0].Length {
		ax = chart.Axis{Label: "prompt length (tokens, log scale)", Log: true, Format: plain}
	}
	return ax
}

// prefillChart is prefill speed against prompt length: the client's and
// the server's medians, and the cold requests set aside.
func prefillChart(p *probe.PrefillProbe) *chart.Chart {
	ch := &chart.Chart{ID: "prefill", Title: "Prefill speed against prompt length", X: lengthAxis(p), Y: speedAxis("tokens a second"),
		Empty: "no prompt length completed"}
	at := "prefill.points.{i}."
	line := func(name, path string, kind chart.Kind, get func(probe.PrefillPoint) report.Number) chart.Series {
		s := chart.Series{Name: name, Kind: kind, From: chart.From{X: at + "length", Y: at + path}}
		for _, pt := range p.Points {
			s.Points = append(s.Points, chart.Point{X: float64(pt.Length), Y: float64(get(pt))})
		}
		return s
	}
	ch.Series = append(ch.Series, line("client (median)", "client_tokens_per_second.median", chart.Line, func(pt probe.PrefillPoint) report.Number { return pt.Client.Median }))
	if anyPrefill(p, func(pt probe.PrefillPoint) bool { return pt.Server != nil }) {
		ch.Series = append(ch.Series, line("server (median)", "server_tokens_per_second.median", chart.Line, func(pt probe.PrefillPoint) report.Number {
			if pt.Server == nil {
				return report.Number(nan)
			}
			return pt.Server.Median
		}))
	}
	if anyPrefill(p, func(pt probe.PrefillPoint) bool { return pt.Cold != nil }) {
		ch.Series = append(ch.Series, line("cold, set aside (client)", "cold.client_tokens_per_second", chart.Scatter, func(pt probe.PrefillPoint) report.Number {
			if pt.Cold == nil {
				return report.Number(nan)
			}
			return pt.Cold.Client
		}))
	}
	ch.Desc = "Prompt tokens computed (less any served from a cache) over the time to the first token, one request at a time: the client's from its TTFT, the server's from its own prefill time where it publishes one. The first request at each length is set aside: some engines tune kernels on the first prompt of a size."
	return ch
}

// prefillTTFTChart is the time to first token the prompts took.
func prefillTTFTChart(p *probe.PrefillProbe) *chart.Chart {
	ch := &chart.Chart{ID: "prefill_ttft", Title: "Time to first token against prompt length", X: lengthAxis(p),
		Y: chart.Axis{Label: "TTFT (median)", Zero: true, Format: seconds}, Empty: "no prompt length completed"}
	s := chart.Series{Name: "TTFT (median)", Kind: chart.Line, From: chart.From{X: "prefill.points.{i}.length", Y: "prefill.points.{i}.ttft_seconds.median"}}
	for _, pt := range p.Points {
		s.Points = append(s.Points, chart.Point{X: float64(pt.Length), Y: float64(pt.TTFT.Median)})
	}
	ch.Series = []chart.Series{s}
	ch.Desc = "The client's median time to first token at each prompt length, one request at a time."
	return ch
}

// decodeChart is decode speed against batch size: each request's, or
// the batch's in all.
func decodeChart(d *probe.DecodeProbe, total bool) *chart.Chart {
	at := "decode.points.{i}."
	ch := &chart.Chart{ID: "decode", Title: "Decode speed of a request against batch size",
		X: chart.Axis{Label: "batch size (requests started together)", Zero: true, Format: plain}, Y: speedAxis("tokens a second, a request"),
		Empty: "no batch size completed"}
	if total {
		ch.ID, ch.Title, ch.Y = "decode_total", "Decode speed of the batch against batch size", speedAxis("tokens a second, the batch")
	}
	line := func(name, path string, kind chart.Kind, get func(probe.DecodePoint) report.Number) chart.Series {
		s := chart.Series{Name: name, Kind: kind, From: chart.From{X: at + "batch", Y: at + path}}
		for _, pt := range d.Points {
			s.Points = append(s.Points, chart.Point{X: float64(pt.Batch), Y: float64(get(pt))})
		}
		return s
	}
	anyDecode := func(f func(probe.DecodePoint) bool) bool {
		for _, pt := range d.Points {
			if f(pt) {
				return true
			}
		}
		return false
	}
	if total {
		ch.Series = append(ch.Series, line("client (median round)", "client_total_tokens_per_second.median", chart.Line, func(pt probe.DecodePoint) report.Number { return pt.Total.Median }))
		if anyDecode(func(pt probe.DecodePoint) bool { return pt.Cold != nil }) {
			ch.Series = append(ch.Series, line("cold round, set aside", "cold.client_total_tokens_per_second", chart.Scatter, func(pt probe.DecodePoint) report.Number {
				if pt.Cold == nil {
					return report.Number(nan)
				}
				return pt.Cold.Total
			}))
		}
		ch.Desc = fmt.Sprintf("Each round's requests' decode speeds summed: the batch's speed while its requests (a prompt of %d tokens, %d out) decode together.", d.PromptTokens, d.OutputTokens)
		return ch
	}
	ch.Series = append(ch.Series, line("client (median)", "client_tokens_per_second.median", chart.Line, func(pt probe.DecodePoint) report.Number { return pt.PerRequest.Median }))
	if anyDecode(func(pt probe.DecodePoint) bool { return pt.Server != nil }) {
		ch.Series = append(ch.Series, line("server (median)", "server_tokens_per_second.median", chart.Line, func(pt probe.DecodePoint) report.Number {
			if pt.Server == nil {
				return report.Number(nan)
			}
			return pt.Server.Median
		}))
	}
	if anyDecode(func(pt probe.DecodePoint) bool { return pt.Cold != nil }) {
		ch.Series = append(ch.Series, line("cold round, set aside", "cold.client_tokens_per_second", chart.Scatter, func(pt probe.DecodePoint) report.Number {
			if pt.Cold == nil {
				return report.Number(nan)
			}
			return pt.Cold.PerRequest
		}))
	}
	ch.Desc = "Each request's output tokens but the first over the time from its first token to its last, the requests of a round started together: the client's, and the server's from its own decode time where it publishes one."
	return ch
}

func anyPrefill(p *probe.PrefillProbe, f func(probe.PrefillPoint) bool) bool {
	for _, pt := range p.Points {
		if f(pt) {
			return true
		}
	}
	return false
}
