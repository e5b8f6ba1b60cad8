package exporter

import (
	"math"
	"testing"
	"time"
)

// allLiveZero lists every live series, each expected at zero on an idle
// engine with no model.
var allLiveZero = map[string]float64{
	"requests_processing": 0, "requests_deferred": 0, "kv_cache_tokens": 0, "kv_cache_max_tokens": 0, "kv_cache_usage_ratio": 0,
	"kv_offload_tokens": 0, "kv_offload_max_tokens": 0, "kv_offload_usage_ratio": 0, "kv_offload_bytes": 0, "kv_offload_max_bytes": 0,
	"kv_offload_restored_tokens_total": 0, "kv_offload_stores_total": 0, "kv_offload_deduped_stores_total": 0,
	"kv_offload_evictions_total": 0, "kv_offload_cold_allocs_total": 0, "kv_offload_read_bytes_total": 0, "kv_offload_written_bytes_total": 0,
	"recurrent_checkpoints": 0, "recurrent_cache_bytes": 0, "recurrent_cache_max_bytes": 0, "recurrent_cache_usage_ratio": 0,
	"recurrent_checkpoint_bytes": 0, "recurrent_cache_evictions_total": 0, "recurrent_cache_stranded_evictions_total": 0,
	"recurrent_cache_live_kv_evictions_total": 0, "recurrent_cache_pruned_total": 0, "recurrent_stranded_by_kv_total": 0,
	"recurrent_capped_tokens_total": 0, "live_state_age_seconds": 0, "live_state_failures_total": 0,
}

// with returns allLiveZero overlaid with the given figures.
func with(over map[string]float64) map[string]float64 { return overlay(allLiveZero, over) }

// overlay returns a copy of base with over's figures replacing its own.
func overlay(base, over map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// busyLive is a hybrid model with offloading on, every figure distinct.
var busyLive = Live{
	ActiveJobs: 3, PendingJobs: 2, PageSize: 256, KVPages: 1000, KVReferencedPages: 250, KVOnlyPages: 7, StrandedByKV: 4,
	Offload:   &OffloadStats{Slots: 100, MaxSlots: 400, SlotBytes: 1 << 20, Stores: 50, DedupedStores: 5, Restores: 20, Evictions: 3, ColdAllocs: 1},
	Recurrent: &RecurrentStats{Checkpoints: 10, Bytes: 1000, MaxBytes: 4000, Evictions: 6, StrandedEvictions: 2, LiveKVEvictions: 3, Pruned: 1},
}

// busyWant is busyLive mapped by hand.
var busyWant = with(map[string]float64{
	"requests_processing": 3, "requests_deferred": 2,
	"kv_cache_tokens": 250 * 256, "kv_cache_max_tokens": 1000 * 256, "kv_cache_usage_ratio": 0.25,
	"kv_offload_tokens": 100 * 256, "kv_offload_max_tokens": 400 * 256, "kv_offload_usage_ratio": 0.25,
	"kv_offload_bytes": 100 << 20, "kv_offload_max_bytes": 400 << 20,
	"kv_offload_restored_tokens_total": 20 * 256, "kv_offload_stores_total": 50, "kv_offload_deduped_stores_total": 5,
	"kv_offload_evictions_total": 3, "kv_offload_cold_allocs_total": 1,
	"kv_offload_read_bytes_total": 20 << 20, "kv_offload_written_bytes_total": 50 << 20,
	"recurrent_checkpoints": 10, "recurrent_cache_bytes": 1000, "recurrent_cache_max_bytes": 4000, "recurrent_cache_usage_ratio": 0.25,
	"recurrent_checkpoint_bytes": 100, "recurrent_cache_evictions_total": 6, "recurrent_cache_stranded_evictions_total": 2,
	"recurrent_cache_live_kv_evictions_total": 3, "recurrent_cache_pruned_total": 1,
	"recurrent_stranded_by_kv_total": 4, "recurrent_capped_tokens_total": 7 * 256,
})

// TestLiveMapping checks the Live → series mapping of the issue, worked out
// by hand, including the features-off cases where every series must still
// be present at zero.
func TestLiveMapping(t *testing.T) {
	tests := []struct {
		name   string
		engine Engine
		want   map[string]float64
	}{
		{"nil engine reads idle with no model", nil, allLiveZero},
		{"no model loaded", &fakeEngine{}, allLiveZero},
		{"hybrid model with offload", &fakeEngine{live: busyLive}, busyWant},
		{
			name: "pure transformer, offload off",
			engine: &fakeEngine{live: Live{
				ActiveJobs: 1, PageSize: 16, KVPages: 64, KVReferencedPages: 48,
			}},
			want: with(map[string]float64{
				"requests_processing": 1, "kv_cache_tokens": 768, "kv_cache_max_tokens": 1024, "kv_cache_usage_ratio": 0.75,
			}),
		},
		{
			name: "recurrent cache unreadable: the page-table counters still publish",
			engine: &fakeEngine{live: Live{
				PageSize: 16, KVPages: 10, KVOnlyPages: 3, StrandedByKV: 2,
			}},
			want: with(map[string]float64{
				"kv_cache_max_tokens": 160, "recurrent_capped_tokens_total": 48, "recurrent_stranded_by_kv_total": 2,
			}),
		},
		{
			name: "checkpoint size is whole bytes, 0 with no checkpoints",
			engine: &fakeEngine{live: Live{
				Recurrent: &RecurrentStats{Checkpoints: 3, Bytes: 1001, MaxBytes: 2002},
			}},
			want: with(map[string]float64{
				"recurrent_checkpoints": 3, "recurrent_cache_bytes": 1001, "recurrent_cache_max_bytes": 2002,
				"recurrent_cache_usage_ratio": 0.5, "recurrent_checkpoint_bytes": 333,
			}),
		},
		{
			name: "offload enabled but still empty",
			engine: &fakeEngine{live: Live{
				PageSize: 256, KVPages: 100,
				Offload: &OffloadStats{MaxSlots: 50, SlotBytes: 4096},
			}},
			want: with(map[string]float64{
				"kv_cache_max_tokens": 25600, "kv_offload_max_tokens": 12800, "kv_offload_max_bytes": 204800,
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{Engine: tt.engine, LiveTimeout: patient})
			e := scrape(t, m)
			checkScalars(t, e.scalars, tt.want)
		})
	}
}

// TestLiveAsReported: used amounts are published as the engine reports
// them, even above their capacity (usage ratios then read above 1, as the
// reference publishes them); only negative counts and sizes, which cannot be
// true, read 0. The scrape stays valid whatever the engine says.
func TestLiveAsReported(t *testing.T) {
	tests := []struct {
		name string
		live Live
		want map[string]float64
	}{
		{
			name: "negative counts read zero",
			live: Live{ActiveJobs: -3, PendingJobs: -1, PageSize: -16, KVPages: -10, KVReferencedPages: -2},
			want: allLiveZero,
		},
		{
			name: "more pages referenced than exist",
			live: Live{PageSize: 16, KVPages: 100, KVReferencedPages: 150},
			want: with(map[string]float64{"kv_cache_tokens": 2400, "kv_cache_max_tokens": 1600, "kv_cache_usage_ratio": 1.5}),
		},
		{
			// The reference's rule: a ratio over a zero capacity is 0.
			name: "referenced pages with no capacity",
			live: Live{PageSize: 16, KVReferencedPages: 5},
			want: with(map[string]float64{"kv_cache_tokens": 80}),
		},
		{
			name: "offload slots beyond capacity and negative sizes",
			live: Live{PageSize: 8, Offload: &OffloadStats{Slots: 500, MaxSlots: 100, SlotBytes: -5, Restores: 2}},
			want: with(map[string]float64{
				"kv_offload_tokens": 4000, "kv_offload_max_tokens": 800, "kv_offload_usage_ratio": 5,
				"kv_offload_restored_tokens_total": 16,
			}),
		},
		{
			name: "negative offload slots",
			live: Live{PageSize: 8, Offload: &OffloadStats{Slots: -1, MaxSlots: -100, SlotBytes: 10}},
			want: allLiveZero,
		},
		{
			name: "recurrent bytes over budget, negative checkpoints",
			live: Live{Recurrent: &RecurrentStats{Checkpoints: -2, Bytes: 5000, MaxBytes: 4000}},
			want: with(map[string]float64{
				"recurrent_cache_bytes": 5000, "recurrent_cache_max_bytes": 4000, "recurrent_cache_usage_ratio": 1.25,
			}),
		},
		{
			// The case: 18.9 GB held against a 16 GiB (17.2 GB) budget.
			name: "recurrent cache overrun",
			live: Live{Recurrent: &RecurrentStats{Checkpoints: 110, Bytes: 18853396480, MaxBytes: 17179869184}},
			want: with(map[string]float64{
				"recurrent_checkpoints": 110, "recurrent_cache_bytes": 18853396480, "recurrent_cache_max_bytes": 17179869184,
				"recurrent_cache_usage_ratio": 18853396480.0 / 17179869184, "recurrent_checkpoint_bytes": 171394513, // 18853396480 / 110 = 171394513.45…
			}),
		},
		{
			name: "huge figures stay finite",
			live: Live{PageSize: math.MaxInt, KVPages: math.MaxInt, KVReferencedPages: math.MaxInt, KVOnlyPages: math.MaxUint64},
			want: with(map[string]float64{
				"kv_cache_tokens": float64(math.MaxInt) * float64(math.MaxInt), "kv_cache_max_tokens": float64(math.MaxInt) * float64(math.MaxInt),
				"kv_cache_usage_ratio": 1, "recurrent_capped_tokens_total": float64(uint64(math.MaxUint64)) * float64(math.MaxInt),
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{Engine: &fakeEngine{live: tt.live}, LiveTimeout: patient})
			e := scrape(t, m)
			checkScalars(t, e.scalars, tt.want)
			for name, v := range e.scalars {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Errorf("%s = %v", name, v)
				}
			}
		})
	}
}

// scrapeWithin runs a scrape on its own goroutine and fails the test if it
// has not returned after 10 s: a scrape that waits on a hung engine would
// hang the test otherwise. (The bound is a safety net, not a measurement.)
func scrapeWithin(t *testing.T, m *Metrics) exposed {
	t.Helper()
	done := make(chan exposed, 1)
	go func() { done <- scrape(t, m) }()
	select {
	case e := <-done:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("the scrape is waiting on the engine")
		return exposed{}
	}
}

// TestLiveHangs: a Live that does not return is given up on at the
// deadline; the last good reading is served with its age, no second call is
// stacked behind the hung one, and the next good reading is fresh again.
func TestLiveHangs(t *testing.T) {
	eng := &fakeEngine{live: Live{ActiveJobs: 5, PageSize: 16, KVPages: 10, KVReferencedPages: 5}}
	m := New(Options{Engine: eng, LiveTimeout: 300 * time.Millisecond})
	clock := withClock(m)

	e := scrapeWithin(t, m)
	checkScalars(t, e.scalars, map[string]float64{"requests_processing": 5, "kv_cache_usage_ratio": 0.5, "live_state_age_seconds": 0, "live_state_failures_total": 0})

	gate := make(chan struct{})
	eng.set(func(e *fakeEngine) { e.gate = gate })
	clock.advance(7 * time.Second)
	m.RecordGeneration(Generation{PromptTokens: 10}) // generation is not held up either
	e = scrapeWithin(t, m)
	checkScalars(t, e.scalars, map[string]float64{
		"requests_processing": 5, "kv_cache_usage_ratio": 0.5, "live_state_age_seconds": 7, "live_state_failures_total": 1,
		"prompt_tokens_total": 10,
	})

	clock.advance(1500 * time.Millisecond)
	e = scrapeWithin(t, m)
	checkScalars(t, e.scalars, map[string]float64{"requests_processing": 5, "live_state_age_seconds": 8.5, "live_state_failures_total": 2})
	eng.mu.Lock()
	calls := eng.calls
	eng.mu.Unlock()
	if calls != 2 {
		t.Errorf("Live called %d times, want 2: a scrape must not start a call while one is outstanding", calls)
	}

	// The hung call returns; its reading becomes the last good one, and the
	// next scrape reads fresh.
	m.live.mu.Lock()
	hung := m.live.pending
	m.live.mu.Unlock()
	eng.set(func(e *fakeEngine) { e.live = Live{ActiveJobs: 9}; e.gate = nil })
	close(gate)
	<-hung.done
	e = scrapeWithin(t, m)
	checkScalars(t, e.scalars, map[string]float64{"requests_processing": 9, "kv_cache_usage_ratio": 0, "live_state_age_seconds": 0, "live_state_failures_total": 2})
}

// TestLivePanics: a panicking Live is a stale reading, not a failed scrape.
func TestLivePanics(t *testing.T) {
	eng := &fakeEngine{panic: true}
	m := New(Options{Engine: eng, LiveTimeout: patient})
	clock := withClock(m)
	clock.advance(3 * time.Second)

	// No good reading yet: the idle engine is served, as old as the exporter.
	e := scrapeWithin(t, m)
	checkScalars(t, e.scalars, with(map[string]float64{"live_state_age_seconds": 3, "live_state_failures_total": 1}))

	eng.set(func(e *fakeEngine) { e.panic = false; e.live = busyLive })
	e = scrapeWithin(t, m)
	checkScalars(t, e.scalars, overlay(busyWant, map[string]float64{"live_state_age_seconds": 0, "live_state_failures_total": 1}))

	eng.set(func(e *fakeEngine) { e.panic = true })
	clock.advance(250 * time.Millisecond)
	e = scrapeWithin(t, m)
	checkScalars(t, e.scalars, overlay(busyWant, map[string]float64{"live_state_age_seconds": 0.25, "live_state_failures_total": 2}))
}

// nilEngine is an Engine whose Live dereferences a nil receiver.
type nilEngine struct{ live *Live }

func (e *nilEngine) Live() Live { return *e.live }

// TestTypedNilEngine: an interface holding a nil pointer panics inside Live;
// the scrape still succeeds.
func TestTypedNilEngine(t *testing.T) {
	var e *nilEngine
	m := New(Options{Engine: e, LiveTimeout: patient})
	got := scrapeWithin(t, m)
	if got.scalars["live_state_failures_total"] != 1 {
		t.Errorf("live_state_failures_total = %v, want 1", got.scalars["live_state_failures_total"])
	}
}

// TestLiveCopied: the exporter keeps its own copy of a reading, so an
// engine that reuses its structs cannot change what a later stale scrape
// serves.
func TestLiveCopied(t *testing.T) {
	off := &OffloadStats{Slots: 1, MaxSlots: 2}
	eng := &fakeEngine{live: Live{PageSize: 1, Offload: off}}
	m := New(Options{Engine: eng, LiveTimeout: 300 * time.Millisecond})
	scrapeWithin(t, m)
	gate := make(chan struct{})
	defer close(gate)
	eng.set(func(e *fakeEngine) { e.gate = gate })
	off.Slots = 2
	e := scrapeWithin(t, m)
	checkScalars(t, e.scalars, map[string]float64{"kv_offload_tokens": 1, "live_state_failures_total": 1})
}
