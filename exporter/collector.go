package exporter

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Scalar series, in the reference's order. Names are without the prefix.
const (
	sPromptTokens = iota
	sCachedTokens
	sPrefixQueries
	sPrefixHits
	sPromptSeconds
	sPredictedTokens
	sPredictedSeconds
	sRequests
	sNTokensMax
	sPredictedMax
	sPredictedPerSecond
	sPromptTokensAll
	sProcessStart

	sSpecDraft
	sSpecAccepted
	sSpecSteps
	sSpecRequests
	sSpecAcceptanceRate
	sSpecMeanAccepted
	sSpecTokensPerStep

	sRequestsProcessing
	sRequestsDeferred
	sKVTokens
	sKVMaxTokens
	sKVUsage

	sOffloadTokens
	sOffloadMaxTokens
	sOffloadUsage
	sOffloadBytes
	sOffloadMaxBytes
	sOffloadRestoredTokens
	sOffloadStores
	sOffloadDeduped
	sOffloadEvictions
	sOffloadColdAllocs
	sOffloadReadBytes
	sOffloadWrittenBytes

	sRecurrentCheckpoints
	sRecurrentBytes
	sRecurrentMaxBytes
	sRecurrentUsage
	sRecurrentCheckpointBytes
	sRecurrentEvictions
	sRecurrentStranded
	sRecurrentLiveKV
	sRecurrentPruned
	sRecurrentStrandedByKV
	sRecurrentCapped

	sLiveAge
	sLiveFailures

	numScalars
)

type kind uint8

const (
	gauge kind = iota
	counter
	engineCounter // a counter kept by the engine: it restarts with the generator, so no created time
)

type scalarDef struct {
	name string
	kind kind
	help string
}

// scalarRule says when a scalar is published and whose it is.
type scalarRule struct {
	// perSeries: one series per label set (per model), built from the
	// generations; otherwise one unlabelled series from the engine or the
	// exporter.
	perSeries bool
	// needs: the figures it is built from. A per-series scalar sums the
	// generations that reported all of them (its population, pop), and is
	// published while none was ever unknown, or once its population has a
	// generation. An engine scalar is left out when Options.Unknown names
	// its group.
	needs Quantity
	pop   population
	// instead: it is published only once this figure was unknown, as the
	// stand-in for the series that need it.
	instead Quantity
}

// population names the generations a per-series scalar sums.
type population uint8

const (
	popAll       population = iota // every generation
	popSplit                       // prompt and cached part known
	popPrompt                      // prompt known
	popPrefill                     // prefill known
	popGenerated                   // generated tokens known
	popDecode                      // decode time known
	popDecoded                     // generated tokens and decode time known
	popDraft                       // whether a drafter served it known
)

// rules holds each scalar's rule; the zero rule is an unlabelled series
// always published.
var rules = [numScalars]scalarRule{
	sPromptTokens:       {perSeries: true, needs: UnknownPrompt | UnknownCached, pop: popSplit},
	sCachedTokens:       {perSeries: true, needs: UnknownPrompt | UnknownCached, pop: popSplit},
	sPrefixQueries:      {perSeries: true, needs: UnknownPrompt | UnknownCached, pop: popSplit},
	sPrefixHits:         {perSeries: true, needs: UnknownPrompt | UnknownCached, pop: popSplit},
	sPromptTokensAll:    {perSeries: true, needs: UnknownPrompt, pop: popPrompt, instead: UnknownCached},
	sPromptSeconds:      {perSeries: true, needs: UnknownPrefill, pop: popPrefill},
	sPredictedTokens:    {perSeries: true, needs: UnknownGenerated, pop: popGenerated},
	sPredictedSeconds:   {perSeries: true, needs: UnknownDecode, pop: popDecode},
	sRequests:           {perSeries: true},
	sNTokensMax:         {perSeries: true, needs: UnknownPrompt, pop: popPrompt},
	sPredictedMax:       {perSeries: true, needs: UnknownGenerated, pop: popGenerated},
	sPredictedPerSecond: {perSeries: true, needs: UnknownGenerated | UnknownDecode, pop: popDecoded},

	sSpecDraft:          {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecAccepted:       {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecSteps:          {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecRequests:       {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecAcceptanceRate: {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecMeanAccepted:   {perSeries: true, needs: UnknownDraft, pop: popDraft},
	sSpecTokensPerStep:  {perSeries: true, needs: UnknownDraft, pop: popDraft},

	sProcessStart:       {needs: UnknownStart},
	sRequestsProcessing: {needs: UnknownRunning},
	sRequestsDeferred:   {needs: UnknownWaiting},
	sKVTokens:           {needs: UnknownKVCache},
	sKVMaxTokens:        {needs: UnknownKVCache},
	sKVUsage:            {needs: UnknownKVCache},

	sOffloadTokens:         {needs: UnknownOffload},
	sOffloadMaxTokens:      {needs: UnknownOffload},
	sOffloadUsage:          {needs: UnknownOffload},
	sOffloadBytes:          {needs: UnknownOffload},
	sOffloadMaxBytes:       {needs: UnknownOffload},
	sOffloadRestoredTokens: {needs: UnknownOffload},
	sOffloadStores:         {needs: UnknownOffload},
	sOffloadDeduped:        {needs: UnknownOffload},
	sOffloadEvictions:      {needs: UnknownOffload},
	sOffloadColdAllocs:     {needs: UnknownOffload},
	sOffloadReadBytes:      {needs: UnknownOffload},
	sOffloadWrittenBytes:   {needs: UnknownOffload},

	sRecurrentCheckpoints:     {needs: UnknownRecurrent},
	sRecurrentBytes:           {needs: UnknownRecurrent},
	sRecurrentMaxBytes:        {needs: UnknownRecurrent},
	sRecurrentUsage:           {needs: UnknownRecurrent},
	sRecurrentCheckpointBytes: {needs: UnknownRecurrent},
	sRecurrentEvictions:       {needs: UnknownRecurrent},
	sRecurrentStranded:        {needs: UnknownRecurrent},
	sRecurrentLiveKV:          {needs: UnknownRecurrent},
	sRecurrentPruned:          {needs: UnknownRecurrent},
	sRecurrentStrandedByKV:    {needs: UnknownRecurrent},
	sRecurrentCapped:          {needs: UnknownRecurrent},
}

// published reports whether an engine scalar is published given
// Options.Unknown.
func (r scalarRule) published(unknown Quantity) bool {
	return unknown&r.needs == 0
}

// publishedIn reports whether a per-series scalar is published for a
// series.
func (r scalarRule) publishedIn(t *tally) bool {
	if r.instead != 0 && t.unknown&r.instead == 0 {
		return false
	}
	return t.unknown&r.needs == 0 || t.pop[r.pop] > 0
}

// histNeeds is the figure each histogram observes.
var histNeeds = [numHists]Quantity{
	hQueue: UnknownQueue, hPrefill: UnknownPrefill, hDecode: UnknownDecode,
	hTTFT: UnknownTTFT, hE2E: UnknownE2E,
	hPromptTokens: UnknownPrompt, hGenerationTokens: UnknownGenerated, hAcceptance: UnknownDraft,
}

// presence is the bit set of a series' published families: bit i for
// scalar i, bit numScalars+h for histogram h.
type presence uint64

const _ = uint(64 - numScalars - numHists) // presence must hold every family

func (p presence) has(fi int) bool { return p&(1<<fi) != 0 }

// presence says which families a series publishes: every scalar its rule
// allows, and every histogram whose figure was always known or that has
// observations.
func (t *tally) presence(hv *[numHists]histValue) presence {
	var p presence
	for i, r := range rules {
		if r.perSeries && r.publishedIn(t) {
			p |= 1 << i
		}
	}
	for i := range hv {
		if t.unknown&histNeeds[i] == 0 || total(hv[i].counts) > 0 {
			p |= 1 << (numScalars + i)
		}
	}
	return p
}

// enginePresence says which unlabelled scalars are published.
func enginePresence(unknown Quantity) presence {
	var p presence
	for i, r := range rules {
		if !r.perSeries && r.published(unknown) {
			p |= 1 << i
		}
	}
	return p
}

func total(counts []uint64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n
}

// created reports whether the series carries the exporter's start as its
// created time in OpenMetrics: only counters named _total do. OpenMetrics
// writes the others as "unknown", where a _created sample is not allowed
// (the encoder would emit it anyway), and the engine's counters restart with
// the generator, at a time the exporter does not know.
func (d scalarDef) created() bool {
	return d.kind == counter && strings.HasSuffix(d.name, "_total")
}

// scalars holds name, type and help of every scalar series. Help texts of
// names shared with llama.cpp and vLLM are theirs, so dashboards built on
// them read the same.
var scalars = [numScalars]scalarDef{
	sPromptTokens:       {"prompt_tokens_total", counter, "Number of prompt tokens processed."},
	sCachedTokens:       {"cached_tokens_total", counter, "Number of prompt tokens skipped via the prefix cache."},
	sPrefixQueries:      {"prefix_cache_queries", counter, "Prefix cache queries, in terms of number of queried tokens."},
	sPrefixHits:         {"prefix_cache_hits", counter, "Prefix cache hits, in terms of number of cached tokens."},
	sPromptSeconds:      {"prompt_seconds_total", counter, "Prompt process time"},
	sPredictedTokens:    {"tokens_predicted_total", counter, "Number of generation tokens processed."},
	sPredictedSeconds:   {"tokens_predicted_seconds_total", counter, "Predict process time"},
	sRequests:           {"requests_total", counter, "Number of finished generation requests."},
	sNTokensMax:         {"n_tokens_max", counter, "Largest observed n_tokens."},
	sPredictedMax:       {"tokens_predicted_max", counter, "Largest observed number of generation tokens in one request."},
	sPredictedPerSecond: {"predicted_tokens_seconds", gauge, "Average generation throughput in tokens/s."},
	sPromptTokensAll:    {"prompt_tokens_all_total", counter, "Number of prompt tokens of finished requests, cached and computed alike, where the cached part is unknown."},
	sProcessStart:       {"process_start_time_seconds", gauge, "Start time of the process since the Unix epoch, in seconds."},

	sSpecDraft:          {"spec_decode_num_draft_tokens_total", counter, "Number of tokens proposed by the drafter."},
	sSpecAccepted:       {"spec_decode_num_accepted_tokens_total", counter, "Number of drafted tokens accepted by the target model."},
	sSpecSteps:          {"spec_decode_num_decode_steps_total", counter, "Number of decode steps over requests served with a drafter."},
	sSpecRequests:       {"spec_decode_requests_total", counter, "Number of finished requests served with a drafter."},
	sSpecAcceptanceRate: {"spec_decode_draft_acceptance_rate", gauge, "Fraction of drafted tokens accepted. 1 means every draft was accepted."},
	sSpecMeanAccepted:   {"spec_decode_mean_accepted_length", gauge, "Average drafted tokens accepted per decode step."},
	sSpecTokensPerStep:  {"spec_decode_tokens_per_step", gauge, "Average tokens emitted per decode step, including the target model's own."},

	sRequestsProcessing: {"requests_processing", gauge, "Number of requests processing."},
	sRequestsDeferred:   {"requests_deferred", gauge, "Number of requests deferred."},
	sKVTokens:           {"kv_cache_tokens", gauge, "KV-cache tokens."},
	sKVMaxTokens:        {"kv_cache_max_tokens", gauge, "Total KV-cache token capacity."},
	sKVUsage:            {"kv_cache_usage_ratio", gauge, "KV-cache usage. 1 means 100 percent usage."},

	sOffloadTokens:         {"kv_offload_tokens", gauge, "Tokens of KV cache currently held in system RAM."},
	sOffloadMaxTokens:      {"kv_offload_max_tokens", gauge, "Total KV offload cache token capacity."},
	sOffloadUsage:          {"kv_offload_usage_ratio", gauge, "KV offload cache usage. 1 means 100 percent usage."},
	sOffloadBytes:          {"kv_offload_bytes", gauge, "System RAM currently holding cache pages, in bytes."},
	sOffloadMaxBytes:       {"kv_offload_max_bytes", gauge, "Configured size of the KV offload cache, in bytes."},
	sOffloadRestoredTokens: {"kv_offload_restored_tokens_total", engineCounter, "Prompt tokens read back from system RAM instead of being prefilled again."},
	sOffloadStores:         {"kv_offload_stores_total", engineCounter, "Pages copied from VRAM into the KV offload cache."},
	sOffloadDeduped:        {"kv_offload_deduped_stores_total", engineCounter, "Page stores skipped because the page was already held in system RAM."},
	sOffloadEvictions:      {"kv_offload_evictions_total", engineCounter, "Pages dropped from the KV offload cache to make room."},
	sOffloadColdAllocs:     {"kv_offload_cold_allocs_total", engineCounter, "Page stores that had to pin system memory synchronously."},
	sOffloadReadBytes:      {"kv_offload_read_bytes_total", engineCounter, "Bytes transferred from system RAM to VRAM restoring cache pages."},
	sOffloadWrittenBytes:   {"kv_offload_written_bytes_total", engineCounter, "Bytes transferred from VRAM to system RAM evicting cache pages."},

	sRecurrentCheckpoints:     {"recurrent_checkpoints", gauge, "Recurrent state checkpoints currently held in system RAM."},
	sRecurrentBytes:           {"recurrent_cache_bytes", gauge, "System RAM currently holding recurrent checkpoints, in bytes."},
	sRecurrentMaxBytes:        {"recurrent_cache_max_bytes", gauge, "Configured size of the recurrent checkpoint cache, in bytes."},
	sRecurrentUsage:           {"recurrent_cache_usage_ratio", gauge, "Recurrent checkpoint cache usage. 1 means 100 percent usage."},
	sRecurrentCheckpointBytes: {"recurrent_checkpoint_bytes", gauge, "Mean size of one recurrent checkpoint, in bytes."},
	sRecurrentEvictions:       {"recurrent_cache_evictions_total", engineCounter, "Recurrent checkpoints dropped to make room."},
	sRecurrentStranded:        {"recurrent_cache_stranded_evictions_total", engineCounter, "Recurrent checkpoints dropped that were already unresumable."},
	sRecurrentLiveKV:          {"recurrent_cache_live_kv_evictions_total", engineCounter, "Recurrent checkpoints dropped while their anchor KV page was still cached."},
	sRecurrentPruned:          {"recurrent_cache_pruned_total", engineCounter, "Unresumable recurrent checkpoints reclaimed while the generator was idle."},
	sRecurrentStrandedByKV:    {"recurrent_stranded_by_kv_total", engineCounter, "Recurrent checkpoints stranded by eviction of the KV page anchoring them."},
	sRecurrentCapped:          {"recurrent_capped_tokens_total", engineCounter, "Tokens with valid KV that were re-prefilled anyway, for lack of recurrent state."},

	sLiveAge:      {"live_state_age_seconds", gauge, "Age of the engine's live state in this scrape, in seconds; 0 when read fresh, more when the engine did not answer in time and the last good reading was served."},
	sLiveFailures: {"live_state_failures_total", counter, "Scrapes that served an earlier live state because the engine timed out or failed."},
}

// Histogram series.
const (
	hQueue = iota
	hPrefill
	hDecode
	hTTFT
	hE2E
	hPromptTokens
	hGenerationTokens
	hAcceptance
	numHists
)

type histDef struct{ name, help string }

var hists = [numHists]histDef{
	hQueue:            {"request_queue_time_seconds", "Histogram of time spent in the queue before prefill, in seconds."},
	hPrefill:          {"request_prefill_time_seconds", "Histogram of prefill (prompt processing) time in seconds."},
	hDecode:           {"request_decode_time_seconds", "Histogram of decode (generation) time in seconds."},
	hTTFT:             {"time_to_first_token_seconds", "Histogram of time to first token in seconds."},
	hE2E:              {"e2e_request_latency_seconds", "Histogram of end to end request latency in seconds."},
	hPromptTokens:     {"request_prompt_tokens", "Histogram of number of prompt tokens per request."},
	hGenerationTokens: {"request_generation_tokens", "Histogram of number of generation tokens per request."},
	hAcceptance:       {"spec_decode_acceptance_rate", "Histogram of per-request draft acceptance rate."},
}

// collector declares every descriptor once and, for a registry, builds one
// metric per published series from a single reading per Collect.
type collector struct {
	m      *Metrics
	scalar [numScalars]*prometheus.Desc
	hist   [numHists]*prometheus.Desc
}

func newCollector(m *Metrics) *collector {
	c := &collector{m: m}
	var labels []string
	if m.perModel {
		labels = []string{ModelLabel}
	}
	for i, d := range scalars {
		var l []string
		if rules[i].perSeries {
			l = labels
		}
		c.scalar[i] = prometheus.NewDesc(m.ns+":"+d.name, d.help, l, nil)
	}
	for i, d := range hists {
		c.hist[i] = prometheus.NewDesc(m.ns+":"+d.name, d.help, labels, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.scalar {
		ch <- d
	}
	for _, d := range c.hist {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	var r reading
	m.read(&r)
	var ev [numScalars]float64
	r.engineValues(&ev, m.start)
	ep := enginePresence(m.unknown)
	n := r.count()
	// One block for all scalars and one for all histograms: a Collect is a
	// handful of allocations, not several per series.
	out := make([]scalarMetric, 0, numScalars*max(n, 1))
	hs := make([]histMetric, 0, numHists*n)
	for i, d := range scalars {
		if !rules[i].perSeries && ep.has(i) {
			out = append(out, scalarMetric{desc: c.scalar[i], kind: d.kind, v: ev[i]})
			if d.created() {
				out[len(out)-1].created = m.createdPB
			}
			ch <- &out[len(out)-1]
		}
	}
	for k := range n {
		t := r.at(k)
		var v [numScalars]float64
		t.values(&v)
		hv := t.histValues()
		p := t.presence(&hv)
		for i, d := range scalars {
			if rules[i].perSeries && p.has(i) {
				out = append(out, scalarMetric{desc: c.scalar[i], kind: d.kind, v: v[i], labels: t.s.pairs})
				if d.created() {
					out[len(out)-1].created = t.s.since
				}
				ch <- &out[len(out)-1]
			}
		}
		for i, h := range hv {
			if p.has(numScalars + i) {
				hs = append(hs, newHistMetric(c.hist[i], h, t.histCreated(i), t.s.pairs))
				ch <- &hs[len(hs)-1]
			}
		}
	}
}

// reading is everything one scrape publishes, before it becomes text or
// metrics.
type reading struct {
	t         tally   // the unlabelled series, without PerModel
	models    []tally // one per model, in label order, with PerModel
	perModel  bool
	live      Live
	liveAge   float64
	liveFails uint64
}

// read takes one reading into r, which must be zero: the engine first, then
// the shards.
func (m *Metrics) read(r *reading) {
	r.live, r.liveAge, r.liveFails = m.readLive()
	if !m.perModel {
		m.def.readTally(&r.t)
		return
	}
	r.perModel = true
	if ms := m.models.Load().sorted; len(ms) > 0 {
		r.models = make([]tally, len(ms))
		for i, s := range ms {
			s.readTally(&r.models[i])
		}
	}
}

// count is the number of series sets read.
func (r *reading) count() int {
	if r.perModel {
		return len(r.models)
	}
	return 1
}

// at is the i-th series set read.
func (r *reading) at(i int) *tally {
	if r.perModel {
		return &r.models[i]
	}
	return &r.t
}

// values computes a series' scalars from its tally, by the reference's
// rules.
func (t *tally) values(v *[numScalars]float64) {
	v[sPromptTokens] = float64(t.prefilled)
	v[sCachedTokens] = float64(t.cached)
	v[sPrefixQueries] = float64(t.prefilled + t.cached)
	v[sPrefixHits] = float64(t.cached)
	v[sPromptTokensAll] = float64(t.promptAll)
	v[sPromptSeconds] = t.prefillNs.seconds()
	v[sPredictedTokens] = float64(t.generated)
	v[sPredictedSeconds] = t.decodeNs.seconds()
	v[sRequests] = float64(t.requests)
	v[sNTokensMax] = float64(t.peakPrompt)
	v[sPredictedMax] = float64(t.peakGen)
	// Tokens over the decode time of the same generations: a source may
	// report tokens for requests whose decode time it does not know.
	v[sPredictedPerSecond] = ratio(float64(t.decodedGen), t.decodedNs.seconds())

	drafted := float64(t.specAccepted + t.specRejected)
	v[sSpecDraft] = drafted
	v[sSpecAccepted] = float64(t.specAccepted)
	v[sSpecSteps] = float64(t.specSteps)
	v[sSpecRequests] = float64(t.specRequests)
	v[sSpecAcceptanceRate] = ratio(v[sSpecAccepted], drafted)
	v[sSpecMeanAccepted] = ratio(v[sSpecAccepted], v[sSpecSteps])
	if t.specSteps > 0 {
		v[sSpecTokensPerStep] = 1 + v[sSpecMeanAccepted]
	}
}

// engineValues computes the unlabelled scalars: the process start and the
// engine's live state.
func (r *reading) engineValues(v *[numScalars]float64, start time.Time) {
	// Whole and fractional seconds apart: UnixNano as a float64 is already
	// rounded (a 2026 time needs 61 bits), so 12:00:00.25 would read
	// …00.2499998, not the reference's …00.25.
	v[sProcessStart] = float64(start.Unix()) + float64(start.Nanosecond())/1e9

	// Used amounts are published as the engine reported them, so a ratio
	// reads above 1 when the engine holds more than its capacity.
	l := &r.live
	page := float64(l.PageSize)
	v[sRequestsProcessing] = float64(l.ActiveJobs)
	v[sRequestsDeferred] = float64(l.PendingJobs)
	v[sKVTokens] = float64(l.KVReferencedPages) * page
	v[sKVMaxTokens] = float64(l.KVPages) * page
	v[sKVUsage] = ratio(v[sKVTokens], v[sKVMaxTokens])

	if o := l.Offload; o != nil {
		slot := float64(o.SlotBytes)
		v[sOffloadTokens] = float64(o.Slots) * page
		v[sOffloadMaxTokens] = float64(o.MaxSlots) * page
		// Pages held over slots available, as the reference computes it:
		// meaningful even when the page size is unknown.
		v[sOffloadUsage] = ratio(float64(o.Slots), float64(o.MaxSlots))
		v[sOffloadBytes] = float64(o.Slots) * slot
		v[sOffloadMaxBytes] = float64(o.MaxSlots) * slot
		v[sOffloadRestoredTokens] = float64(o.Restores) * page
		v[sOffloadStores] = float64(o.Stores)
		v[sOffloadDeduped] = float64(o.DedupedStores)
		v[sOffloadEvictions] = float64(o.Evictions)
		v[sOffloadColdAllocs] = float64(o.ColdAllocs)
		v[sOffloadReadBytes] = float64(o.Restores) * slot
		v[sOffloadWrittenBytes] = float64(o.Stores) * slot
	}

	// The page-table counters behind the recurrent cap are published even
	// when the checkpoint cache cannot be read: they report the waste.
	v[sRecurrentCapped] = float64(l.KVOnlyPages) * page
	v[sRecurrentStrandedByKV] = float64(l.StrandedByKV)
	if rc := l.Recurrent; rc != nil {
		v[sRecurrentCheckpoints] = float64(rc.Checkpoints)
		v[sRecurrentBytes] = float64(rc.Bytes)
		v[sRecurrentMaxBytes] = float64(rc.MaxBytes)
		v[sRecurrentUsage] = ratio(float64(rc.Bytes), float64(rc.MaxBytes))
		if rc.Checkpoints > 0 {
			// Whole bytes, as the reference's floor division gives.
			v[sRecurrentCheckpointBytes] = float64(rc.Bytes / int64(rc.Checkpoints))
		}
		v[sRecurrentEvictions] = float64(rc.Evictions)
		v[sRecurrentStranded] = float64(rc.StrandedEvictions)
		v[sRecurrentLiveKV] = float64(rc.LiveKVEvictions)
		v[sRecurrentPruned] = float64(rc.Pruned)
	}

	v[sLiveAge] = r.liveAge
	v[sLiveFailures] = float64(r.liveFails)
}

// ratio is a/b, 0 when b is 0: the reference's rule for every ratio gauge
// (both are never negative here).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// histValue is one histogram of a reading: per-bucket counts with a final
// overflow slot, and the sum of observations.
type histValue struct {
	bounds []float64
	counts []uint64
	sum    float64
}

func (t *tally) histValues() [numHists]histValue {
	lad := t.tokens.ladder
	n := len(lad.bounds) + 1
	return [numHists]histValue{
		hQueue:            {latencyBuckets[:], t.queue[:], t.queueNs.seconds()},
		hPrefill:          {latencyBuckets[:], t.prefill[:], t.prefillNs.seconds()},
		hDecode:           {latencyBuckets[:], t.decode[:], t.decodeNs.seconds()},
		hTTFT:             {ttftBuckets[:], t.ttft[:], t.ttftNs.seconds()},
		hE2E:              {latencyBuckets[:], t.e2e[:], t.e2eNs.seconds()},
		hPromptTokens:     {lad.bounds, t.promptHist[:n], float64(t.promptSum)},
		hGenerationTokens: {lad.bounds, t.genHist[:n], float64(t.genSum)},
		hAcceptance:       {acceptanceBuckets[:], t.accept[:], t.acceptSum},
	}
}

// histCreated is histogram i's created time in OpenMetrics: the last
// restart for the two token histograms, the series' start for the rest.
func (t *tally) histCreated(i int) *timestamppb.Timestamp {
	if i == hPromptTokens || i == hGenerationTokens {
		return t.tokens.created
	}
	return t.s.since
}

// scalarMetric is one counter or gauge of a Collect. It stands in for
// prometheus.NewConstMetric, which allocates several objects per series.
type scalarMetric struct {
	desc    *prometheus.Desc
	kind    kind
	v       float64
	created *timestamppb.Timestamp // shared, read-only
	labels  []*dto.LabelPair       // shared, read-only
}

func (s *scalarMetric) Desc() *prometheus.Desc { return s.desc }

func (s *scalarMetric) Write(out *dto.Metric) error {
	out.Label = s.labels
	if s.kind == gauge {
		out.Gauge = &dto.Gauge{Value: &s.v}
	} else {
		out.Counter = &dto.Counter{Value: &s.v, CreatedTimestamp: s.created}
	}
	return nil
}

// histMetric is one histogram of a Collect, in place of
// prometheus.NewConstHistogram, whose Write allocates three objects per
// bucket; here the buckets of a histogram share one block.
type histMetric struct {
	desc    *prometheus.Desc
	bounds  []float64
	cum     []uint64 // cumulative count per finite bound
	count   uint64   // the +Inf bucket
	sum     float64
	created *timestamppb.Timestamp
	labels  []*dto.LabelPair
}

func newHistMetric(desc *prometheus.Desc, h histValue, created *timestamppb.Timestamp, labels []*dto.LabelPair) histMetric {
	n := len(h.bounds)
	hm := histMetric{desc: desc, bounds: make([]float64, n), cum: make([]uint64, n), sum: h.sum, created: created, labels: labels}
	copy(hm.bounds, h.bounds) // dto will point into these: keep them private
	hm.count = cumulate(hm.cum, h.counts)
	return hm
}

// cumulate writes the cumulative count at each finite bound into cum and
// returns the total, the +Inf bucket (counts has one more slot than cum).
func cumulate(cum, counts []uint64) uint64 {
	var total uint64
	for i := range cum {
		total += counts[i]
		cum[i] = total
	}
	return total + counts[len(cum)]
}

func (h *histMetric) Desc() *prometheus.Desc { return h.desc }

func (h *histMetric) Write(out *dto.Metric) error {
	buckets := make([]dto.Bucket, len(h.bounds))
	ptrs := make([]*dto.Bucket, len(h.bounds))
	for i := range buckets {
		buckets[i].UpperBound = &h.bounds[i]
		buckets[i].CumulativeCount = &h.cum[i]
		ptrs[i] = &buckets[i]
	}
	out.Label = h.labels
	out.Histogram = &dto.Histogram{SampleCount: &h.count, SampleSum: &h.sum, Bucket: ptrs, CreatedTimestamp: h.created}
	return nil
}
