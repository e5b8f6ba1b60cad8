// Package layers holds one test: that inferscope's packages import only
// packages of a lower layer, so the pipeline reads one way (ARCHITECTURE.md).
package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/inferscope/inferscope/"

// layer ranks every package: a package may import only packages of a lower
// rank. A new package must be given one here, which is the point: where it
// sits in the pipeline is a decision, not an accident.
var layer = map[string]int{
	"internal/termsafe": 0, "internal/units": 0, "internal/histogram": 0, "internal/iostreams": 0,
	"internal/golden": 0, "internal/testwait": 0, "internal/jsondoc": 0, "exporter": 0, "internal/version": 0,
	"internal/snapshot": 1, "internal/report": 1, "internal/exposition": 1, "sim": 1,
	"internal/storetest": 1, "internal/proxy/proxytest": 0,
	"internal/dialect": 2, "internal/analysis": 2, "internal/render": 2, "internal/rates/ratestest": 2,
	"internal/rates": 3, "internal/demo": 3, "internal/fixtures": 3,
	"internal/watch": 4, "internal/fleet": 4,
	"internal/cli": 7, "internal/surfaces": 7,
	"cmd/inferscope":  8,
	"internal/layers": 9, "internal/doctest": 9,

	// Issue 19: one HTTP policy under everything that fetches.
	"internal/httpsafe/hostiletest": 0, "internal/httpsafe": 1,
	"internal/scrape": 2, "internal/promapi": 2, "internal/proxy": 2,

	// Issue 13: PromQL, alert rules and dashboards.
	"internal/promql/promtool": 0, "internal/promql": 3, "internal/promql/promqltest": 4,
	"internal/rules": 4, "internal/dashboard": 4,

	// Issue 22: one sparkline renderer for every trend.
	"internal/spark": 0, "internal/slots": 2,

	// Issue 28: servers found without a target.
	"internal/discover": 3, "internal/discover/discovertest": 0,
	// Issue 29: the bench. One reader of answer streams under the proxy
	// and the generator.
	"internal/stream": 1, "internal/bench/workload": 2, "internal/bench/load": 3, "internal/bench/benchtest": 3,
	// One run end to end: the generator, the server's window, the report.
	"internal/bench": 4,
	// Issue 30: a series of runs, the knee under an SLO, two runs compared.
	"internal/bench/sweep": 5,
	// Issue 32: the GPUs beside the engine (dcgm-exporter, AMD's exporter,
	// nvidia-smi), read through the scrape.
	"internal/gpu": 3,
	// Issue 30: the page to look at, its charts drawn by our own package;
	// above the runs, sweeps and probes it draws (cli moved up to 7).
	"internal/chart": 0, "internal/bench/page": 6,
	// Issue 30: prefill and decode speeds under control.
	"internal/bench/probe": 4,
}

func TestImportsGoDown(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		rank, ok := layer[name]
		if !ok {
			t.Errorf("%s has no layer: add it to the table in this test (and ARCHITECTURE.md)", name)
			continue
		}
		seen++
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if r, ok := layer[dep]; ok && r >= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go down only", name, rank, dep, r)
			}
		}
	}
	if seen < 15 {
		t.Fatalf("go list found %d packages", seen)
	}
}
