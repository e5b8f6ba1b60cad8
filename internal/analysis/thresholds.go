package analysis

import (
	"fmt"
	"time"

	"github.com/inferscope/inferscope/internal/report"
)

// The numbers the report judges by. Each band they draw is a judgement
// below, and docs/notes.md lists the bands in one table (a test keeps the
// two in step).
const (
	// SlowScrape is how long a scrape may wait before the report says so.
	SlowScrape = time.Second

	kvPressure       = 0.9  // KV usage from which new requests wait for pages
	queueFactor      = 2    // waiting at least this many times what runs…
	queueMin         = 8    // …and at least this many waiting: queue pressure
	acceptanceGood   = 0.7  // draft acceptance above this: the drafter pays
	acceptanceLow    = 0.5  // at or below this: most drafted tokens are wasted
	hitRateGood      = 0.5  // a prefix-cache hit rate above this is good
	blockHitRate     = 0.05 // a hit rate below this, with KV blocks…
	blockSizeLarge   = 64   // …of at least this many tokens: blocks explain it
	paybackThrashing = 0.25 // offload read back / written below this, with evictions
	paybackGood      = 1    // read back at least what was written
	cappedNegligible = 0.05 // recurrent capped share at most this
	recurrentFull    = 0.9  // recurrent cache usage above this, with evictions
	abortShare       = 0.05 // finished requests aborted above this share
	// retractedWorkShare: tokens retractions threw away, as a share of
	// the prompt tokens computed, from which the waste is worth acting on.
	retractedWorkShare = 0.05
	// implausibleInFlight: requests in flight averaging below this, from a
	// guessed scrape time, with requests finished: the time is not the
	// scrape's.
	implausibleInFlight = 0.01
)

// A judgement is one band of a figure: the colour of the row it judges and
// the note it makes. A note's severity is its band's colour when that asks
// for action (warn, bad) and info otherwise, so a row is coloured warn or
// bad exactly when a note of that severity fires for it, and --fail-on
// trips where the colours say. A band with no action colours its row good
// or not at all.
type judgement struct {
	rows   []string        // the rows judged ("section/row"); none for a note on no row
	limits []float64       // the thresholds that draw the band
	colour report.Severity // report.None, Good, Warn or Bad
	note   string          // the note's id; "" for a band with no note
}

// severity is the severity of the band's note.
func (j judgement) severity() report.Severity {
	if j.colour == report.Warn || j.colour == report.Bad {
		return j.colour
	}
	return report.Info
}

// band names a judgement.
type band uint8

const (
	scrapeSlow band = iota
	noRequestsYet
	invalidSeries
	kvCacheOK
	kvCachePressure
	kvCacheOverCapacity
	queuePressure
	queueStalled
	kvOffloadOverCapacity
	fileTimeNotScrapeTime
	breakEvenPays
	breakEvenNone
	draftAcceptanceGood
	draftAcceptanceFair
	draftAcceptanceLow
	hitRateGoodBand
	hitRateLow
	prefixBlockSize
	kvOffloadColdAllocs
	kvOffloadThrashing
	kvOffloadPaysBack
	recurrentOverBudget
	recurrentLiveKVEvictions
	recurrentNegligible
	recurrentRaiseBudget
	recurrentKVConstraint
	recurrentNotBudget
	histogramIncomplete
	latencyBeyondBuckets
	latencyOpenTop
	preemptionsNone
	preemptions
	retractedWork
	requestsErrored
	requestsAborted
	requestsFailed
	requestsRefused
	bands // the number of bands
)

// judgements is the table, indexed by band.
var judgements = [bands]judgement{
	scrapeSlow:    {limits: []float64{SlowScrape.Seconds()}, note: "scrape_slow"},
	noRequestsYet: {note: "no_requests_yet"},
	invalidSeries: {colour: report.Warn, note: "invalid_series"},

	kvCacheOK:             {rows: []string{"live/kv_cache"}, limits: []float64{kvPressure}, colour: report.Good},
	kvCachePressure:       {rows: []string{"live/kv_cache"}, limits: []float64{kvPressure}, colour: report.Warn, note: "kv_cache_pressure"},
	kvCacheOverCapacity:   {rows: []string{"live/kv_cache"}, limits: []float64{1}, colour: report.Warn, note: "kv_cache_over_capacity"},
	queuePressure:         {rows: []string{"live/state"}, limits: []float64{queueFactor, queueMin}, colour: report.Warn, note: "queue_pressure"},
	queueStalled:          {rows: []string{"live/state"}, note: "queue_stalled"},
	kvOffloadOverCapacity: {rows: []string{"live/kv_offload", "kv_offload/ram"}, limits: []float64{1}, colour: report.Warn, note: "kv_offload_over_capacity"},

	fileTimeNotScrapeTime: {rows: []string{"phases/request_time"}, limits: []float64{implausibleInFlight}, note: "file_time_not_scrape_time"},
	breakEvenPays:         {rows: []string{"phases/break_even_1.5", "phases/break_even_2"}, limits: []float64{1}, colour: report.Good},
	breakEvenNone:         {rows: []string{"phases/break_even_1.5", "phases/break_even_2"}, limits: []float64{1}},

	draftAcceptanceGood: {rows: []string{"spec_decode/draft_acceptance"}, limits: []float64{acceptanceGood}, colour: report.Good},
	draftAcceptanceFair: {rows: []string{"spec_decode/draft_acceptance"}, limits: []float64{acceptanceLow, acceptanceGood}},
	draftAcceptanceLow:  {rows: []string{"spec_decode/draft_acceptance"}, limits: []float64{acceptanceLow}, colour: report.Warn, note: "draft_acceptance_low"},

	hitRateGoodBand: {rows: []string{"prefix_cache/hit_rate"}, limits: []float64{hitRateGood}, colour: report.Good},
	hitRateLow:      {rows: []string{"prefix_cache/hit_rate"}, limits: []float64{hitRateGood}},
	prefixBlockSize: {rows: []string{"prefix_cache/block_size"}, limits: []float64{blockHitRate, blockSizeLarge}, note: "prefix_block_size"},

	kvOffloadColdAllocs: {rows: []string{"kv_offload/ram"}, limits: []float64{0}, colour: report.Warn, note: "kv_offload_cold_allocs"},
	kvOffloadThrashing:  {rows: []string{"kv_offload/traffic"}, limits: []float64{0, paybackThrashing}, colour: report.Warn, note: "kv_offload_thrashing"},
	kvOffloadPaysBack:   {rows: []string{"kv_offload/traffic"}, limits: []float64{paybackGood}, colour: report.Good},

	recurrentOverBudget:      {rows: []string{"recurrent/cache"}, limits: []float64{1}, colour: report.Warn, note: "recurrent_over_budget"},
	recurrentLiveKVEvictions: {rows: []string{"recurrent/evictions"}, limits: []float64{0}, colour: report.Warn, note: "recurrent_live_kv_evictions"},
	recurrentNegligible:      {rows: []string{"recurrent/capped"}, limits: []float64{cappedNegligible}, colour: report.Good},
	recurrentRaiseBudget:     {rows: []string{"recurrent/capped"}, limits: []float64{cappedNegligible, 0, recurrentFull}, colour: report.Bad, note: "recurrent_raise_budget"},
	recurrentKVConstraint:    {rows: []string{"recurrent/capped"}, limits: []float64{cappedNegligible, 0}, note: "recurrent_kv_constraint"},
	recurrentNotBudget:       {rows: []string{"recurrent/capped"}, limits: []float64{cappedNegligible}, note: "recurrent_not_budget"},

	histogramIncomplete:  {note: "histogram_incomplete"},
	latencyBeyondBuckets: {note: "latency_beyond_buckets"},
	latencyOpenTop:       {note: "latency_open_top"},

	preemptionsNone: {rows: []string{"requests/preemptions"}, limits: []float64{0}, colour: report.Good},
	preemptions:     {rows: []string{"requests/preemptions"}, limits: []float64{0}, colour: report.Warn, note: "preemptions"},
	retractedWork:   {rows: []string{"requests/retracted_work"}, limits: []float64{retractedWorkShare}, colour: report.Warn, note: "retracted_work"},
	requestsErrored: {rows: []string{"requests/finished_error"}, limits: []float64{0}, colour: report.Bad, note: "requests_errored"},
	requestsAborted: {rows: []string{"requests/finished_abort"}, limits: []float64{abortShare}},
	requestsFailed:  {rows: []string{"requests/failed"}, limits: []float64{0}},
	requestsRefused: {rows: []string{"live/refused"}, limits: []float64{0}, colour: report.Warn, note: "requests_refused"},
}

// judge gives row (nil for a note on no row) the colour of band b, and
// makes b's note, if it has one, from format and args.
func (a *analyzer) judge(row *report.Row, b band, format string, args ...any) {
	j := judgements[b]
	if row != nil {
		row.Severity = j.colour
	}
	if j.note != "" {
		a.r.Notes = append(a.r.Notes, report.Note{ID: j.note, Severity: j.severity(), Text: fmt.Sprintf(format, args...)})
	}
}

// noted reports whether a note with this id has fired.
func (a *analyzer) noted(id string) bool {
	for _, n := range a.r.Notes {
		if n.ID == id {
			return true
		}
	}
	return false
}
