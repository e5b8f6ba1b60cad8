package exporter

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
)

func TestTokenBuckets(t *testing.T) {
	tests := []struct {
		max  int
		want []float64
	}{
		{100, []float64{1, 2, 5, 10, 20, 50, 100}},
		{1, []float64{1}},
		{2, []float64{1, 2}},
		{3, []float64{1, 2, 3}},
		{9, []float64{1, 2, 5, 9}},
		{10, []float64{1, 2, 5, 10}},
		{11, []float64{1, 2, 5, 10, 11}},
		{4096, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 4096}},
		{262144, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 262144}},
		{1000000, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000}},
		{0, nil},
		{-7, nil},
	}
	for _, tt := range tests {
		if got := TokenBuckets(tt.max); !slices.Equal(got, tt.want) {
			t.Errorf("TokenBuckets(%d) = %v, want %v", tt.max, got, tt.want)
		}
	}
}

// TestTokenLadderShape compares the ladder, for every limit up to 20000 and
// a few huge ones, with one built another way: every decimal "1", "2" or
// "5" followed by zeros that is ≤ the limit, in order, then the limit when
// it is not already last.
func TestTokenLadderShape(t *testing.T) {
	var steps []int64
	for zeros := 0; zeros <= 18; zeros++ {
		for _, lead := range []string{"1", "2", "5"} {
			v, err := strconv.ParseInt(lead+strings.Repeat("0", zeros), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, v)
		}
	}
	limits := []int{math.MaxInt, math.MaxInt - 1, math.MaxInt / 2, 5_000_000_000_000_000_000, 1 << 53}
	for n := 1; n <= 20000; n++ {
		limits = append(limits, n)
	}
	for _, n := range limits {
		var want []int64
		for _, v := range steps {
			if v <= int64(n) {
				want = append(want, v)
			}
		}
		if want[len(want)-1] != int64(n) {
			want = append(want, int64(n))
		}
		if got := tokenLadder(n); !slices.Equal(got, want) {
			t.Fatalf("ladder(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestRecordGeneration checks every per-generation series against figures
// worked out by hand from the reference's update rules.
func TestRecordGeneration(t *testing.T) {
	tests := []struct {
		name  string
		gens  []Generation
		want  map[string]float64
		hists map[string]histWant
	}{
		{
			name: "nothing recorded reads zero, ratios included",
			want: map[string]float64{
				"prompt_tokens_total": 0, "cached_tokens_total": 0, "prefix_cache_queries": 0, "prefix_cache_hits": 0,
				"prompt_seconds_total": 0, "tokens_predicted_total": 0, "tokens_predicted_seconds_total": 0,
				"requests_total": 0, "n_tokens_max": 0, "tokens_predicted_max": 0, "predicted_tokens_seconds": 0,
			},
			hists: map[string]histWant{
				"request_queue_time_seconds": {count: 0, sum: 0, le: map[float64]float64{0.3: 0, 7680: 0}},
				"request_prompt_tokens":      {count: 0, sum: 0, le: map[float64]float64{1: 0, 1e6: 0}},
			},
		},
		{
			name: "one cold request",
			gens: []Generation{{PromptTokens: 1000, GeneratedTokens: 100, Queue: ms(500), Prefill: sec(2), Decode: sec(4)}},
			want: map[string]float64{
				"prompt_tokens_total": 1000, "cached_tokens_total": 0, "prefix_cache_queries": 1000, "prefix_cache_hits": 0,
				"prompt_seconds_total": 2, "tokens_predicted_total": 100, "tokens_predicted_seconds_total": 4,
				"requests_total": 1, "n_tokens_max": 1000, "tokens_predicted_max": 100, "predicted_tokens_seconds": 25,
			},
			hists: map[string]histWant{
				// 0.5 s sits exactly on a boundary: le is inclusive.
				"request_queue_time_seconds":   {count: 1, sum: 0.5, le: map[float64]float64{0.3: 0, 0.5: 1}},
				"request_prefill_time_seconds": {count: 1, sum: 2, le: map[float64]float64{1.5: 0, 2: 1}},
				"request_decode_time_seconds":  {count: 1, sum: 4, le: map[float64]float64{2.5: 0, 5: 1}},
				"time_to_first_token_seconds":  {count: 1, sum: 2.5, le: map[float64]float64{1: 0, 2.5: 1}},
				"e2e_request_latency_seconds":  {count: 1, sum: 6.5, le: map[float64]float64{5: 0, 10: 1}},
				"request_prompt_tokens":        {count: 1, sum: 1000, le: map[float64]float64{500: 0, 1000: 1}},
				"request_generation_tokens":    {count: 1, sum: 100, le: map[float64]float64{50: 0, 100: 1}},
			},
		},
		{
			name: "prefix cache splits the prompt",
			gens: []Generation{
				{PromptTokens: 1000, CachedTokens: 800, GeneratedTokens: 10, Prefill: ms(100), Decode: ms(200)},
				{PromptTokens: 500, GeneratedTokens: 20, Prefill: ms(500), Decode: ms(300)},
			},
			want: map[string]float64{
				"prompt_tokens_total": 700, "cached_tokens_total": 800, "prefix_cache_queries": 1500, "prefix_cache_hits": 800,
				"prompt_seconds_total": 0.6, "tokens_predicted_total": 30, "tokens_predicted_seconds_total": 0.5,
				"requests_total": 2, "n_tokens_max": 1000, "tokens_predicted_max": 20, "predicted_tokens_seconds": 60,
			},
			hists: map[string]histWant{
				// The histogram sees the full prompt, cached part included.
				"request_prompt_tokens":       {count: 2, sum: 1500, le: map[float64]float64{200: 0, 500: 1, 1000: 2}},
				"time_to_first_token_seconds": {count: 2, sum: 0.6, le: map[float64]float64{0.08: 0, 0.1: 1, 0.5: 2}},
				"e2e_request_latency_seconds": {count: 2, sum: 1.1, le: map[float64]float64{0.3: 1, 0.5: 1, 0.8: 2}},
			},
		},
		{
			name: "cached beyond the prompt is held to it",
			gens: []Generation{{PromptTokens: 100, CachedTokens: 150, GeneratedTokens: 1}},
			want: map[string]float64{
				"prompt_tokens_total": 0, "cached_tokens_total": 100, "prefix_cache_queries": 100, "prefix_cache_hits": 100,
				"n_tokens_max": 100,
			},
		},
		{
			name: "missing and negative figures count as zero",
			gens: []Generation{{PromptTokens: -5, CachedTokens: -3, GeneratedTokens: -1, Queue: -time.Second, Prefill: -1, Decode: -time.Hour}},
			want: map[string]float64{
				"prompt_tokens_total": 0, "cached_tokens_total": 0, "tokens_predicted_total": 0, "prompt_seconds_total": 0,
				"tokens_predicted_seconds_total": 0, "requests_total": 1, "n_tokens_max": 0, "tokens_predicted_max": 0,
				"predicted_tokens_seconds": 0,
			},
			hists: map[string]histWant{
				"request_queue_time_seconds": {count: 1, sum: 0, le: map[float64]float64{0.3: 1}},
				"request_prompt_tokens":      {count: 1, sum: 0, le: map[float64]float64{1: 1}},
				"request_generation_tokens":  {count: 1, sum: 0, le: map[float64]float64{1: 1}},
			},
		},
		{
			name: "generation with no decode time leaves throughput at zero",
			gens: []Generation{{PromptTokens: 10, GeneratedTokens: 5}},
			want: map[string]float64{"tokens_predicted_total": 5, "tokens_predicted_seconds_total": 0, "predicted_tokens_seconds": 0},
		},
		{
			name: "sums are exact in nanoseconds",
			gens: []Generation{
				{Prefill: 1, Decode: 3}, {Prefill: 1, Decode: 3}, {Prefill: 1, Decode: 3},
				{Prefill: 100 * time.Millisecond}, {Prefill: 200 * time.Millisecond},
			},
			// 0.1 + 0.2 in floats is 0.30000000000000004; summed as
			// nanoseconds it is 0.300000003 (with the three 1 ns prefills).
			want: map[string]float64{"prompt_seconds_total": 0.300000003, "tokens_predicted_seconds_total": 9e-9},
		},
		{
			name: "over the ladder lands in +Inf only",
			gens: []Generation{{PromptTokens: 2_000_000, GeneratedTokens: 1_500_000}},
			want: map[string]float64{"n_tokens_max": 2e6, "tokens_predicted_max": 1.5e6},
			hists: map[string]histWant{
				"request_prompt_tokens":     {count: 1, sum: 2e6, le: map[float64]float64{1e6: 0}},
				"request_generation_tokens": {count: 1, sum: 1.5e6, le: map[float64]float64{1e6: 0}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{})
			for _, g := range tt.gens {
				m.RecordGeneration(g)
			}
			e := scrape(t, m)
			checkScalars(t, e.scalars, tt.want)
			for name, h := range tt.hists {
				h.check(t, name, e.hists[name])
			}
		})
	}
}

// TestSpecDecode checks the drafter arithmetic: only drafted requests count,
// a nil tally is not a zero tally, steps are max(G − a, 0), and every ratio
// reads 0 on a zero denominator.
func TestSpecDecode(t *testing.T) {
	tests := []struct {
		name string
		gens []Generation
		want map[string]float64
		hist histWant
	}{
		{
			name: "no drafter",
			gens: []Generation{{GeneratedTokens: 100}},
			want: map[string]float64{
				"spec_decode_requests_total": 0, "spec_decode_num_draft_tokens_total": 0, "spec_decode_num_accepted_tokens_total": 0,
				"spec_decode_num_decode_steps_total": 0, "spec_decode_draft_acceptance_rate": 0,
				"spec_decode_mean_accepted_length": 0, "spec_decode_tokens_per_step": 0,
			},
			hist: histWant{count: 0, sum: 0, le: map[float64]float64{1: 0}},
		},
		{
			name: "drafter that proposed nothing still counts",
			gens: []Generation{{GeneratedTokens: 50, Draft: &DraftTally{}}},
			want: map[string]float64{
				"spec_decode_requests_total": 1, "spec_decode_num_draft_tokens_total": 0, "spec_decode_num_accepted_tokens_total": 0,
				"spec_decode_num_decode_steps_total": 50, "spec_decode_draft_acceptance_rate": 0,
				"spec_decode_mean_accepted_length": 0, "spec_decode_tokens_per_step": 1,
			},
			// a + r = 0: no acceptance rate to observe.
			hist: histWant{count: 0, sum: 0, le: map[float64]float64{1: 0}},
		},
		{
			name: "accepted ride on target tokens",
			gens: []Generation{{GeneratedTokens: 100, Draft: &DraftTally{Accepted: 30, Rejected: 10}}},
			want: map[string]float64{
				"spec_decode_requests_total": 1, "spec_decode_num_draft_tokens_total": 40, "spec_decode_num_accepted_tokens_total": 30,
				"spec_decode_num_decode_steps_total": 70, "spec_decode_draft_acceptance_rate": 0.75,
				"spec_decode_mean_accepted_length": 30.0 / 70, "spec_decode_tokens_per_step": 1 + 30.0/70,
			},
			hist: histWant{count: 1, sum: 0.75, le: map[float64]float64{0.7: 0, 0.8: 1, 1: 1}},
		},
		{
			name: "more accepted than generated gives zero steps",
			gens: []Generation{{GeneratedTokens: 5, Draft: &DraftTally{Accepted: 10}}},
			want: map[string]float64{
				"spec_decode_requests_total": 1, "spec_decode_num_draft_tokens_total": 10, "spec_decode_num_accepted_tokens_total": 10,
				"spec_decode_num_decode_steps_total": 0, "spec_decode_draft_acceptance_rate": 1,
				"spec_decode_mean_accepted_length": 0, "spec_decode_tokens_per_step": 0,
			},
			hist: histWant{count: 1, sum: 1, le: map[float64]float64{0.95: 0, 1: 1}},
		},
		{
			name: "negative tallies count as zero",
			gens: []Generation{{GeneratedTokens: 8, Draft: &DraftTally{Accepted: -4, Rejected: -2}}},
			want: map[string]float64{
				"spec_decode_requests_total": 1, "spec_decode_num_draft_tokens_total": 0, "spec_decode_num_accepted_tokens_total": 0,
				"spec_decode_num_decode_steps_total": 8,
			},
			hist: histWant{count: 0, sum: 0, le: map[float64]float64{1: 0}},
		},
		{
			name: "only drafted requests dilute the ratios",
			gens: []Generation{
				{GeneratedTokens: 1000},
				{GeneratedTokens: 100, Draft: &DraftTally{Accepted: 30, Rejected: 10}},
				{GeneratedTokens: 50, Draft: &DraftTally{}},
			},
			want: map[string]float64{
				"spec_decode_requests_total": 2, "spec_decode_num_draft_tokens_total": 40, "spec_decode_num_accepted_tokens_total": 30,
				"spec_decode_num_decode_steps_total": 120, "spec_decode_draft_acceptance_rate": 0.75,
				"spec_decode_mean_accepted_length": 0.25, "spec_decode_tokens_per_step": 1.25,
				"tokens_predicted_total": 1150, "requests_total": 3,
			},
			hist: histWant{count: 1, sum: 0.75, le: map[float64]float64{0.8: 1}},
		},
		{
			name: "per-request rates land in their buckets",
			gens: []Generation{
				{GeneratedTokens: 10, Draft: &DraftTally{Accepted: 1, Rejected: 19}},  // 0.05, on the first bound
				{GeneratedTokens: 10, Draft: &DraftTally{Accepted: 0, Rejected: 5}},   // 0
				{GeneratedTokens: 10, Draft: &DraftTally{Accepted: 19, Rejected: 1}},  // 0.95
				{GeneratedTokens: 40, Draft: &DraftTally{Accepted: 39, Rejected: 1}},  // 0.975
				{GeneratedTokens: 10, Draft: &DraftTally{Accepted: 1, Rejected: 1}},   // 0.5
				{GeneratedTokens: 10, Draft: &DraftTally{Accepted: 2, Rejected: 998}}, // 0.002
			},
			want: map[string]float64{
				"spec_decode_num_draft_tokens_total": 20 + 5 + 20 + 40 + 2 + 1000, "spec_decode_num_accepted_tokens_total": 62,
				// steps: 9 + 10 + 0 (10−19 < 0) + 1 + 9 + 8
				"spec_decode_num_decode_steps_total": 37,
			},
			hist: histWant{count: 6, sum: 0.05 + 0 + 0.95 + 0.975 + 0.5 + 0.002, le: map[float64]float64{
				0.05: 3, 0.1: 3, 0.4: 3, 0.5: 4, 0.9: 4, 0.95: 5, 1: 6,
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{})
			for _, g := range tt.gens {
				m.RecordGeneration(g)
			}
			e := scrape(t, m)
			checkScalars(t, e.scalars, tt.want)
			tt.hist.check(t, "spec_decode_acceptance_rate", e.hists["spec_decode_acceptance_rate"])
		})
	}
}

// TestPeaksNeverFall feeds a sequence and checks after every generation that
// both peaks equal the largest figure so far, worked out independently.
func TestPeaksNeverFall(t *testing.T) {
	seq := []struct{ p, g int }{{1000, 20}, {500, 8000}, {9000, 15}, {10, 10}, {0, 0}, {8999, 7999}, {9001, 1}}
	wantP := []float64{1000, 1000, 9000, 9000, 9000, 9000, 9001}
	wantG := []float64{20, 8000, 8000, 8000, 8000, 8000, 8000}
	m := New(Options{})
	for i, s := range seq {
		m.RecordGeneration(Generation{PromptTokens: s.p, GeneratedTokens: s.g})
		if i == 3 {
			// A model load restarts the token histograms, not the peaks.
			m.ConfigureTokenBuckets(4096)
		}
		e := scrape(t, m)
		if got := e.scalars["n_tokens_max"]; got != wantP[i] {
			t.Errorf("after %d: n_tokens_max = %v, want %v", i, got, wantP[i])
		}
		if got := e.scalars["tokens_predicted_max"]; got != wantG[i] {
			t.Errorf("after %d: tokens_predicted_max = %v, want %v", i, got, wantG[i])
		}
	}
}

// TestPeakSurvivesWherePercentilesCannot: one 8000-token completion among
// 344 of 200 tokens is invisible to p99 of the generation histogram, which
// the peak reports exactly.
func TestPeakSurvivesWherePercentilesCannot(t *testing.T) {
	m := New(Options{})
	for range 344 {
		m.RecordGeneration(Generation{PromptTokens: 300, GeneratedTokens: 200})
	}
	m.RecordGeneration(Generation{PromptTokens: 300, GeneratedTokens: 8000})
	e := scrape(t, m)
	h := e.hists["request_generation_tokens"]
	// By hand: rank 0.99 × 345 = 341.55 falls in (100, 200], which holds
	// all 344 short ones, so p99 = 100 + 100 × 341.55/344.
	wantP99 := 100 + 100*341.55/344
	if got := h.Quantile(0.99); !near(got, wantP99) {
		t.Errorf("p99 = %v, want %v", got, wantP99)
	}
	if got := h.Quantile(0.99); got >= 8000/10 {
		t.Errorf("p99 = %v: the percentile was expected to miss the 8000-token completion", got)
	}
	if got := e.scalars["tokens_predicted_max"]; got != 8000 {
		t.Errorf("tokens_predicted_max = %v, want 8000", got)
	}
	// Held to the peak, the top quantile cannot claim more than was seen:
	// (5000, 10000] would otherwise interpolate p99.9 to 8275.
	if got := h.Estimate(0.999, e.scalars["tokens_predicted_max"]).Value; got > 8000 {
		t.Errorf("p99.9 held to the peak = %v, want ≤ 8000", got)
	}
}

// TestLongContextLadder: at 262144 tokens of context, 31 prompts of 203000
// tokens sit in (200000, 262144], not in a 300k-wide bucket, and no boundary
// exceeds the context.
func TestLongContextLadder(t *testing.T) {
	for _, how := range []string{"option", "configure"} {
		t.Run(how, func(t *testing.T) {
			var m *Metrics
			if how == "option" {
				m = New(Options{MaxSeqLen: 262144})
			} else {
				m = New(Options{})
				m.ConfigureTokenBuckets(262144)
			}
			for range 31 {
				m.RecordGeneration(Generation{PromptTokens: 203000, GeneratedTokens: 500})
			}
			e := scrape(t, m)
			for _, name := range []string{"request_prompt_tokens", "request_generation_tokens"} {
				h := e.hists[name]
				for _, b := range h.Buckets[:len(h.Buckets)-1] {
					if b.UpperBound > 262144 {
						t.Errorf("%s has a boundary %v above the context length", name, b.UpperBound)
					}
				}
				if n := len(h.Buckets); h.Buckets[n-2].UpperBound != 262144 || h.Buckets[n-3].UpperBound != 200000 {
					t.Errorf("%s: top bounds %v, want … 200000 262144 +Inf", name, bounds(h)[n-3:])
				}
			}
			histWant{count: 31, sum: 31 * 203000, le: map[float64]float64{200000: 0, 262144: 31}}.
				check(t, "request_prompt_tokens", e.hists["request_prompt_tokens"])
			// By hand: all 31 in (200000, 262144], rank 0.99 × 31 gives
			// 200000 + 62144 × 0.99; a 500k bound would have given 497000.
			if got, want := e.hists["request_prompt_tokens"].Quantile(0.99), 200000+62144*0.99; !near(got, want) {
				t.Errorf("p99 = %v, want %v", got, want)
			}
		})
	}
}

// TestConfigureTokenBuckets walks the reference's reset rules step by step.
func TestConfigureTokenBuckets(t *testing.T) {
	type step struct {
		configure  int  // 0: no call
		call       bool // call ConfigureTokenBuckets(configure)
		record     int  // prompt tokens of one generation to record, 0: none
		wantCount  float64
		wantTop    float64 // largest finite boundary
		wantReqs   float64
		wantLatCnt float64
	}
	steps := []struct {
		name string
		step
	}{
		{"fresh: ladder to 1,000,000", step{record: 203000, wantCount: 1, wantTop: 1e6, wantReqs: 1, wantLatCnt: 1}},
		{"zero is ignored", step{call: true, configure: 0, wantCount: 1, wantTop: 1e6, wantReqs: 1, wantLatCnt: 1}},
		{"negative is ignored", step{call: true, configure: -4096, wantCount: 1, wantTop: 1e6, wantReqs: 1, wantLatCnt: 1}},
		{"same ladder keeps samples", step{call: true, configure: 1_000_000, wantCount: 1, wantTop: 1e6, wantReqs: 1, wantLatCnt: 1}},
		{"new ladder restarts both", step{call: true, configure: 262144, wantCount: 0, wantTop: 262144, wantReqs: 1, wantLatCnt: 1}},
		{"records on the new ladder", step{record: 100, wantCount: 1, wantTop: 262144, wantReqs: 2, wantLatCnt: 2}},
		{"reloading the same model keeps them", step{call: true, configure: 262144, wantCount: 1, wantTop: 262144, wantReqs: 2, wantLatCnt: 2}},
		{"a smaller model restarts again", step{call: true, configure: 9, wantCount: 0, wantTop: 9, wantReqs: 2, wantLatCnt: 2}},
		{"and places by its ladder", step{record: 7, wantCount: 1, wantTop: 9, wantReqs: 3, wantLatCnt: 3}},
	}
	m := New(Options{})
	for _, s := range steps {
		if s.call {
			m.ConfigureTokenBuckets(s.configure)
		}
		if s.record > 0 {
			m.RecordGeneration(Generation{PromptTokens: s.record, GeneratedTokens: s.record, Decode: time.Second})
		}
		e := scrape(t, m)
		for _, name := range []string{"request_prompt_tokens", "request_generation_tokens"} {
			h := e.hists[name]
			if h.Count != s.wantCount {
				t.Errorf("%s: %s count = %v, want %v", s.name, name, h.Count, s.wantCount)
			}
			if top := h.Buckets[len(h.Buckets)-2].UpperBound; top != s.wantTop {
				t.Errorf("%s: %s top bound = %v, want %v", s.name, name, top, s.wantTop)
			}
		}
		if got := e.scalars["requests_total"]; got != s.wantReqs {
			t.Errorf("%s: requests_total = %v, want %v", s.name, got, s.wantReqs)
		}
		if got := e.hists["request_decode_time_seconds"].Count; got != s.wantLatCnt {
			t.Errorf("%s: decode histogram count = %v, want %v (only token histograms restart)", s.name, got, s.wantLatCnt)
		}
	}
	// The last step placed 7 tokens on the ladder 1 2 5 9.
	histWant{count: 1, sum: 7, le: map[float64]float64{1: 0, 2: 0, 5: 0, 9: 1}}.
		check(t, "request_prompt_tokens", scrape(t, m).hists["request_prompt_tokens"])
}

// TestNamespace: the prefix is configurable and made valid.
func TestNamespace(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "tabbyapi"},
		{"mysrv", "mysrv"},
		{"my-srv.v2", "my_srv_v2"},
		{"9lives", "_lives"},
		{"a:b", "a:b"},
	}
	for _, tt := range tests {
		m := New(Options{Namespace: tt.in})
		m.RecordGeneration(Generation{PromptTokens: 3})
		e := scrape(t, m) // fails on any family without the prefix
		if e.scalars["prompt_tokens_total"] != 3 {
			t.Errorf("namespace %q: prompt_tokens_total = %v under %q", tt.in, e.scalars["prompt_tokens_total"], tt.want)
		}
		if m.ns != tt.want {
			t.Errorf("namespace(%q) = %q, want %q", tt.in, m.ns, tt.want)
		}
	}
}

// TestHistogramConsistency: every histogram's buckets rise and its +Inf
// bucket equals its count, whatever was recorded.
func TestHistogramConsistency(t *testing.T) {
	m := New(Options{MaxSeqLen: 8192})
	for i := range 500 {
		m.RecordGeneration(Generation{
			PromptTokens: i * 37 % 9000, CachedTokens: i % 50, GeneratedTokens: i * 13 % 700,
			Queue: ms(float64(i % 40)), Prefill: ms(float64(i * 7 % 3000)), Decode: sec(float64(i % 90)),
			Draft: &DraftTally{Accepted: i % 9, Rejected: i % 4},
		})
	}
	e := scrape(t, m)
	for name, h := range e.hists {
		checkHistogram(t, name, h)
		want := 500.0
		if name == "spec_decode_acceptance_rate" {
			// a + r = 0 when i is a multiple of 36: 0, 36, …, 468 (14).
			want = 486
		}
		if h.Count != want {
			t.Errorf("%s count = %v, want %v", name, h.Count, want)
		}
	}
}

func checkHistogram(t testing.TB, name string, h *histogram.Histogram) {
	t.Helper()
	for i := 1; i < len(h.Buckets); i++ {
		if h.Buckets[i].Count < h.Buckets[i-1].Count || h.Buckets[i].UpperBound <= h.Buckets[i-1].UpperBound {
			t.Errorf("%s: buckets not rising at %d: %v", name, i, h.Buckets)
		}
	}
	if h.Total() != h.Count {
		t.Errorf("%s: +Inf %v != count %v", name, h.Total(), h.Count)
	}
	if math.IsNaN(h.Sum) || h.Sum < 0 {
		t.Errorf("%s: sum %v", name, h.Sum)
	}
}
