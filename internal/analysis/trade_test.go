package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// handProbe is a probe whose figures the tests below work by hand:
// prefill 6,000 tok/s at 1,000 tokens and 12,000 at 2,000; one request
// decodes at 50 tok/s alone, 44 beside three others, 36 beside seven.
var handProbe = &PhaseSpeeds{Source: "the probe of 2026-12-06 08:07 UTC", Model: "m",
	Prefill: []PrefillSpeed{{1000, 6000}, {2000, 12000}}, PrefillFrom: "timed by the server",
	Decode: []DecodeSpeed{{1, 50}, {4, 44}, {8, 36}}, DecodeFrom: "timed by the server"}

// TestProbeTrade: with a probe, the exchange rate and break-even weigh
// the engine time the server's work takes at the probe's speeds, worked
// here by hand.
//
// The server computed 1,200,000 prompt tokens over 800 requests (and
// served 400,000 more from its cache, which cost no prefill): a mean of
// 1,500 computed, halfway between the probe's lengths, where a token
// takes 0.5/6000 + 0.5/12000 = 1/8000 s: 8,000 tok/s, so prefill takes
// 1,200,000 / 8,000 = 150 s of engine time. It generated 264,000 tokens in
// 6,600 s of decode summed per request: 40 tok/s a request, pauses for
// other requests' prefill included. Between the pauses they decoded at
// 40 × (Td + 150)/Td, where Td is decode's engine time: at batch 4 the
// probe's requests decode at 44 each, 176 together, so Td = 264,000 / 176
// = 1,500 s, and 40 × 1,650/1,500 = 44: batch 4 it is. Shares: prefill
// 150/1,650 = 9.09%, decode 90.91%; the exchange rate 10; the break-even
// floors (1/11)/(1 − (10/11)/1.5) = 3/13 and (1/11)/(1 − (10/11)/2) = 1/6.
// (Matched without the pauses, 40 tok/s a request is batch 5.8: decode
// at 232 tok/s, 1,138 s.)
//
// Without the probe the same server's request time says prefill 2,000 s
// of 8,600: 23.3%, an exchange rate of 3.3.
func TestProbeTrade(t *testing.T) {
	scalars := map[string]float64{
		snapshot.PromptTokensTotal: 1.2e6, snapshot.CachedTokensTotal: 4e5, snapshot.RequestsTotal: 800,
		snapshot.TokensPredictedTotal: 264000, snapshot.TokensPredictedSecondsTotal: 6600, snapshot.PromptSecondsTotal: 2000,
	}
	s := snap(scalars)
	s.Models = []string{"m"}
	without := Analyze(s, Options{})
	if f := without.Figures; *f.TradeBasis != TradeRequestTime || !near(float64(*f.ExchangeRate), 6600.0/2000, 1e-9) || f.ProbeTrade != nil {
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
		{"prefill speed", float64(pt.PrefillTokensPerSecond), 8000},
		{"prefill seconds", float64(pt.PrefillSeconds), 150},
		{"server per request", float64(pt.ServerPerRequest), 40},
		{"batch", float64(pt.DecodeBatch), 4},
		{"decode speed", float64(pt.DecodeTokensPerSecond), 176},
		{"decode seconds", float64(pt.DecodeSeconds), 1500},
		{"prefill share", float64(pt.PrefillShare), 1.0 / 11},
		{"exchange rate", float64(*f.ExchangeRate), 10},
		{"floor at 1.5", float64(f.BreakEven[0].Floor), 3.0 / 13},
		{"floor at 2", float64(f.BreakEven[1].Floor), 1.0 / 6},
	} {
		if !near(c.got, c.want, 1e-4) {
			t.Errorf("%s = %v, worked by hand %v", c.what, c.got, c.want)
		}
	}
	// The request-time split is still the server's; the trade says whose
	// speeds it weighs.
	if float64(*f.PrefillShare) != 2000.0/8600 || *f.DominantPhase != "decode" {
		t.Errorf("prefill share %v, dominant %v", *f.PrefillShare, *f.DominantPhase)
	}
	tr, pre, dec := row(t, r, "phases", "probe_trade"), row(t, r, "phases", "probe_prefill"), row(t, r, "phases", "probe_decode")
	if tr.Value != "prefill 9.1% · decode 90.9%" || !strings.Contains(tr.Note, "the probe of 2026-12-06 08:07 UTC") {
		t.Errorf("probe row %+v", tr)
	}
	if pre.Value != "8.0K tok/s" || !strings.Contains(pre.Note, "at the server's mean prompt computed, 1,500 tokens; timed by the server") {
		t.Errorf("prefill row %+v", pre)
	}
	if dec.Value != "176 tok/s" || !strings.Contains(dec.Note, "at batch 4.00, where the probe's requests decoded as the server's did between prefill's pauses, 44 tok/s each") {
		t.Errorf("decode row %+v", dec)
	}
	for _, id := range []string{"exchange_rate", "break_even_1.5", "break_even_2"} {
		if n := row(t, r, "phases", id).Note; !strings.HasPrefix(n, "by the probe: ") {
			t.Errorf("%s says %q: not that it is the probe's", id, n)
		}
	}
	if got := row(t, r, "phases", "exchange_rate").Value; got != "1% decode ≈ 10.0% prefill" {
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
		// lengths, 3,000 tokens in 1000/6000 + 2000/12000 s = 9,000 tok/s.
		r := Analyze(snap(base()), Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || !math.IsNaN(float64(pt.PromptLength)) || !near(float64(pt.PrefillTokensPerSecond), 9000, 1e-9) {
			t.Fatalf("%+v", pt)
		}
		if n := row(t, r, "phases", "probe_prefill").Note; !strings.Contains(n, "over all its lengths: the server's mean prompt is unknown") {
			t.Errorf("note %q", n)
		}
	})
	t.Run("beyond the ends", func(t *testing.T) {
		// No request count but the prompt histogram's ten: 100,000 tokens
		// computed a request; requests at 60 tok/s, faster than the
		// probe's alone: its longest length's speed, its smallest batch's.
		s := snap(base())
		s.Histograms[snapshot.RequestPromptTokens] = &histogram.Histogram{Buckets: []histogram.Bucket{{UpperBound: 10000, Count: 10}, {UpperBound: math.Inf(1), Count: 10}}, Count: 10, Sum: 50000}
		s.Scalars[snapshot.TokensPredictedSecondsTotal] = 2e5 / 60.0
		r := Analyze(s, Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || pt.PromptLength != 100000 || pt.PrefillTokensPerSecond != 12000 || pt.DecodeBatch != 1 || pt.DecodeTokensPerSecond != 50 {
			t.Fatalf("%+v", pt)
		}
		pre, dec := row(t, r, "phases", "probe_prefill").Note, row(t, r, "phases", "probe_decode").Note
		if !strings.Contains(pre, "at 2,000 tokens, its longest (the server's mean prompt computed is 100,000)") || !strings.Contains(dec, "at batch 1: between prefill's pauses the server's requests decoded at") {
			t.Errorf("notes %q, %q", pre, dec)
		}
	})
	t.Run("prefill pauses half of decode", func(t *testing.T) {
		// 60,000 tokens computed over 60 requests: 1,000 a request, 6,000
		// tok/s, 10 s of prefill. 1,760 tokens generated in 80 s of decode
		// summed: 22 tok/s a request. At batch 4 (44 each, 176 together)
		// decode takes 1,760/176 = 10 s, and 44 × 10/(10 + 10) = 22: the
		// server's, pauses included. Half and half: an exchange rate of 1.
		// (Matched without the pauses, 22 tok/s is slower than the
		// probe's batch 8; and stepping from a guess swings between
		// batch 1 and batch 8 for ever.)
		s := snap(map[string]float64{snapshot.PromptTokensTotal: 60000, snapshot.RequestsTotal: 60,
			snapshot.TokensPredictedTotal: 1760, snapshot.TokensPredictedSecondsTotal: 80})
		r := Analyze(s, Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || !near(float64(pt.DecodeBatch), 4, 1e-9) || !near(float64(pt.DecodeSeconds), 10, 1e-9) || !near(float64(*r.Figures.ExchangeRate), 1, 1e-9) {
			t.Fatalf("%+v", pt)
		}
	})
	t.Run("busy slots", func(t *testing.T) {
		// llama.cpp says its batch: 2.5 busy slots a decode call, halfway
		// from the probe's batch 1 to 4, where a token takes 0.5/50 +
		// 0.5/44 s a request: 46.81 tok/s each, 117.0 together.
		s := snap(base())
		s.Extra[snapshot.ExtraBusySlotsPerDecode] = 2.5
		r := Analyze(s, Options{Probe: handProbe})
		pt := r.Figures.ProbeTrade
		if pt == nil || pt.DecodeBatch != 2.5 || !near(float64(pt.DecodeTokensPerSecond), 2.5/(0.5/50+0.5/44), 1e-12) {
			t.Fatalf("%+v", pt)
		}
		if n := row(t, r, "phases", "probe_decode").Note; !strings.Contains(n, "at batch 2.50, the server's mean busy slots a decode call") {
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
