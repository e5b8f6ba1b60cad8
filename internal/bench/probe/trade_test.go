package probe

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/sim"
)

// The phase trade weighed with a probe, against the simulator's own
// account of its engine time: a scenario runs for an hour of simulated
// time (as fast as the CPU allows), the report of its /metrics is weighed
// with the probe of its engine (the speeds its configuration gives, as
// TestDemoSpeeds works them out, to which the probe measured on the demo
// comes within 5%), and the shares the trade says are held to the
// simulator's: prefill took PrefillSteps × ChunkOverhead + (prompt −
// cached tokens) / PrefillRate of engine time (each chunk's cost,
// sim.go's plan), decode the rest of its busy time. The request-time
// split the report gives without a probe is logged beside them: summed
// per request, it counts a batch's decode once for each request in it.
func TestTradeAgainstSimulator(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		// within is how far the trade's prefill share may be from the
		// simulator's, in points.
		within float64
	}{
		// Multi-turn chat: prompts mostly served from the cache, a few
		// hundred tokens computed each, long answers among 32 users.
		{"chat", 0.02},
		// A 30,000-token system prefix, 2,000 fresh tokens a request.
		{"agent", 0.02},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			c, err := sim.Scenario(tt.scenario, 1)
			if err != nil {
				t.Fatal(err)
			}
			c.Epoch = sim.DefaultEpoch
			s, err := sim.New(c)
			if err != nil {
				t.Fatal(err)
			}
			m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: c.MaxSeqLen, StartTime: c.Epoch})
			s.SetRecorder(m)
			s.RunUntil(time.Hour)
			var b bytes.Buffer
			if err := m.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			fams, err := exposition.Parse(b.Bytes(), exposition.Text)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := dialect.Map(fams, dialect.Options{})
			if err != nil {
				t.Fatal(err)
			}
			snap.ScrapedAt, snap.TimeSource = s.Now(), "saved"

			// The probe of this engine, from its configuration.
			speeds := &analysis.PhaseSpeeds{Source: "the configured engine"}
			for l := 128.0; l <= float64(c.MaxSeqLen); l *= 2 {
				chunks := math.Ceil(l / float64(c.ChunkSize))
				speeds.Prefill = append(speeds.Prefill, analysis.PrefillSpeed{Length: l, TokensPerSecond: l / (chunks*c.ChunkOverhead.Seconds() + l/c.PrefillRate)})
			}
			for b := 1; b <= c.MaxBatch; b++ {
				speeds.Decode = append(speeds.Decode, analysis.DecodeSpeed{Batch: float64(b), PerRequest: 1 / (c.DecodeBase.Seconds() + c.DecodePerJob.Seconds()*float64(b))})
			}
			r := analysis.Analyze(snap, analysis.Options{Probe: speeds})
			pt := r.Figures.ProbeTrade
			if pt == nil {
				t.Fatalf("no trade: %+v", r.Figures)
			}
			tot := s.Totals()
			prefill := float64(tot.PrefillSteps)*c.ChunkOverhead.Seconds() + float64(tot.PromptTokens-tot.CachedTokens)/c.PrefillRate
			decode := tot.Busy.Seconds() - prefill
			truth := prefill / (prefill + decode)
			t.Logf("%s: prefill %.1f%% of engine time by the trade (batch %.2f, %.0f tok/s at %.0f tokens), %.1f%% by the simulator; request time says %.1f%%",
				tt.scenario, 100*float64(pt.PrefillShare), float64(pt.DecodeBatch), float64(pt.PrefillTokensPerSecond), float64(pt.PromptLength), 100*truth, 100*float64(*r.Figures.PrefillShare))
			if math.Abs(float64(pt.PrefillShare)-truth) > tt.within {
				t.Errorf("the trade's prefill share %.4f, the simulator's %.4f", float64(pt.PrefillShare), truth)
			}
		})
	}
}
