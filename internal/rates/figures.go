// Package rates turns the increase of a server's counters over a window
// into the windowed report's figures: rates per second, ratios of two
// increases and percentiles of a histogram's increase, so that a figure
// says "now" rather than "since the server started".
//
// # Sources
//
// A window's increases are a [Delta]. Two scrapes of one server give one:
// [History] keeps a session's scrapes and finds each window's baseline (the
// watch view), and [Since] compares a saved scrape with a later one. A
// PromQL source fills a Delta from increase() over the window. [Compute]
// turns any Delta into [Figure]s, and [Table] lays figures out as the
// rates table and the JSON's Report.Rates.
//
// # Resets and restarts
//
// A counter that falls restarted from zero, as PromQL's rate() assumes;
// and since a server's counters restart together, when any one falls
// (a counter, or a histogram's buckets) every one counts from zero, its
// increase being its new value, even one whose new value happens to be
// above the old. A histogram's percentiles are left out of a window that
// spans its reset. A changed process start time (or start header) means
// the server restarted: the history starts over there, so no window
// compares across it.
//
// # Cells
//
// The table writes each figure in the report's own spelling ([units]):
// rates with [units.Count], byte rates with [units.Bytes] under a label
// saying "/s" ("offload read /s"), ratios with [units.Percent], percentiles with
// [units.Seconds], stated as the report states them (≤ or ≥ where the
// buckets allow only a bound). A cell is empty where the window has no
// figure and "idle" where a ratio or percentile had nothing to divide.
// These are at most 8 cells wide for any figure short of a bounded latency
// of ten minutes or more ("≥12.5 min") or an absurd magnitude; the headers
// are labels, not padded: the one who draws the table sets its widths.
package rates

import (
	"math"
	"slices"
	"strconv"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// Delta is the increase of a server's counters and histograms over one
// window: what the window's figures are computed from.
type Delta struct {
	// Seconds is how long the window took: what rates divide by.
	Seconds float64
	// Counters holds each canonical counter's increase over the window, by
	// its snapshot name, with resets counted from zero (as increase()
	// does). A counter not known at both ends has no entry, and its rows
	// no figure.
	Counters map[string]float64
	// Hists holds each canonical histogram's increase, bucket by bucket
	// with its count and sum (as [histogram.Histogram.Sub] gives it, or
	// increase() of each _bucket series). One not known at both ends, or
	// reset inside the window, has no entry.
	Hists map[string]histogram.Histogram
	// Reset says that the server's counters fell inside the window and
	// were counted from zero from there.
	Reset bool
	// Sampled counts the window's scrapes (those after its first) that
	// read the running gauge, and the ones that found a request running:
	// a session's sampled busy share. Zero where no session sampled it.
	Sampled Sampling
}

// Sampling counts scrapes that read the running gauge (Scrapes) and those
// of them that found at least one request running (Busy).
type Sampling struct{ Busy, Scrapes float64 }

// Figure is one row's figure over one window.
type Figure struct {
	// Value is the figure in the row's base unit (tokens, requests or
	// bytes per second; a ratio 0..1; seconds; requests); nil when the
	// window has none.
	Value *float64
	// Idle says that a ratio or percentile had nothing to divide: no
	// traffic in the window. Value is nil.
	Idle bool
	// Estimate is a percentile as every view states it
	// ([histogram.Estimate.Say]: a value, or a bound where the buckets,
	// sum and count allow no more); zero for other rows. Value is its
	// Value: the figure the cell shows, ≤ or ≥ aside.
	Estimate histogram.Estimate
}

type kind int

const (
	kRate     kind = iota // counter increase per second (num plus add, less sub)
	kRatio                // Δnum / Δ(sum of den)
	kQuantile             // quantile of a histogram's increase
	kSampled              // share of the window's scrapes that found a request running
)

// cellFormat is how a row's cell writes its figure besides its kind's own.
type cellFormat int

const (
	fCount   cellFormat = iota // a rate of tokens or requests: units.Count
	fBytes                     // a rate of bytes, a size per second
	fMean                      // a mean number of requests ("0.42")
	fPercent                   // a share 0..1 (a rate of seconds per second)
	fFactor                    // a ratio that is a number of things, not a share: 3 significant figures ("65.1" tokens a step, "3.20" a verify)
)

// Row is one figure of the windowed report: one line of the rates table,
// one key in each column of Report.Rates.
type Row struct {
	ID    string // the key in Report.Rates
	Label string // the table's label

	kind   kind
	num    string   // the counter a rate or ratio reads
	add    []string // counters a rate adds to num (request seconds: prefill and decode)
	sub    []string // counters a rate takes from num: an estimate of a figure not published
	unless string   // a rate shown only where this counter is absent (its estimate)
	den    []string // a ratio's denominator: the sum of these increases
	format cellFormat
	hist   string // the histogram a percentile reads
	q      float64
	// offload: only with offload capacity; drafter: only once a drafter
	// has served requests; tiers: only once the prefix cache has had a
	// hit beyond the device (host memory, storage).
	offload, drafter, tiers bool
	// judged is the one-shot row ("section/row") whose band colours this
	// figure's trend; "" where none judges it.
	judged string
}

// rows are the table's rows in order: rates, then windowed ratios and
// percentiles (the one-shot figures are lifetime ones; these say "now").
// Prompt rows say what they count: computed tokens (cache hits excluded),
// an estimate of them from the prefix cache where they are not published
// (vLLM before 0.16, the llm-d simulator), and every prompt token, cached
// ones included, where that is all a server counts.
var rows = []Row{
	{ID: "prompt_computed", Label: "prompt computed tok/s", num: snapshot.PromptTokensTotal},
	{ID: "prompt_computed_est", Label: "prompt computed ≈ tok/s", num: snapshot.PrefixCacheQueries, sub: []string{snapshot.PrefixCacheHits}, unless: snapshot.PromptTokensTotal},
	{ID: "prompt_all", Label: "prompt tok/s, cached incl.", num: snapshot.PromptTokensAll},
	{ID: "prompt_cache_hits", Label: "prompt cache hits tok/s", num: snapshot.CachedTokensTotal},
	{ID: "generation", Label: "generation tok/s", num: snapshot.TokensPredictedTotal},
	{ID: "requests", Label: "requests /s", num: snapshot.RequestsTotal},
	// Refused at admission (vLLM): load the finished count never sees.
	{ID: "refused", Label: "refused /s", num: snapshot.ExtraAdmissionRejections, judged: "live/refused"},
	{ID: "offload_restored", Label: "offload restored tok/s", num: snapshot.KVOffloadRestoredTokensTotal, offload: true},
	{ID: "offload_read", Label: "offload read /s", num: snapshot.KVOffloadReadBytesTotal, format: fBytes, offload: true},
	{ID: "offload_written", Label: "offload written /s", num: snapshot.KVOffloadWrittenBytesTotal, format: fBytes, offload: true},
	{ID: "retracted", Label: "retracted tok/s", num: snapshot.ExtraRetractedPromptTokens, add: []string{snapshot.ExtraRetractedGeneratedTokens}},
	{ID: "in_flight", Label: "in prefill or decode", num: snapshot.PromptSecondsTotal, add: []string{snapshot.TokensPredictedSecondsTotal}, format: fMean},
	{ID: "engine_busy", Label: "engine busy", num: snapshot.EngineBusySecondsTotal, format: fPercent},
	{ID: "engine_prefill", Label: "engine prefill", num: snapshot.EnginePrefillSecondsTotal, format: fPercent},
	{ID: "engine_decode", Label: "engine decode", num: snapshot.EngineDecodeSecondsTotal, format: fPercent},
	{ID: "busy_sampled", Label: "busy, sampled", kind: kSampled},
	// vLLM's tokens per engine step, as its frontend counts them.
	{ID: "step_tokens", Label: "tokens / step", kind: kRatio, num: snapshot.ExtraStepTokens, den: []string{snapshot.ExtraEngineSteps}, format: fFactor},
	{ID: "prefix_hit_ratio", Label: "prefix hit ratio", kind: kRatio, num: snapshot.PrefixCacheHits, den: []string{snapshot.PrefixCacheQueries}, judged: "prefix_cache/hit_rate"},
	{ID: "prefix_hit_host", Label: "prefix hits, host", kind: kRatio, num: snapshot.PrefixCacheHostHits, den: []string{snapshot.PrefixCacheQueries}, tiers: true},
	{ID: "prefix_hit_storage", Label: "prefix hits, storage", kind: kRatio, num: snapshot.PrefixCacheStorageHits, den: []string{snapshot.PrefixCacheQueries}, tiers: true},
	{ID: "draft_acceptance", Label: "draft acceptance", kind: kRatio, num: snapshot.SpecDecodeNumAcceptedTokensTotal, den: []string{snapshot.SpecDecodeNumDraftTokensTotal}, drafter: true, judged: "spec_decode/draft_acceptance"},
	{ID: "tokens_per_verify", Label: "tokens / verify", kind: kRatio, num: snapshot.TokensPredictedTotal, den: []string{snapshot.ExtraSpecVerifyCalls}, format: fFactor, drafter: true},
	{ID: "prefill_share", Label: "prefill of request time", kind: kRatio, num: snapshot.PromptSecondsTotal, den: []string{snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal}},
	{ID: "ttft_p50", Label: "TTFT p50", kind: kQuantile, hist: snapshot.TimeToFirstTokenSeconds, q: 0.5},
	{ID: "ttft_p99", Label: "TTFT p99", kind: kQuantile, hist: snapshot.TimeToFirstTokenSeconds, q: 0.99},
	{ID: "e2e_p50", Label: "e2e p50", kind: kQuantile, hist: "e2e_request_latency_seconds", q: 0.5},
	{ID: "e2e_p99", Label: "e2e p99", kind: kQuantile, hist: "e2e_request_latency_seconds", q: 0.99},
}

// MinSampled is how many scrapes a window must hold for the share of them
// that found a request running to be given: fewer say too little.
const MinSampled = 10

// counterNames and histNames are the canonical series the rows read, in
// the order a [Sample] keeps them: nCounters and nHists of them, which a
// test checks.
var counterNames, histNames = seriesOf(rows)

const (
	nCounters = 25
	nHists    = 2
)

func seriesOf(rows []Row) (counters, hists []string) {
	for _, r := range rows {
		switch r.kind {
		case kQuantile:
			hists = appendNew(hists, r.hist)
			continue
		case kSampled:
			continue
		}
		for _, group := range r.counters() {
			for _, c := range group {
				counters = appendNew(counters, c)
			}
		}
	}
	return counters, hists
}

// counters are the counters a rate or ratio row reads, in groups (none
// allocated: supported runs on every scrape).
func (r Row) counters() [4][]string {
	return [4][]string{{r.num}, r.add, r.sub, r.den}
}

func appendNew(names []string, name string) []string {
	if slices.Contains(names, name) {
		return names
	}
	return append(names, name)
}

// RowsFor returns the rows a server supports, judged from a scrape of it:
// those whose series it publishes, the offload rows and draft acceptance
// only where the report has their section (analysis.SectionsOf: offload
// capacity; a drafter that has served), the prefix cache's tiers once one
// beyond the device has had a hit. The sampled busy share needs a
// session of scrapes ([History]) and is not among them.
func RowsFor(s *snapshot.Snapshot) []Row { return (supported(s) &^ sampledRows).rows() }

// rowSet is a set of rows by their index in rows: what a [History] keeps
// of its newest scrape without allocating on every one.
type rowSet uint64

// sampledRows are the rows only a session of scrapes gives.
var sampledRows = func() rowSet {
	var set rowSet
	for i, r := range rows {
		if r.kind == kSampled {
			set |= 1 << i
		}
	}
	return set
}()

func supported(s *snapshot.Snapshot) rowSet {
	// The report's sections decide: a row is there with its section.
	secs := analysis.SectionsOf(s)
	offload, drafter := secs.KVOffload, secs.SpecDecode
	tiers := s.Get(snapshot.PrefixCacheHostHits)+s.Get(snapshot.PrefixCacheStorageHits) > 0
	var set rowSet
	for i, r := range rows {
		if (r.offload && !offload) || (r.drafter && !drafter) || (r.tiers && !tiers) {
			continue
		}
		var ok bool
		switch r.kind {
		case kQuantile:
			ok = s.Hist(r.hist) != nil
		case kSampled:
			_, ok = s.Scalar(snapshot.RequestsProcessing)
		default:
			ok = (r.unless == "" || !counted(s, r.unless)) && counted(s, r.num)
			for _, group := range [...][]string{r.add, r.sub, r.den} {
				for _, c := range group {
					ok = ok && counted(s, c)
				}
			}
		}
		if ok {
			set |= 1 << i
		}
	}
	return set
}

func (set rowSet) rows() []Row {
	var out []Row
	for i, r := range rows {
		if set&(1<<i) != 0 {
			out = append(out, r)
		}
	}
	return out
}

// counted reports whether s holds name (a Scalars name or an Extra key)
// as a counter can be: a number not below zero.
func counted(s *snapshot.Snapshot, name string) bool {
	v, ok := s.Scalar(name)
	if !ok {
		v, ok = s.Extra[name]
	}
	return ok && v >= 0 && !math.IsInf(v, 0)
}

// Compute returns the figures of rows over the window d, in the order of
// rows. A window of no positive length has no figures.
func Compute(d Delta, rows []Row) []Figure {
	out := make([]Figure, len(rows))
	if !(d.Seconds > 0) || math.IsInf(d.Seconds, 1) {
		return out
	}
	for i, r := range rows {
		out[i] = r.figure(d)
	}
	return out
}

func (r Row) figure(d Delta) Figure {
	switch r.kind {
	case kRate:
		inc, ok := d.Counters[r.num]
		more, okAdd := sumOf(d, r.add)
		less, okSub := sumOf(d, r.sub)
		if !ok || !okAdd || !okSub {
			return Figure{}
		}
		inc += more
		return Figure{Value: ptr(math.Max(inc-less, 0) / d.Seconds)}
	case kRatio:
		num, ok := d.Counters[r.num]
		den, okDen := sumOf(d, r.den)
		if !ok || !okDen {
			return Figure{}
		}
		if den <= 0 {
			return Figure{Idle: true}
		}
		return Figure{Value: ptr(num / den)}
	case kSampled:
		if d.Sampled.Scrapes < MinSampled {
			return Figure{}
		}
		return Figure{Value: ptr(d.Sampled.Busy / d.Sampled.Scrapes)}
	}
	h, ok := d.Hists[r.hist]
	if !ok {
		return Figure{}
	}
	if h.Total() <= 0 {
		return Figure{Idle: true}
	}
	// Stated as the report states its own quantiles, within what the
	// window's buckets, sum and count allow (no peak is known for a
	// window).
	e := h.Estimate(r.q, math.Inf(1))
	if e.Kind == histogram.Unknown || math.IsInf(e.Value, 0) {
		return Figure{}
	}
	return Figure{Value: ptr(e.Value), Estimate: e}
}

// sumOf adds the window's increases of names; ok is false when one is not
// known at both ends.
func sumOf(d Delta, names []string) (sum float64, ok bool) {
	for _, c := range names {
		inc, ok := d.Counters[c]
		if !ok {
			return 0, false
		}
		sum += inc
	}
	return sum, true
}

// Cell writes f as the table shows it: in the report's spelling of the
// row's unit, empty when there is no figure.
func (r Row) Cell(f Figure) string {
	switch {
	case f.Idle:
		return "idle"
	case f.Value == nil:
		return ""
	case r.format == fFactor:
		return factor(*f.Value)
	case r.kind == kRatio, r.kind == kSampled, r.format == fPercent:
		return units.Percent(*f.Value)
	case r.kind == kQuantile:
		return f.Estimate.Say(units.Seconds)
	case r.format == fBytes:
		return units.Bytes(*f.Value)
	case r.format == fMean:
		return Mean(*f.Value)
	}
	return units.Count(*f.Value)
}

// Mean writes a mean number of requests in flight: two decimals below 10
// ("0.42"), then as a count.
func Mean(v float64) string {
	if v < 9.995 && v >= 0 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return units.Count(v)
}

func ptr(v float64) *float64 { return &v }

// factor writes a number of things to three significant figures: "3.20",
// "65.1", "412".
func factor(v float64) string {
	switch a := math.Abs(v); {
	case a < 9.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 99.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
