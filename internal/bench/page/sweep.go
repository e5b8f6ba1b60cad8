package page

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/sweep"
	"github.com/inferscope/inferscope/internal/chart"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// Sweep writes a sweep's page: latency against load (TTFT and TPOT, p50
// and p99, the SLO drawn), throughput and goodput against load with the
// knee marked, the TTFT distribution of each step, the server's queue and
// KV cache against load; the knee and the notes in words beside them, and
// a table of the steps.
func Sweep(w io.Writer, res *sweep.Result) error {
	src := strings.Join(nonEmpty(res.Target, res.API, res.Model), " · ")
	v := &view{Kind: "sweep", Version: res.Version, Title: "inferscope bench sweep · " + src, Heading: "Sweep of " + src}
	v.Meta = sweepMeta(res)
	v.Verdict = kneeVerdict(res)
	v.FiguresTitle = "The sweep"
	v.Figures = sweepFigures(res)
	pts := sweepPoints(res)
	for _, c := range []*chart.Chart{
		latencyChart(res, pts, "ttft", "Time to first token against load", "TTFT", "ttft_p50", "ttft_p99", sloLimit(res, "ttft")),
		latencyChart(res, pts, "tpot", "Time per output token against load", "TPOT", "tpot_p50", "tpot_p99", sloLimit(res, "tpot")),
		throughputChart(res, pts),
		stepsTTFTChart(res, pts),
		serverChart(res, pts, "waiting", "Requests waiting at the server against load", "requests waiting (mean)", "server_waiting", plain, false),
		serverChart(res, pts, "kvpeak", "KV cache at its fullest against load", "KV cache used (peak)", "server_kv_peak", percent, true),
	} {
		v.Charts = append(v.Charts, template.HTML(c.HTML()))
	}
	v.NoteGroups = []noteGroup{{Title: "What the sweep says", Notes: res.Notes}}
	v.Extra = stepsTable(res)
	return write(w, v)
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

func sweepMeta(res *sweep.Result) []string {
	var out []string
	line := ""
	if !res.StartedAt.IsZero() {
		line = "started " + res.StartedAt.Format("2006-01-02 15:04:05 MST") + " · "
	}
	line += "profile " + res.Profile + " · " + units.Plural(float64(len(res.Steps)), "step")
	if res.Repeat > 1 {
		line += fmt.Sprintf(", each run %d times", res.Repeat)
	}
	out = append(out, line)
	if t := res.SLO; t != nil {
		out = append(out, "SLO: "+t.Limits+", met by a step where "+percent(float64(t.Share))+" of its requests meet every limit")
	}
	if res.Partial {
		out = append(out, "interrupted: the steps run are reported (partial)")
	}
	return out
}

// kneeVerdict is the page's headline: the knee, or that there is none.
func kneeVerdict(res *sweep.Result) *verdict {
	k := res.Knee
	if k == nil {
		return &verdict{Label: "knee", Word: "no SLO", Lines: []string{"Without --slo the sweep searches for no knee: the charts show how the server behaves as the load grows."}}
	}
	v := &verdict{Label: "knee", ID: k.Reason, Lines: []string{k.Why}}
	switch {
	case known(k.Load) && known(k.Broke):
		v.Word = loadWords(res.Axis, float64(k.Load)) + ", broke at " + loadWords(res.Axis, float64(k.Broke))
	case known(k.Load):
		v.Word = "beyond " + loadWords(res.Axis, float64(k.Load))
	case known(k.Broke):
		v.Word, v.Severity = "below "+loadWords(res.Axis, float64(k.Broke)), report.Warn
	default:
		v.Word = "none"
	}
	if k.Reason != "" {
		v.Lines = append(v.Lines, "Reason: "+reasonWords(k.Reason)+".")
	}
	return v
}

var reasons = map[string]string{
	sweep.ReasonKVCache: "the KV cache (requests waited for its pages)",
	sweep.ReasonQueue:   "the queue (requests waited for the server to take them)",
	sweep.ReasonPrefill: "prefill (prompts waited for compute)",
	sweep.ReasonDecode:  "decode (each token took longer)",
	sweep.ReasonErrors:  "errors (requests failed)",
	sweep.ReasonClient:  "the generator (it could not send the load)",
	sweep.ReasonUnknown: "unknown (the server publishes nothing that says)",
}

func reasonWords(r string) string {
	if w, ok := reasons[r]; ok {
		return w
	}
	return r
}

func known(v report.Number) bool { f := float64(v); return !math.IsNaN(f) && !math.IsInf(f, 0) }

// loadWords writes a load on the sweep's axis.
func loadWords(axis string, v float64) string {
	if axis == sweep.AxisConcurrency {
		return units.Integer(v) + " in flight"
	}
	return plain(v) + " req/s"
}

func sweepFigures(res *sweep.Result) []figure {
	out := []figure{{Label: "steps", Text: strconv.Itoa(len(res.Steps)), Path: "", Value: ""}}
	if k := res.Knee; k != nil {
		say := func(v float64) string { return loadWords(res.Axis, v) }
		out = append(out, fig("knee", "knee.load", k.Load, say), fig("broke at", "knee.broke", k.Broke, say))
	}
	return out
}

// point is a step placed on the load axis.
type point struct {
	index int // the step's place in res.Steps
	load  float64
	from  string // the JSON path of load
}

// sweepPoints places every step on the sweep's axis, by load: its
// concurrency on a list of closed loops, else its rate, a closed loop's
// being the requests it completed a second (as the knee places it).
func sweepPoints(res *sweep.Result) []point {
	var out []point
	for i, s := range res.Steps {
		p := point{index: i}
		switch {
		case res.Axis == sweep.AxisConcurrency:
			p.load, p.from = float64(s.Concurrency), "steps.{i}.concurrency"
		case s.Mode == "closed":
			p.load, p.from = float64(s.Summary.RequestRate.Mean), "steps.{i}.summary.request_rate.mean"
		default:
			p.load, p.from = float64(s.Rate), "steps.{i}.rate"
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b point) int {
		switch {
		case a.load < b.load:
			return -1
		case a.load > b.load:
			return 1
		}
		return 0
	})
	return out
}

// loadAxis is the X axis of a chart against load.
func loadAxis(res *sweep.Result) chart.Axis {
	if res.Axis == sweep.AxisConcurrency {
		return chart.Axis{Label: "requests in flight", Zero: true, Format: plain}
	}
	return chart.Axis{Label: "load (requests a second)", Zero: true, Format: plain}
}

// series draws one figure of every step against load; path is the
// figure's JSON path within a step ("summary.ttft_p50.mean").
func series(res *sweep.Result, pts []point, name, path string, get func(*sweep.Step) report.Number) chart.Series {
	s := chart.Series{Name: name, Kind: chart.Line, Indexed: true, From: chart.From{X: "steps.{i}.rate", Y: "steps.{i}." + path}}
	for _, p := range pts {
		s.Points = append(s.Points, chart.Point{X: p.load, Y: float64(get(&res.Steps[p.index])), FromX: p.from, Index: p.index})
	}
	return s
}

// sloLimit is the SLO's limit on a figure ("ttft", "tpot") in seconds; 0
// where it sets none.
func sloLimit(res *sweep.Result, name string) float64 {
	if res.SLO == nil {
		return 0
	}
	s, err := bench.ParseSLO(res.SLO.Limits)
	if err != nil {
		return 0
	}
	switch name {
	case "ttft":
		return s.TTFT.Seconds()
	case "tpot":
		return s.TPOT.Seconds()
	}
	return 0
}

// spansDecades says whether a chart's values span a factor of 20 or more,
// where a log axis reads them best.
func spansDecades(ss ...chart.Series) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			if p.Y > 0 && !math.IsInf(p.Y, 0) {
				lo, hi = min(lo, p.Y), max(hi, p.Y)
			}
		}
	}
	return hi/lo >= 20
}

// kneeRules mark the knee on the load axis: the highest load that met
// the SLO and the lowest that broke it.
func kneeRules(res *sweep.Result) []chart.Rule {
	k := res.Knee
	if k == nil {
		return nil
	}
	var out []chart.Rule
	if known(k.Load) {
		out = append(out, chart.Rule{At: float64(k.Load), Label: "knee " + loadWords(res.Axis, float64(k.Load)), From: "knee.load"})
	}
	if known(k.Broke) {
		out = append(out, chart.Rule{At: float64(k.Broke), Label: "broke " + loadWords(res.Axis, float64(k.Broke)), From: "knee.broke"})
	}
	return out
}

// latencyChart is a latency's p50 and p99 against load, the SLO's limit
// drawn.
func latencyChart(res *sweep.Result, pts []point, id, title, name, p50, p99 string, limit float64) *chart.Chart {
	a := series(res, pts, name+" p50", "summary."+p50+".mean", func(s *sweep.Step) report.Number { return spreadOf(s, p50).Mean })
	b := series(res, pts, name+" p99", "summary."+p99+".mean", func(s *sweep.Step) report.Number { return spreadOf(s, p99).Mean })
	ch := &chart.Chart{ID: id, Title: title, X: loadAxis(res), Y: chart.Axis{Label: name, Zero: true, Format: seconds},
		Series: []chart.Series{a, b}, VRules: kneeRules(res), Empty: "no step completed a request"}
	if spansDecades(a, b) {
		ch.Y = chart.Axis{Label: name + " (log scale)", Log: true, Format: seconds}
	}
	if limit > 0 {
		ch.HRules = []chart.Rule{{At: limit, Label: "SLO " + seconds(limit), Target: true}}
	}
	ch.Desc = "Each step's " + name + " at the median and the 99th percentile (the mean over its runs where it ran more than once), by the load it was offered."
	return ch
}

// spreadOf is a step's summary figure by its JSON name.
func spreadOf(s *sweep.Step, name string) sweep.Spread {
	m := s.Summary
	return map[string]sweep.Spread{"ttft_p50": m.TTFTP50, "ttft_p99": m.TTFTP99, "tpot_p50": m.TPOTP50, "tpot_p99": m.TPOTP99,
		"request_rate": m.RequestRate, "goodput_rate": m.GoodputRate, "output_token_rate": m.OutputRate,
		"server_waiting": m.Waiting, "server_kv_peak": m.KVPeak}[name]
}

// throughputChart is the requests completed and the good ones a second
// against load, the knee marked.
func throughputChart(res *sweep.Result, pts []point) *chart.Chart {
	done := series(res, pts, "completed", "summary.request_rate.mean", func(s *sweep.Step) report.Number { return s.Summary.RequestRate.Mean })
	ch := &chart.Chart{ID: "throughput", Title: "Throughput and goodput against load", X: loadAxis(res),
		Y: chart.Axis{Label: "requests a second", Zero: true, Format: plain}, Series: []chart.Series{done}, VRules: kneeRules(res),
		Empty: "no step completed a request"}
	if res.SLO != nil {
		good := series(res, pts, "good (within the SLO)", "summary.goodput_rate.mean", func(s *sweep.Step) report.Number { return s.Summary.GoodputRate.Mean })
		ch.Series = append(ch.Series, good)
		if k := res.Knee; k != nil && k.Step > 0 && k.Step <= len(res.Steps) {
			st := &res.Steps[k.Step-1]
			ch.Marks = []chart.Mark{{X: float64(k.Load), Y: float64(st.Summary.GoodputRate.Mean), Label: "knee",
				From: chart.From{X: "knee.load", Y: "steps." + strconv.Itoa(k.Step-1) + ".summary.goodput_rate.mean"}}}
		}
	}
	ch.Desc = "The requests each step completed a second"
	if res.SLO != nil {
		ch.Desc += ", and those within the SLO (goodput)"
	}
	ch.Desc += ", by the load it was offered; where the two part, requests miss the target."
	return ch
}

// stepsTTFTChart is each step's TTFT distribution, as the share of its
// requests at or below each bound, one line a step from the lightest
// load to the heaviest.
func stepsTTFTChart(res *sweep.Result, pts []point) *chart.Chart {
	ch := &chart.Chart{ID: "ttft_steps", Title: "Time to first token, each step's distribution",
		X: chart.Axis{Label: "TTFT (log scale)", Log: true, Format: seconds}, Y: chart.Axis{Label: "share of requests at or below", Min: 0, Max: 1, Format: percent},
		Empty: "no step completed a request"}
	// The axis spans the bounds where some step's share moves: from the
	// last bound below every request to the first above all of them.
	lo, hi := math.Inf(1), math.Inf(-1)
	for n, p := range pts {
		st := &res.Steps[p.index]
		h := st.TTFT
		total := 0
		for _, c := range h.Counts {
			total += c
		}
		if total == 0 || len(h.Bounds) == 0 {
			continue
		}
		s := chart.Series{Name: "step " + strconv.Itoa(st.Index) + " · " + loadWords(res.Axis, p.load), Kind: chart.Line, Ramp: n, RampOf: len(pts),
			From: chart.From{X: "steps." + strconv.Itoa(p.index) + ".ttft_histogram.bounds.{i}", Y: "steps." + strconv.Itoa(p.index) + ".ttft_histogram.counts.{i}", Derive: "cumulative-share"}}
		upTo, first, last := 0, -1, len(h.Bounds)-1
		for i, b := range h.Bounds {
			upTo += h.Counts[i]
			s.Points = append(s.Points, chart.Point{X: float64(b), Y: float64(upTo) / float64(total)})
			if upTo > 0 && first < 0 {
				first = i
			}
			if upTo == total && last == len(h.Bounds)-1 {
				last = i
			}
		}
		lo = min(lo, float64(h.Bounds[max(first-1, 0)]))
		hi = max(hi, float64(h.Bounds[last]))
		ch.Series = append(ch.Series, s)
	}
	if lo < hi {
		ch.X.Min, ch.X.Max = lo, hi
	}
	ch.Desc = "For each step, the share of its requests whose time to first token was at or below each bound (buckets of 1, 2 and 5 to a decade, alike in every step), one line a step, coloured in order from the lightest load to the heaviest."
	return ch
}

// serverChart is one of the server's figures over each step's runs
// against load.
func serverChart(res *sweep.Result, pts []point, id, title, label, name string, say func(float64) string, share bool) *chart.Chart {
	s := series(res, pts, label, "summary."+name+".mean", func(st *sweep.Step) report.Number { return spreadOf(st, name).Mean })
	ch := &chart.Chart{ID: id, Title: title, X: loadAxis(res), Y: chart.Axis{Label: label, Zero: true, Format: say},
		Series: []chart.Series{s}, VRules: kneeRules(res), Empty: "the server publishes no such figure"}
	if share {
		ch.Y.Min, ch.Y.Max = 0, 1
	}
	ch.Desc = "The server's own figure over each step's window, by the load offered: what gives way as the curves above bend."
	return ch
}

// stepsTable is every step in a row: its load, what it did, whether it
// met the SLO, its verdict.
func stepsTable(res *sweep.Result) template.HTML {
	var b strings.Builder
	b.WriteString(`<h2>The steps</h2><table class="steps"><thead><tr><th scope="col">step</th><th scope="col">phase</th><th scope="col">load</th>` +
		`<th scope="col">runs</th><th scope="col">completed</th><th scope="col">req/s</th><th scope="col">tok/s</th>`)
	if res.SLO != nil {
		b.WriteString(`<th scope="col">good/s</th><th scope="col">good</th><th scope="col">SLO</th>`)
	}
	b.WriteString(`<th scope="col">TTFT p50</th><th scope="col">TTFT p99</th><th scope="col">TPOT p50</th><th scope="col">TPOT p99</th>` +
		`<th scope="col">waiting</th><th scope="col">KV peak</th><th scope="col">verdict</th></tr></thead><tbody>`)
	cell := func(path string, v report.Number, say func(float64) string) string {
		return fmt.Sprintf(`<td data-path="%s" data-value="%s">%s</td>`, template.HTMLEscapeString(path), value(v), template.HTMLEscapeString(say(float64(v))))
	}
	text := func(s string) string { return "<td>" + template.HTMLEscapeString(s) + "</td>" }
	for i, s := range res.Steps {
		at := "steps." + strconv.Itoa(i) + ".summary."
		load := fmt.Sprintf("%d in flight", s.Concurrency)
		if known(s.Rate) {
			load = plain(float64(s.Rate)) + " req/s"
			if s.Concurrency > 0 {
				load += fmt.Sprintf(", at most %d", s.Concurrency)
			}
		}
		b.WriteString(`<tr>` + text(strconv.Itoa(s.Index)) + text(s.Phase) + text(load) + text(strconv.Itoa(s.Summary.Runs)) +
			text(units.Integer(float64(s.Summary.Completed))+" of "+units.Integer(float64(s.Summary.Sent))) +
			cell(at+"request_rate.mean", s.Summary.RequestRate.Mean, plain) + cell(at+"output_token_rate.mean", s.Summary.OutputRate.Mean, plain))
		if res.SLO != nil {
			meets := "—"
			if s.SLO != nil {
				meets = map[bool]string{true: "met", false: "missed"}[s.SLO.Meets]
			}
			b.WriteString(cell(at+"goodput_rate.mean", s.Summary.GoodputRate.Mean, plain) + cell(at+"good_share.mean", s.Summary.GoodShare.Mean, percent) + text(meets))
		}
		b.WriteString(cell(at+"ttft_p50.mean", s.Summary.TTFTP50.Mean, seconds) + cell(at+"ttft_p99.mean", s.Summary.TTFTP99.Mean, seconds) +
			cell(at+"tpot_p50.mean", s.Summary.TPOTP50.Mean, seconds) + cell(at+"tpot_p99.mean", s.Summary.TPOTP99.Mean, seconds) +
			cell(at+"server_waiting.mean", s.Summary.Waiting.Mean, plain) + cell(at+"server_kv_peak.mean", s.Summary.KVPeak.Mean, percent) +
			text(verdictOf(s.Summary.Verdict)) + `</tr>`)
	}
	b.WriteString(`</tbody></table>`)
	if res.Repeat > 1 {
		b.WriteString(`<p class="meta">Each figure is the mean over the step's runs; their spread (least, most, standard deviation) is in the JSON and the terminal report.</p>`)
	}
	return template.HTML(b.String())
}

func verdictOf(v string) string {
	if w := bench.VerdictWords(v); w != "" {
		return w
	}
	if v == "" {
		return "—"
	}
	return v
}
