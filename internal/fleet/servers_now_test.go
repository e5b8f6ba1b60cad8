package fleet

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/storetest"
)

// Issue 28's servers in a store: vLLM at its admission limit
// (vllm-0.32.prom), Aphrodite, TGI 3.3 and a vLLM asleep, backfilled into
// Prometheus and VictoriaMetrics, each counter rising to its fixture value
// as f = (minute + 10) / 20 over ten minutes, so a 5-minute window to the
// end holds a quarter of each (f from 0.75 to 1). The pushdown and the
// rebuild give the same table (both), and the figures are the fixtures'
// values worked out by hand.
func TestServersNowInAStore(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	w := newOM()
	for name, file := range map[string]string{
		"vllm-032": "testdata/dialects/vllm-0.32.prom", "aphrodite": "testdata/dialects/aphrodite.prom",
		"tgi-33": "testdata/dialects/tgi-3.3.prom", "asleep": "testdata/dialects/vllm-asleep.prom",
	} {
		fx := fixtures.All(t, 1, file)[0]
		for m := 0; m <= 10; m++ {
			at := end.Add(time.Duration(m-10) * time.Minute)
			f := float64(m+10) / 20
			for _, p := range promtool.Points(fx.Fams, promtool.Labels{"job": "now", "instance": name}) {
				v := p.Value
				if p.Counter {
					v *= f
				}
				n := p.Labels["__name__"]
				w.add(n, "unknown", n, labelsOf(p), v, at)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "now.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: path}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: path})} {
		api := client(t, s)
		push, whole := both(t, api, Options{From: end.Add(-DefaultWindow), To: end})
		// The alert's own expression, as inferscope rules writes it from
		// vLLM's newest names, over the store: it holds for the vLLM at its
		// limit alone.
		l, err := promql.Newest("vllm", promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := l.Condition("requests_refused")
		if !ok {
			t.Fatal("no requests_refused condition for vLLM")
		}
		v, err := api.Query(context.Background(), c.Expr, end)
		if err != nil {
			t.Fatalf("%s: %v", s.Kind, err)
		}
		if vec, _ := v.(model.Vector); len(vec) != 1 || vec[0].Metric["instance"] != "vllm-032" || !(vec[0].Value > 0) {
			t.Errorf("%s: %s = %v, want vllm-032 alone", s.Kind, c.Expr, v)
		}
		// The table's figures from the pushdown; the rest as --json and
		// --instance read them, whole.
		byID, wholeID := map[string]*Instance{}, map[string]*Instance{}
		for _, in := range push.Instances {
			byID[in.ID] = in
		}
		for _, in := range whole.Instances {
			wholeID[in.ID] = in
		}
		for _, c := range []struct {
			instance, row string
			want          float64
		}{
			{"now/vllm-032", "refused", 312 * 0.25 / 300},                  // 78 refused in 300 s
			{"now/vllm-032", "step_tokens", 2930000.0 / 45000},             // a ratio: the same in any window
			{"now/vllm-032", "offload_read", 120000 * 147456 * 0.25 / 300}, // bytes a second
			{"now/aphrodite", "step_tokens", 2930000.0 / 45000},
			{"now/tgi-33", "engine_busy", (149*0.3 + 9000*0.02) * 0.25 / 300}, // 56.175 s of 300
		} {
			in := wholeID[c.instance]
			if in == nil {
				t.Errorf("%s: no instance %s in %v", s.Kind, c.instance, slices.Collect(func(yield func(string) bool) {
					for id := range byID {
						if !yield(id) {
							return
						}
					}
				}))
				continue
			}
			_, fig, ok := in.Figures.Rate(c.row)
			if !ok || fig.Value == nil || math.Abs(*fig.Value-c.want) > 1e-6*c.want {
				t.Errorf("%s: %s %s = %v (%v), want %v", s.Kind, c.instance, c.row, fig.Value, ok, c.want)
			}
		}
		// The refusals are the window's note on vLLM; Aphrodite has no
		// admission limit; the sleeping engine's state says so.
		if ids := strings.Fields(noteIDs(byID["now/vllm-032"])); !slices.Contains(ids, "requests_refused") {
			t.Errorf("%s: vllm-032 notes %v, want requests_refused", s.Kind, ids)
		}
		if _, fig, ok := byID["now/vllm-032"].Figures.Rate("refused"); !ok || fig.Value == nil || math.Abs(*fig.Value-0.26) > 1e-9 {
			t.Errorf("%s: the pushdown's vllm-032 refused = %v (%v), want 0.26", s.Kind, fig.Value, ok)
		}
		if _, _, ok := wholeID["now/aphrodite"].Figures.Rate("refused"); ok {
			t.Errorf("%s: aphrodite has a refused figure", s.Kind)
		}
		if row, ok := liveRow(byID["now/asleep"], "state"); !ok || !strings.HasPrefix(row, "asleep: weights offloaded to CPU memory") {
			t.Errorf("%s: asleep's state %q", s.Kind, row)
		}
		if row, ok := liveRow(byID["now/vllm-032"], "state"); !ok || row != "64 generating, 16 queued" {
			t.Errorf("%s: vllm-032's state %q", s.Kind, row)
		}
	}
}

// liveRow is an instance's report's Live row value.
func liveRow(in *Instance, id string) (string, bool) {
	if in == nil || in.Report == nil {
		return "", false
	}
	for _, sec := range in.Report.Sections {
		if sec.ID != "live" {
			continue
		}
		for _, r := range sec.Rows {
			if r.ID == id {
				return r.Value, true
			}
		}
	}
	return "", false
}
