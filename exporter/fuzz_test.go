package exporter

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
)

// checkInvariants holds for any input: every figure finite and ≥ 0, the
// acceptance rate within [0, 1], each usage ratio used / capacity (0 with no
// capacity; above 1 when the engine reports an overrun), histograms
// consistent, and the identities between series.
func checkInvariants(t *testing.T, e exposed) {
	t.Helper()
	for name, v := range e.scalars {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s = %v", name, v)
		}
	}
	s := e.scalars
	if v := s["spec_decode_draft_acceptance_rate"]; v > 1 {
		t.Errorf("spec_decode_draft_acceptance_rate = %v, above 1", v)
	}
	for _, r := range []struct{ ratio, used, capacity string }{
		{"kv_cache_usage_ratio", "kv_cache_tokens", "kv_cache_max_tokens"},
		{"kv_offload_usage_ratio", "kv_offload_bytes", "kv_offload_max_bytes"},
		{"recurrent_cache_usage_ratio", "recurrent_cache_bytes", "recurrent_cache_max_bytes"},
	} {
		want := 0.0
		if s[r.capacity] > 0 {
			want = s[r.used] / s[r.capacity]
		}
		// The offload ratio is slots over slots; bytes over bytes is the same
		// ratio when a slot has a size.
		if r.ratio == "kv_offload_usage_ratio" && s[r.capacity] == 0 {
			continue
		}
		if !near(s[r.ratio], want) {
			t.Errorf("%s = %v, want %s / %s = %v", r.ratio, s[r.ratio], r.used, r.capacity, want)
		}
	}
	for name, h := range e.hists {
		checkHistogram(t, name, h)
	}
	if s["prefix_cache_queries"] != s["prompt_tokens_total"]+s["cached_tokens_total"] {
		t.Errorf("prefix_cache_queries %v != prompt %v + cached %v", s["prefix_cache_queries"], s["prompt_tokens_total"], s["cached_tokens_total"])
	}
	if s["prefix_cache_hits"] != s["cached_tokens_total"] {
		t.Errorf("prefix_cache_hits %v != cached_tokens_total %v", s["prefix_cache_hits"], s["cached_tokens_total"])
	}
	if s["spec_decode_num_accepted_tokens_total"] > s["spec_decode_num_draft_tokens_total"] {
		t.Errorf("accepted %v > drafted %v", s["spec_decode_num_accepted_tokens_total"], s["spec_decode_num_draft_tokens_total"])
	}
	if s["spec_decode_num_decode_steps_total"] > s["tokens_predicted_total"] {
		t.Errorf("decode steps %v > generated %v", s["spec_decode_num_decode_steps_total"], s["tokens_predicted_total"])
	}
	if lat := e.hists["request_queue_time_seconds"]; lat.Count != s["requests_total"] {
		t.Errorf("queue histogram count %v != requests_total %v", lat.Count, s["requests_total"])
	}
}

// FuzzRecordGeneration feeds arbitrary generations, ladders and live state:
// the invariants hold, and both the text and the OpenMetrics the handler
// writes are byte for byte expfmt's.
func FuzzRecordGeneration(f *testing.F) {
	f.Add(1000, 800, 100, int64(time.Second), int64(2*time.Second), int64(4*time.Second), true, 30, 10, 262144, 16, 100, 50)
	f.Add(-1, -1, -1, int64(-1), int64(-1), int64(-1), false, 0, 0, 0, 0, 0, 0)
	f.Add(math.MaxInt, math.MaxInt, math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), true, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt)
	f.Add(5, 10, 0, int64(0), int64(0), int64(0), true, 0, 0, 1, -16, -5, 7)
	f.Add(203000, 0, 8000, int64(300*time.Millisecond), int64(0), int64(0), true, -3, 9, 9, 256, 10, 20)
	f.Fuzz(func(t *testing.T, p, c, g int, q, pf, d int64, drafted bool, a, r, maxSeq, page, kvPages, kvRef int) {
		m := New(Options{Engine: &fakeEngine{live: Live{PageSize: page, KVPages: kvPages, KVReferencedPages: kvRef,
			Offload:   &OffloadStats{Slots: kvRef, MaxSlots: kvPages, SlotBytes: int64(page)},
			Recurrent: &RecurrentStats{Checkpoints: kvRef, Bytes: int64(kvPages), MaxBytes: int64(page)},
		}}, LiveTimeout: patient})
		m.ConfigureTokenBuckets(maxSeq)
		gen := Generation{PromptTokens: p, CachedTokens: c, GeneratedTokens: g,
			Queue: time.Duration(q), Prefill: time.Duration(pf), Decode: time.Duration(d)}
		if drafted {
			gen.Draft = &DraftTally{Accepted: a, Rejected: r}
		}
		m.RecordGeneration(gen)
		m.RecordGeneration(gen)
		e := scrape(t, m)
		checkInvariants(t, e)
		if got, want := writeText(t, m), expfmtText(t, m); !bytes.Equal(got, want) {
			t.Errorf("WriteText differs from expfmt:\n%s", golden.Diff(string(want), string(got)))
		}
		checkOpenMetrics(t, m)
		if e.scalars["requests_total"] != 2 {
			t.Errorf("requests_total = %v, want 2", e.scalars["requests_total"])
		}
		if drafted != (e.scalars["spec_decode_requests_total"] == 2) {
			t.Errorf("spec_decode_requests_total = %v with drafted=%v", e.scalars["spec_decode_requests_total"], drafted)
		}
		if maxSeq >= 1 {
			h := e.hists["request_prompt_tokens"]
			if top := h.Buckets[len(h.Buckets)-2].UpperBound; top != float64(maxSeq) {
				t.Errorf("top token bound %v, want %v", top, float64(maxSeq))
			}
		}
	})
}

// checkOpenMetrics: the handler answers Prometheus 3 (OpenMetrics, gzip)
// as the general path does.
func checkOpenMetrics(t *testing.T, m *Metrics) {
	t.Helper()
	accept := acceptOf("Prometheus 3")
	if d := sameAnswer(serve(t, m.Handler(), "/metrics", accept, "gzip"), serve(t, m.general, "/metrics", accept, "gzip")); d != "" {
		t.Errorf("OpenMetrics differs from the general path:\n%s", d)
	}
}
