package demo

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/sim"
)

// TestInFlightAgainstEngineBusy: on every scenario, the report's requests
// in flight are the simulator's own summed phase times over its uptime,
// and they bound its engine's busy time (the time it spent in steps,
// which the metric set does not publish) from above, so "busy at most"
// never understates how busy the engine was.
func TestInFlightAgainstEngineBusy(t *testing.T) {
	const up = 10 * time.Minute
	// Every scenario keeps more than one request in flight; one user who
	// thinks for half a minute between requests keeps fewer.
	for _, name := range append(Scenarios(), "one thinking user") {
		t.Run(name, func(t *testing.T) {
			var s *sim.Sim
			var m *exporter.Metrics
			var err error
			if name == "one thinking user" {
				s, m, err = users(3, 1, 30*time.Second)
			} else {
				s, m, err = Options{Scenario: name, Speed: 1, Seed: 3}.engine(sim.DefaultEpoch)
			}
			if err != nil {
				t.Fatal(err)
			}
			s.RunUntil(up)
			var b bytes.Buffer
			if err := m.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			snap := parse(t, b.Bytes())
			snap.ScrapedAt = s.Now()
			f := analysis.Analyze(snap, analysis.Options{Now: s.Now()}).Figures
			tt := s.Totals()
			want := (tt.Prefill + tt.Decode).Seconds() / up.Seconds()
			busy := tt.Busy.Seconds() / up.Seconds()
			if f.MeanInFlight == nil || math.Abs(float64(*f.MeanInFlight)-want) > 1e-6*want {
				t.Fatalf("in flight %v, want the simulator's %v", f.MeanInFlight, want)
			}
			if float64(*f.MeanInFlight) < busy {
				t.Errorf("in flight %v below the engine's busy share %v", *f.MeanInFlight, busy)
			}
			switch {
			case want <= 1 && (f.BusyAtMost == nil || float64(*f.BusyAtMost) < busy):
				t.Errorf("busy at most %v, the engine was busy %v", f.BusyAtMost, busy)
			case want > 1 && f.BusyAtMost != nil:
				t.Errorf("a busy bound from %v in flight", want)
			}
			if f.Utilization != nil {
				t.Errorf("utilization %v from a server that publishes no busy time", *f.Utilization)
			}
			t.Logf("%s: %.3f in flight, engine busy %.3f", name, want, busy)
		})
	}
}

// TestSampledBusyAgainstEngine: over a watch session, the share of scrapes
// that found a request running estimates the engine's busy share, the
// simulator's own time in steps, within sampling error: 600 scrapes a
// second apart against ten minutes of the engine.
func TestSampledBusyAgainstEngine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		users int
		think time.Duration
	}{{"one thinking user", 1, 30 * time.Second}, {"four users", 4, 5 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			s, m, err := users(5, tc.users, tc.think)
			if err != nil {
				t.Fatal(err)
			}
			h := rates.NewHistory(time.Hour)
			var first time.Duration
			for i := 0; i <= 600; i++ {
				s.RunUntil(time.Duration(i) * time.Second)
				if i == 0 {
					first = s.Totals().Busy
				}
				var b bytes.Buffer
				if err := m.WriteText(&b); err != nil {
					t.Fatal(err)
				}
				snap := parse(t, b.Bytes())
				snap.ScrapedAt = s.Now()
				h.Add(snap, s.Now())
			}
			_, figs := h.Section([]time.Duration{10 * time.Minute})
			got := figs["10m"]["busy_sampled"]
			want := (s.Totals().Busy - first).Seconds() / 600
			if got == nil || math.Abs(*got-want) > 0.05 {
				t.Fatalf("sampled busy %v, the engine was busy %.3f", got, want)
			}
			t.Logf("sampled %.3f, engine %.3f", *got, want)
		})
	}
}

// users is the chat scenario driven by n users who think for think between
// requests instead of its own workload.
func users(seed uint64, n int, think time.Duration) (*sim.Sim, *exporter.Metrics, error) {
	cfg, err := sim.Scenario("chat", seed)
	if err != nil {
		return nil, nil, err
	}
	cfg.Epoch = sim.DefaultEpoch
	cfg.Workload.Users, cfg.Workload.ThinkTime, cfg.Workload.Rate = n, think, 0
	s, err := sim.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: sim.DefaultEpoch})
	s.SetRecorder(m)
	return s, m, nil
}
