package sim_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/sim"
)

// Run the agent scenario for a minute of virtual time behind an exporter and
// read figures from its exposition: every request shares a 30,000-token
// prefix, so once the first has computed it most prompt tokens are cached.
func Example() {
	cfg, err := sim.Scenario("agent", 1)
	if err != nil {
		panic(err)
	}
	s, err := sim.New(cfg)
	if err != nil {
		panic(err)
	}
	m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: s.Epoch()})
	s.SetRecorder(m)

	s.Run(time.Minute)

	var text bytes.Buffer
	if err := m.WriteText(&text); err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(&text)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), " ")
		switch name {
		case "tabbyapi:requests_total", "tabbyapi:prefix_cache_queries", "tabbyapi:prefix_cache_hits":
			fmt.Println(name, value)
		}
	}
	t := s.Totals()
	fmt.Printf("hit ratio %.3f\n", float64(t.CachedTokens)/float64(t.PromptTokens))
	// Output:
	// tabbyapi:prefix_cache_hits 763904
	// tabbyapi:prefix_cache_queries 896000
	// tabbyapi:requests_total 28
	// hit ratio 0.853
}
