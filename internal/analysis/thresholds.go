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

// The numbers the GPU beside the engine is judged by (gpu.go, issue 32).
const (
	// gpuBusy: GPU utilization at or above this while the engine ran
	// nothing is another tenant's work; gpuIdle: at or below this while
	// the engine ran requests, the engine's time is spent off the GPU.
	gpuBusy = 0.5
	gpuIdle = 0.1
	// gpuActive: a DRAM or compute active share from which that unit is
	// what decode waits on (with decode at least 1 − prefillBound of the
	// requests' time).
	gpuActive = 0.5
	// gpuMemoryFull: device memory used from which one more allocation
	// fails; gpuFreeShare: device memory free from which a full KV cache
	// could be given more.
	gpuMemoryFull = 0.98
	gpuFreeShare  = 0.1
	// offloadPCIeShare: KV offload's bytes at least this share of the
	// GPUs' PCIe traffic.
	offloadPCIeShare = 0.5
	// gpuCounterApart: an energy counter whose power is this many times
	// the power readings' mean (or under its inverse) is not their draw;
	// gpuOverLimit: with no readings, the limits' multiple no mean draw
	// reaches (a card holds its mean to its limit; peaks pass it briefly).
	gpuCounterApart = 2
	gpuOverLimit    = 1.2
)

// The numbers a probe (`inferscope bench --probe`) is judged by
// (probe.go).
const (
	// overlapLow: a decode round's requests all decoded together for
	// less than this share of the round: the batch did not run as one.
	overlapLow = 0.8
	// spreadWide: a point's fastest measured request (or round) this many
	// times its slowest, or more: the figure is noisy.
	spreadWide = 1.25
	// coldSlow: the cold request (or round) this many times slower than
	// the measured median, or more: the warm-up was worth setting aside.
	coldSlow = 1.25
)

// The numbers a load run (`inferscope bench`) is judged by (bench.go).
const (
	// saturatedRise: the waiting gauge's mean over a run's second half
	// this many requests above its first half's…
	saturatedRise = 2
	// saturatedFlat: …while the server's throughput in the second half
	// stayed within this share of the first's: the queue grew, the
	// throughput did not.
	saturatedFlat = 0.15
	// saturatedQueued: requests waited in at least this share of the
	// samples, averaging at least saturatedWaiting: the load holds more
	// requests than the server runs at once.
	saturatedQueued  = 0.5
	saturatedWaiting = 1
	// prefillBound: prefill at least this share of the requests' time in
	// prefill or decode; below it, decode bounds them.
	prefillBound = 0.5
	// clientLate: the generator sent its requests this late (p99, in
	// seconds) or later…
	clientLate = 0.010
	// clientCPU: …or used at least this share of the cores it had: the
	// figures measure the machine that sends.
	clientCPU = 0.8
	// outsideShare, outsideMin: client TTFT beyond the server's queue and
	// prefill by at least this share of it and this many seconds: time
	// the engine does not see.
	outsideShare = 0.25
	outsideMin   = 0.050
	// concurrencyOff: the client's mean requests in flight and the
	// server's mean running and waiting this many requests apart (and
	// concurrencyShare of the client's).
	concurrencyOff   = 1
	concurrencyShare = 0.1
	// ConcurrencySamples: the comparison needs this many scrapes that read
	// both sides (fewer catch requests between the two).
	ConcurrencySamples = 10
	// prefixExcess: a prefix-cache hit ratio this far above the share of
	// prompt tokens the workload shares on purpose.
	prefixExcess = 0.1
	// SettleSamples, settleRunning and settleKV: a warm-up is over when
	// the last SettleSamples samples of the running gauge lie within
	// settleRunning of their mean (a share of it, and at least one
	// request), and those of KV usage within settleKV.
	SettleSamples = 5
	settleRunning = 0.1
	settleKV      = 0.02
)

// The numbers a sweep (`inferscope bench --sweep`) is judged by
// (sweep.go).
const (
	// sweepSpread: a step's runs completed requests at rates this share
	// of their mean apart (their sample standard deviation): the figures
	// do not repeat at the runs' length.
	sweepSpread = 0.1
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
	benchSaturated
	benchKVBound
	benchPrefillBound
	benchDecodeBound
	benchClientBound
	benchOutsideEngine
	benchRequestsAgree
	benchRequestsDisagree
	benchTokensAgree
	benchTokensDisagree
	benchConcurrencyAgree
	benchConcurrencyDisagree
	benchPrefixUnintended
	benchEarlyStops
	benchWarmupUnsettled
	benchContextCut
	benchErrors
	benchPartial
	benchTokensFromEvents
	probeOverlapLow
	probeSpreadWide
	probeColdSlow
	probeCached
	probeServerBusy
	probeEarlyStops
	probeErrors
	probePartial
	tradeOtherModel
	sweepKnee
	sweepKneeBeyond
	sweepTargetUnmet
	sweepNotIdle
	sweepNoRoom
	sweepSpreadWide
	gpuNotRead
	gpuXID
	gpuThrottledUnderLoad
	gpuBusyEngineIdle
	gpuIdleEngineBusy
	gpuMemoryFullBand
	gpuKVHeadroom
	gpuDecodeBandwidth
	gpuDecodeCompute
	gpuEnergyPerToken
	gpuEnergyDisagrees
	gpuOffloadPCIe
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

	// A load run's verdict: what limited the server at this load.
	benchSaturated:     {limits: []float64{saturatedRise, saturatedFlat, saturatedQueued, saturatedWaiting}, note: "bench_saturated"},
	benchKVBound:       {limits: []float64{kvPressure, 0}, note: "bench_kv_bound"},
	benchPrefillBound:  {limits: []float64{prefillBound}, note: "bench_prefill_bound"},
	benchDecodeBound:   {limits: []float64{prefillBound}, note: "bench_decode_bound"},
	benchClientBound:   {limits: []float64{clientLate, clientCPU}, colour: report.Warn, note: "bench_client_bound"},
	benchOutsideEngine: {limits: []float64{outsideShare, outsideMin}, colour: report.Warn, note: "bench_outside_engine"},
	// The generator checked against the server.
	benchRequestsAgree:       {rows: []string{"self_check/requests"}, limits: []float64{0}, colour: report.Good},
	benchRequestsDisagree:    {rows: []string{"self_check/requests"}, limits: []float64{0}, colour: report.Bad, note: "bench_requests_disagree"},
	benchTokensAgree:         {rows: []string{"self_check/tokens"}, limits: []float64{0}, colour: report.Good},
	benchTokensDisagree:      {rows: []string{"self_check/tokens"}, limits: []float64{0}, colour: report.Bad, note: "bench_tokens_disagree"},
	benchConcurrencyAgree:    {rows: []string{"self_check/concurrency"}, limits: []float64{concurrencyOff, concurrencyShare, ConcurrencySamples}, colour: report.Good},
	benchConcurrencyDisagree: {rows: []string{"self_check/concurrency"}, limits: []float64{concurrencyOff, concurrencyShare, ConcurrencySamples}, colour: report.Warn, note: "bench_concurrency_disagree"},
	// What makes a run's figures other than they seem.
	benchPrefixUnintended: {limits: []float64{prefixExcess}, colour: report.Warn, note: "bench_prefix_unintended"},
	benchEarlyStops:       {limits: []float64{0}, colour: report.Warn, note: "bench_early_stops"},
	benchWarmupUnsettled:  {limits: []float64{SettleSamples, settleRunning, 1, settleKV}, colour: report.Warn, note: "bench_warmup_unsettled"},
	benchContextCut:       {limits: []float64{0}, colour: report.Warn, note: "bench_context_cut"},
	benchErrors:           {limits: []float64{0}, colour: report.Warn, note: "bench_errors"},
	benchPartial:          {note: "bench_partial"},
	benchTokensFromEvents: {note: "bench_tokens_from_events"},
	// A probe (`inferscope bench --probe`): what makes its speeds other
	// than they seem (probe.go).
	probeOverlapLow: {limits: []float64{overlapLow}, colour: report.Warn, note: "probe_overlap_low"},
	probeSpreadWide: {limits: []float64{spreadWide}, colour: report.Warn, note: "probe_spread_wide"},
	probeColdSlow:   {limits: []float64{coldSlow}, note: "probe_cold_slow"},
	probeCached:     {limits: []float64{0}, note: "probe_cached"},
	probeServerBusy: {limits: []float64{0}, colour: report.Warn, note: "probe_server_busy"},
	probeEarlyStops: {limits: []float64{0}, colour: report.Warn, note: "probe_early_stops"},
	probeErrors:     {limits: []float64{0}, colour: report.Warn, note: "probe_errors"},
	probePartial:    {note: "probe_partial"},
	// The phase trade weighed with a probe (trade.go).
	tradeOtherModel: {note: "probe_other_model"},
	// A sweep: where the target broke, and what makes its steps other
	// than they seem.
	sweepKnee:        {note: "sweep_knee"},
	sweepKneeBeyond:  {note: "sweep_knee_beyond"},
	sweepTargetUnmet: {colour: report.Warn, note: "sweep_target_unmet"},
	sweepNotIdle:     {limits: []float64{0}, colour: report.Warn, note: "sweep_not_idle"},
	sweepNoRoom:      {note: "sweep_no_room"},
	sweepSpreadWide:  {limits: []float64{sweepSpread}, colour: report.Warn, note: "sweep_spread_wide"},

	// The GPU beside the engine (issue 32): the GPU's state, and the joins
	// of its window with the engine's.
	gpuNotRead:            {rows: []string{"gpu/source"}, note: "gpu_not_read"},
	gpuXID:                {rows: []string{"gpu/xid"}, limits: []float64{0}, colour: report.Bad, note: "gpu_xid"},
	gpuThrottledUnderLoad: {rows: []string{"gpu/throttle"}, limits: []float64{0}, colour: report.Warn, note: "gpu_throttled_under_load"},
	gpuBusyEngineIdle:     {rows: []string{"gpu/utilization"}, limits: []float64{gpuBusy}, colour: report.Warn, note: "gpu_busy_engine_idle"},
	gpuIdleEngineBusy:     {rows: []string{"gpu/utilization"}, limits: []float64{gpuIdle}, colour: report.Warn, note: "gpu_idle_engine_busy"},
	gpuMemoryFullBand:     {rows: []string{"gpu/memory"}, limits: []float64{gpuMemoryFull}, colour: report.Warn, note: "gpu_memory_full"},
	gpuKVHeadroom:         {rows: []string{"gpu/memory"}, limits: []float64{kvPressure, gpuFreeShare}, colour: report.Warn, note: "gpu_kv_headroom"},
	gpuDecodeBandwidth:    {rows: []string{"gpu/decode"}, limits: []float64{prefillBound, gpuActive}, note: "gpu_decode_bandwidth_bound"},
	gpuDecodeCompute:      {rows: []string{"gpu/decode"}, limits: []float64{prefillBound, gpuActive}, note: "gpu_decode_compute_bound"},
	gpuEnergyPerToken:     {rows: []string{"gpu/energy"}, note: "gpu_energy_per_token"},
	gpuEnergyDisagrees:    {rows: []string{"gpu/power"}, limits: []float64{gpuCounterApart, gpuOverLimit}, colour: report.Warn, note: "gpu_energy_disagrees"},
	gpuOffloadPCIe:        {rows: []string{"gpu/pcie"}, limits: []float64{offloadPCIeShare}, note: "gpu_offload_pcie"},
}

// gpuBands are the bands of the GPU section: a windowed view makes their
// notes again from the window (JudgeGPU).
var gpuBands = []band{gpuNotRead, gpuXID, gpuThrottledUnderLoad, gpuBusyEngineIdle, gpuIdleEngineBusy,
	gpuMemoryFullBand, gpuKVHeadroom, gpuDecodeBandwidth, gpuDecodeCompute, gpuEnergyPerToken, gpuEnergyDisagrees, gpuOffloadPCIe}

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
