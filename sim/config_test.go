package sim

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(c *Config)
		want string // substring of the error; "" for valid
	}{
		{"scenario as is", func(c *Config) {}, ""},
		{"no batch", func(c *Config) { c.MaxBatch = 0 }, "MaxBatch must be a positive number"},
		{"NaN prefill rate", func(c *Config) { c.PrefillRate = nan() }, "PrefillRate must be a positive number"},
		{"negative step", func(c *Config) { c.DecodeBase = -time.Millisecond }, "must not be negative"},
		{"free decode", func(c *Config) { c.DecodeBase, c.DecodePerJob = 0, 0 }, "decode step must take time"},
		{"KV smaller than a request", func(c *Config) { c.KVPages = 100 }, "cannot hold one request"},
		{"both loops", func(c *Config) { c.Workload.Rate = 1 }, "both Users"},
		{"no loop", func(c *Config) { c.Workload.Users = 0 }, "needs Users"},
		{"turns below one", func(c *Config) { c.Workload.Turns = 0.5 }, "Turns must be at least 1"},
		{"documents in a closed loop", func(c *Config) { c.Workload.Documents, c.Workload.DocumentTokens = 3, 10 }, "open-loop"},
		{"empty span", func(c *Config) { c.Workload.OutputTokens = Span{5, 4} }, "1 ≤ Min ≤ Max"},
		{"request longer than context", func(c *Config) { c.Workload.SystemTokens = 32000 }, "exceeds MaxSeqLen"},
		{"offload without slots", func(c *Config) { c.Offload = &OffloadConfig{SlotBytes: 1, PinBandwidth: 1, Bandwidth: 1} }, "MaxSlots"},
		{"budget below one checkpoint", func(c *Config) { c.Recurrent = &RecurrentConfig{CheckpointBytes: 10, MaxBytes: 5} }, "MaxBytes ≥ CheckpointBytes"},
		{"alpha above one", func(c *Config) { c.Draft = &DraftConfig{K: 4, Alpha: 1.5} }, "Alpha"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Scenario("chat", 1)
			if err != nil {
				t.Fatal(err)
			}
			tc.mod(&c)
			_, err = New(c)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

// Every scenario is a valid configuration.
func TestScenariosValid(t *testing.T) {
	for _, name := range Scenarios() {
		c, err := Scenario(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Extreme draws (a near-zero rate) saturate instead of overflowing the clock.
func TestSecondsSaturates(t *testing.T) {
	for _, s := range []float64{1e300, nan(), 1e12} {
		if d := seconds(s); d != maxDraw {
			t.Errorf("seconds(%v) = %v, want %v", s, d, maxDraw)
		}
	}
	if d := seconds(1.5); d != 1500*time.Millisecond {
		t.Errorf("seconds(1.5) = %v", d)
	}
}

// Any configuration is either rejected by New or runs without panicking,
// and what it records stays consistent with its own totals.
func FuzzNew(f *testing.F) {
	f.Add(16, 256, 1024, 2048, 8000.0, 18, 1, 32, 0.0, 1200, 20, 1500, 20, 1200, 0, 0.0, 0, 0)
	f.Add(4, 16, 64, 32, 100.0, 0, 3, 0, 5.0, 10, 1, 50, 1, 40, 3, 0.5, 8, 2)
	f.Add(1, 1, 1, 1, 1.0, 1, 0, 1, 0.0, 0, 1, 1, 1, 1, 1, 1.0, 1, 1)
	f.Fuzz(func(t *testing.T, batch, pageSize, kvPages, chunk int, prefillRate float64, decodeMs, perJobMs, users int,
		rate float64, sys, umin, umax, omin, omax, k int, alpha float64, slots, ckpts int) {
		c := Config{
			Seed: 1, MaxSeqLen: 4096, MaxBatch: batch, PageSize: pageSize, KVPages: kvPages, ChunkSize: chunk,
			PrefillRate: prefillRate, DecodeBase: time.Duration(decodeMs) * time.Millisecond,
			DecodePerJob: time.Duration(perJobMs) * time.Millisecond,
			Workload: Workload{
				Users: users, ThinkTime: time.Second, Turns: 3, Rate: rate, SystemTokens: sys,
				UserTokens: Span{umin, umax}, OutputTokens: Span{omin, omax},
			},
		}
		if k != 0 {
			c.Draft = &DraftConfig{K: k, Alpha: alpha}
		}
		if slots != 0 {
			c.Offload = &OffloadConfig{MaxSlots: slots, SlotBytes: 1 << 20, PinRate: 1, PinBandwidth: 1e9, Bandwidth: 1e10}
		}
		if ckpts != 0 {
			c.Recurrent = &RecurrentConfig{CheckpointBytes: 100, MaxBytes: int64(ckpts) * 100}
		}
		// Keep a fuzzed run small: big but valid engines are the benchmarks'
		// business, not the fuzzer's.
		if c.KVPages > 1<<14 || c.MaxBatch > 256 || c.Workload.Users > 256 || c.Workload.Rate > 50 || c.PrefillRate < 1 {
			return
		}
		s, err := New(c)
		if err != nil {
			return
		}
		rec := &collect{}
		s.SetRecorder(rec)
		s.RunUntil(20 * time.Second)
		tt := s.Totals()
		if tt.Requests != int64(len(rec.gens)) || tt.CachedTokens > tt.PromptTokens || tt.Busy > 20*time.Second {
			t.Errorf("inconsistent totals %+v after %d generations", tt, len(rec.gens))
		}
		for _, g := range rec.gens {
			if g.CachedTokens >= g.PromptTokens || g.Queue < 0 || g.Prefill <= 0 || g.Decode < 0 {
				t.Fatalf("impossible generation %+v", g)
			}
		}
		if l := s.Live(); l.KVReferencedPages > c.KVPages || l.ActiveJobs > c.MaxBatch {
			t.Errorf("live state beyond capacity: %+v", l)
		}
	})
}
