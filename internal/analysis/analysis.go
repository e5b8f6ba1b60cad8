// Package analysis turns a canonical snapshot into a report: the ratios worth
// looking at, each with a note where the figure implies an action, and a
// statement where a number cannot judge on its own. Its sections are
// docs/report.md's; a section with no data is left out rather than
// shown as zeros. The thresholds it judges by, and the colour and note of
// each band, are one table (thresholds.go, docs/notes.md).
package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Schema is the version of the report's JSON form.
const Schema = 2

// Options tune one analysis.
type Options struct {
	// Now is the time utilization is measured to; zero means the scrape time.
	Now time.Time
	// Hist adds a distribution section per histogram.
	Hist bool
	// Raw keeps the server's own families in the report (JSON "raw"); the
	// text view does not show them, so it need not pay for the copy.
	Raw bool
	// WithRates says the report is shown under windowed rates (the watch
	// view, --since, a fleet's instance): the cumulative figures point to
	// them rather than to --watch.
	WithRates bool
}

type analyzer struct {
	s *snapshot.Snapshot
	o Options
	r *report.Report
	// q holds each non-empty histogram's quantiles as the report states
	// them, computed once by summaries.
	q map[string]quantiles
}

// Analyze builds the report for one snapshot.
func Analyze(s *snapshot.Snapshot, o Options) *report.Report {
	if o.Now.IsZero() {
		o.Now = s.ScrapedAt
	}
	a := &analyzer{s: s, o: o, r: &report.Report{
		Schema:        Schema,
		Source:        s.Source,
		Dialect:       s.Dialect,
		SourceKind:    "server",
		Upstream:      s.Upstream,
		ScrapedAt:     report.Time{Time: s.ScrapedAt},
		TimeSource:    s.TimeSource,
		ScrapeSeconds: report.Number(s.ScrapeSeconds),
		Scalars:       numbers(s.Scalars),
		Histograms:    report.Map[report.HistogramSummary]{},
		Extra:         numbers(s.Extra),
		Sections:      []report.Section{},
		Notes:         []report.Note{},
	}}
	if o.Raw {
		a.r.Raw = raw(s.Raw)
	}
	a.header()
	a.summaries()
	a.live()
	a.breakdowns()
	a.throughput()
	a.phases()
	a.specDecode()
	a.prefixCache()
	a.kvOffload()
	a.recurrent()
	a.latency()
	a.size()
	a.dialectRows()
	a.unavailable()
	if o.Hist {
		a.distributions()
	}
	return a.r
}

func (a *analyzer) get(name string) float64 { return a.s.Get(name) }

// countOf, bytesOf and integerOf format a scalar, or a dash when the server
// does not publish it (never a 0 it did not say).
func (a *analyzer) countOf(name string) string   { return units.Count(a.scalarOrNaN(name)) }
func (a *analyzer) bytesOf(name string) string   { return units.Bytes(a.scalarOrNaN(name)) }
func (a *analyzer) integerOf(name string) string { return units.Integer(a.scalarOrNaN(name)) }

func (a *analyzer) scalarOrNaN(name string) float64 {
	if v, ok := a.s.Scalar(name); ok {
		return v
	}
	return math.NaN()
}
func (a *analyzer) has(name string) bool                  { _, ok := a.s.Scalar(name); return ok }
func (a *analyzer) hist(name string) *histogram.Histogram { return a.s.Hist(name) }

func (a *analyzer) section(id, title string, rows []report.Row) {
	if len(rows) == 0 {
		return
	}
	a.r.Sections = append(a.r.Sections, report.Section{ID: id, Title: title, Rows: rows})
}

func ptr[T any](v T) *T { return &v }

// num is a figure as the report holds it.
func num(v float64) *report.Number { return ptr(report.Number(v)) }

// numbers copies scalars into the report's form.
func numbers(m map[string]float64) report.Map[report.Number] {
	out := make(report.Map[report.Number], len(m))
	for k, v := range m {
		out[k] = report.Number(v)
	}
	return out
}

func bar(f float64) *report.Number {
	if math.IsNaN(f) {
		return nil
	}
	return num(math.Max(0, math.Min(1, f)))
}

func (a *analyzer) header() {
	if a.s.Via != "" {
		a.r.SourceKind = "proxy"
		by := "measured by " + a.s.Via
		if a.s.Upstream != "" {
			by += " in front of " + a.s.Upstream
		}
		a.r.Header = append(a.r.Header, by+": the API's counts and timings, no engine state")
	}
	if a.s.TimeUnknown != "" {
		a.r.Header = append(a.r.Header, "scrape time unknown: "+a.s.TimeUnknown+" (--at TIME gives it)")
	}
	if a.s.AnsweredJSON != "" {
		// Where the text came from is not where the user pointed.
		a.r.Header = append(a.r.Header, "read from "+a.s.Source+": "+a.s.AnsweredJSON+" answered JSON (as trtllm-serve's /metrics does)")
	}
	if a.s.ScrapeSeconds > SlowScrape.Seconds() {
		why := a.s.Advice.WhySlow()
		a.r.Header = append(a.r.Header, fmt.Sprintf("the scrape waited %s (%s)", units.Seconds(a.s.ScrapeSeconds), why))
		a.judge(nil, scrapeSlow, "the scrape waited %s (%s), so figures are as of the end of that wait", units.Seconds(a.s.ScrapeSeconds), why)
	}
	a.invalid()
	if len(a.s.Models) > 1 {
		if a.s.Model != "" {
			a.r.Header = append(a.r.Header, fmt.Sprintf("model %s (of %d served: %s)", a.s.Model, len(a.s.Models), modelList(a.s.Models)))
		} else {
			a.r.Header = append(a.r.Header, fmt.Sprintf("%d models served, reported together: %s (--model to pick one)", len(a.s.Models), modelList(a.s.Models)))
		}
	} else if len(a.s.Models) == 1 {
		a.r.Header = append(a.r.Header, "model "+a.s.Models[0])
	}
	if req, ok := a.s.Scalar(snapshot.RequestsTotal); ok && req == 0 {
		a.judge(nil, noRequestsYet, "no request has finished yet: throughput, latency and size figures appear after the first one")
	}
}

// setting names the server's setting for a cache's size, or says it in
// general terms when the dialect does not know it.
func setting(knob, general string) string {
	if knob != "" {
		return knob
	}
	return general
}

// invalid names each series whose values cannot be: the dialect left it out
// of every figure, and the reader must know why those figures are absent.
func (a *analyzer) invalid() {
	for _, p := range a.s.Invalid {
		a.judge(nil, invalidSeries, "%s is invalid (%s): every figure derived from it is left out", p.Series, p.Reason)
	}
}

func join(xs []string) string { return strings.Join(xs, ", ") }

// maxListedModels is how many model names a header line lists; a gateway
// serving dozens would otherwise push the report below the screen (JSON
// "raw" keeps every series' model label).
const maxListedModels = 8

func modelList(models []string) string {
	if len(models) <= maxListedModels {
		return join(models)
	}
	return join(models[:maxListedModels]) + fmt.Sprintf(" and %d more", len(models)-maxListedModels)
}

// peaks names the peak series that bound each size histogram.
var peaks = map[string]string{
	snapshot.RequestPromptTokens:     snapshot.NTokensMax,
	snapshot.RequestGenerationTokens: snapshot.TokensPredictedMax,
}

func (a *analyzer) peak(hist string) (float64, bool) {
	name, ok := peaks[hist]
	if !ok {
		return 0, false
	}
	v, ok := a.s.Scalar(name)
	if !ok || v <= 0 {
		return 0, false
	}
	return v, true
}

func (a *analyzer) summaries() {
	a.q = make(map[string]quantiles, len(a.s.Histograms))
	for name, h := range a.s.Histograms {
		sum := report.HistogramSummary{
			Count: report.Number(h.Total()), Sum: report.Number(h.Sum), Mean: report.Number(h.Mean()),
			P50: report.Number(h.Quantile(0.5)), P90: report.Number(h.Quantile(0.9)), P99: report.Number(h.Quantile(0.99)),
			Buckets:    make([]report.Bucket, 0, len(h.Buckets)),
			Incomplete: incomplete(h),
		}
		if h.NoSum {
			sum.Sum = report.Number(math.NaN())
		}
		if pk, ok := a.peak(name); ok {
			sum.Peak = num(pk)
		}
		if h.Total() > 0 {
			b := a.bounded(name)
			a.q[name] = b
			sum.Capped = &report.Quantiles{P50: report.Number(b[0].Value), P90: report.Number(b[1].Value), P99: report.Number(b[2].Value)}
			sum.Stated = map[string]report.Stated{}
			for i, e := range b {
				sum.Stated[quantileNames[i]] = report.Stated{Value: report.Number(e.Value), Kind: kindName(e.Kind), Lo: report.Number(e.Lo), Hi: report.Number(e.Hi)}
			}
		}
		for _, b := range h.Buckets {
			sum.Buckets = append(sum.Buckets, report.Bucket{LE: formatLE(b.UpperBound), Count: report.Number(b.Count)})
		}
		a.r.Histograms[name] = sum
	}
}

// incomplete names what an exposition left out of a histogram.
func incomplete(h *histogram.Histogram) []string {
	var out []string
	if h.NoTop {
		out = append(out, "+Inf bucket and _count")
	}
	if h.NoSum {
		out = append(out, "_sum")
	}
	return out
}

var quantileNames = [3]string{"p50", "p90", "p99"}

// kindName is a Kind as JSON spells it ("at_most").
func kindName(k histogram.Kind) string { return strings.ReplaceAll(k.String(), " ", "_") }

// stated writes an estimate as every view does (histogram.Estimate.Say),
// a dash when nothing can be said.
func stated(e histogram.Estimate, format func(float64) string) string {
	if v := e.Say(format); v != "" {
		return v
	}
	return units.Missing
}

func formatLE(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// --- Live ------------------------------------------------------------------

func (a *analyzer) live() {
	var rows []report.Row
	add := func(build func() (report.Row, bool)) {
		if row, ok := build(); ok {
			rows = append(rows, row)
		}
	}
	add(a.state)
	rows = append(rows, a.priorityRows()...)
	add(a.pausedRow)
	add(a.refusedRow)
	add(a.kvCacheRow)
	add(a.tokenBudgetRow)
	add(a.kvCachedRow)
	rows = append(rows, a.poolRows()...)
	add(a.contextRow)
	add(a.offloadUsageRow)
	for _, p := range peakRows {
		v, ok := a.s.Scalar(p.name)
		if p.extra {
			v, ok = a.s.Extra[p.name]
		}
		if ok && v > 0 {
			rows = append(rows, report.Row{ID: p.id, Label: p.label, Value: units.Count(v) + " " + units.Noun(v, "token"), Note: p.note})
		}
	}
	a.section("live", "Live", rows)
}

// peakRows are the largest requests the server has seen, from a scalar
// or, with extra, an Extra figure.
var peakRows = []struct {
	id, name, label, note string
	extra                 bool
}{
	{id: "largest_prompt", name: snapshot.NTokensMax, label: "largest prompt seen", note: "a peak no percentile can show"},
	{id: "largest_sequence", name: snapshot.ExtraLargestSequence, label: "largest sequence seen", note: "prompt + generation", extra: true},
	{id: "largest_generation", name: snapshot.TokensPredictedMax, label: "largest generation", note: "a peak no percentile can show"},
}

// kvCacheRow is the KV cache in use, judged for pressure.
func (a *analyzer) kvCacheRow() (report.Row, bool) {
	ratio, ok := a.kvUsage()
	if !ok {
		return report.Row{}, false
	}
	note := ""
	used, okU := a.s.Scalar(snapshot.KVCacheTokens)
	if mx := a.get(snapshot.KVCacheMaxTokens); mx > 0 && okU {
		note = units.Count(used) + " / " + units.Count(mx) + " " + units.Noun(mx, "token")
	}
	if len(byPrefix(a.s.Extra, snapshot.ExtraKVPoolUsage)) > 0 {
		// A hybrid model: say which of its pools this is.
		note = strings.TrimPrefix(note+", full-attention pool", ", ")
	}
	row := report.Row{ID: "kv_cache", Label: "KV cache", Value: units.Percent(ratio), Bar: bar(ratio), Note: note}
	switch b := kvBand(ratio); b {
	case kvCacheOverCapacity:
		// Two gauges read at different moments, or a broken server: no
		// advice follows from a cache fuller than it can be.
		row.Value, row.Bar = "used exceeds capacity", nil
		a.judge(&row, b, "the server reports more KV cache in use than its capacity (%s): its gauges are out of step, so KV pressure cannot be judged from this scrape", note)
	case kvCachePressure:
		fix := ""
		if a.s.Advice.KVFix != "" {
			fix = "; " + a.s.Advice.KVFix
		}
		a.judge(&row, b, "KV cache %s referenced by in-flight jobs: new requests wait for pages (unreferenced cached prefixes are already counted as free)%s", units.Percent(ratio), fix)
	default:
		a.judge(&row, b, "")
	}
	return row, true
}

// offloadUsageRow is the KV offload cache's tokens held in RAM, when its
// capacity is known.
func (a *analyzer) offloadUsageRow() (report.Row, bool) {
	held, okH := a.s.Scalar(snapshot.KVOffloadTokens)
	mx := a.get(snapshot.KVOffloadMaxTokens)
	if !(mx > 0 && okH) {
		return report.Row{}, false
	}
	ratio := held / mx
	row := report.Row{ID: "kv_offload", Label: "KV offload", Value: units.Percent(ratio), Bar: bar(ratio),
		Note: units.Count(held) + " / " + units.Count(mx) + " in RAM"}
	if ratio > 1 {
		row.Value, row.Bar = "used exceeds capacity", nil
		a.offloadOverCapacity(&row, row.Note)
	}
	return row, true
}

// state is "idle", "N generating" and ", M queued", from whichever of the
// two gauges the server publishes, or that the engine is asleep (vLLM's
// sleep mode: nothing runs, which is not idle); with queue pressure, or a
// queue and nothing running, it adds a note, whose advice depends on what
// the queue waits for: batch room, or (vLLM's deferred requests) a LoRA
// adapter slot or a KV transfer that more room would not bring sooner.
func (a *analyzer) state() (report.Row, bool) {
	run, okR := a.s.Scalar(snapshot.RequestsProcessing)
	wait, okW := a.s.Scalar(snapshot.RequestsDeferred)
	if !okR && !okW {
		return report.Row{}, false
	}
	sl := a.sleep()
	row := report.Row{ID: "state", Label: "state", Value: stateText(run, wait, okR, okW)}
	switch {
	case sl.all:
		row.Value = "asleep: " + sl.what
		if okW && wait > 0 {
			row.Value += ", " + units.Integer(wait) + " queued"
		}
	case sl.some > 0:
		row.Note = units.Plural(sl.some, "engine") + " asleep: " + sl.what
	}
	deferred, okD := a.s.Extra[snapshot.ExtraWaitingDeferred]
	if okD && deferred > 0 && okW && wait > 0 {
		note := units.Integer(math.Min(deferred, wait)) + " of the queue deferred, not waiting for capacity"
		row.Note = joinNotes(row.Note, note)
	}
	if !okR || !okW || wait <= 0 {
		return row, true
	}
	// Mostly deferred: a LoRA budget or a KV transfer holds the queue, not
	// batch room, and the server's capacity knobs would not shorten it.
	mostlyDeferred := okD && deferred*2 >= wait && a.s.Advice.QueueDeferred != ""
	fix := ""
	switch {
	case mostlyDeferred:
		fix = "; but " + units.Integer(math.Min(deferred, wait)) + " of them are deferred, not waiting for capacity: " + a.s.Advice.QueueDeferred
	case a.s.Advice.QueueFix != "":
		fix = "; " + a.s.Advice.QueueFix
	}
	switch b, _ := queueBand(run, wait); b {
	case queueStalled:
		why := "if that persists across scrapes, admission is stalled (a full KV cache, a model loading, or an engine error in the server's log)"
		switch {
		case sl.all:
			why = "the engine is asleep (" + sl.what + "), so nothing runs until it is woken"
			if a.s.Advice.Wake != "" {
				why += " (" + a.s.Advice.Wake + ")"
			}
		case mostlyDeferred:
			why = "they are deferred, not waiting for capacity: " + a.s.Advice.QueueDeferred
		}
		// One scrape cannot tell a stall from a request that just arrived.
		a.judge(&row, b, "%s and none running: %s", units.Plural(wait, "request")+" waiting", why)
	case queuePressure:
		// Many times what runs is waiting: the queue, not the engine, sets
		// the latency requests see.
		a.judge(&row, b, "%s against %s running: requests spend longer waiting than the batch can absorb, and time to first token grows with the queue%s",
			units.Plural(wait, "request")+" queued", units.Integer(run), fix)
	}
	return row, true
}

// joinNotes joins two notes of a row with "; ", either may be empty.
func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// sleeping is what vLLM's engine_sleep_state says: every engine asleep
// (all), or how many of them (some), and at which level (what).
type sleeping struct {
	all  bool
	some float64
	what string
}

// sleep reads the engines' sleep state: the engines awake, and those
// asleep at level 1 (weights offloaded to CPU memory) and level 2
// (weights and KV discarded). Every engine is asleep where none is awake
// (a sleep at level 0, which only pauses scheduling, reads 0 in all
// three states).
func (a *analyzer) sleep() sleeping {
	x := a.s.Extra
	awake, ok := x[snapshot.ExtraSleepState+"awake"]
	if !ok {
		return sleeping{}
	}
	off, discarded := x[snapshot.ExtraSleepState+"weights_offloaded"], x[snapshot.ExtraSleepState+"discard_all"]
	var what string
	switch {
	case discarded > 0 && off > 0:
		what = "weights offloaded to CPU memory or discarded, sleep levels 1 and 2"
	case discarded > 0:
		what = "weights and KV cache discarded, sleep level 2"
	case off > 0:
		what = "weights offloaded to CPU memory, sleep level 1"
	default:
		what = "scheduling paused"
	}
	return sleeping{all: awake == 0, some: off + discarded, what: what}
}

// refusedRow is the requests refused at admission, before they queued
// (vLLM's --max-num-queued-reqs and --max-num-queued-tokens), by reason:
// the load the queue and the finished count never see.
func (a *analyzer) refusedRow() (report.Row, bool) {
	n, ok := a.s.Extra[snapshot.ExtraAdmissionRejections]
	if !ok || math.IsNaN(n) {
		return report.Row{}, false
	}
	row := report.Row{ID: "refused", Label: "refused at admission", Value: units.Plural(n, "request"), Note: "none"}
	if !(n > 0) {
		return row, true
	}
	var reasons []string
	for k, v := range a.s.Extra {
		if r, ok := strings.CutPrefix(k, snapshot.ExtraAdmissionRejectionsBy); ok && v > 0 {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	var by []string
	for _, r := range reasons {
		by = append(by, r+" "+units.Integer(a.s.Extra[snapshot.ExtraAdmissionRejectionsBy+r]))
	}
	row.Note = "503 before queueing"
	if len(by) > 0 {
		row.Note += ": " + join(by)
	}
	limit := ""
	if a.s.Advice.AdmissionLimit != "" {
		limit = "; " + a.s.Advice.AdmissionLimit
	}
	a.judge(&row, requestsRefused, "%s refused with 503 at admission, before queueing: they reach neither the queue nor the finished count, so the queue and the request rate understate the load%s; raise the limit where the latency it protects allows, or add replicas",
		units.Plural(n, "request was", "requests were"), limit)
	return row, true
}

// tokenBudgetRow is the tokens TGI's running batch reserved, as a share
// of its budget where the server publishes one: a reservation of each
// request's whole length, not KV in use.
func (a *analyzer) tokenBudgetRow() (report.Row, bool) {
	held, ok := a.s.Extra[snapshot.ExtraTokenBudgetReserved]
	if !ok || math.IsNaN(held) {
		return report.Row{}, false
	}
	row := report.Row{ID: "token_budget", Label: "token budget", Value: units.Count(held) + " tokens reserved",
		Note: "prompt + max_new_tokens of the running batch, not KV in use; the budget is not published"}
	if mx := a.s.Extra[snapshot.ExtraTokenBudgetMax]; mx > 0 {
		r := held / mx
		row.Value, row.Bar = units.Percent(r)+" reserved", bar(r)
		row.Note = units.Count(held) + " / " + units.Count(mx) + " tokens: prompt + max_new_tokens of the running batch, not KV in use"
	}
	return row, true
}

// stateText is the state row's value from the running and waiting gauges,
// either of which may be absent (okR, okW).
func stateText(run, wait float64, okR, okW bool) string {
	if okR && okW && run == 0 && wait == 0 {
		return "idle"
	}
	var parts []string
	if okR {
		parts = append(parts, units.Integer(run)+" generating")
	}
	if okW && (wait > 0 || !okR) {
		parts = append(parts, units.Integer(wait)+" queued")
	}
	return join(parts)
}

// kvUsage is the KV usage ratio: from the token gauges when capacity is
// known, else the server's own ratio.
func (a *analyzer) kvUsage() (float64, bool) {
	if used, ok := a.s.Scalar(snapshot.KVCacheTokens); ok {
		if mx := a.get(snapshot.KVCacheMaxTokens); mx > 0 {
			return used / mx, true
		}
	}
	if v, ok := a.s.Scalar(snapshot.KVCacheUsageRatio); ok {
		if !a.has(snapshot.KVCacheMaxTokens) || a.get(snapshot.KVCacheMaxTokens) > 0 {
			return v, true
		}
	}
	return 0, false
}

// --- Throughput ------------------------------------------------------------

func (a *analyzer) throughput() {
	var rows []report.Row
	if v, ok := a.s.Scalar(snapshot.PromptTokensTotal); ok {
		val := units.Count(v) + " computed"
		if t, ok := a.s.Scalar(snapshot.PromptSecondsTotal); ok {
			val += " over " + units.Seconds(t)
		}
		note := "cache hits excluded"
		switch {
		case a.s.PrefixCaching == "off":
			note = "prefix caching off: every prompt token"
		case a.has(snapshot.PromptTokensAll):
			// Some requests said what was cached (the proxy in front of
			// several APIs): this is their prefill work only.
			note = "cache hits excluded, of the requests that said them"
		}
		rows = append(rows, report.Row{ID: "prefill_work", Label: "prefill work", Value: val, Note: note})
	}
	if v, ok := a.s.Scalar(snapshot.PromptTokensAll); ok {
		rows = append(rows, report.Row{ID: "prompt_tokens", Label: "prompt tokens", Value: units.Count(v), Note: a.promptAllNote()})
	}
	if v, ok := a.s.Scalar(snapshot.TokensPredictedTotal); ok {
		val := units.Count(v) + " generated"
		if t, ok := a.s.Scalar(snapshot.TokensPredictedSecondsTotal); ok {
			val += " over " + units.Seconds(t)
		}
		rows = append(rows, report.Row{ID: "decode_work", Label: "decode work", Value: val})
	}
	if v, ok := a.s.Scalar(snapshot.RequestsTotal); ok {
		rows = append(rows, report.Row{ID: "requests", Label: "requests finished", Value: units.Integer(v)})
	}
	if len(rows) == 0 || a.get(snapshot.RequestsTotal) == 0 && a.get(snapshot.TokensPredictedTotal) == 0 {
		return
	}
	if !a.has(snapshot.PromptSecondsTotal) && !a.has(snapshot.TokensPredictedSecondsTotal) {
		a.section("throughput", "Throughput (cumulative)", rows)
		return
	}
	note := "summed request time, not a rate: see --watch"
	if a.o.WithRates {
		note = "summed request time, not a rate: the rates are above"
	}
	rows = append(rows, report.Row{ID: "no_rate", Severity: report.Dim, Note: note})
	a.section("throughput", "Throughput (cumulative)", rows)
}

// promptAllNote says what a count of every prompt token, cached and
// computed alike, holds (vLLM before 0.16, the llm-d simulator, SGLang
// without its cached counter): the prefix cache's hits are among them,
// and where the server counts its lookups and hits, lookups less hits
// estimate the computed part. The two counts are not the same tokens:
// lookups are counted as requests are scheduled (again after a
// preemption), prompt tokens as prefills finish.
func (a *analyzer) promptAllNote() string {
	if a.has(snapshot.PromptTokensTotal) {
		// The proxy: some APIs said what was cached, these did not.
		return "more, from requests whose cached share is unknown"
	}
	q, okQ := a.s.Scalar(snapshot.PrefixCacheQueries)
	h, okH := a.s.Scalar(snapshot.PrefixCacheHits)
	if !okQ || !okH || q <= 0 || h < 0 || h > q {
		if a.s.Via != "" {
			return "cache hits included; the API does not say how many"
		}
		return "cache hits included; this server does not say how many"
	}
	return "includes the prefix cache's " + units.Count(h) + " " + units.Noun(h, "hit") + ": ≈" + units.Count(q-h) + " computed (looked up − hit)"
}

// --- Speculative decode ----------------------------------------------------

func (a *analyzer) specDecode() {
	if !SectionsOf(a.s).SpecDecode {
		return
	}
	f := &a.r.Figures
	var rows []report.Row
	drafted, accepted := a.get(snapshot.SpecDecodeNumDraftTokensTotal), a.get(snapshot.SpecDecodeNumAcceptedTokensTotal)
	_, hasAccepted := a.s.Scalar(snapshot.SpecDecodeNumAcceptedTokensTotal)
	_, hasDrafted := a.s.Scalar(snapshot.SpecDecodeNumDraftTokensTotal)
	verified, hasVerified := a.s.Extra[snapshot.ExtraSpecVerifyCalls]
	switch {
	case hasVerified && !hasDrafted:
		// SGLang counts verify passes, not drafted tokens: no acceptance
		// rate, only how many tokens a pass emits.
	case drafted > 0 && !hasAccepted:
		rows = append(rows, report.Row{ID: "draft_acceptance", Label: "draft acceptance", Value: units.Missing, Note: "accepted tokens not published", Severity: report.Dim})
	case drafted > 0:
		acc := accepted / drafted
		f.SpecDecodeAcceptance = num(acc)
		row := report.Row{ID: "draft_acceptance", Label: "draft acceptance", Value: units.Percent(acc), Bar: bar(acc),
			Note: units.Count(accepted) + " / " + units.Count(drafted)}
		if b := acceptanceBand(acc); b == draftAcceptanceLow {
			a.judge(&row, b, "only %s of drafted tokens were accepted: most of the drafter's work is thrown away; a draft model closer to the target model, or fewer tokens per draft, wastes less", units.Percent(acc))
		} else {
			a.judge(&row, b, "")
		}
		rows = append(rows, row)
	default:
		rows = append(rows, report.Row{ID: "draft_acceptance", Label: "draft acceptance", Value: units.Missing, Note: "no tokens drafted yet", Severity: report.Dim})
	}
	if gen, ok := a.s.Scalar(snapshot.TokensPredictedTotal); ok && hasVerified && verified > 0 {
		rows = append(rows, report.Row{ID: "tokens_per_verify", Label: "tokens / verify", Value: strconv.FormatFloat(gen/verified, 'f', 2, 64),
			Note: "generated tokens per verify pass, the target's own included (" + units.Count(verified) + " passes)"})
	}
	steps, hasSteps := a.s.Scalar(snapshot.SpecDecodeNumDecodeStepsTotal)
	if hasSteps && steps > 0 && hasAccepted {
		tps := 1 + accepted/steps
		f.SpecDecodeTokensPerStep = num(tps)
		rows = append(rows, report.Row{ID: "tokens_per_step", Label: "tokens / step", Value: strconv.FormatFloat(tps, 'f', 3, 64),
			Note: fmt.Sprintf("%+.0f%% vs. no drafter", (tps-1)*100)})
	}
	if hasSteps {
		note := ""
		if req, ok := a.s.Scalar(snapshot.SpecDecodeRequestsTotal); ok {
			note = units.Integer(req) + " req w/ drafter"
		}
		rows = append(rows, report.Row{ID: "decode_steps", Label: "decode steps", Value: units.Count(steps), Note: note})
	}
	a.section("spec_decode", "Speculative decode", rows)
}

// --- Prefix cache ----------------------------------------------------------

func (a *analyzer) prefixCache() {
	if a.s.PrefixCaching == "off" {
		a.section("prefix_cache", "Prefix cache", []report.Row{{ID: "prefix_caching_off", Label: "prefix caching", Value: "off",
			Note: "every prompt token is computed", Severity: report.Dim}})
		return
	}
	q, okQ := a.s.Scalar(snapshot.PrefixCacheQueries)
	hits, okH := a.s.Scalar(snapshot.PrefixCacheHits)
	// Half a ratio is no ratio: the dialect says which half is missing.
	if !okQ || !okH || q <= 0 {
		return
	}
	if hits > q || hits < 0 {
		a.section("prefix_cache", "Prefix cache", []report.Row{{ID: "hit_rate", Label: "hit rate", Value: units.Missing,
			Note: units.Count(hits) + " " + units.Noun(hits, "hit") + " of " + units.Count(q) + " queried: counters out of step", Severity: report.Dim}})
		return
	}
	ratio := hits / q
	a.r.Figures.PrefixCacheHitRatio = num(ratio)
	// A low hit rate is the workload's: nothing to act on, so no colour.
	hit := report.Row{ID: "hit_rate", Label: "hit rate", Value: units.Percent(ratio), Bar: bar(ratio),
		Note: units.Count(hits) + " / " + units.Count(q) + " " + units.Noun(q, "token")}
	a.judge(&hit, hitRateBand(ratio), "")
	rows := []report.Row{hit}
	rows = append(rows, a.tierRows(q, hits)...)
	if v, ok := a.s.Scalar(snapshot.PromptTokensTotal); ok {
		rows = append(rows, report.Row{ID: "prefilled", Label: "prefilled", Value: units.Count(v) + " " + units.Noun(v, "token"), Note: "= queried − cached"})
	}
	a.section("prefix_cache", "Prefix cache", rows)
}

// tierRows split the hit rate by where the hits were (SGLang's
// hierarchical cache: the device, host memory, storage), each a share of
// the tokens queried, where any hit came from beyond the device.
func (a *analyzer) tierRows(q, hits float64) []report.Row {
	host, okH := a.s.Scalar(snapshot.PrefixCacheHostHits)
	storage, okS := a.s.Scalar(snapshot.PrefixCacheStorageHits)
	if !okH && !okS || !(host+storage > 0) || host+storage > hits {
		return nil
	}
	var rows []report.Row
	for _, t := range []struct {
		id, label, note string
		v               float64
		ok              bool
	}{
		{"hit_device", "from the device", "tokens already in GPU memory", hits - host - storage, true},
		{"hit_host", "from host memory", "tokens loaded back from host memory", host, okH},
		{"hit_storage", "from storage", "tokens read from the storage tier", storage, okS},
	} {
		if !t.ok {
			continue
		}
		share := t.v / q
		rows = append(rows, report.Row{ID: t.id, Label: t.label, Value: units.Percent(share), Bar: bar(share),
			Note: units.Count(t.v) + " " + t.note})
	}
	return rows
}

// --- KV offload ------------------------------------------------------------

// offloadOverCapacity marks a row whose offload use exceeds its capacity
// (said in what, "used / max"), with one note however many rows show it.
func (a *analyzer) offloadOverCapacity(row *report.Row, what string) {
	if a.noted(judgements[kvOffloadOverCapacity].note) {
		row.Severity = judgements[kvOffloadOverCapacity].colour
		return
	}
	a.judge(row, kvOffloadOverCapacity, "the server reports more KV offload in use than its capacity (%s): its gauges are out of step, so the offload cache cannot be judged from this scrape", what)
}

func (a *analyzer) kvOffload() {
	if !SectionsOf(a.s).KVOffload {
		return
	}
	var rows []report.Row
	if a.has(snapshot.KVOffloadMaxTokens) || a.has(snapshot.KVOffloadMaxBytes) {
		// A cache with a capacity (tabbyAPI's): what it holds and churns.
		rows = append(rows, a.offloadHitShareRow(), a.offloadRAMRow(), a.offloadChurnRow())
	}
	rows = append(rows, a.offloadTrafficRow())
	if row, ok := a.offloadSpeedRow(); ok {
		rows = append(rows, row)
	}
	a.section("kv_offload", "KV offload", rows)
}

// offloadSpeedRow is how fast transfers went while they ran (vLLM's
// offloading connector times each): bytes over the time transfers took,
// not over the wall clock.
func (a *analyzer) offloadSpeedRow() (report.Row, bool) {
	var parts []string
	for _, d := range []struct{ what, bytes, secs string }{
		{"load", snapshot.KVOffloadReadBytesTotal, snapshot.ExtraKVOffloadLoadSeconds},
		{"store", snapshot.KVOffloadWrittenBytesTotal, snapshot.ExtraKVOffloadStoreSeconds},
	} {
		b, okB := a.s.Scalar(d.bytes)
		t, okT := a.s.Extra[d.secs]
		if okB && okT && t > 0 && b >= 0 {
			parts = append(parts, d.what+" "+units.Bytes(b/t)+"/s")
		}
	}
	if len(parts) == 0 {
		return report.Row{}, false
	}
	return report.Row{ID: "speed", Label: "transfer speed", Value: join(parts), Note: "while transferring: bytes over the time transfers took"}, true
}

// offloadHitShareRow is the share of prefix-cache hits restored from RAM.
func (a *analyzer) offloadHitShareRow() report.Row {
	restored, okR := a.s.Scalar(snapshot.KVOffloadRestoredTokensTotal)
	hits, okH := a.s.Scalar(snapshot.PrefixCacheHits)
	share := report.Row{ID: "hit_share", Label: "share of cache hits", Value: units.Missing, Note: "no cache hits yet"}
	if !okR || !okH {
		share.Note, share.Severity = "restored tokens or cache hits not published", report.Dim
	} else if hits > 0 {
		s := restored / hits
		a.r.Figures.KVOffloadHitShare = num(s)
		share.Value, share.Bar = units.Percent(s), bar(s)
		share.Note = units.Count(restored) + " of " + units.Count(hits) + " via PCIe"
		if s > 1 {
			// Restores are counted as they happen, hits when a request finishes;
			// offload counters also restart on a model reload while hits do not.
			share.Note, share.Severity = "more restored than hit: counters out of step", report.Dim
		}
	}
	return share
}

// offloadRAMRow is the pinned RAM in use, judged for stores that had to
// pin memory synchronously.
func (a *analyzer) offloadRAMRow() report.Row {
	ram := report.Row{ID: "ram", Label: "RAM in use", Value: a.bytesOf(snapshot.KVOffloadBytes) + " / " + a.bytesOf(snapshot.KVOffloadMaxBytes) + " pinned"}
	if used, mx := a.get(snapshot.KVOffloadBytes), a.get(snapshot.KVOffloadMaxBytes); used > mx && mx > 0 {
		ram.Note = "used exceeds capacity"
		a.offloadOverCapacity(&ram, ram.Value)
	}
	if cold := a.get(snapshot.KVOffloadColdAllocsTotal); cold > 0 {
		ram.Note = units.Plural(cold, "store") + " pinned synchronously"
		cost := ""
		if a.s.Advice.ColdAlloc != "" {
			cost = " (" + a.s.Advice.ColdAlloc + ")"
		}
		a.judge(&ram, kvOffloadColdAllocs, "%s KV offload stores had to pin memory synchronously%s; the pinned pool is growing behind demand", units.Integer(cold), cost)
	}
	return ram
}

// offloadChurnRow is the pages stored, evicted and deduplicated.
func (a *analyzer) offloadChurnRow() report.Row {
	churn := a.countOf(snapshot.KVOffloadStoresTotal) + " stored, " + a.countOf(snapshot.KVOffloadEvictionsTotal) + " evicted"
	if deduped := a.get(snapshot.KVOffloadDedupedStoresTotal); deduped > 0 {
		churn += ", " + units.Count(deduped) + " deduped"
	}
	return report.Row{ID: "churn", Label: "churn", Value: churn, Note: "pages"}
}

// offloadTrafficRow is the bytes read back and written, judged for
// thrashing (little read back while pages are evicted) and payback.
func (a *analyzer) offloadTrafficRow() report.Row {
	read, okRd := a.s.Scalar(snapshot.KVOffloadReadBytesTotal)
	written, okW := a.s.Scalar(snapshot.KVOffloadWrittenBytesTotal)
	traffic := report.Row{ID: "traffic", Label: "traffic", Value: a.bytesOf(snapshot.KVOffloadReadBytesTotal) + " read · " + a.bytesOf(snapshot.KVOffloadWrittenBytesTotal) + " written", Note: "nothing written yet"}
	if !okRd || !okW {
		traffic.Note, traffic.Severity = "read or written bytes not published", report.Dim
		return traffic
	}
	if written <= 0 {
		return traffic
	}
	p := read / written
	a.r.Figures.KVOffloadPayback = num(p)
	traffic.Note = strconv.FormatFloat(p, 'f', 2, 64) + " read back"
	if evicted, okE := a.s.Scalar(snapshot.KVOffloadEvictionsTotal); okE && evicted > 0 && p < paybackThrashing {
		traffic.Note += ": thrashing — raise " + setting(a.s.Advice.OffloadBudget, "the offload cache's RAM budget")
		a.judge(&traffic, kvOffloadThrashing, "KV offload thrashing: only %s of what was written to RAM was read back, and pages are being evicted; raise %s (or turn offload off)", strconv.FormatFloat(p, 'f', 2, 64), setting(a.s.Advice.OffloadBudget, "the offload cache's RAM budget"))
	} else if p >= paybackGood {
		a.judge(&traffic, kvOffloadPaysBack, "")
	}
	return traffic
}

// --- Recurrent state -------------------------------------------------------

func (a *analyzer) recurrent() {
	budget, capped := a.get(snapshot.RecurrentCacheMaxBytes), a.get(snapshot.RecurrentCappedTokensTotal)
	if !SectionsOf(a.s).Recurrent {
		return
	}
	var rows []report.Row
	usage := math.NaN()
	if budget > 0 {
		var cache report.Row
		usage, cache = a.recurrentCacheRow(budget)
		rows = append(rows, cache,
			report.Row{ID: "checkpoints", Label: "checkpoints", Value: a.integerOf(snapshot.RecurrentCheckpoints) + " held",
				Note: a.bytesOf(snapshot.RecurrentCheckpointBytes) + " each"},
		)
	}
	loss := checkpointLoss{
		evicted: a.get(snapshot.RecurrentCacheEvictionsTotal),
		live:    a.get(snapshot.RecurrentCacheLiveKVEvictionsTotal),
		free:    a.get(snapshot.RecurrentCacheStrandedEvictionsTotal) + a.get(snapshot.RecurrentCachePrunedTotal),
		byKV:    a.get(snapshot.RecurrentStrandedByKVTotal),
	}
	if loss.evicted > 0 {
		row := report.Row{ID: "evictions", Label: "evictions", Value: units.Integer(loss.evicted) + ", " + units.Integer(loss.free) + " free", Note: "all free"}
		if loss.live > 0 {
			row.Note = units.Integer(loss.live) + " dropped live"
			a.judge(&row, recurrentLiveKVEvictions, "%s recurrent checkpoints were dropped while their K/V page was still cached: those prefixes will be re-prefilled", units.Integer(loss.live))
		}
		rows = append(rows, row)
	}
	if loss.byKV > 0 {
		rows = append(rows, report.Row{ID: "stranded_by_kv", Label: "stranded by KV eviction", Value: units.Integer(loss.byKV), Note: "KV cache is the constraint"})
	}
	rows = append(rows, a.cappedRow(capped, usage, loss))
	a.section("recurrent", "Recurrent state", rows)
}

// checkpointLoss counts recurrent checkpoints dropped: in all (evicted),
// while their K/V page was still cached (live), at no loss (free: stranded
// or pruned), and stranded because their KV page was evicted (byKV).
type checkpointLoss struct{ evicted, live, free, byKV float64 }

// recurrentCacheRow is the checkpoint cache's use of its budget, judged
// when over it; usage is NaN when the server publishes neither bytes nor
// a ratio.
func (a *analyzer) recurrentCacheRow(budget float64) (usage float64, row report.Row) {
	usage = math.NaN()
	if used, ok := a.s.Scalar(snapshot.RecurrentCacheBytes); ok {
		usage = used / budget
	} else if v, ok := a.s.Scalar(snapshot.RecurrentCacheUsageRatio); ok {
		usage = v
	}
	row = report.Row{ID: "cache", Label: "cache", Value: units.Percent(usage), Bar: bar(usage),
		Note: a.bytesOf(snapshot.RecurrentCacheBytes) + " / " + units.Bytes(budget)}
	if usage > 1 {
		// The engine holds more than its budget: the one thing an
		// operator must see, never clamped away.
		row.Value = units.Percent(usage) + " over budget"
		a.judge(&row, recurrentOverBudget, "the recurrent checkpoint cache holds %s against a budget of %s: it is over budget, so RAM use is above what %s allows for", a.bytesOf(snapshot.RecurrentCacheBytes), units.Bytes(budget), setting(a.s.Advice.RecurrentBudget, "the budget"))
	}
	return usage, row
}

// cappedRow is the reusable prompt re-prefilled for lack of a checkpoint,
// judged for its cause: the recurrent budget, the KV cache, or neither.
func (a *analyzer) cappedRow(capped, usage float64, loss checkpointLoss) report.Row {
	hits, okHits := a.s.Scalar(snapshot.PrefixCacheHits)
	wasted := report.Row{ID: "capped", Label: "KV wasted by cap", Value: units.Count(capped) + " " + units.Noun(capped, "token")}
	if !okHits || !a.has(snapshot.RecurrentCappedTokensTotal) || !(capped+hits > 0) {
		return wasted
	}
	share := capped / (capped + hits)
	a.r.Figures.RecurrentCappedShare = num(share)
	switch {
	case share <= cappedNegligible:
		wasted.Note = "negligible (" + units.Percent(share) + ")"
		a.judge(&wasted, recurrentNegligible, "")
	case loss.live > 0 || (loss.evicted > 0 && usage > recurrentFull):
		knob := setting(a.s.Advice.RecurrentBudget, "the recurrent cache's budget")
		wasted.Note = units.Percent(share) + ": raise " + knob
		a.judge(&wasted, recurrentRaiseBudget, "%s of reusable prompt was re-prefilled for lack of a recurrent checkpoint while checkpoints are being dropped live: raise %s", units.Percent(share), knob)
	case loss.byKV > 0:
		wasted.Note = units.Percent(share) + ": KV cache is the constraint, not this one"
		a.judge(&wasted, recurrentKVConstraint, "checkpoints are stranded because their KV pages were evicted: a larger KV cache, not a larger recurrent budget, would recover the %s re-prefilled", units.Percent(share))
	default:
		wasted.Note = units.Percent(share) + ": no checkpoint covered them — not a budget problem"
		a.judge(&wasted, recurrentNotBudget, "%s of reusable prompt was re-prefilled, but no checkpoint ever covered it (a prefix nothing generated past, or one older than the process): more RAM would not help", units.Percent(share))
	}
	return wasted
}

// --- Latency and size ------------------------------------------------------

// HistRow is one row of the report's Latency or Size section: the
// histogram it reads, the row's label, and the title of its distribution
// (--hist). Generated rules and dashboards name their figures by it too.
type HistRow struct {
	ID, Hist, Label, Title string
}

// LatencyRows are the Latency section's rows, in order.
var LatencyRows = []HistRow{
	{"ttft", snapshot.TimeToFirstTokenSeconds, "time to first token", "time to first token"},
	{"queue", snapshot.RequestQueueTimeSeconds, "queue wait", "queue wait"},
	{"prefill", snapshot.RequestPrefillTimeSeconds, "prefill time", "prefill time"},
	{"decode", snapshot.RequestDecodeTimeSeconds, "decode time", "decode time"},
	{"itl", snapshot.InterTokenLatencySeconds, "inter-token latency", "inter-token latency"},
	// Each request's own mean (TGI's includes its prefill, vLLM's does not).
	{"tpot", snapshot.RequestTimePerOutputTokenSeconds, "time per output token", "time per output token (per-request mean)"},
	{"e2e", snapshot.E2ERequestLatencySeconds, "end-to-end", "end-to-end latency"},
}

// SizeRows are the Size section's rows, in order.
var SizeRows = []HistRow{
	{"prompt", snapshot.RequestPromptTokens, "prompt size", "prompt size (tokens)"},
	{"generation", snapshot.RequestGenerationTokens, "generation size", "generation size (tokens)"},
}

// quantiles is p50, p90 and p99 as the report states them.
type quantiles [3]histogram.Estimate

var reportQuantiles = [3]float64{0.5, 0.9, 0.99}

// bounded is a histogram's p50/p90/p99 as histogram.Estimate states them:
// within what its buckets, sum, count and peak (when one is known) allow,
// exact where they allow one value, a bound where interpolation would
// mislead. The text shows them and JSON's "capped" and "stated" hold them;
// JSON's p50/p90/p99 keep histogram_quantile's own.
func (a *analyzer) bounded(name string) quantiles {
	h := a.hist(name)
	pk, ok := a.peak(name)
	if !ok {
		pk = math.Inf(1)
	}
	var out quantiles
	for i, q := range reportQuantiles {
		out[i] = h.Estimate(q, pk)
	}
	return out
}

// count is "n=180", or "n≥180" for a histogram whose total was cut off.
func count(h *histogram.Histogram) string {
	if h.NoTop {
		return "n≥" + units.Integer(h.Total())
	}
	return "n=" + units.Integer(h.Total())
}

// histCaveats says what a histogram's figures cannot tell: what the
// exposition cut off, and quantiles whose rank lies beyond the buckets.
type histCaveats struct {
	cut, noSum, beyond, open []string
	bounds                   bool // some quantile is shown as a bound
}

func (c *histCaveats) add(label string, h *histogram.Histogram, b quantiles) {
	switch {
	case h.NoTop:
		c.cut = append(c.cut, label)
	case h.NoSum:
		c.noSum = append(c.noSum, label)
	}
	for _, e := range b {
		c.bounds = c.bounds || e.Kind == histogram.AtMost || e.Kind == histogram.AtLeast
	}
	switch {
	case h.NoTop:
	case h.InOpenTop(0.5) && b[0].Kind == histogram.AtLeast:
		c.beyond = append(c.beyond, label)
	case h.InOpenTop(0.99) && b[2].Kind == histogram.AtLeast:
		c.open = append(c.open, label)
	}
}

func (a *analyzer) caveatNotes(c histCaveats, what string) {
	if len(c.cut) > 0 {
		a.judge(nil, histogramIncomplete, "the exposition cut %s short (no +Inf bucket and no _count): counts and percentiles are lower bounds, the mean is unknown", join(c.cut))
	}
	if len(c.noSum) > 0 {
		a.judge(nil, histogramIncomplete, "the exposition has no _sum for %s: the mean is unknown, and percentiles rest on the buckets alone", join(c.noSum))
	}
	if len(c.beyond) > 0 {
		a.judge(nil, latencyBeyondBuckets, "most %s exceed the largest bucket bound: p50, p90 and p99 are lower bounds (shown ≥); the buckets end too soon for this load", what+join(c.beyond))
	}
	if len(c.open) > 0 {
		a.judge(nil, latencyOpenTop, "p99 of %s lies beyond the largest bucket bound, shown as ≥ that bound", join(c.open))
	}
}

func (a *analyzer) latency() {
	var rows []report.Row
	var c histCaveats
	for _, l := range LatencyRows {
		h := a.hist(l.Hist)
		if h == nil || h.Total() <= 0 {
			continue
		}
		b := a.q[l.Hist]
		vals := []string{units.Seconds(h.Mean())}
		for _, e := range b {
			vals = append(vals, stated(e, units.Seconds))
		}
		c.add(l.Label, h, b)
		rows = append(rows, report.Row{ID: l.ID, Label: l.Label, Value: joinDot(vals), Note: count(h)})
	}
	if len(rows) == 0 {
		return
	}
	foot := legendEstimates + "mean allows"
	if c.bounds {
		foot += legendBounds
	}
	rows = append(rows, report.Row{ID: "estimated", Severity: report.Dim, Note: foot})
	a.caveatNotes(c, "")
	a.section("latency", "Latency (mean · p50 · p90 · p99)", rows)
}

func (a *analyzer) size() {
	var rows []report.Row
	var c histCaveats
	for _, l := range SizeRows {
		h := a.hist(l.Hist)
		if h == nil || h.Total() <= 0 {
			continue
		}
		b := a.q[l.Hist]
		pk, hasPeak := a.peak(l.Hist)
		vals := []string{tokens(h.Mean())}
		for _, e := range b {
			vals = append(vals, stated(e, tokens))
		}
		c.add(l.Label, h, b)
		note := count(h)
		if hasPeak {
			note += ", peak " + units.Count(pk)
		}
		rows = append(rows, report.Row{ID: l.ID, Label: l.Label, Value: joinDot(vals), Note: note})
	}
	if len(rows) == 0 {
		return
	}
	if c.bounds {
		rows = append(rows, report.Row{ID: "estimated", Severity: report.Dim, Note: legendEstimates + "mean and peak allow" + legendBounds})
	}
	a.caveatNotes(c, "")
	a.section("size", "Size in tokens (mean · p50 · p90 · p99)", rows)
}

// The legend under the latency and size rows: how a quantile is stated
// (histogram.Estimate, the same in every view).
const (
	legendEstimates = "estimates from buckets, within what each "
	legendBounds    = "; ≤ and ≥ are bounds, where interpolation would only show a bucket's shape (one bucket holds nearly all, or the mean sits at its edge) or the buckets end too soon"
)

// tokens formats a token count estimate as whole tokens.
func tokens(v float64) string { return units.Count(math.Round(v)) }

func joinDot(xs []string) string { return strings.Join(xs, " · ") }

// --- What the server does not publish --------------------------------------

func (a *analyzer) unavailable() {
	if len(a.s.Missing) == 0 {
		return
	}
	rows := make([]report.Row, 0, len(a.s.Missing))
	for _, m := range a.s.Missing {
		rows = append(rows, report.Row{Severity: report.Dim, Note: m})
	}
	a.section("unavailable", "Not published by this server", rows)
}

// --- Distributions ---------------------------------------------------------

// distOrder is the order of the distributions: the latency and size rows,
// then the per-request draft acceptance.
var distOrder = func() []HistRow {
	rows := append(append([]HistRow{}, LatencyRows...), SizeRows...)
	return append(rows, HistRow{Hist: snapshot.SpecDecodeAcceptanceRate, Title: "per-request draft acceptance"})
}()

// exactSeconds writes a bucket bound as the server chose it: "5 ms",
// "0.25 s", "2.5 s", "2 min" when it is whole minutes, else seconds
// ("160 s"). A bound computed rather than chosen (TGI's exponential
// ladder: 0.15000000000000002, 65.6840835571289) is cut to 4 significant
// digits, which no chosen bound has more of.
func exactSeconds(v float64) string {
	g := func(x float64) string {
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if len(strings.TrimLeft(strings.ReplaceAll(s, ".", ""), "0")) > 6 {
			s = strconv.FormatFloat(x, 'g', 4, 64)
		}
		return s
	}
	switch {
	case v < 0.1:
		return g(v*1000) + " ms"
	case v >= 60 && math.Mod(v, 60) == 0:
		return g(v/60) + " min"
	}
	return g(v) + " s"
}

// maxDistRows is how many bucket rows a distribution shows: a histogram
// with thousands of buckets would otherwise print every one.
const maxDistRows = 40

// distBucket is one occupied bucket (or several neighbours added up): Count
// observations in (lower, UpperBound].
type distBucket struct {
	histogram.Bucket
	lower float64
}

// foldBuckets keeps the occupied buckets of a non-cumulative list and, when
// there are more than max, adds neighbours together so that at most max
// rows remain; folded is how many occupied buckets there were then (0 when
// none were folded).
func foldBuckets(bs []histogram.Bucket, max int) (out []distBucket, folded int) {
	prev := 0.0
	for _, b := range bs {
		if b.Count > 0 {
			out = append(out, distBucket{Bucket: b, lower: prev})
		}
		prev = b.UpperBound
	}
	if len(out) <= max {
		return out, 0
	}
	per := (len(out) + max - 1) / max
	merged := make([]distBucket, 0, max)
	for i := 0; i < len(out); i += per {
		g := out[i]
		for _, b := range out[i+1 : min(i+per, len(out))] {
			g.Count += b.Count
			g.UpperBound = b.UpperBound
		}
		merged = append(merged, g)
	}
	return merged, len(out)
}

func (a *analyzer) distributions() {
	done := map[string]bool{}
	emit := func(name, label string) {
		done[name] = true
		h := a.hist(name)
		if h == nil || h.Total() <= 0 {
			return
		}
		// Estimates read rounded; a bucket's bound is exact and reads so.
		format, bound := tokens, units.Integer
		switch {
		case strings.HasSuffix(name, "_seconds"):
			format, bound = units.Seconds, exactSeconds
		case name == snapshot.SpecDecodeAcceptanceRate:
			format = func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
			bound = func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		}
		b := a.q[name]
		rows := []report.Row{{ID: "summary", Label: count(h),
			Value: "mean " + format(h.Mean()) + " · p50 " + stated(b[0], format) + " · p90 " + stated(b[1], format) + " · p99 " + stated(b[2], format)}}
		buckets, folded := foldBuckets(h.NonCumulative(), maxDistRows)
		most := 0.0
		for _, b := range buckets {
			most = math.Max(most, b.Count)
		}
		for _, b := range buckets {
			label := "≤ " + bound(b.UpperBound)
			if math.IsInf(b.UpperBound, 1) {
				label = "> " + bound(b.lower)
			}
			rows = append(rows, report.Row{ID: "le_" + formatLE(b.UpperBound), Label: label, Value: units.Integer(b.Count), Bar: bar(b.Count / most)})
		}
		if folded > 0 {
			rows = append(rows, report.Row{ID: "folded", Severity: report.Dim,
				Note: units.Integer(float64(folded)) + " occupied buckets, shown " + strconv.Itoa(len(buckets)) + " rows: each row adds up neighbouring buckets to its bound"})
		}
		a.r.Sections = append(a.r.Sections, report.Section{ID: "dist_" + name, Title: "Distribution: " + label, Wide: true, Rows: rows})
	}
	for _, d := range distOrder {
		emit(d.Hist, d.Title)
	}
	var rest []string
	for name := range a.s.Histograms {
		if !done[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		emit(name, name)
	}
}
