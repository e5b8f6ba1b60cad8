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
}

// Figure is one row's figure over one window.
type Figure struct {
	// Value is the figure in the row's base unit (tokens, requests or
	// bytes per second; a ratio 0..1; seconds); nil when the window has
	// none.
	Value *float64
	// Idle says that a ratio or percentile had nothing to divide: no
	// traffic in the window. Value is nil.
	Idle bool
	// Estimate is a percentile as the report states it (a value, or a
	// bound where the buckets allow no more); zero for other rows. Value
	// is its Projected, the estimate nearest histogram_quantile's within
	// what the buckets, sum and count allow.
	Estimate histogram.Estimate
}

type kind int

const (
	kRate     kind = iota // counter increase per second
	kRatio                // Δnum / Δ(sum of den)
	kQuantile             // quantile of a histogram's increase
)

// Row is one figure of the windowed report: one line of the rates table,
// one key in each column of Report.Rates.
type Row struct {
	ID    string // the key in Report.Rates
	Label string // the table's label

	kind    kind
	num     string   // the counter a rate or ratio reads
	den     []string // a ratio's denominator: the sum of these increases
	bytes   bool     // a rate of bytes, written as a size per second
	hist    string   // the histogram a percentile reads
	q       float64
	offload bool // only with offload capacity
	drafter bool // only once a drafter has served requests
}

// rows are the table's rows in order: rates, then windowed ratios and
// percentiles (the one-shot figures are lifetime ones; these say "now").
var rows = []Row{
	{ID: "prompt_computed", Label: "prompt computed tok/s", num: snapshot.PromptTokensTotal},
	{ID: "prompt_cache_hits", Label: "prompt cache hits tok/s", num: snapshot.CachedTokensTotal},
	{ID: "generation", Label: "generation tok/s", num: snapshot.TokensPredictedTotal},
	{ID: "requests", Label: "requests /s", num: snapshot.RequestsTotal},
	{ID: "offload_restored", Label: "offload restored tok/s", num: snapshot.KVOffloadRestoredTokensTotal, offload: true},
	{ID: "offload_read", Label: "offload read /s", num: snapshot.KVOffloadReadBytesTotal, bytes: true, offload: true},
	{ID: "offload_written", Label: "offload written /s", num: snapshot.KVOffloadWrittenBytesTotal, bytes: true, offload: true},
	{ID: "prefix_hit_ratio", Label: "prefix hit ratio", kind: kRatio, num: snapshot.PrefixCacheHits, den: []string{snapshot.PrefixCacheQueries}},
	{ID: "draft_acceptance", Label: "draft acceptance", kind: kRatio, num: snapshot.SpecDecodeNumAcceptedTokensTotal, den: []string{snapshot.SpecDecodeNumDraftTokensTotal}, drafter: true},
	{ID: "prefill_share", Label: "prefill share", kind: kRatio, num: snapshot.PromptSecondsTotal, den: []string{snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal}},
	{ID: "ttft_p50", Label: "TTFT p50", kind: kQuantile, hist: snapshot.TimeToFirstTokenSeconds, q: 0.5},
	{ID: "ttft_p99", Label: "TTFT p99", kind: kQuantile, hist: snapshot.TimeToFirstTokenSeconds, q: 0.99},
	{ID: "e2e_p50", Label: "e2e p50", kind: kQuantile, hist: "e2e_request_latency_seconds", q: 0.5},
	{ID: "e2e_p99", Label: "e2e p99", kind: kQuantile, hist: "e2e_request_latency_seconds", q: 0.99},
}

// counterNames and histNames are the canonical series the rows read, in
// the order a [Sample] keeps them: nCounters and nHists of them, which a
// test checks.
var counterNames, histNames = seriesOf(rows)

const (
	nCounters = 13
	nHists    = 2
)

func seriesOf(rows []Row) (counters, hists []string) {
	for _, r := range rows {
		if r.kind == kQuantile {
			hists = appendNew(hists, r.hist)
			continue
		}
		counters = appendNew(counters, r.num)
		for _, d := range r.den {
			counters = appendNew(counters, d)
		}
	}
	return counters, hists
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
// capacity; a drafter that has served).
func RowsFor(s *snapshot.Snapshot) []Row { return supported(s).rows() }

// rowSet is a set of rows by their index in rows: what a [History] keeps
// of its newest scrape without allocating on every one.
type rowSet uint64

func supported(s *snapshot.Snapshot) rowSet {
	// The report's sections decide: a row is there with its section.
	secs := analysis.SectionsOf(s)
	offload, drafter := secs.KVOffload, secs.SpecDecode
	var set rowSet
	for i, r := range rows {
		if (r.offload && !offload) || (r.drafter && !drafter) {
			continue
		}
		ok := r.kind == kQuantile && s.Hist(r.hist) != nil
		if r.kind != kQuantile {
			ok = counted(s, r.num)
			for _, d := range r.den {
				ok = ok && counted(s, d)
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

// counted reports whether s holds name as a counter can be: a number not
// below zero.
func counted(s *snapshot.Snapshot, name string) bool {
	v, ok := s.Scalar(name)
	return ok && v >= 0
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
		if !ok {
			return Figure{}
		}
		return Figure{Value: ptr(inc / d.Seconds)}
	case kRatio:
		num, ok := d.Counters[r.num]
		if !ok {
			return Figure{}
		}
		den := 0.0
		for _, c := range r.den {
			inc, ok := d.Counters[c]
			if !ok {
				return Figure{}
			}
			den += inc
		}
		if den <= 0 {
			return Figure{Idle: true}
		}
		return Figure{Value: ptr(num / den)}
	}
	h, ok := d.Hists[r.hist]
	if !ok {
		return Figure{}
	}
	if h.Total() <= 0 {
		return Figure{Idle: true}
	}
	// Held to what the window's buckets, sum and count allow, as the
	// report's own quantiles are (no peak is known for a window).
	e := h.Estimate(r.q, math.Inf(1))
	v := e.Projected
	if math.IsNaN(v) {
		v = e.Plain
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Figure{}
	}
	return Figure{Value: ptr(v), Estimate: e}
}

// Cell writes f as the table shows it: in the report's spelling of the
// row's unit, empty when there is no figure.
func (r Row) Cell(f Figure) string {
	switch {
	case f.Idle:
		return "idle"
	case f.Value == nil:
		return ""
	case r.kind == kRatio:
		return units.Percent(*f.Value)
	case r.kind == kQuantile:
		switch f.Estimate.Kind {
		case histogram.AtMost:
			return "≤" + units.Seconds(f.Estimate.Value)
		case histogram.AtLeast:
			return "≥" + units.Seconds(f.Estimate.Value)
		}
		return units.Seconds(*f.Value)
	case r.bytes:
		return units.Bytes(*f.Value)
	}
	return units.Count(*f.Value)
}

func ptr(v float64) *float64 { return &v }
