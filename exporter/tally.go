package exporter

import (
	"math"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// shard is one slice of the running totals. Recorders pick a shard at
// random and add to it atomically; a scrape loads every shard and adds them
// up, without stopping anyone. Histogram arrays count per bucket (not
// cumulatively) with a final +Inf overflow slot. Times are whole
// nanoseconds, so their sums are exact and do not depend on order.
//
// Each histogram counts the generations that reported its figure, so the
// request count is kept apart.
type shard struct {
	requests                     atomic.Uint64
	promptAll                    atomic.Uint64 // Σ P of generations that reported P
	prefilled, cached, generated atomic.Uint64 // P − C and C: only where both are known
	queueNs, prefillNs, decodeNs wideCounter
	ttftNs, e2eNs                wideCounter
	peakPrompt, peakGen          atomic.Uint64
	// The populations no histogram counts, and the tokens and time of
	// generations that reported both generated tokens and decode time.
	splitN, promptN, genN, decodedN, draftN atomic.Uint64
	decodedGen                              atomic.Uint64
	decodedNs                               wideCounter

	specRequests, specAccepted, specRejected, specSteps atomic.Uint64

	queue, prefill, decode, e2e [len(latencyBuckets) + 1]atomic.Uint64
	ttft                        [len(ttftBuckets) + 1]atomic.Uint64
	accept                      [len(acceptanceBuckets) + 1]atomic.Uint64

	_ [64]byte // keeps neighbouring shards off each other's cache lines
}

// tokenHists are the two token histograms on one ladder, sharded like the
// rest. It is replaced whole when the ladder changes.
type tokenHists struct {
	ladder  *ladder
	since   time.Time              // when these histograms started
	created *timestamppb.Timestamp // since, for OpenMetrics _created; read-only
	// createdText is created as OpenMetrics writes it.
	createdText []byte
	shards      []tokenShard
}

type tokenShard struct {
	prompt, gen       []atomic.Uint64
	promptSum, genSum atomic.Uint64
	_                 [64]byte
}

func newTokenHists(l *ladder, shards int, since time.Time) *tokenHists {
	created := timestamppb.New(since)
	th := &tokenHists{ladder: l, since: since, created: created, createdText: createdText(created), shards: make([]tokenShard, shards)}
	for i := range th.shards {
		th.shards[i].prompt = make([]atomic.Uint64, len(l.ints)+1)
		th.shards[i].gen = make([]atomic.Uint64, len(l.ints)+1)
	}
	return th
}

// raise lifts a peak to v; it never lowers it.
func raise(peak *atomic.Uint64, v uint64) {
	for {
		cur := peak.Load()
		if v <= cur || peak.CompareAndSwap(cur, v) {
			return
		}
	}
}

// addFloat adds v to a float64 stored as bits.
func addFloat(sum *atomic.Uint64, v float64) {
	for {
		old := sum.Load()
		if sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// wideCounter is a 128-bit sum of nanoseconds: a busy server sums far more
// request time than wall time, and 2^64 ns is only 584 years. The carry is
// a second atomic add, so a reader racing the one add in 2^64 ns that
// carries could see the sum short by 2^64 ns for that instant.
type wideCounter struct{ hi, lo atomic.Uint64 }

func (w *wideCounter) add(v uint64) {
	if w.lo.Add(v) < v {
		w.hi.Add(1)
	}
}

func (w *wideCounter) load() wide {
	for {
		hi := w.hi.Load()
		lo := w.lo.Load()
		if w.hi.Load() == hi {
			return wide{hi, lo}
		}
	}
}

// wide is a loaded 128-bit sum.
type wide struct{ hi, lo uint64 }

func (w *wide) addWide(v wide) {
	lo := w.lo + v.lo
	carry := uint64(0)
	if lo < w.lo {
		carry = 1
	}
	w.lo, w.hi = lo, w.hi+v.hi+carry
}

// seconds converts the sum to seconds, rounding once for sums below 2^53 ns
// (104 days).
func (w wide) seconds() float64 {
	return (float64(w.hi)*0x1p64 + float64(w.lo)) / 1e9
}

// tally is one reading of a series' shards added up: plain numbers.
type tally struct {
	s       *series  // the series read
	unknown Quantity // its figures some generation did not report

	requests, promptAll, prefilled, cached, generated uint64
	queueNs, prefillNs, decodeNs, ttftNs, e2eNs       wide
	peakPrompt, peakGen                               uint64
	pop                                               [popDraft + 1]uint64 // generations in each population
	decodedGen                                        uint64
	decodedNs                                         wide

	specRequests, specAccepted, specRejected, specSteps uint64

	queue, prefill, decode, e2e [len(latencyBuckets) + 1]uint64
	ttft                        [len(ttftBuckets) + 1]uint64
	accept                      [len(acceptanceBuckets) + 1]uint64
	acceptSum                   float64

	tokens              *tokenHists // the ladder the two token histograms were read on
	promptHist, genHist [maxLadder + 1]uint64
	promptSum, genSum   uint64
}

// readTally loads every shard of a series and adds them up into t, which
// must be zero. Writers keep going meanwhile, so series may differ by the
// generations recorded during the read; each histogram's count is the sum
// of the buckets read, so +Inf always equals _count. The unknown figures
// are read first: a generation that adds one during the read can only
// leave a series out that it was already in, never publish one it was
// not.
func (se *series) readTally(t *tally) {
	t.s = se
	t.unknown = Quantity(se.unknown.Load())
	for i := range se.shards {
		s := &se.shards[i]
		t.requests += s.requests.Load()
		t.promptAll += s.promptAll.Load()
		t.prefilled += s.prefilled.Load()
		t.cached += s.cached.Load()
		t.generated += s.generated.Load()
		t.queueNs.addWide(s.queueNs.load())
		t.prefillNs.addWide(s.prefillNs.load())
		t.decodeNs.addWide(s.decodeNs.load())
		t.ttftNs.addWide(s.ttftNs.load())
		t.e2eNs.addWide(s.e2eNs.load())
		t.peakPrompt = max(t.peakPrompt, s.peakPrompt.Load())
		t.peakGen = max(t.peakGen, s.peakGen.Load())
		t.pop[popSplit] += s.splitN.Load()
		t.pop[popPrompt] += s.promptN.Load()
		t.pop[popGenerated] += s.genN.Load()
		t.pop[popDecoded] += s.decodedN.Load()
		t.pop[popDraft] += s.draftN.Load()
		t.decodedGen += s.decodedGen.Load()
		t.decodedNs.addWide(s.decodedNs.load())
		t.specRequests += s.specRequests.Load()
		t.specAccepted += s.specAccepted.Load()
		t.specRejected += s.specRejected.Load()
		t.specSteps += s.specSteps.Load()
		loadInto(t.queue[:], s.queue[:])
		loadInto(t.prefill[:], s.prefill[:])
		loadInto(t.decode[:], s.decode[:])
		loadInto(t.e2e[:], s.e2e[:])
		loadInto(t.ttft[:], s.ttft[:])
		loadInto(t.accept[:], s.accept[:])
	}
	t.acceptSum = math.Float64frombits(se.acceptSum.Load())
	t.pop[popAll] = t.requests
	t.pop[popPrefill] = total(t.prefill[:])
	t.pop[popDecode] = total(t.decode[:])
	th := se.tokens.Load()
	t.tokens = th
	for i := range th.shards {
		ts := &th.shards[i]
		loadInto(t.promptHist[:], ts.prompt)
		loadInto(t.genHist[:], ts.gen)
		t.promptSum += ts.promptSum.Load()
		t.genSum += ts.genSum.Load()
	}
}

func loadInto(dst []uint64, src []atomic.Uint64) {
	for i := range src {
		dst[i] += src[i].Load()
	}
}
