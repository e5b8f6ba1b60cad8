package fleet

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/storetest"
)

// The servers issue 28 added, each a store's instance: their fixtures (two
// of them real Dynamo scrapes) backfilled into Prometheus and
// VictoriaMetrics, every counter and histogram rising linearly from 0 ten
// minutes before the end to the fixture's value at it, gauges held. Over
// the last five minutes each rate is the fixture's total over 600 s, by
// the pushdown and the rebuild alike (both), and a ratio is the
// fixture's: the values below are the dialect tests' hand-worked totals
// (internal/dialect/newservers_test.go) divided so.
func TestNewServersBackfilled(t *testing.T) {
	t.Parallel()
	type want struct {
		requests, gen, computed, hitRatio float64 // per second; -1 where the server has none
	}
	wants := map[string]want{
		"testdata/dialects/trtllm-1.2.prom":      {48.0 / 600, -1, -1, -1},
		"testdata/dialects/trtllm-new.prom":      {1000.0 / 600, 250000.0 / 600, 720000.0 / 600, 480000.0 / 1200000},
		"testdata/dialects/lmdeploy-0.12.prom":   {640.0 / 600, 226500.0 / 600, -1, -1},
		"testdata/dialects/lmdeploy-new.prom":    {640.0 / 600, 226500.0 / 600, 622880.0 / 600, 389120.0 / 1012000},
		"testdata/dialects/dynamo-frontend.prom": {1200.0 / 600, 300000.0 / 600, -1, -1},
		// Dynamo's real scrapes: one request through the frontend, two at
		// the TensorRT-LLM worker (finished_reason="length").
		"testdata/real/dynamo-frontend-ce30a76.prom":      {1.0 / 600, 300.0 / 600, -1, -1},
		"testdata/real/dynamo-trtllm-worker-ce30a76.prom": {2.0 / 600, -1, -1, -1},
	}
	end := time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)
	start := end.Add(-10 * time.Minute)
	w := newOM()
	for path := range wants {
		fx := fixtures.All(t, 1, path)[0]
		for at := start; !at.After(end); at = at.Add(15 * time.Second) {
			share := at.Sub(start).Seconds() / end.Sub(start).Seconds()
			for _, p := range promtool.Points(fx.Fams, promtool.Labels{"job": "fx", "instance": filepath.Base(path)}) {
				v := p.Value
				if p.Counter {
					v *= share
				}
				n := p.Labels["__name__"]
				w.add(n, "unknown", n, labelsOf(p), v, at)
			}
		}
	}
	file := filepath.Join(t.TempDir(), "new-servers.om")
	if err := os.WriteFile(file, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: file}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: file})} {
		push, whole := both(t, client(t, s), Options{From: end.Add(-5 * time.Minute), To: end})
		if p := pushed(push); len(p) != len(wants) {
			t.Errorf("%s: pushed down %v, want every instance (%d)", s.Kind, p, len(wants))
		}
		for _, f := range []*Fleet{push, whole} {
			got := byInstance(f)
			for path, wt := range wants {
				in := got["fx/"+filepath.Base(path)]
				if in == nil {
					t.Errorf("%s: %s missing (have %v)", s.Kind, path, keys(got))
					continue
				}
				if in.State != Up || !approx(in.Figures.Seconds, 300) {
					t.Errorf("%s: %s: %s over %v s, want up over 300 s", s.Kind, path, in.State, in.Figures.Seconds)
				}
				for _, c := range []struct {
					id   string
					want float64
				}{{"requests", wt.requests}, {"generation", wt.gen}, {"prompt_computed", wt.computed}, {"prefix_hit_ratio", wt.hitRatio}} {
					v := in.Figures.value(c.id)
					switch {
					case c.want < 0 && v != nil && !math.IsNaN(*v):
						t.Errorf("%s: %s: %s = %v, want none", s.Kind, path, c.id, *v)
					case c.want >= 0 && (v == nil || !approx(*v, c.want)):
						t.Errorf("%s: %s: %s = %v, want %v", s.Kind, path, c.id, deref(v), c.want)
					}
				}
			}
		}
	}
}
