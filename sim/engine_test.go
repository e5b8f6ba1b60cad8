package sim

import (
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// The tests in this file drive the engine with hand-made requests and check
// figures worked out by hand from the model's rules.

type collect struct{ gens []exporter.Generation }

func (c *collect) RecordGeneration(g exporter.Generation) { c.gens = append(c.gens, g) }

// bench is a small engine with round numbers: prefill 1000 tok/s in chunks of
// 512 with no overhead, decode steps of 10 ms whatever the batch, and a
// workload whose own requests never arrive (the tests submit them).
func bench(t *testing.T, mod func(*Config)) (*Sim, *collect) {
	t.Helper()
	c := Config{
		MaxSeqLen:   4096,
		MaxBatch:    4,
		PageSize:    256,
		KVPages:     64,
		ChunkSize:   512,
		PrefillRate: 1000,
		DecodeBase:  10 * time.Millisecond,
		Workload: Workload{
			Rate:         1e-12,
			UserTokens:   Span{1, 1},
			OutputTokens: Span{1, 1},
		},
	}
	if mod != nil {
		mod(&c)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	rec := &collect{}
	s.SetRecorder(rec)
	return s, rec
}

// ids hands out segment identities for a test.
type ids uint64

func (i *ids) seg(n int) seg { *i++; return seg{id: uint64(*i), n: n} }

// submit queues a request for the prompt segs and an answer of output
// tokens, arriving now; it returns the full sequence (prompt and answer).
func submit(s *Sim, id *ids, output int, prompt ...seg) []seg {
	p := 0
	for _, sg := range prompt {
		p += sg.n
	}
	segs := append(append([]seg(nil), prompt...), id.seg(output))
	s.mu.Lock()
	s.queue = append(s.queue, &request{segs: segs, prompt: p, output: output, arrival: s.now, user: -1})
	s.mu.Unlock()
	return segs
}

func sec(f float64) time.Duration { return seconds(f) }

func TestPhaseTimes(t *testing.T) {
	type req struct{ prompt, output int }
	tests := []struct {
		name     string
		maxBatch int
		reqs     []req
		want     []exporter.Generation // in finishing order
	}{
		{
			// Chunks of 512 and 488 tokens end at 1.000 s with the first
			// token; four decode steps of 10 ms bring the other four.
			name: "one request", maxBatch: 4, reqs: []req{{1000, 5}},
			want: []exporter.Generation{{PromptTokens: 1000, GeneratedTokens: 5, Prefill: sec(1), Decode: sec(0.04)}},
		},
		{
			// A: chunk to 0.512, chunk to 1.000 (first token), decode to
			// 1.010. B: chunk to 1.510 (first token). Decode of both to
			// 1.520 finishes A; one more to 1.530 finishes B. Phase times
			// sum to 3.05 s over 1.53 s of wall clock.
			name: "interleaved", maxBatch: 4, reqs: []req{{1000, 3}, {500, 3}},
			want: []exporter.Generation{
				{PromptTokens: 1000, GeneratedTokens: 3, Prefill: sec(1), Decode: sec(0.52)},
				{PromptTokens: 500, GeneratedTokens: 3, Prefill: sec(1.51), Decode: sec(0.02)},
			},
		},
		{
			// With room for one job B waits for A to finish at 1.020.
			name: "queued", maxBatch: 1, reqs: []req{{1000, 3}, {500, 3}},
			want: []exporter.Generation{
				{PromptTokens: 1000, GeneratedTokens: 3, Prefill: sec(1), Decode: sec(0.02)},
				{PromptTokens: 500, GeneratedTokens: 3, Queue: sec(1.02), Prefill: sec(0.5), Decode: sec(0.02)},
			},
		},
		{
			// The first token comes from prefill: nothing left to decode.
			name: "single token", maxBatch: 4, reqs: []req{{300, 1}},
			want: []exporter.Generation{{PromptTokens: 300, GeneratedTokens: 1, Prefill: sec(0.3)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := bench(t, func(c *Config) { c.MaxBatch = tc.maxBatch })
			var id ids
			for _, r := range tc.reqs {
				submit(s, &id, r.output, id.seg(r.prompt))
			}
			s.RunUntil(time.Minute)
			if len(rec.gens) != len(tc.want) {
				t.Fatalf("recorded %d generations, want %d", len(rec.gens), len(tc.want))
			}
			for i, w := range tc.want {
				if rec.gens[i] != w {
					t.Errorf("generation %d = %+v, want %+v", i, rec.gens[i], w)
				}
			}
		})
	}
}

func TestPrefixReuse(t *testing.T) {
	sys := seg{id: 1 << 50, n: 1000}
	tests := []struct {
		name string
		// first and second build two requests run one after the other; the
		// second may extend the first's full sequence (prompt and answer).
		first      func(id *ids) ([]seg, int)
		second     func(id *ids, prev []seg) ([]seg, int)
		wantCached int
	}{
		{
			// 1000 shared tokens fill 3 pages; page 4 mixes in fresh tokens.
			name:       "shared system prompt",
			first:      func(id *ids) ([]seg, int) { return []seg{sys, id.seg(100)}, 10 },
			second:     func(id *ids, _ []seg) ([]seg, int) { return []seg{sys, id.seg(100)}, 10 },
			wantCached: 768,
		},
		{
			// An identical 2-page prompt: the last token is computed anyway
			// for its logits, so only the first page is reused.
			name:       "identical page-aligned prompt",
			first:      func(id *ids) ([]seg, int) { return []seg{{id: 7 << 50, n: 512}}, 5 },
			second:     func(id *ids, _ []seg) ([]seg, int) { return []seg{{id: 7 << 50, n: 512}}, 5 },
			wantCached: 256,
		},
		{
			// Pages are chained: the same second page behind a different
			// first one is a different page.
			name: "same tokens behind another prefix",
			first: func(id *ids) ([]seg, int) {
				return []seg{{id: 8 << 50, n: 256}, {id: 9 << 50, n: 512}}, 5
			},
			second: func(id *ids, _ []seg) ([]seg, int) {
				return []seg{id.seg(256), {id: 9 << 50, n: 512}}, 5
			},
			wantCached: 0,
		},
		{
			// The next turn reuses the answer's pages too: 1100 + 300 =
			// 1400 tokens hold 5 full pages.
			name:  "conversation turn",
			first: func(id *ids) ([]seg, int) { return []seg{sys, id.seg(100)}, 300 },
			second: func(id *ids, prev []seg) ([]seg, int) {
				return append(append([]seg(nil), prev...), id.seg(50)), 10
			},
			wantCached: 1280,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := bench(t, nil)
			var id ids
			p, g := tc.first(&id)
			full := submit(s, &id, g, p...)
			s.RunUntil(time.Minute)
			p, g = tc.second(&id, full)
			submit(s, &id, g, p...)
			s.RunUntil(2 * time.Minute)
			if len(rec.gens) != 2 {
				t.Fatalf("recorded %d generations, want 2", len(rec.gens))
			}
			if c := rec.gens[0].CachedTokens; c != 0 {
				t.Errorf("first request cached %d tokens from an empty cache", c)
			}
			if c := rec.gens[1].CachedTokens; c != tc.wantCached {
				t.Errorf("second request cached %d tokens, want %d", c, tc.wantCached)
			}
			if l := s.Live(); l.KVReferencedPages != 0 {
				t.Errorf("idle engine references %d pages", l.KVReferencedPages)
			}
		})
	}
}

// Three distinct 768-token prompts with one-token answers in an 8-page
// cache: each needs 4 pages and leaves 3 cached. The third evicts the first
// one's last two pages (released tail first), so the first prompt run again
// finds only its first page.
func TestEvictionLRU(t *testing.T) {
	s, rec := bench(t, func(c *Config) { c.KVPages = 8; c.MaxSeqLen = 1024 })
	var id ids
	a, b, c := id.seg(768), id.seg(768), id.seg(768)
	for i, sg := range []seg{a, b, c, a} {
		submit(s, &id, 1, sg)
		s.RunUntil(time.Duration(i+1) * time.Minute)
	}
	got := []int{}
	for _, g := range rec.gens {
		got = append(got, g.CachedTokens)
	}
	if want := []int{0, 0, 0, 256}; !equal(got, want) {
		t.Errorf("cached tokens per request = %v, want %v", got, want)
	}
	tt := s.Totals()
	// A's tail pair for C; A's re-run needs 3 fresh pages: the free one
	// C's partial page left, then B's last two.
	if tt.KVEvictions != 4 {
		t.Errorf("KV evictions = %d, want 4", tt.KVEvictions)
	}
	if tt.PeakReferencedPages != 4 {
		t.Errorf("peak referenced pages = %d, want 4", tt.PeakReferencedPages)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDrafter(t *testing.T) {
	tests := []struct {
		name                            string
		alpha                           float64
		output                          int
		wantSteps, wantDrafted, wantAcc int
	}{
		// After the prefill token 10 remain: 1+4, then 1+4 (the drafter
		// never proposes past the end).
		{"all accepted", 1, 11, 2, 8, 8},
		// Remaining 4,3,2,1: proposals 3,2,1,0, none accepted.
		{"none accepted", 0, 5, 4, 6, 0},
		// No decode step at all: still a drafted request.
		{"prefill only", 0.5, 1, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := bench(t, func(c *Config) { c.Draft = &DraftConfig{K: 4, Alpha: tc.alpha} })
			var id ids
			submit(s, &id, tc.output, id.seg(100))
			s.RunUntil(time.Minute)
			if len(rec.gens) != 1 || rec.gens[0].Draft == nil {
				t.Fatalf("generations = %+v, want one with a draft tally", rec.gens)
			}
			d := rec.gens[0].Draft
			tt := s.Totals()
			if d.Accepted != tc.wantAcc || d.Accepted+d.Rejected != tc.wantDrafted || tt.JobDecodeSteps != int64(tc.wantSteps) {
				t.Errorf("accepted %d, drafted %d, steps %d; want %d, %d, %d",
					d.Accepted, d.Accepted+d.Rejected, tt.JobDecodeSteps, tc.wantAcc, tc.wantDrafted, tc.wantSteps)
			}
			// What the exporter will count as steps, G − a, is the steps
			// taken plus the prefill token.
			if g := rec.gens[0].GeneratedTokens; g-d.Accepted != tc.wantSteps+1 {
				t.Errorf("G − a = %d, want steps + 1 = %d", g-d.Accepted, tc.wantSteps+1)
			}
		})
	}
}

// The eviction test again with a 4-slot RAM cache whose slots are never
// pinned ahead (every first use is cold) and 1 ms transfers: A's two evicted
// pages are stored; A's re-run restores page 1 from RAM (cached 512), pays
// the restore and two more cold stores (B's tail) before its one chunk.
func TestOffloadRestore(t *testing.T) {
	s, rec := bench(t, func(c *Config) {
		c.KVPages = 8
		c.MaxSeqLen = 1024
		c.Offload = &OffloadConfig{MaxSlots: 4, SlotBytes: 1000, PinRate: 0, PinBandwidth: 1e6, Bandwidth: 1e6}
	})
	var id ids
	a, b, c := id.seg(768), id.seg(768), id.seg(768)
	for i, sg := range []seg{a, b, c, a} {
		submit(s, &id, 1, sg)
		s.RunUntil(time.Duration(i+1) * time.Minute)
	}
	if g := rec.gens[3]; g.CachedTokens != 512 {
		t.Errorf("re-run cached %d tokens, want 512 (page 0 in VRAM, page 1 restored)", g.CachedTokens)
	}
	// One 256-token chunk plus 1 ms restore and 2 × (1 ms copy + 1 ms pin).
	if g := rec.gens[3]; g.Prefill != sec(0.261) {
		t.Errorf("re-run prefill = %v, want 261ms", g.Prefill)
	}
	want := exporter.OffloadStats{Slots: 4, MaxSlots: 4, SlotBytes: 1000, Stores: 4, Restores: 1, ColdAllocs: 4}
	if got := *s.Live().Offload; got != want {
		t.Errorf("offload = %+v, want %+v", got, want)
	}
}

func TestRAMCache(t *testing.T) {
	var dropped []uint64
	r := newRAM(OffloadConfig{MaxSlots: 3, SlotBytes: 100, PinRate: 2, PinBandwidth: 100, Bandwidth: 1000}, func(h uint64) { dropped = append(dropped, h) })
	steps := []struct {
		hash     uint64
		at       float64
		wantCost float64
	}{
		{1, 0, 0.1 + 1}, // slot 0 before any pinning: cold
		{2, 1, 0.1},     // slot 1, 2 pinned by t=1
		{3, 1, 0.1 + 1}, // slot 2 not yet
		{1, 2, 0},       // held: deduplicated (and freshened)
		{4, 9, 0.1},     // full: evicts 2, the least recent
	}
	for i, st := range steps {
		if c := r.store(st.hash, st.at); c != st.wantCost {
			t.Errorf("store %d (hash %d) cost %v, want %v", i, st.hash, c, st.wantCost)
		}
	}
	if r.stores != 4 || r.deduped != 1 || r.evictions != 1 || r.cold != 2 {
		t.Errorf("stores %d deduped %d evictions %d cold %d; want 4 1 1 2", r.stores, r.deduped, r.evictions, r.cold)
	}
	if len(dropped) != 1 || dropped[0] != 2 || r.has(2) || !r.has(1) {
		t.Errorf("dropped %v; want [2] with 1 still held", dropped)
	}
}

func TestCheckpointCache(t *testing.T) {
	present := map[uint64]bool{}
	isPresent := func(h uint64) bool { return present[h] }
	ck := newCkpt(RecurrentConfig{CheckpointBytes: 10, MaxBytes: 25}) // room for 2
	present[1], present[2], present[3] = true, true, true
	ck.take(1, isPresent)
	ck.take(2, isPresent)
	ck.take(1, isPresent) // refresh: 2 is now the least recent
	ck.take(3, isPresent) // evicts 2 while its page is cached: live
	present[1] = false
	ck.anchorLost(1)      // stranded by the KV cache
	ck.anchorLost(1)      // counted once
	ck.take(4, isPresent) // evicts 1, already stranded: free
	present[4] = false
	ck.anchorLost(4)                    // the second stranding
	ck.prune()                          // reclaims 4
	want := [6]uint64{4, 2, 1, 1, 1, 2} // taken, evictions, stranded, live, pruned, stranded by KV
	got := [6]uint64{ck.taken, ck.evictions, ck.strandedEv, ck.liveKV, ck.pruned, ck.strandedByKV}
	if got != want {
		t.Errorf("taken, evictions, stranded, live, pruned, by KV = %v, want %v", got, want)
	}
	if ck.lru.n != 1 || !ck.has(3) || ck.bytes != 10 {
		t.Errorf("held %d (has 3: %v), %d bytes; want only 3, 10 bytes", ck.lru.n, ck.has(3), ck.bytes)
	}
}

// A hybrid with room for one checkpoint, traced by hand:
//
//	A  = sys(1000) + a(100), answer 300: checkpoints at pages 4 and 5 (the
//	     second evicts the first, whose page is cached: live).
//	A2 = A's 1400 tokens + 50: 5 pages reusable, checkpoint at 5: cached 1280.
//	B  = sys + b(100), answer 300: sys's 3 pages are cached but no checkpoint
//	     covers them: all 3 re-prefilled (KV-only); its two checkpoints
//	     evict A's and each other (live, live).
//	D  = 2000 fresh tokens, 1 answer token, in a 12-page cache: evicts A's
//	     pages 4, 3 and B's page 4, stranding B's checkpoint; its own
//	     checkpoint then evicts that stranded one (free).
func TestRecurrentCap(t *testing.T) {
	s, rec := bench(t, func(c *Config) {
		c.KVPages = 12
		c.MaxSeqLen = 2048
		c.Recurrent = &RecurrentConfig{CheckpointBytes: 100, MaxBytes: 100}
	})
	var id ids
	sys := id.seg(1000)
	a := submit(s, &id, 300, sys, id.seg(100))
	s.RunUntil(time.Minute)
	submit(s, &id, 10, append(a, id.seg(50))...)
	s.RunUntil(2 * time.Minute)
	submit(s, &id, 300, sys, id.seg(100))
	s.RunUntil(3 * time.Minute)
	mid := s.Totals()
	submit(s, &id, 1, id.seg(2000))
	s.RunUntil(4 * time.Minute)

	cached := []int{}
	for _, g := range rec.gens {
		cached = append(cached, g.CachedTokens)
	}
	if want := []int{0, 1280, 0, 0}; !equal(cached, want) {
		t.Errorf("cached tokens = %v, want %v", cached, want)
	}
	if mid.KVOnlyPages != 3 || mid.Recurrent.LiveKVEvictions != 3 || mid.Recurrent.Evictions != 3 {
		t.Errorf("after B: KV-only %d, live %d, evictions %d; want 3, 3, 3", mid.KVOnlyPages, mid.Recurrent.LiveKVEvictions, mid.Recurrent.Evictions)
	}
	tt := s.Totals()
	want := exporter.RecurrentStats{Checkpoints: 1, Bytes: 100, MaxBytes: 100, Evictions: 4, StrandedEvictions: 1, LiveKVEvictions: 3}
	if tt.Recurrent != want || tt.StrandedByKV != 1 {
		t.Errorf("recurrent = %+v, stranded by KV %d; want %+v, 1", tt.Recurrent, tt.StrandedByKV, want)
	}
}

// Pruning happens when the engine goes idle, for checkpoints whose anchor
// is gone: here a 1-page prompt's checkpoint loses its page to a request
// too big to leave it, whose own prompt is too short to checkpoint.
func TestRecurrentPrune(t *testing.T) {
	s, _ := bench(t, func(c *Config) {
		c.KVPages = 5
		c.MaxSeqLen = 1280
		c.Recurrent = &RecurrentConfig{CheckpointBytes: 100, MaxBytes: 300}
	})
	var id ids
	submit(s, &id, 1, id.seg(300)) // checkpoint at page 1
	s.RunUntil(time.Minute)
	submit(s, &id, 1080, id.seg(200)) // 5 pages: evicts page 1; checkpoint at page 5 at the end
	s.RunUntil(2 * time.Minute)
	tt := s.Totals()
	if tt.StrandedByKV != 1 || tt.Recurrent.Pruned != 1 || tt.Recurrent.Checkpoints != 1 || tt.Recurrent.Evictions != 0 {
		t.Errorf("stranded by KV %d, pruned %d, held %d, evictions %d; want 1, 1, 1, 0",
			tt.StrandedByKV, tt.Recurrent.Pruned, tt.Recurrent.Checkpoints, tt.Recurrent.Evictions)
	}
}

// Live reports the queue and the batch as they stand between steps.
func TestLive(t *testing.T) {
	s, _ := bench(t, func(c *Config) { c.MaxBatch = 1 })
	var id ids
	submit(s, &id, 3, id.seg(1000))
	submit(s, &id, 3, id.seg(1000))
	s.RunUntil(sec(0.6)) // inside A's prefill
	l := s.Live()
	if l.ActiveJobs != 1 || l.PendingJobs != 1 || l.KVReferencedPages != 4 || l.KVPages != 64 || l.PageSize != 256 {
		t.Errorf("live = %+v; want 1 active, 1 pending, 4 of 64 pages referenced", l)
	}
	if l.Offload != nil || l.Recurrent != nil {
		t.Errorf("live reports features that are off: %+v", l)
	}
	if got := s.Now(); !got.Equal(DefaultEpoch.Add(sec(0.6))) {
		t.Errorf("Now = %v, want epoch + 600ms", got)
	}
}
