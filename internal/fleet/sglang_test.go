package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/storetest"
)

// SGLang's 2026 names and those before them, in a real store: one server
// state in both versions' names (testdata/dialects/sglang-2026.prom and
// sglang-44cedc2.prom), each an instance whose counters rise over ten
// minutes to the fixture's values, 0.4% of them in all (0.2% in the last
// five). The pushdown and the rebuild give the same table (both), and the
// figures are the fixture's, worked out by hand: the queues' totals from
// the priority="" series (which the store keeps without the label), the
// engine's phases, the tiers of hits, the work retractions threw away.
func TestSGLang2026InAStore(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := newOM()
	for _, name := range []string{"sglang-2026", "sglang-44cedc2"} {
		fx := fixtures.All(t, 1, filepath.Join("testdata/dialects", name+".prom"))[0]
		for k := 0; k <= 10; k++ {
			at := end.Add(time.Duration(k-10) * time.Minute)
			// 0.4% below the fixture's value ten minutes before the end.
			scale := 1 - 0.004*float64(10-k)/10
			for _, p := range promtool.Points(fx.Fams, promtool.Labels{"job": "sglang", "instance": name}) {
				n := p.Labels["__name__"]
				v := p.Value
				if p.Counter {
					v *= scale
				}
				w.add(n, "unknown", n, labelsOf(p), v, at)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "sglang.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const window = 300.0
	// The increases over the last five minutes are 0.2% of the fixture's
	// counters; ratios of two are the fixture's own.
	inc := func(v float64) float64 { return 0.002 * v / window }
	both2026 := map[string]float64{
		"engine_busy":    inc(13250),    // (13,230 + 13,270) / 2 s of busy time
		"engine_prefill": inc(2300),     // (2,400 + 2,200) / 2
		"engine_decode":  inc(9750),     // (9,600 + 9,900) / 2
		"retracted":      inc(820000),   // 720,000 prompt + 100,000 generated
		"generation":     inc(17900000), // tokenizer side, is_streaming added
		"requests":       inc(11800),
	}
	wants := map[string]map[string]float64{
		"sglang/sglang-2026": with(both2026, map[string]float64{
			"prompt_computed":    inc(9750000),          // prefill_effective input
			"prefix_hit_ratio":   15550000.0 / 25300000, // device + host + storage of all modes
			"prefix_hit_host":    1250000.0 / 25300000,  // 700,000 + 550,000
			"prefix_hit_storage": 0,
		}),
		"sglang/sglang-44cedc2": with(both2026, map[string]float64{
			"prompt_computed":  inc(10100000),         // realtime prefill_compute, re-counts included
			"prefix_hit_ratio": 15900000.0 / 26000000, // prefill_cache of compute + cache
		}),
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: path}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: path})} {
		push, whole := both(t, client(t, s), Options{From: end.Add(-DefaultWindow), To: end})
		// The older names' library chose num_used_tokens or not by the
		// SWA pool's use (a hybrid model): read whole.
		if p := pushed(push); len(p) != 1 || !p["sglang/sglang-2026"] {
			t.Errorf("%s: pushed down %v, want the 2026 names' instance", s.Kind, p)
		}
		for _, f := range []*Fleet{push, whole} {
			got := byInstance(f)
			for id, rows := range wants {
				in := got[id]
				if in == nil {
					t.Errorf("%s: %s missing (instances %v)", s.Kind, id, keys(got))
					continue
				}
				for row, want := range rows {
					if in.Read == Pushdown && !slices.Contains(tableRows, row) {
						continue // the pushdown reads what the table shows
					}
					_, fig, ok := in.Figures.Rate(row)
					if !ok || fig.Value == nil || !approx(*fig.Value, want) {
						t.Errorf("%s: %s %s %s = %v (%v), want %v", s.Kind, in.Read, id, row, fig.Value, ok, want)
					}
				}
				// 56 running and 19 waiting: the priorities' own series
				// (38 + 18, 2 + 17) not added in.
				if v := in.Figures.Waiting; v == nil || *v != 19 {
					t.Errorf("%s: %s waiting %v, want 19", s.Kind, id, v)
				}
				// 1,640 of 19,500 prompt tokens computed (8.4%) thrown away
				// in the new names' window; 1,640 of 20,200 in the old.
				if ids := strings.Fields(noteIDs(in)); !slices.Contains(ids, "retracted_work") {
					t.Errorf("%s: %s notes %q, want retracted_work", s.Kind, id, ids)
				}
			}
			// The tiers only where the names give them.
			if _, _, ok := got["sglang/sglang-44cedc2"].Figures.Rate("prefix_hit_host"); ok {
				t.Errorf("%s: host hits read from names that have none", s.Kind)
			}
		}
	}
}

// tableRows are the rows among those checked that the table shows.
var tableRows = []string{"prompt_computed", "generation", "requests", "prefix_hit_ratio"}

// with is a copy of base with more added.
func with(base, more map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}
