package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// handProbe is a probe whose figures the tests below work by hand:
// prefill 8,000 tok/s at 1,000 tokens and 7,000 at 2,000; one request
// decodes at 50 tok/s alone, 44 beside three others, 36 beside seven.
var handProbe = &PhaseSpeeds{Source: "the probe of 2026-12-06 08:07 UTC", Model: "m",
	Prefill: []PrefillSpeed{{1000, 8000}, {2000, 7000}}, PrefillFrom: "the server's prefill time",
	Decode: []DecodeSpeed{{1, 50}, {4, 44}, {8, 36}}, DecodeFrom: "the server's decode time"}

// TestProbeTrade: with a probe, the exchange rate and break-even weigh
// the engine time the server's work takes at the probe's speeds, worked
// here by hand.
//
// The server computed 1,000,000 prompt tokens and served 500,000 from its
// cache over 1,000 requests: a mean prompt of 1,500 tokens, halfway
// between the probe's lengths, where a token takes 0.5/8000 + 0.5/7000 s:
// 7,466.7 tok/s, so prefill takes 1,000,000 / 7,466.7 = 133.93 s. It
// generated 200,000 tokens in 5,000 s of decode summed per request: 40
// tok/s a request, between the probe's 44 at batch 4 and 36 at batch 8;
// a token takes 1/40 s, (1/40 − 1/44)/(1/36 − 1/44) = 0.45 of the way
// from batch 4 to 8: batch 5.8, where the batch decodes 5.8 × 40 = 232
// tok/s, so decode takes 200,000 / 232 = 862.07 s. Shares: prefill
// 133.93/995.99 = 13.45%, decode 86.55%; the exchange rate 86.55/13.45 =
// 6.437; the break-even floors 0.13447/(1 − 0.86553/1.5) = 0.3179 and
// 0.13447/(1 − 0.86553/2) = 0.2371.
//
// Without the probe the same server's request time says prefill 2,000 s
// of 7,000: 28.6%, an exchange rate of 2.5.
func TestProbeTrade(t *testing.T) {
	scalars := map[string]float64{
		snapshot.PromptTokensTotal: 1e6, snapshot.CachedTokensTotal: 5e5, snapshot.RequestsTotal: 1000,
		snapshot.TokensPredictedTotal: 2e5, snapshot.TokensPredictedSecondsTotal: 5000, snapshot.PromptSecondsTotal: 2000,
	}
	s := snap(scalars)
	s.Models = []string{"m"}
	without := Analyze(s, Options{})
	if f := without.Figures; *f.TradeBasis != TradeRequestTime || !near(float64(*f.ExchangeRate), 2.5, 1e-9) || f.ProbeTrade != nil {
		t.Fatalf("without a probe: basis %v, exchange rate %v", *f.TradeBasis, *f.ExchangeRate)
	}
	r := Analyze(s, Options{Probe: handProbe})
	f := r.Figures
	pt := f.ProbeTrade
	if pt == nil || *f.TradeBasis != TradeProbe {
		t.Fatalf("no probe trade: %+v", f)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"prompt length", float64(pt.PromptLength), 1500},
		{"prefill speed", float64(pt.PrefillTokensPerSecond), 7466.667},
		{"prefill seconds", float64(pt.PrefillSeconds), 133.929},
		{"server per request", float64(pt.ServerPerRequest), 40},
		{"batch", float64(pt.DecodeBatch), 5.8},
		{"decode speed", float64(pt.DecodeTokensPerSecond), 232},
		{"decode seconds", float64(pt.DecodeSeconds), 862.069},
		{"prefill share", float64(pt.PrefillShare), 0.13447},
		{"exchange rate", float64(*f.ExchangeRate), 6.4368},
		{"floor at 1.5", float64(f.BreakEven[0].Floor), 0.31790},
		{"floor at 2", float64(f.BreakEven[1].Floor), 0.23706},
	} {
		if !near(c.got, c.want, 1e-4) {
			t.Errorf("%s = %v, worked by hand %v", c.what, c.got, c.want)
		}
	}
	// The request-time split is still the server's; the trade says whose
	// speeds it weighs.
	if float64(*f.PrefillShare) != 2000.0/7000 || *f.DominantPhase != "decode" {
		t.Errorf("prefill share %v, dominant %v", *f.PrefillShare, *f.DominantPhase)
	}
	tr := row(t, r, "phases", "probe_trade")
	if tr.Value != "prefill 13.4% · decode 86.6%" || !strings.Contains(tr.Note, "the probe of 2026-12-06 08:07 UTC") ||
		!strings.Contains(tr.Note, "batch 5.80") || !strings.Contains(tr.Note, "at the server's mean prompt of 1,500 tokens") {
		t.Errorf("probe row %+v", tr)
	}
	for _, id := range []string{"exchange_rate", "break_even_1.5", "break_even_2"} {
		if n := row(t, r, "phases", id).Note; !strings.HasPrefix(n, "by the probe: ") {
			t.Errorf("%s says %q: not that it is the probe's", id, n)
		}
	}
	if got := row(t, r, "phases", "exchange_rate").Value; got != "1% decode ≈ 6.4% prefill" {
		t.Errorf("exchange rate %q", got)
	}
}

// The probe's curve read beyond its ends and without a mean prompt, and
// a server the probe cannot be weighed against.
func TestProbeTradeEdges(t *testing.T) {
	base := func() map[string]float64 {
		return map[string]float64{snapshot.PromptTokensTotal: 1e6, snapshot.TokensPredictedTotal: 2e5,
			snapshot.TokensPredictedSecondsTotal: 5000, snapshot.PromptSecondsTotal: 2000}
	}
	t.Run("no mean prompt", func(t *testing.T) {
		// No requests counted (llama.cpp): the probe's speed over its
		// lengths, 3,000 tokens in 1000/8000 + 2000/7000 s = 7,304.3 tok/s.
		r := Analyze(snap(base()), Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || !math.IsNaN(float64(pt.PromptLength)) || !near(float64(pt.PrefillTokensPerSecond), 3000/(1000.0/8000+2000.0/7000), 1e-9) {
			t.Fatalf("%+v", pt)
		}
		if n := row(t, r, "phases", "probe_trade").Note; !strings.Contains(n, "over its lengths, the server's mean prompt being unknown") {
			t.Errorf("note %q", n)
		}
	})
	t.Run("beyond the ends", func(t *testing.T) {
		// Prompts of 5,000 tokens from the histogram; requests at 60 tok/s,
		// faster than the probe's alone: its longest length's speed, its
		// smallest batch's.
		s := snap(base())
		s.Histograms[snapshot.RequestPromptTokens] = &histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 10000, Count: 10}, {UpperBound: math.Inf(1), Count: 10}}, Count: 10, Sum: 50000}
		s.Scalars[snapshot.TokensPredictedSecondsTotal] = 2e5 / 60.0
		r := Analyze(s, Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || pt.PromptLength != 5000 || pt.PrefillTokensPerSecond != 7000 || pt.DecodeBatch != 1 || pt.DecodeTokensPerSecond != 50 {
			t.Fatalf("%+v", pt)
		}
		n := row(t, r, "phases", "probe_trade").Note
		if !strings.Contains(n, "at its longest prompt, 2,000 tokens, short of the server's mean of 5,000") || !strings.Contains(n, "no slower than the probe's at batch 1") {
			t.Errorf("note %q", n)
		}
	})
	t.Run("no decode time", func(t *testing.T) {
		// The batch cannot be found: the row says why, and the trade is
		// the request time's, as without a probe… which needs the decode
		// time too: no trade at all.
		sc := base()
		delete(sc, snapshot.TokensPredictedSecondsTotal)
		r := Analyze(snap(sc), Options{Probe: handProbe})
		tr := row(t, r, "phases", "probe_trade")
		if tr.Value != "not weighed" || !strings.Contains(tr.Note, "no decode time") || r.Figures.TradeBasis != nil {
			t.Errorf("%+v, basis %v", tr, r.Figures.TradeBasis)
		}
	})
	t.Run("another model", func(t *testing.T) {
		s := snap(base())
		s.Models = []string{"other"}
		r := Analyze(s, Options{Probe: handProbe})
		found := false
		for _, n := range r.Notes {
			found = found || n.ID == "probe_other_model"
		}
		if !found || r.Figures.ProbeTrade == nil {
			t.Errorf("notes %+v", r.Notes)
		}
	})
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }
