// Package analysis turns a canonical snapshot into a report: the ratios worth
// looking at, each with a note where the figure implies an action, and a
// statement where a number cannot judge on its own. It follows the
// inspector's specification section by section (the README's "The report"
// summarises it); a section with no data is left out rather than shown as
// zeros.
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
const Schema = 1

// SlowScrape is how long a scrape may wait before the report says so.
const SlowScrape = time.Second

// Options tune one analysis.
type Options struct {
	// Now is the time utilization is measured to; zero means the scrape time.
	Now time.Time
	// Hist adds a distribution section per histogram.
	Hist bool
	// Raw keeps the server's own families in the report (JSON "raw"); the
	// text view does not show them, so it need not pay for the copy.
	Raw bool
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
		ScrapedAt:     s.ScrapedAt,
		ScrapeSeconds: s.ScrapeSeconds,
		Scalars:       s.Scalars,
		Histograms:    map[string]report.HistogramSummary{},
		Extra:         s.Extra,
		Sections:      []report.Section{},
		Notes:         []report.Note{},
	}}
	if o.Raw {
		a.r.Raw = raw(s.Raw)
	}
	a.header()
	a.summaries()
	a.live()
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

func (a *analyzer) get(name string) float64               { return a.s.Get(name) }
func (a *analyzer) has(name string) bool                  { _, ok := a.s.Scalar(name); return ok }
func (a *analyzer) hist(name string) *histogram.Histogram { return a.s.Hist(name) }

func (a *analyzer) note(id string, sev report.Severity, format string, args ...any) {
	a.r.Notes = append(a.r.Notes, report.Note{ID: id, Severity: sev, Text: fmt.Sprintf(format, args...)})
}

func (a *analyzer) section(id, title string, rows []report.Row) {
	if len(rows) == 0 {
		return
	}
	a.r.Sections = append(a.r.Sections, report.Section{ID: id, Title: title, Rows: rows})
}

func ptr[T any](v T) *T { return &v }

func bar(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return ptr(math.Max(0, math.Min(1, f)))
}

func (a *analyzer) header() {
	if a.s.ScrapeSeconds > SlowScrape.Seconds() {
		a.r.Header = append(a.r.Header, fmt.Sprintf("the scrape waited %s: the server was busy (tabbyAPI renders /metrics on the loop that drives generation)", units.Seconds(a.s.ScrapeSeconds)))
		a.note("scrape_slow", report.Info, "the scrape waited %s: the server's event loop was busy, so figures are as of the end of that wait", units.Seconds(a.s.ScrapeSeconds))
	}
	if len(a.s.Models) > 1 {
		if a.s.Model != "" {
			a.r.Header = append(a.r.Header, fmt.Sprintf("model %s (of %d served: %s)", a.s.Model, len(a.s.Models), modelList(a.s.Models)))
		} else {
			a.r.Header = append(a.r.Header, fmt.Sprintf("%d models served, reported together: %s (--model to pick one)", len(a.s.Models), modelList(a.s.Models)))
		}
	} else if len(a.s.Models) == 1 {
		a.r.Header = append(a.r.Header, "model "+a.s.Models[0])
	}
	if req, ok := a.s.Scalar("requests_total"); ok && req == 0 {
		a.note("no_requests_yet", report.Info, "no request has finished yet: throughput, latency and size figures appear after the first one")
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
	"request_prompt_tokens":     "n_tokens_max",
	"request_generation_tokens": "tokens_predicted_max",
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
			Count: h.Total(), Sum: h.Sum, Mean: h.Mean(),
			P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99),
			Buckets: make([]report.Bucket, 0, len(h.Buckets)),
		}
		if pk, ok := a.peak(name); ok {
			sum.Peak = ptr(pk)
		}
		if h.Total() > 0 {
			b := a.bounded(name)
			a.q[name] = b
			sum.Capped = &report.Quantiles{P50: b.v[0], P90: b.v[1], P99: b.v[2]}
		}
		for _, b := range h.Buckets {
			sum.Buckets = append(sum.Buckets, report.Bucket{LE: formatLE(b.UpperBound), Count: b.Count})
		}
		a.r.Histograms[name] = sum
	}
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
	if a.has("requests_processing") || a.has("requests_deferred") {
		run, wait := a.get("requests_processing"), a.get("requests_deferred")
		state := "idle"
		if run > 0 || wait > 0 {
			state = units.Integer(run) + " generating"
			if wait > 0 {
				state += ", " + units.Integer(wait) + " queued"
			}
		}
		rows = append(rows, report.Row{ID: "state", Label: "state", Value: state})
	}
	if ratio, ok := a.kvUsage(); ok {
		sev := report.Good
		switch {
		case ratio >= 0.9:
			sev = report.Bad
		case ratio >= 0.75:
			sev = report.Warn
		}
		note := ""
		if mx := a.get("kv_cache_max_tokens"); mx > 0 && a.has("kv_cache_tokens") {
			note = units.Count(a.get("kv_cache_tokens")) + " / " + units.Count(mx) + " tokens"
		}
		rows = append(rows, report.Row{ID: "kv_cache", Label: "KV cache", Value: units.Percent(ratio), Bar: bar(ratio), Note: note, Severity: sev})
		if ratio >= 0.9 {
			a.note("kv_cache_pressure", report.Warn, "KV cache %s referenced by in-flight jobs: new requests wait for pages (unreferenced cached prefixes are already counted as free)", units.Percent(ratio))
		}
	}
	if mx := a.get("kv_offload_max_tokens"); mx > 0 {
		held := a.get("kv_offload_tokens")
		ratio := held / mx
		rows = append(rows, report.Row{ID: "kv_offload", Label: "KV offload", Value: units.Percent(ratio), Bar: bar(ratio),
			Note: units.Count(held) + " / " + units.Count(mx) + " in RAM"})
	}
	if v, ok := a.s.Scalar("n_tokens_max"); ok && v > 0 {
		rows = append(rows, report.Row{ID: "largest_prompt", Label: "largest prompt seen", Value: units.Count(v) + " tokens", Note: "a peak no percentile can show"})
	}
	if v, ok := a.s.Extra["largest_sequence_tokens"]; ok && v > 0 {
		rows = append(rows, report.Row{ID: "largest_sequence", Label: "largest sequence seen", Value: units.Count(v) + " tokens", Note: "prompt + generation"})
	}
	if v, ok := a.s.Scalar("tokens_predicted_max"); ok && v > 0 {
		rows = append(rows, report.Row{ID: "largest_generation", Label: "largest generation", Value: units.Count(v) + " tokens", Note: "a peak no percentile can show"})
	}
	a.section("live", "Live", rows)
}

// kvUsage is the KV usage ratio: from the token gauges when capacity is
// known, else the server's own ratio.
func (a *analyzer) kvUsage() (float64, bool) {
	if mx := a.get("kv_cache_max_tokens"); mx > 0 && a.has("kv_cache_tokens") {
		return a.get("kv_cache_tokens") / mx, true
	}
	if v, ok := a.s.Scalar("kv_cache_usage_ratio"); ok {
		if !a.has("kv_cache_max_tokens") || a.get("kv_cache_max_tokens") > 0 {
			return v, true
		}
	}
	return 0, false
}

// --- Throughput ------------------------------------------------------------

func (a *analyzer) throughput() {
	var rows []report.Row
	if v, ok := a.s.Scalar("prompt_tokens_total"); ok {
		val := units.Count(v) + " computed"
		if t, ok := a.s.Scalar("prompt_seconds_total"); ok {
			val += " over " + units.Seconds(t)
		}
		rows = append(rows, report.Row{ID: "prefill_work", Label: "prefill work", Value: val, Note: "cache hits excluded"})
	}
	if v, ok := a.s.Scalar("tokens_predicted_total"); ok {
		val := units.Count(v) + " generated"
		if t, ok := a.s.Scalar("tokens_predicted_seconds_total"); ok {
			val += " over " + units.Seconds(t)
		}
		rows = append(rows, report.Row{ID: "decode_work", Label: "decode work", Value: val})
	}
	if v, ok := a.s.Scalar("requests_total"); ok {
		rows = append(rows, report.Row{ID: "requests", Label: "requests finished", Value: units.Integer(v)})
	}
	if len(rows) == 0 || a.get("requests_total") == 0 && a.get("tokens_predicted_total") == 0 {
		return
	}
	if !a.has("prompt_seconds_total") && !a.has("tokens_predicted_seconds_total") {
		a.section("throughput", "Throughput (cumulative)", rows)
		return
	}
	rows = append(rows, report.Row{ID: "no_rate", Severity: report.Dim,
		Note: "summed request time, not a rate: see --watch"})
	a.section("throughput", "Throughput (cumulative)", rows)
}

// --- Where the time goes ---------------------------------------------------

func (a *analyzer) phases() {
	pre, okP := a.s.Scalar("prompt_seconds_total")
	dec, okD := a.s.Scalar("tokens_predicted_seconds_total")
	if !okP || !okD || pre+dec <= 0 {
		return
	}
	f := &a.r.Figures
	e := pre + dec
	f.EngineSeconds = ptr(e)
	var rows []report.Row

	busy := report.Row{ID: "engine_busy", Label: "engine busy", Value: units.Seconds(e)}
	if start := a.s.StartTime(); start > 0 {
		up := float64(a.o.Now.UnixNano())/1e9 - start
		if up > 0 {
			busy.Value = units.Seconds(e) + " of " + units.Seconds(up) + " up"
			util := math.Min(e, up) / up
			f.Utilization = ptr(util)
			f.Overlapped = ptr(e > up)
			if e > up {
				busy.Note = "overlapped: requests ran concurrently"
				a.note("utilization_overlapped", report.Info, "summed request time (%s) exceeds uptime (%s): requests overlapped, so utilization reads as overlapped rather than over 100%%", units.Seconds(e), units.Seconds(up))
			} else {
				busy.Note = units.Percent(util) + " utilization"
			}
		} else {
			busy.Note = "start time is after the scrape: no utilization"
		}
	} else {
		busy.Note = "start time unknown: no utilization"
	}
	rows = append(rows, busy)

	ps, ds := pre/e, dec/e
	f.PrefillShare, f.DecodeShare = ptr(ps), ptr(ds)
	rows = append(rows,
		report.Row{ID: "prefill_share", Label: "prefill", Value: units.Percent(ps), Bar: bar(ps), Note: units.Seconds(pre)},
		report.Row{ID: "decode_share", Label: "decode", Value: units.Percent(ds), Bar: bar(ds), Note: units.Seconds(dec)},
	)
	if q := a.hist("request_queue_time_seconds"); q != nil && q.Total() > 0 {
		rows = append(rows, report.Row{ID: "queued", Label: "queued behind others", Value: units.Seconds(q.Sum), Note: "not engine time"})
	}

	win, lose, hi, lo := "prefill", "decode", ps, ds
	if ds > ps {
		win, lose, hi, lo = "decode", "prefill", ds, ps
	}
	f.DominantPhase = ptr(win)
	if lo == 0 {
		rows = append(rows, report.Row{ID: "exchange_rate", Label: "exchange rate", Value: win + " is all of it", Note: lose + " costs nothing"})
	} else {
		rate := hi / lo
		f.ExchangeRate = ptr(rate)
		rows = append(rows, report.Row{ID: "exchange_rate", Label: "exchange rate",
			Value: "1% off " + win + " pays for " + exchangePercent(rate) + " onto " + lose,
			Note:  units.Percent(hi) + " vs " + units.Percent(lo)})
		f.BreakEven = []report.BreakEven{}
		for _, factor := range []float64{1.5, 2} {
			d := 1 - hi/factor
			if d <= 0 {
				continue
			}
			floor := lo / d
			f.BreakEven = append(f.BreakEven, report.BreakEven{Factor: factor, Floor: floor})
			row := report.Row{ID: "break_even_" + strconv.FormatFloat(factor, 'f', -1, 64),
				Label: "break-even, " + units.Factor(factor) + " " + win, Value: units.Percent(floor) + " " + lose + " speed"}
			if floor >= 1 {
				row.Note, row.Severity = lose+" cannot give up anything", report.Bad
			} else {
				row.Note, row.Severity = lose+" may fall "+units.Factor(1/floor), report.Good
			}
			rows = append(rows, row)
		}
	}
	a.section("phases", "Where the time goes", rows)
}

// exchangePercent formats hi/lo as a percentage: one decimal below 100,
// whole with thousands separators from 100 up.
func exchangePercent(rate float64) string {
	if rate < 99.95 {
		return strconv.FormatFloat(rate, 'f', 1, 64) + "%"
	}
	return units.Integer(rate) + "%"
}

// --- Speculative decode ----------------------------------------------------

func (a *analyzer) specDecode() {
	if a.get("spec_decode_requests_total") <= 0 && a.get("spec_decode_num_draft_tokens_total") <= 0 {
		return
	}
	f := &a.r.Figures
	var rows []report.Row
	drafted, accepted := a.get("spec_decode_num_draft_tokens_total"), a.get("spec_decode_num_accepted_tokens_total")
	if drafted > 0 {
		acc := accepted / drafted
		f.SpecDecodeAcceptance = ptr(acc)
		sev := report.Bad
		switch {
		case acc > 0.7:
			sev = report.Good
		case acc > 0.5:
			sev = report.Warn
		}
		rows = append(rows, report.Row{ID: "draft_acceptance", Label: "draft acceptance", Value: units.Percent(acc), Bar: bar(acc),
			Note: units.Count(accepted) + " / " + units.Count(drafted), Severity: sev})
	} else {
		rows = append(rows, report.Row{ID: "draft_acceptance", Label: "draft acceptance", Value: units.Missing, Note: "no tokens drafted yet", Severity: report.Dim})
	}
	steps, hasSteps := a.s.Scalar("spec_decode_num_decode_steps_total")
	if hasSteps && steps > 0 {
		tps := 1 + accepted/steps
		f.SpecDecodeTokensPerStep = ptr(tps)
		rows = append(rows, report.Row{ID: "tokens_per_step", Label: "tokens / step", Value: strconv.FormatFloat(tps, 'f', 3, 64),
			Note: fmt.Sprintf("%+.0f%% vs. no drafter", (tps-1)*100)})
	}
	if hasSteps {
		note := ""
		if req, ok := a.s.Scalar("spec_decode_requests_total"); ok {
			note = units.Integer(req) + " req w/ drafter"
		}
		rows = append(rows, report.Row{ID: "decode_steps", Label: "decode steps", Value: units.Count(steps), Note: note})
	}
	a.section("spec_decode", "Speculative decode", rows)
}

// --- Prefix cache ----------------------------------------------------------

func (a *analyzer) prefixCache() {
	q := a.get("prefix_cache_queries")
	if q <= 0 {
		return
	}
	hits := a.get("prefix_cache_hits")
	ratio := hits / q
	a.r.Figures.PrefixCacheHitRatio = ptr(ratio)
	sev := report.Bad
	switch {
	case ratio > 0.5:
		sev = report.Good
	case ratio > 0.2:
		sev = report.Warn
	}
	rows := []report.Row{{ID: "hit_rate", Label: "hit rate", Value: units.Percent(ratio), Bar: bar(ratio),
		Note: units.Count(hits) + " / " + units.Count(q) + " tokens", Severity: sev}}
	if v, ok := a.s.Scalar("prompt_tokens_total"); ok {
		rows = append(rows, report.Row{ID: "prefilled", Label: "prefilled", Value: units.Count(v) + " tokens", Note: "= queried − cached"})
	}
	a.section("prefix_cache", "Prefix cache", rows)
}

// --- KV offload ------------------------------------------------------------

func (a *analyzer) kvOffload() {
	if a.get("kv_offload_max_tokens") <= 0 && a.get("kv_offload_max_bytes") <= 0 {
		return
	}
	f := &a.r.Figures
	var rows []report.Row
	restored, hits := a.get("kv_offload_restored_tokens_total"), a.get("prefix_cache_hits")
	share := report.Row{ID: "hit_share", Label: "share of cache hits", Value: units.Missing, Note: "no cache hits yet"}
	if hits > 0 {
		s := restored / hits
		f.KVOffloadHitShare = ptr(s)
		share.Value, share.Bar = units.Percent(s), bar(s)
		share.Note = units.Count(restored) + " of " + units.Count(hits) + " via PCIe"
		if s > 1 {
			// Restores are counted as they happen, hits when a request finishes;
			// offload counters also restart on a model reload while hits do not.
			share.Note, share.Severity = "more restored than hit: counters out of step", report.Dim
		}
	}
	rows = append(rows, share)

	ram := report.Row{ID: "ram", Label: "RAM in use", Value: units.Bytes(a.get("kv_offload_bytes")) + " / " + units.Bytes(a.get("kv_offload_max_bytes")) + " pinned"}
	if cold := a.get("kv_offload_cold_allocs_total"); cold > 0 {
		ram.Note, ram.Severity = units.Integer(cold)+" stores pinned synchronously", report.Warn
		a.note("kv_offload_cold_allocs", report.Warn, "%s KV offload stores had to pin memory synchronously (about 2.5 GB/s on the generator's own thread: a stall); the pinned pool is growing behind demand", units.Integer(cold))
	}
	rows = append(rows, ram)

	stores, evicted, deduped := a.get("kv_offload_stores_total"), a.get("kv_offload_evictions_total"), a.get("kv_offload_deduped_stores_total")
	churn := units.Count(stores) + " stored, " + units.Count(evicted) + " evicted"
	if deduped > 0 {
		churn += ", " + units.Count(deduped) + " deduped"
	}
	rows = append(rows, report.Row{ID: "churn", Label: "churn", Value: churn, Note: "pages"})

	read, written := a.get("kv_offload_read_bytes_total"), a.get("kv_offload_written_bytes_total")
	traffic := report.Row{ID: "traffic", Label: "traffic", Value: units.Bytes(read) + " read · " + units.Bytes(written) + " written", Note: "nothing written yet"}
	if written > 0 {
		p := read / written
		f.KVOffloadPayback = ptr(p)
		traffic.Note = strconv.FormatFloat(p, 'f', 2, 64) + " read back"
		if evicted > 0 && p < 0.25 {
			traffic.Note += ": thrashing — raise sysmem_kv_cache"
			traffic.Severity = report.Warn
			a.note("kv_offload_thrashing", report.Warn, "KV offload thrashing: only %s of what was written to RAM was read back, and pages are being evicted; raise sysmem_kv_cache (or turn offload off)", strconv.FormatFloat(p, 'f', 2, 64))
		} else if p >= 1 {
			traffic.Severity = report.Good
		}
	}
	rows = append(rows, traffic)
	a.section("kv_offload", "KV offload", rows)
}

// --- Recurrent state -------------------------------------------------------

func (a *analyzer) recurrent() {
	budget, capped := a.get("recurrent_cache_max_bytes"), a.get("recurrent_capped_tokens_total")
	if budget <= 0 && capped <= 0 {
		return
	}
	var rows []report.Row
	usage := 0.0
	if budget > 0 {
		usage = a.get("recurrent_cache_bytes") / budget
		if v, ok := a.s.Scalar("recurrent_cache_usage_ratio"); ok && !a.has("recurrent_cache_bytes") {
			usage = v
		}
		rows = append(rows,
			report.Row{ID: "cache", Label: "cache", Value: units.Percent(usage), Bar: bar(usage),
				Note: units.Bytes(a.get("recurrent_cache_bytes")) + " / " + units.Bytes(budget)},
			report.Row{ID: "checkpoints", Label: "checkpoints", Value: units.Integer(a.get("recurrent_checkpoints")) + " held",
				Note: units.Bytes(a.get("recurrent_checkpoint_bytes")) + " each"},
		)
	}
	ev, live := a.get("recurrent_cache_evictions_total"), a.get("recurrent_cache_live_kv_evictions_total")
	free := a.get("recurrent_cache_stranded_evictions_total") + a.get("recurrent_cache_pruned_total")
	if ev > 0 {
		row := report.Row{ID: "evictions", Label: "evictions", Value: units.Integer(ev) + ", " + units.Integer(free) + " free", Note: "all free"}
		if live > 0 {
			row.Note, row.Severity = units.Integer(live)+" dropped live", report.Warn
			a.note("recurrent_live_kv_evictions", report.Warn, "%s recurrent checkpoints were dropped while their K/V page was still cached: those prefixes will be re-prefilled", units.Integer(live))
		}
		rows = append(rows, row)
	}
	strandedKV := a.get("recurrent_stranded_by_kv_total")
	if strandedKV > 0 {
		rows = append(rows, report.Row{ID: "stranded_by_kv", Label: "stranded by KV eviction", Value: units.Integer(strandedKV), Note: "KV cache is the constraint"})
	}
	hits := a.get("prefix_cache_hits")
	wasted := report.Row{ID: "capped", Label: "KV wasted by cap", Value: units.Count(capped) + " tokens"}
	if capped+hits > 0 {
		share := capped / (capped + hits)
		a.r.Figures.RecurrentCappedShare = ptr(share)
		switch {
		case share <= 0.05:
			wasted.Note, wasted.Severity = "negligible ("+units.Percent(share)+")", report.Good
		case live > 0 || (ev > 0 && usage > 0.9):
			wasted.Note, wasted.Severity = units.Percent(share)+": raise sysmem_recurrent_cache", report.Bad
			a.note("recurrent_raise_budget", report.Bad, "%s of reusable prompt was re-prefilled for lack of a recurrent checkpoint while checkpoints are being dropped live: raise sysmem_recurrent_cache", units.Percent(share))
		case strandedKV > 0:
			wasted.Note = units.Percent(share) + ": KV cache is the constraint, not this one"
			a.note("recurrent_kv_constraint", report.Info, "checkpoints are stranded because their KV pages were evicted: a larger KV cache, not a larger recurrent budget, would recover the %s re-prefilled", units.Percent(share))
		default:
			wasted.Note = units.Percent(share) + ": no checkpoint covered them — not a budget problem"
			a.note("recurrent_not_budget", report.Info, "%s of reusable prompt was re-prefilled, but no checkpoint ever covered it (a prefix nothing generated past, or one older than the process): more RAM would not help", units.Percent(share))
		}
	}
	rows = append(rows, wasted)
	a.section("recurrent", "Recurrent state", rows)
}

// --- Latency and size ------------------------------------------------------

var latencyRows = []struct{ id, hist, label string }{
	{"ttft", "time_to_first_token_seconds", "time to first token"},
	{"queue", "request_queue_time_seconds", "queue wait"},
	{"prefill", "request_prefill_time_seconds", "prefill time"},
	{"decode", "request_decode_time_seconds", "decode time"},
	{"itl", "inter_token_latency_seconds", "inter-token latency"},
	{"e2e", "e2e_request_latency_seconds", "end-to-end"},
}

var sizeRows = []struct{ id, hist, label string }{
	{"prompt", "request_prompt_tokens", "prompt size"},
	{"generation", "request_generation_tokens", "generation size"},
}

// quantiles is p50, p90 and p99 as the report states them.
type quantiles struct {
	v       [3]float64
	changed [3]bool // the peak or the sum moved the interpolated estimate
}

var reportQuantiles = [3]float64{0.5, 0.9, 0.99}

// bounded is a histogram's p50/p90/p99 held to its peak when one is known
// and to what its sum and count allow (histogram.QuantileBounded): the
// figures the text shows and JSON's "capped" holds; JSON's p50/p90/p99 keep
// histogram_quantile's own.
func (a *analyzer) bounded(name string) quantiles {
	h := a.hist(name)
	pk, ok := a.peak(name)
	if !ok {
		pk = math.Inf(1)
	}
	var out quantiles
	for i, q := range reportQuantiles {
		out.v[i], out.changed[i] = h.QuantileBounded(q, pk)
	}
	return out
}

func (a *analyzer) latency() {
	var rows []report.Row
	var open []string
	for _, l := range latencyRows {
		h := a.hist(l.hist)
		if h == nil || h.Total() <= 0 {
			continue
		}
		b := a.q[l.hist]
		vals := []string{units.Seconds(h.Mean())}
		for i, q := range reportQuantiles {
			v := units.Seconds(b.v[i])
			if h.InOpenTop(q) && !b.changed[i] {
				v = "≥" + v
			}
			vals = append(vals, v)
		}
		if h.InOpenTop(0.99) && !b.changed[2] {
			open = append(open, l.label)
		}
		rows = append(rows, report.Row{ID: l.id, Label: l.label, Value: joinDot(vals), Note: "n=" + units.Integer(h.Total())})
	}
	if len(rows) == 0 {
		return
	}
	rows = append(rows, report.Row{ID: "estimated", Severity: report.Dim, Note: "estimated from buckets, within what each mean allows"})
	if len(open) > 0 {
		a.note("latency_open_top", report.Info, "p99 of %s lies beyond the largest bucket bound, shown as ≥ that bound", join(open))
	}
	a.section("latency", "Latency (mean · p50 · p90 · p99)", rows)
}

func (a *analyzer) size() {
	var rows []report.Row
	for _, l := range sizeRows {
		h := a.hist(l.hist)
		if h == nil || h.Total() <= 0 {
			continue
		}
		b := a.q[l.hist]
		pk, hasPeak := a.peak(l.hist)
		vals := []string{tokens(h.Mean())}
		anyCapped := false
		for i, q := range reportQuantiles {
			s := tokens(b.v[i])
			if !hasPeak && h.InOpenTop(q) && !b.changed[i] {
				s = "≥" + s
			}
			anyCapped = anyCapped || b.changed[i]
			vals = append(vals, s)
		}
		note := "n=" + units.Integer(h.Total())
		switch {
		case anyCapped && hasPeak:
			note += ", capped at peak " + units.Count(pk)
		case anyCapped:
			note += ", held to the mean"
		}
		rows = append(rows, report.Row{ID: l.id, Label: l.label, Value: joinDot(vals), Note: note})
	}
	a.section("size", "Size in tokens (mean · p50 · p90 · p99)", rows)
}

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

var distOrder = []struct{ hist, label string }{
	{"time_to_first_token_seconds", "time to first token"},
	{"request_queue_time_seconds", "queue wait"},
	{"request_prefill_time_seconds", "prefill time"},
	{"request_decode_time_seconds", "decode time"},
	{"inter_token_latency_seconds", "inter-token latency"},
	{"e2e_request_latency_seconds", "end-to-end latency"},
	{"request_prompt_tokens", "prompt size (tokens)"},
	{"request_generation_tokens", "generation size (tokens)"},
	{"spec_decode_acceptance_rate", "per-request draft acceptance"},
}

// exactSeconds writes a bucket bound without rounding it: "5 ms", "0.25 s",
// "2.5 s", "2 min" when it is whole minutes, else seconds ("160 s").
func exactSeconds(v float64) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case v < 0.1:
		return g(v*1000) + " ms"
	case v >= 60 && math.Mod(v, 60) == 0:
		return g(v/60) + " min"
	}
	return g(v) + " s"
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
		case name == "spec_decode_acceptance_rate":
			format = func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
			bound = func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		}
		sum := a.r.Histograms[name]
		qs := []float64{sum.P50, sum.P90, sum.P99}
		if sum.Capped != nil {
			qs = []float64{sum.Capped.P50, sum.Capped.P90, sum.Capped.P99}
		}
		rows := []report.Row{{ID: "summary", Label: "n=" + units.Integer(h.Total()),
			Value: "mean " + format(h.Mean()) + " · p50 " + format(qs[0]) + " · p90 " + format(qs[1]) + " · p99 " + format(qs[2])}}
		buckets := h.NonCumulative()
		most := 0.0
		for _, b := range buckets {
			most = math.Max(most, b.Count)
		}
		prev := 0.0
		for i, b := range buckets {
			if b.Count > 0 {
				label := "≤ " + bound(b.UpperBound)
				if math.IsInf(b.UpperBound, 1) {
					label = "> " + bound(prev)
				}
				rows = append(rows, report.Row{ID: "le_" + formatLE(b.UpperBound), Label: label, Value: units.Integer(b.Count), Bar: bar(b.Count / most)})
			}
			if i < len(buckets) {
				prev = b.UpperBound
			}
		}
		a.r.Sections = append(a.r.Sections, report.Section{ID: "dist_" + name, Title: "Distribution: " + label, Wide: true, Rows: rows})
	}
	for _, d := range distOrder {
		emit(d.hist, d.label)
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
