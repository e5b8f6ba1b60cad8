package promql

import (
	"fmt"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Condition is a note's condition over the window, or that of an alert
// incidents show is needed where no note says it: Expr returns one series
// per instance where it holds, valued with what Value says.
type Condition struct {
	// ID is the note's id, or the alert's own where no note covers it.
	ID string
	// Note says ID is a note of the report (docs/notes.md).
	Note bool
	Expr string
	// Value says what the returned value is, in Unit.
	Value string
	Unit  Unit
	// Limits are the thresholds in Expr, in the order the band (or this
	// package's constants) states them.
	Limits []float64
}

// Thresholds of the alerts no note covers. The notes' own thresholds are
// the report's ([analysis.Bands]).
const (
	// QueueTimeHigh is the mean queue time over the window from which
	// requests wait too long: an engine that stalled for hours while its
	// health check answered would have tripped it within minutes.
	QueueTimeHigh = 30 * time.Second
	// FailedShare is the share of requests failing (TGI's failures, which
	// are not among its finished requests) from which the failures are
	// more than the odd bad request.
	FailedShare = 0.05
	// DownLookback is how far back a target must have published the
	// server's series for its being down to concern these rules.
	DownLookback = "1d"
)

// conditionDef builds one condition; ok is false when the server does not
// publish what it needs.
type conditionDef struct {
	id    string
	note  bool
	value string
	unit  Unit
	build func(l *Library, limits []float64) (string, bool)
}

// bandLimits are the thresholds of the band that makes note id, or judges
// row when id makes none.
func bandLimits(id, row string) []float64 {
	for _, b := range analysis.Bands() {
		if (id != "" && b.Note == id) || (row != "" && b.Note == "" && len(b.Rows) == 1 && b.Rows[0] == row) {
			return b.Limits
		}
	}
	return nil
}

var conditionDefs = []conditionDef{
	{"kv_cache_over_capacity", true, "KV tokens in use over capacity", Ratio, func(l *Library, lim []float64) (string, bool) {
		// Only from the token gauges: a usage fraction above 1 is an
		// invalid series, which the report names as such.
		u, ok := l.gaugeRatio(snapshot.KVCacheTokens, snapshot.KVCacheMaxTokens)
		return u + " > " + num(lim[0]), ok
	}},
	{"kv_cache_pressure", true, "KV cache usage", Ratio, func(l *Library, lim []float64) (string, bool) {
		u, ok := l.kvUsage()
		// Above 1 is over capacity, another note.
		return u + " >= " + num(lim[0]) + " <= 1", ok
	}},
	{"queue_pressure", true, "requests waiting", Count, func(l *Library, lim []float64) (string, bool) {
		w, ok1 := l.gauge(snapshot.RequestsDeferred)
		r, ok2 := l.gauge(snapshot.RequestsProcessing)
		// With none running the queue is stalled, not under pressure.
		return w + " >= " + num(lim[0]) + " * " + r + " and " + w + " >= " + num(lim[1]) + " and " + r + " > 0", ok1 && ok2
	}},
	{"kv_offload_over_capacity", true, "offload cache used over capacity", Ratio, func(l *Library, lim []float64) (string, bool) {
		t, ok1 := l.gauge(snapshot.KVOffloadTokens)
		mt, ok2 := l.gauge(snapshot.KVOffloadMaxTokens)
		b, ok3 := l.gauge(snapshot.KVOffloadBytes)
		mb, ok4 := l.gauge(snapshot.KVOffloadMaxBytes)
		tokens := t + " / (" + mt + " > 0) > " + num(lim[0])
		bytes := b + " / (" + mb + " > 0) > " + num(lim[0])
		switch {
		case ok1 && ok2 && ok3 && ok4:
			return tokens + " or " + bytes, true
		case ok1 && ok2:
			return tokens, true
		}
		return bytes, ok3 && ok4
	}},
	{"kv_offload_cold_allocs", true, "offload stores pinned synchronously in the window", Count, func(l *Library, lim []float64) (string, bool) {
		c, ok := l.increase(snapshot.KVOffloadColdAllocsTotal)
		return c + " > " + num(lim[0]), ok
	}},
	{"kv_offload_thrashing", true, "offload bytes read back per byte written", Ratio, func(l *Library, lim []float64) (string, bool) {
		p, ok1 := l.ratio(snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal)
		e, ok2 := l.increase(snapshot.KVOffloadEvictionsTotal)
		return p + " < " + num(lim[1]) + " and " + e + " > " + num(lim[0]), ok1 && ok2
	}},
	{"recurrent_over_budget", true, "recurrent checkpoint bytes over the budget", Ratio, func(l *Library, lim []float64) (string, bool) {
		b, ok1 := l.gauge(snapshot.RecurrentCacheBytes)
		m, ok2 := l.gauge(snapshot.RecurrentCacheMaxBytes)
		return b + " / (" + m + " > 0) > " + num(lim[0]), ok1 && ok2
	}},
	{"recurrent_live_kv_evictions", true, "checkpoints dropped live in the window", Count, func(l *Library, lim []float64) (string, bool) {
		e, ok := l.increase(snapshot.RecurrentCacheLiveKVEvictionsTotal)
		return e + " > " + num(lim[0]), ok
	}},
	{"recurrent_raise_budget", true, "share of reusable prompt re-prefilled", Ratio, func(l *Library, lim []float64) (string, bool) {
		s, ok1 := l.ratio(snapshot.RecurrentCappedTokensTotal, snapshot.RecurrentCappedTokensTotal, snapshot.PrefixCacheHits)
		live, ok2 := l.increase(snapshot.RecurrentCacheLiveKVEvictionsTotal)
		ev, ok3 := l.increase(snapshot.RecurrentCacheEvictionsTotal)
		b, ok4 := l.gauge(snapshot.RecurrentCacheBytes)
		m, ok5 := l.gauge(snapshot.RecurrentCacheMaxBytes)
		full := "(" + ev + " > " + num(lim[1]) + " and " + b + " / (" + m + " > 0) > " + num(lim[2]) + ")"
		return s + " > " + num(lim[0]) + " and (" + live + " > " + num(lim[1]) + " or " + full + ")", all(ok1, ok2, ok3, ok4, ok5)
	}},
	{"preemptions", true, "requests preempted in the window", Count, func(l *Library, lim []float64) (string, bool) {
		p, ok := l.increase(snapshot.ExtraPreemptions)
		return p + " > " + num(lim[0]), ok
	}},
	{"retracted_work", true, "tokens retractions threw away per prompt token computed", Ratio, func(l *Library, lim []float64) (string, bool) {
		in, ok1 := l.increase(snapshot.ExtraRetractedPromptTokens)
		out, ok2 := l.increase(snapshot.ExtraRetractedGeneratedTokens)
		c, ok3 := l.increase(snapshot.PromptTokensTotal)
		return "(" + in + " + " + out + ") / (" + c + " > 0) >= " + num(lim[0]), all(ok1, ok2, ok3)
	}},
	{"requests_errored", true, "requests that ended in an error in the window", Count, func(l *Library, lim []float64) (string, bool) {
		e, ok := l.increase(snapshot.ExtraFinishedReason + "error")
		return e + " > " + num(lim[0]), ok
	}},
	{"draft_acceptance_low", true, "drafted tokens accepted", Ratio, func(l *Library, lim []float64) (string, bool) {
		a, ok := l.ratio(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDraftTokensTotal)
		return a + " <= " + num(lim[0]), ok
	}},
	{"requests_refused", true, "requests refused at admission in the window", Count, func(l *Library, lim []float64) (string, bool) {
		r, ok := l.increase(snapshot.ExtraAdmissionRejections)
		return r + " > " + num(lim[0]), ok
	}},

	{"admission_stalled", false, "requests waiting", Count, func(l *Library, _ []float64) (string, bool) {
		w, ok1 := l.gauge(snapshot.RequestsDeferred)
		r, ok2 := l.gauge(snapshot.RequestsProcessing)
		return w + " > 0 and " + r + " == 0", ok1 && ok2
	}},
	{"queue_time_high", false, "mean queue time", Seconds, func(l *Library, _ []float64) (string, bool) {
		q, ok := l.mean(snapshot.RequestQueueTimeSeconds)
		return q + " > " + num(QueueTimeHigh.Seconds()), ok
	}},
	{"requests_aborted", false, "share of finished requests aborted", Ratio, func(l *Library, lim []float64) (string, bool) {
		a, ok := l.ratio(snapshot.ExtraFinishedReason+"abort", snapshot.RequestsTotal)
		return a + " > " + num(lim[0]), ok
	}},
	{"requests_failed", false, "share of requests failed", Ratio, func(l *Library, _ []float64) (string, bool) {
		f, ok := l.ratio(failedTotal, failedTotal, snapshot.RequestsTotal)
		return f + " > " + num(FailedShare), ok
	}},
	{"target_down", false, "up", Count, func(l *Library, _ []float64) (string, bool) {
		g, ok := l.presence()
		return "up == 0 and on (job, instance) group by (job, instance) (last_over_time(" + g + "[" + DownLookback + "]))", ok
	}},
}

// conditionLimits are the thresholds each condition states.
func conditionLimits(id string) []float64 {
	switch id {
	case "requests_aborted":
		return bandLimits("", "requests/finished_abort")
	case "queue_time_high":
		return []float64{QueueTimeHigh.Seconds()}
	case "requests_failed":
		return []float64{FailedShare}
	case "admission_stalled", "target_down":
		return nil
	}
	return bandLimits(id, "")
}

// presence is a selector for a series every instance of the server
// publishes all the time: a live gauge where there is one.
func (l *Library) presence() (string, bool) {
	for _, name := range []string{snapshot.RequestsProcessing, snapshot.RequestsDeferred, snapshot.KVCacheUsageRatio, snapshot.RequestsTotal} {
		if s, ok := l.src[name]; ok && s.kind != snapshot.Histogram {
			return l.selector(s.terms[0].ref, ""), true
		}
	}
	return "", false
}

// Presence is a selector, with the matchers given instead of the
// library's, for a series every instance of the server publishes all the
// time: where a dashboard reads the values of its variables. ok is false
// when the library reads no such series.
func (l *Library) Presence(ms []Matcher) (string, bool) {
	c := *l
	c.sel = ms
	return c.presence()
}

// conditionSection is the report section a note's condition belongs to:
// that of the rows its band judges ("" for an alert no note makes, which
// every server has).
func conditionSection(id string) string {
	if b, ok := analysis.NoteBand(id); ok && len(b.Rows) > 0 {
		return analysis.RowSection(b.Rows[len(b.Rows)-1])
	}
	return ""
}

// Conditions returns the condition of every note a window can decide, and
// of the alerts no note covers, that the server publishes enough for, of
// the sections the library writes ([Library.Sections]).
func (l *Library) Conditions() []Condition {
	var out []Condition
	for _, d := range conditionDefs {
		if !l.sections.Has(conditionSection(d.id)) {
			continue
		}
		lim := conditionLimits(d.id)
		e, ok := d.build(l, lim)
		if !ok {
			continue
		}
		out = append(out, Condition{ID: d.id, Note: d.note, Expr: e, Value: d.value, Unit: d.unit, Limits: lim})
	}
	return out
}

// Condition returns one condition by id; ok is false when the server does
// not publish enough for it.
func (l *Library) Condition(id string) (Condition, bool) {
	for _, c := range l.Conditions() {
		if c.ID == id {
			return c, true
		}
	}
	return Condition{}, false
}

// ConditionIDs lists every condition this package can write, notes first,
// whatever a server publishes.
func ConditionIDs() []string {
	out := make([]string, len(conditionDefs))
	for i, d := range conditionDefs {
		out[i] = d.id
	}
	return out
}

// IsNote reports whether a condition id is a note of the report.
func IsNote(id string) bool {
	for _, d := range conditionDefs {
		if d.id == id {
			return d.note
		}
	}
	return false
}

// Undecidable are the notes no window decides, with why: they stay in the
// report only.
var Undecidable = map[string]string{
	"no_requests_yet":           "lifetime: nothing has finished since the start, which a window cannot say",
	"scrape_slow":               "about one scrape's wait, which a store does not keep (scrape_duration_seconds is the store's own)",
	"invalid_series":            "a value that cannot be: a store keeps it, and every figure from it is as wrong there",
	"file_time_not_scrape_time": "about a capture's file time, not a live server",
	"queue_stalled":             "info on one scrape; over a window it is the admission_stalled alert",
	"recurrent_kv_constraint":   "info: says which cache to grow, not that anything is wrong",
	"recurrent_not_budget":      "info: says more RAM would not help",
	"histogram_incomplete":      "about an exposition cut short, not a live server",
	"latency_beyond_buckets":    "info: a caveat on the buckets, shown on the latency panels",
	"latency_open_top":          "info: a caveat on the buckets, shown on the latency panels",
	"prefix_block_size":         "info: explains a low hit rate, nothing to fix",
	// A load run's own (inferscope bench): its generator and its window.
	"bench_client_bound":         "a load run's generator, not a server's series",
	"bench_kv_bound":             "a load run's verdict; over a window it is the kv_cache_pressure and preemptions alerts",
	"bench_saturated":            "a load run's verdict; over a window it is the queue_pressure alert",
	"bench_prefill_bound":        "a load run's verdict, not a fault",
	"bench_decode_bound":         "a load run's verdict, not a fault",
	"bench_outside_engine":       "needs the client's own timing, which no server publishes",
	"bench_requests_disagree":    "a load run's generator against the server",
	"bench_tokens_disagree":      "a load run's generator against the server",
	"bench_concurrency_disagree": "a load run's generator against the server",
	"bench_prefix_unintended":    "needs what the load meant to share, which no server publishes",
	"bench_early_stops":          "needs the output length asked, which no server publishes",
	"bench_warmup_unsettled":     "a load run's warm-up",
	"bench_context_cut":          "needs the output length asked, which no server publishes",
	"bench_errors":               "a load run's own requests; over a window the server's errors are requests_errored",
	"bench_partial":              "a load run's interruption",
	"bench_tokens_from_events":   "a load run's token count",
	"sweep_knee":                 "a sweep's finding across its runs, not a fault",
	"sweep_knee_beyond":          "a sweep's finding across its runs, not a fault",
	"sweep_target_unmet":         "a sweep's target, which no server publishes",
	"sweep_not_idle":             "a sweep's drain between its runs",
	"sweep_no_room":              "a sweep's finding across its runs, not a fault",
	"sweep_spread_wide":          "a sweep's runs against each other",
	// The GPU beside the engine (issue 32): the joins need the engine's
	// window and the GPU's together, which the fleet joins by pod or host;
	// the GPU's own alerts are GPU.Conditions.
	"gpu_not_read":               "about one reading's source, not a store's series",
	"gpu_busy_engine_idle":       "joins the engine's series with the exporter's by pod or host, which the fleet does; no rule joins them",
	"gpu_idle_engine_busy":       "joins the engine's series with the exporter's by pod or host, which the fleet does; no rule joins them",
	"gpu_kv_headroom":            "joins the engine's KV usage with the exporter's memory by pod or host, which the fleet does; no rule joins them",
	"gpu_decode_bandwidth_bound": "info: a diagnosis, joined with the engine's phases",
	"gpu_decode_compute_bound":   "info: a diagnosis, joined with the engine's phases",
	"gpu_energy_per_token":       "info: a figure, joined with the engine's tokens",
	"gpu_energy_disagrees":       "a check of the exporter's counter against its own readings, not a fault of the GPU",
	"gpu_offload_pcie":           "info: joined with the engine's offload bytes",
	// A probe's own (inferscope bench --probe), and the phase trade
	// weighed with one.
	"probe_overlap_low": "a probe's rounds, not a server's series",
	"probe_spread_wide": "a probe's requests, not a server's series",
	"probe_cold_slow":   "a probe's cold request, not a server's series",
	"probe_cached":      "a probe's prompts, not a server's series",
	"probe_server_busy": "a probe's readings of the server",
	"probe_early_stops": "needs the output length asked, which no server publishes",
	"probe_errors":      "a probe's own requests",
	"probe_partial":     "a probe's interruption",
	"probe_other_model": "needs a saved probe, which no server publishes",
}

// checkNotes reports a note the table of bands makes that is neither a
// condition here nor listed as undecidable (for tests).
func checkNotes() error {
	for _, b := range analysis.Bands() {
		if b.Note == "" {
			continue
		}
		if _, ok := Undecidable[b.Note]; ok {
			continue
		}
		if !IsNote(b.Note) && !isGPUNote(b.Note) {
			return fmt.Errorf("note %s has no condition and is not listed as undecidable", b.Note)
		}
	}
	return nil
}
