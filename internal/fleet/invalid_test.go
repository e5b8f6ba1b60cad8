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

// Values that cannot be, in a store: a counter below zero, NaN or
// infinite, a gauge infinite, a fraction above 1 (each a fixture of
// testdata/dialects/invalid, one instance each, beside a valid one). The
// dialect leaves such a series out and names it (invalid_series); the
// store's sums would add it in, so the pushdown finds those instances and
// reads them whole, and its table is the rebuild's.
func TestPushdownReadsInvalidWhole(t *testing.T) {
	t.Parallel()
	names := []string{"counter-inf", "counter-negative", "gauge-inf", "llamacpp-kv-ratio-above-1"}
	w := newOM()
	end := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	for _, name := range append([]string{"../vllm-new"}, names...) {
		fx := fixtures.All(t, 1, filepath.Join("testdata/dialects/invalid", name+".prom"))[0]
		for at := end.Add(-10 * time.Minute); !at.After(end); at = at.Add(time.Minute) {
			for _, p := range promtool.Points(fx.Fams, promtool.Labels{"job": "fx", "instance": name}) {
				n := p.Labels["__name__"]
				w.add(n, "unknown", n, labelsOf(p), p.Value, at)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "invalid.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: path}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: path})} {
		push, whole := both(t, client(t, s), Options{From: end.Add(-DefaultWindow), To: end})
		if p := pushed(push); len(p) != 1 || !p["fx/../vllm-new"] {
			t.Errorf("%s: pushed down: %v, want the valid one alone", s.Kind, p)
		}
		for _, in := range whole.Instances {
			if strings.Contains(in.ID, "vllm-new") {
				continue
			}
			if !slices.Contains(strings.Fields(noteIDs(in)), "invalid_series") {
				t.Errorf("%s: %s: notes %q, want invalid_series", s.Kind, in.ID, noteIDs(in))
			}
		}
	}
}
