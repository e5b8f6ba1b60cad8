package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// TextOptions lay the text report out.
type TextOptions struct {
	Render render.Options
	// Server prepares the server's report for text (the watch view's
	// table headers); nil leaves it as it is.
	Server func(*report.Report) *report.Report
}

// Text writes rep for a person: the run and its client figures, the
// run's notes (the verdict first), then the server's window report as
// `--since` draws it.
func Text(w io.Writer, rep *Report, o TextOptions) error {
	if err := render.Text(w, rep.Sections(), o.Render); err != nil {
		return err
	}
	if rep.Server == nil {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("render: writing report: %w", err)
	}
	srv := rep.Server
	if o.Server != nil {
		srv = o.Server(srv)
	}
	return render.Text(w, srv, o.Render)
}

// JSON writes rep as one indented JSON object (docs/json.md).
func JSON(w io.Writer, rep *Report) error {
	return render.JSONValue(w, rep, render.JSONOptions{})
}

// say writes seconds as every time is written; "—" where there are none.
func say(v report.Number) string { return units.Seconds(float64(v)) }

func sayCount(v report.Number) string { return units.Count(float64(v)) }

func known(v report.Number) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// Sections is the bench's own part of the text: a report of the run whose
// sections are the client's figures and whose notes are the run's.
func (rep *Report) Sections() *report.Report {
	src := rep.Target
	for _, s := range []string{rep.API, rep.Model} {
		if s != "" {
			src += " · " + s
		}
	}
	out := &report.Report{Schema: analysis.Schema, Dialect: "bench", SourceKind: "bench", Source: src, Version: rep.Version}
	if !rep.StartedAt.IsZero() {
		out.Header = append(out.Header, "started "+rep.StartedAt.Format("2006-01-02 15:04:05 MST")+" · "+rep.loadWords())
	}
	if rep.Partial {
		out.Header = append(out.Header, "interrupted: what completed is reported (partial)")
	}
	out.Sections = append(out.Sections, rep.runSection(), rep.latencySection(), rep.throughputSection())
	if s, ok := rep.lengthsSection(); ok {
		out.Sections = append(out.Sections, s)
	}
	if s, ok := rep.splitSection(); ok {
		out.Sections = append(out.Sections, s)
	}
	out.Sections = append(out.Sections, rep.generatorSection(), rep.selfCheckSection())
	out.Notes = rep.Notes
	return out
}

// loadWords says the load in a line.
func (rep *Report) loadWords() string {
	l := rep.Load
	var s string
	switch l.Mode {
	case "closed":
		s = fmt.Sprintf("closed loop, %d in flight", l.Concurrency)
	default:
		s = "open loop, " + sayCount(l.Rate) + " req/s " + l.Arrival
		if l.Arrival == "gamma" {
			s += " (burstiness " + units.Count(float64(l.Burstiness)) + ")"
		}
		if l.Mode == "open, capped" {
			s += fmt.Sprintf(", at most %d in flight", l.Concurrency)
		}
	}
	switch {
	case l.Requests > 0:
		s += " · " + units.Integer(float64(l.Requests)) + " requests"
	case known(l.Duration):
		s += " · for " + say(l.Duration)
	}
	return s
}

func row(id, label, value, note string) report.Row {
	return report.Row{ID: id, Label: label, Value: value, Note: note}
}

func (rep *Report) runSection() report.Section {
	c := rep.Client
	sec := report.Section{ID: "run", Title: "Run"}
	measured := units.Integer(float64(c.Sent)) + " sent"
	note := units.Integer(float64(c.Completed)) + " completed"
	if c.Failed > 0 {
		note += ", " + units.Integer(float64(c.Failed)) + " failed"
	}
	sec.Rows = append(sec.Rows, row("requests", "measured", measured, note))
	if c.Dropped > 0 {
		// An open loop's schedule not kept is load the server never saw:
		// the offered rate was not delivered.
		sec.Rows = append(sec.Rows, report.Row{ID: "dropped", Label: "not sent", Value: units.Plural(float64(c.Dropped), "arrival"),
			Note: "due before sending stopped, never sent (the pacer behind, or waiting for a slot at the end)"})
	}
	if w := rep.Load.Warmup; w != "" || c.Warmup > 0 {
		note := units.Integer(float64(c.Warmup)) + " sent, in no figure but the self-check"
		switch rep.Window.Settled {
		case "settled":
			note += "; ended when the server settled"
		case "limit":
			note += "; ended at its limit: the server had not settled"
		}
		r := row("warmup", "warm-up", w, note)
		if rep.Window.Settled == "limit" {
			r.Severity = report.Warn
		}
		sec.Rows = append(sec.Rows, r)
	}
	if rep.Load.Workload != "" {
		sec.Rows = append(sec.Rows, row("workload", "workload", rep.Load.Workload, rep.Load.Made))
	}
	metrics := rep.Metrics
	if metrics == "bench" {
		metrics = "the bench's own measurements"
		sec.Rows = append(sec.Rows, row("metrics", "server figures", metrics, "the server publishes no /metrics"))
	} else {
		sec.Rows = append(sec.Rows, row("metrics", "server figures", metrics, ""))
	}
	win := rep.Window
	if known(win.Seconds) {
		n := fmt.Sprintf("%d scrapes, every %s", win.Scrapes, say(win.IntervalSeconds))
		if win.FailedScrapes > 0 {
			n += fmt.Sprintf("; %d failed", win.FailedScrapes)
		}
		sec.Rows = append(sec.Rows, row("window", "server window", say(win.Seconds), n))
	} else if win.Why != "" {
		sec.Rows = append(sec.Rows, report.Row{ID: "window", Label: "server window", Value: "none", Note: win.Why, Severity: report.Warn})
	}
	switch {
	case rep.Verdict != "" && rep.ClientBound:
		sec.Rows = append(sec.Rows, report.Row{ID: "verdict", Label: "verdict", Value: verdictWords[rep.Verdict],
			Note: "and the generator could not keep up: see the notes", Severity: report.Warn})
	case rep.Verdict != "":
		sec.Rows = append(sec.Rows, row("verdict", "verdict", verdictWords[rep.Verdict], "see the notes"))
	case rep.ClientBound:
		sec.Rows = append(sec.Rows, report.Row{ID: "verdict", Label: "verdict", Value: "client-bound", Note: "see the notes", Severity: report.Warn})
	}
	return sec
}

// VerdictWords names a verdict note's id in a word or two ("KV-bound");
// "" for none.
func VerdictWords(id string) string { return verdictWords[id] }

// verdictWords name each verdict in a row.
var verdictWords = map[string]string{
	"bench_saturated":     "saturated",
	"bench_kv_bound":      "KV-bound",
	"bench_prefill_bound": "prefill-bound",
	"bench_decode_bound":  "decode-bound",
}

func (rep *Report) latencySection() report.Section {
	c := rep.Client
	t := &report.Table{Header: report.List[string]{"per request", "mean", "p50", "p90", "p99", "max"}}
	dist := func(id, label string, d Dist, cell func(report.Number) string) {
		if d.Count == 0 {
			return
		}
		t.Rows = append(t.Rows, report.TableRow{ID: id, Label: label, Cells: report.List[string]{cell(d.Mean), cell(d.P50), cell(d.P90), cell(d.P99), cell(d.Max)}})
	}
	dist("ttfb", "TTFB", c.TTFB, say)
	dist("ttft", "TTFT", c.TTFT, say)
	dist("e2e", "E2E", c.E2E, say)
	dist("tpot", "TPOT", c.TPOT, say)
	if c.ITL.Count > 0 {
		t.Rows = append(t.Rows, report.TableRow{ID: "itl", Label: "ITL", Cells: report.List[string]{say(c.ITL.Mean), say(c.ITL.P50), say(c.ITL.P90), say(c.ITL.P99), say(c.ITL.Max)}})
	}
	dist("output_rate", "output tok/s", c.RequestRates, sayCount)
	sec := report.Section{ID: "latency", Title: "Latency, client side", Table: t}
	if len(t.Rows) == 0 {
		sec.Rows = append(sec.Rows, row("none", "no request completed", "", ""))
		sec.Table = nil
	}
	if c.ITL.Count > 0 {
		sec.Rows = append(sec.Rows, row("", "", "", fmt.Sprintf("percentiles exact, from every request; ITL pools %s gaps in a histogram within %s",
			units.Integer(float64(c.ITL.Count)), units.Percent(float64(c.ITL.RelativeError)))))
	}
	return sec
}

func (rep *Report) throughputSection() report.Section {
	c := rep.Client
	sec := report.Section{ID: "throughput", Title: "Throughput"}
	if !known(c.WindowSeconds) {
		sec.Rows = append(sec.Rows, row("none", "no request completed", "", ""))
		return sec
	}
	sec.Rows = append(sec.Rows,
		row("requests", "requests", sayCount(c.RequestRate)+" /s", units.Integer(float64(c.Completed))+" completed"),
		row("output", "output tokens", sayCount(c.OutputRate)+" tok/s", units.Integer(float64(c.OutputTokens))+" by the "+tokenWords(c.TokenSource)))
	if known(c.PromptRate) {
		n := ""
		if c.PromptTokens != nil {
			n = units.Integer(float64(*c.PromptTokens)) + " by usage"
			if c.CachedTokens != nil {
				n += ", " + units.Integer(float64(*c.CachedTokens)) + " of them cached"
			}
		}
		sec.Rows = append(sec.Rows, row("prompt", "prompt tokens", sayCount(c.PromptRate)+" tok/s", n))
	}
	sec.Rows = append(sec.Rows, row("window", "over", say(c.WindowSeconds), "from the first measured send to the last answer's end"))
	if g := c.Goodput; g != nil {
		sec.Rows = append(sec.Rows, row("goodput", "goodput", sayCount(g.Rate)+" /s",
			fmt.Sprintf("%s good: %s of %s %s under %s", units.Percent(float64(g.Share)), units.Integer(float64(g.Good)), units.Integer(float64(g.Of)), g.Denominator, g.SLO)))
	}
	if c.Failed > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(c.Errors)) {
			kinds = append(kinds, units.Integer(float64(c.Errors[k]))+" "+k)
		}
		sec.Rows = append(sec.Rows, report.Row{ID: "errors", Label: "failed", Value: units.Integer(float64(c.Failed)), Note: strings.Join(kinds, ", "), Severity: report.Warn})
	}
	return sec
}

func tokenWords(source string) string {
	switch source {
	case "events":
		return "streamed events (no usage sent)"
	case "mixed":
		return "server's usage where sent, else events"
	}
	return "server's usage"
}

func (rep *Report) lengthsSection() (report.Section, bool) {
	l := rep.Client.Lengths
	sec := report.Section{ID: "lengths", Title: "Lengths, asked and got"}
	add := func(id, label string, asked report.Number, got Dist) {
		if got.Count == 0 && !known(asked) {
			return
		}
		value := "—"
		if got.Count > 0 {
			value = sayCount(got.Mean) + " mean"
		}
		note := ""
		if got.Count > 0 {
			note = "min " + sayCount(got.Min) + ", p50 " + sayCount(got.P50) + ", max " + sayCount(got.Max)
		}
		if known(asked) {
			note = "asked " + sayCount(asked) + "; " + note
		}
		sec.Rows = append(sec.Rows, row(id, label, value, strings.TrimSuffix(note, "; ")))
	}
	add("prompt", "prompt tokens", l.PromptAsked, l.Prompt)
	add("output", "output tokens", l.OutputAsked, l.Output)
	if c := rep.Client; c.Stopped > 0 || c.Cut > 0 {
		sec.Rows = append(sec.Rows, report.Row{ID: "short", Label: "short of the ask", Value: units.Integer(float64(c.Stopped + c.Cut)),
			Note: fmt.Sprintf("%d stopped at the model's end, %d at the length limit", c.Stopped, c.Cut), Severity: report.Warn})
	}
	return sec, len(sec.Rows) > 0
}

func (rep *Report) splitSection() (report.Section, bool) {
	sec := report.Section{ID: "ttft_split", Title: "Time to first token, split"}
	if s := rep.TTFTSplit; s != nil {
		sec.Rows = append(sec.Rows,
			row("client", "at the client", say(s.Client), "mean of the "+units.Integer(float64(s.Requests))+" requests that finished in the window"),
			row("queue", "server queue", say(s.Queue), "mean over the window, from its histogram"),
			row("prefill", "server prefill", say(s.Prefill), "mean over the window, from its histogram"),
			row("outside", "outside the engine", say(s.Outside), "network, HTTP front end, tokenizer, a proxy"))
	}
	if s := rep.Client.Split; s != nil {
		by := "Ollama's"
		if s.Source == "llama.cpp" {
			by = "llama.cpp's"
		}
		note := "mean over " + units.Integer(float64(s.Requests)) + " answers, " + by + " own account"
		if known(s.Load) {
			sec.Rows = append(sec.Rows, row("load", "model load", say(s.Load), note))
			note = ""
		}
		sec.Rows = append(sec.Rows,
			row("answer_prefill", "prefill", say(s.Prefill), note),
			row("answer_decode", "decode", say(s.Decode), ""),
			row("beyond", "TTFT beyond them", say(s.Beyond), "queueing and all outside the engine: the answers do not tell them apart"))
	}
	return sec, len(sec.Rows) > 0
}

func (rep *Report) generatorSection() report.Section {
	c := rep.Client
	sec := report.Section{ID: "generator", Title: "Generator"}
	if c.Lateness.Count > 0 && rep.Load.Mode != "closed" {
		sec.Rows = append(sec.Rows, row("lateness", "send lateness", say(c.Lateness.P99)+" p99",
			fmt.Sprintf("max %s; %s of %s more than 1 ms late", say(c.Lateness.Max), units.Integer(float64(c.Lateness.Late)), units.Integer(float64(c.Lateness.Count)))))
	}
	if w := c.SlotWait; w != nil {
		sec.Rows = append(sec.Rows, row("slot_wait", "waited for a slot", say(w.P99)+" p99",
			fmt.Sprintf("mean %s over %s requests: the cap's, part of their latency", say(w.Mean), units.Integer(float64(w.Count)))))
	}
	if known(c.CPUSeconds) {
		note := ""
		if known(c.CPUShare) {
			note = units.Percent(float64(c.CPUShare)) + " of its cores"
		}
		sec.Rows = append(sec.Rows, row("cpu", "CPU", say(c.CPUSeconds), note))
	}
	if len(sec.Rows) == 0 {
		sec.Rows = append(sec.Rows, row("none", "nothing scheduled", "closed loop", ""))
	}
	return sec
}

func (rep *Report) selfCheckSection() report.Section {
	sc := rep.SelfCheck
	sec := report.Section{ID: "self_check", Title: "Self-check: generator vs server"}
	add := func(id, label string, c Compare, say func(report.Number) string, of string) {
		if !known(c.Client) && !known(c.Server) {
			return
		}
		value := say(c.Client) + " vs " + say(c.Server)
		note := of
		if c.Agree != nil && *c.Agree {
			note = "agree; " + of
		}
		sec.Rows = append(sec.Rows, report.Row{ID: id, Label: label, Value: value, Note: note, Severity: c.Colour})
	}
	integer := func(v report.Number) string { return units.Integer(float64(v)) }
	mean := func(v report.Number) string {
		if !known(v) {
			return units.Missing
		}
		return fmt.Sprintf("%.2f", float64(v))
	}
	add("requests", "requests", sc.Requests, integer, "completed vs finished, whole run")
	add("tokens", "output tokens", sc.Tokens, integer, "received by usage vs generated, whole run")
	add("concurrency", "in flight", sc.Concurrency, mean, "mean at the scrapes vs running + waiting")
	if sc.Why != "" {
		sec.Rows = append(sec.Rows, row("", "", "", "not checked exactly: "+sc.Why))
	}
	return sec
}
