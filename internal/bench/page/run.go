package page

import (
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/chart"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// Run writes one run's page: the TTFT distribution, the server's queue
// and KV cache over the run, the verdict and the notes in words beside
// them, and the run's tables.
func Run(w io.Writer, rep *bench.Report) error {
	v := &view{Kind: "run", Version: rep.Version, Title: "inferscope bench · " + source(rep), Heading: "Bench of " + source(rep)}
	v.Meta = runMeta(rep)
	v.Verdict = runVerdict(rep)
	v.FiguresTitle = "Key figures"
	v.Figures = runFigures(rep, "")
	for _, c := range runCharts(rep, "", "") {
		v.Charts = append(v.Charts, template.HTML(c.HTML()))
	}
	v.NoteGroups = runNotes(rep)
	v.Reports = []titled{{Title: "The client's figures", Report: rep.Sections()}}
	if rep.Server != nil {
		v.Server = &titled{Title: "The server's own report over the window, as --since reads it", Report: rep.Server}
	}
	return write(w, v)
}

// source names what was loaded: the target, the API, the model.
func source(rep *bench.Report) string {
	parts := []string{rep.Target}
	for _, s := range []string{rep.API, rep.Model} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

// runMeta is the header's lines: when, the load, the workload.
func runMeta(rep *bench.Report) []string {
	var out []string
	sec := rep.Sections()
	out = append(out, sec.Header...)
	if rep.Load.Workload != "" {
		out = append(out, "workload: "+rep.Load.Workload)
	}
	return out
}

// runVerdict says what limited the server, with the verdict note's own
// words.
func runVerdict(rep *bench.Report) *verdict {
	v := &verdict{Label: "verdict", ID: rep.Verdict, Word: bench.VerdictWords(rep.Verdict)}
	switch {
	case rep.Verdict == "" && rep.ClientBound:
		v.Word, v.Severity = "client-bound", report.Warn
	case rep.Verdict == "":
		v.Word = "none"
		v.Lines = append(v.Lines, "Nothing the server published could give a verdict.")
	}
	for _, n := range rep.Notes {
		if n.ID == rep.Verdict || rep.ClientBound && n.ID == "bench_client_bound" {
			v.Lines = append(v.Lines, n.Text)
			if n.Severity == report.Warn || n.Severity == report.Bad {
				v.Severity = n.Severity
			}
		}
	}
	if rep.Partial {
		v.Lines = append(v.Lines, "The run was interrupted: what completed is reported.")
	}
	return v
}

// runFigures are a run's key figures; at is the JSON path of the report
// ("" at the top, "steps.2.report." in a sweep).
func runFigures(rep *bench.Report, at string) []figure {
	c := rep.Client
	out := []figure{
		{Label: "completed", Text: units.Integer(float64(c.Completed)) + " of " + units.Integer(float64(c.Sent)) + " sent",
			Path: at + "client.completed", Value: value(report.Number(c.Completed))},
		fig("requests", at+"client.request_rate", c.RequestRate, func(v float64) string { return plain(v) + " /s" }),
		fig("output tokens", at+"client.output_token_rate", c.OutputRate, func(v float64) string { return plain(v) + " tok/s" }),
		fig("TTFT p50", at+"client.ttft_seconds.p50", c.TTFT.P50, seconds),
		fig("TTFT p99", at+"client.ttft_seconds.p99", c.TTFT.P99, seconds),
		fig("TPOT p50", at+"client.tpot_seconds.p50", c.TPOT.P50, seconds),
		fig("TPOT p99", at+"client.tpot_seconds.p99", c.TPOT.P99, seconds),
	}
	if g := c.Goodput; g != nil {
		out = append(out, fig("goodput", at+"client.goodput.rate", g.Rate, func(v float64) string { return plain(v) + " /s under " + g.SLO }),
			fig("good", at+"client.goodput.share", g.Share, percent))
	}
	return out
}

// runNotes are the run's notes but those the verdict says, then the
// server's on the window.
func runNotes(rep *bench.Report) []noteGroup {
	var notes report.List[report.Note]
	for _, n := range rep.Notes {
		if n.ID != rep.Verdict && !(rep.ClientBound && n.ID == "bench_client_bound") {
			notes = append(notes, n)
		}
	}
	out := []noteGroup{{Title: "What else the run says", Notes: notes}}
	if rep.Server != nil {
		out = append(out, noteGroup{Title: "What the server's window says", Notes: rep.Server.Notes})
	}
	return out
}

// sloOf is the SLO goodput was counted against; zero where none.
func sloOf(c bench.Client) bench.SLO {
	if c.Goodput == nil {
		return bench.SLO{}
	}
	s, err := bench.ParseSLO(c.Goodput.SLO)
	if err != nil {
		return bench.SLO{}
	}
	return s
}

// runCharts are a run's charts; id prefixes their ids, at is the JSON
// path of the report.
func runCharts(rep *bench.Report, id, at string) []*chart.Chart {
	return []*chart.Chart{ttftChart(rep, id+"ttft", at), queueChart(rep, id+"queue", at), kvChart(rep, id+"kv", at)}
}

// ttftChart is the TTFT distribution: the histogram's bins, its p50 and
// p99, and the SLO's TTFT limit.
func ttftChart(rep *bench.Report, id, at string) *chart.Chart {
	c := rep.Client
	h := c.TTFTHistogram
	ch := &chart.Chart{ID: id, Title: "Time to first token, distribution",
		X: chart.Axis{Label: "TTFT", Format: seconds}, Y: chart.Axis{Label: "requests", Zero: true, Format: plain},
		Empty: "no request completed with a first token"}
	if h == nil {
		return ch
	}
	ch.X.Log = h.Scale == "log"
	s := chart.Series{Name: "requests", Kind: chart.Bars,
		From: chart.From{X: at + "client.ttft_histogram.edges.{i}", X2: at + "client.ttft_histogram.edges.{i+1}", Y: at + "client.ttft_histogram.counts.{i}"}}
	for i, n := range h.Counts {
		s.Points = append(s.Points, chart.Point{X: float64(h.Edges[i]), X2: float64(h.Edges[i+1]), Y: float64(n)})
	}
	ch.Series = []chart.Series{s}
	ch.VRules = []chart.Rule{
		{At: float64(c.TTFT.P50), Label: "p50 " + seconds(float64(c.TTFT.P50)), From: at + "client.ttft_seconds.p50"},
		{At: float64(c.TTFT.P99), Label: "p99 " + seconds(float64(c.TTFT.P99)), From: at + "client.ttft_seconds.p99"},
	}
	if slo := sloOf(c); slo.TTFT > 0 {
		ch.VRules = append(ch.VRules, chart.Rule{At: slo.TTFT.Seconds(), Label: "SLO " + seconds(slo.TTFT.Seconds()), Target: true})
	}
	ch.Desc = units.Integer(float64(c.TTFT.Count)) + " requests' time from the send to the first token, in bins" +
		map[bool]string{true: " spaced on a log scale", false: ""}[ch.X.Log] + ": the median " + seconds(float64(c.TTFT.P50)) +
		", the 99th percentile " + seconds(float64(c.TTFT.P99)) + "."
	return ch
}

// timeAxis is the run's clock, with the drain shaded (the window's
// samples begin as the warm-up ends).
func timeAxis(rep *bench.Report) (chart.Axis, []chart.Band) {
	ax := chart.Axis{Label: "seconds from the run's start", Format: clock}
	var bands []chart.Band
	if n := len(rep.Samples); n > 0 {
		last := float64(rep.Samples[n-1].Seconds)
		if until := float64(rep.SentUntil); until > 0 && until < last {
			bands = append(bands, chart.Band{From: until, To: last, Label: "drain"})
		}
	}
	return ax, bands
}

// queueChart is the requests the server ran and queued at each scrape,
// beside the generator's in flight.
func queueChart(rep *bench.Report, id, at string) *chart.Chart {
	ax, bands := timeAxis(rep)
	ch := &chart.Chart{ID: id, Title: "Requests at the server over the run", X: ax, Bands: bands,
		Y: chart.Axis{Label: "requests", Zero: true, Format: plain}, Empty: "no sample of the server: its window could not be read"}
	line := func(name, field string, get func(bench.Sample) report.Number) chart.Series {
		s := chart.Series{Name: name, Kind: chart.Line, From: chart.From{X: at + "samples.{i}.seconds", Y: at + "samples.{i}." + field}}
		for _, smp := range rep.Samples {
			s.Points = append(s.Points, chart.Point{X: float64(smp.Seconds), Y: float64(get(smp))})
		}
		return s
	}
	ch.Series = []chart.Series{
		line("running", "running", func(s bench.Sample) report.Number { return s.Running }),
		line("waiting", "waiting", func(s bench.Sample) report.Number { return s.Waiting }),
		line("in flight (generator)", "in_flight", func(s bench.Sample) report.Number { return s.InFlight }),
	}
	ch.Desc = "At each of the server's " + units.Integer(float64(len(rep.Samples))) + " scrapes in the window: its requests running and waiting, " +
		"and the generator's requests in flight. A gap is a gauge the server did not publish."
	return ch
}

// kvChart is the KV cache's usage at each scrape.
func kvChart(rep *bench.Report, id, at string) *chart.Chart {
	ax, bands := timeAxis(rep)
	ch := &chart.Chart{ID: id, Title: "KV cache usage over the run", X: ax, Bands: bands,
		Y: chart.Axis{Label: "KV cache used", Min: 0, Max: 1, Format: percent}, Empty: "the server publishes no KV cache usage"}
	if len(rep.Samples) == 0 {
		ch.Empty = "no sample of the server: its window could not be read"
	}
	s := chart.Series{Name: "KV cache", Kind: chart.Line, From: chart.From{X: at + "samples.{i}.seconds", Y: at + "samples.{i}.kv_usage"}}
	for _, smp := range rep.Samples {
		s.Points = append(s.Points, chart.Point{X: float64(smp.Seconds), Y: float64(smp.KVUsage)})
	}
	ch.Series = []chart.Series{s}
	peak := math.NaN()
	for _, p := range s.Points {
		if !math.IsNaN(p.Y) && !(p.Y <= peak) {
			peak = p.Y
		}
	}
	ch.Desc = "The share of the KV cache in use at each scrape; its peak " + percent(peak) + "."
	return ch
}
