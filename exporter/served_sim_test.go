package exporter_test

import (
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/sim"
)

// TestServedMatchesGeneralSim: on every simulator scenario after ten
// simulated minutes, with the simulator as the engine, the handler answers
// every scraper exactly as the general path does (see checkServed).
func TestServedMatchesGeneralSim(t *testing.T) {
	for _, name := range sim.Scenarios() {
		t.Run(name, func(t *testing.T) {
			cfg, err := sim.Scenario(name, 1)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A patient wait: a scrape that gave up on the engine would
			// count a failure, and the two paths would differ by it.
			m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: s.Epoch(), LiveTimeout: time.Minute})
			s.SetRecorder(m)
			s.Run(10 * time.Minute)
			exporter.CheckServed(t, m)
		})
	}
}
