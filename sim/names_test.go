package sim_test

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The exporter's metric set is the canonical set: every family it serves,
// in every scenario, is a name package snapshot declares, as the kind it
// declares. (What the dialect reads from it, dialect's tests check.)
func TestExporterNamesDeclared(t *testing.T) {
	kinds := map[dto.MetricType]snapshot.Kind{
		dto.MetricType_COUNTER: snapshot.Counter, dto.MetricType_GAUGE: snapshot.Gauge, dto.MetricType_HISTOGRAM: snapshot.Histogram,
	}
	for _, name := range []string{"chat", "spec", "offload-thrash", "hybrid"} {
		sv := serve(t, name, 1)
		sv.sim.RunUntil(2 * time.Minute)
		fams, err := exposition.Parse(sv.text(t), exposition.Text)
		if err != nil {
			t.Fatal(err)
		}
		if len(fams) < 50 {
			t.Fatalf("%s: %d families: not the whole metric set", name, len(fams))
		}
		for _, mf := range fams {
			base, ok := strings.CutPrefix(mf.GetName(), "tabbyapi:")
			if !ok {
				t.Errorf("%s: family %s outside the namespace", name, mf.GetName())
				continue
			}
			if d, ok := snapshot.Declared(base); !ok || d.Extra || d.Kind != kinds[mf.GetType()] {
				t.Errorf("%s: the exporter serves %s as a %s; snapshot declares %q as %+v (declared %v)",
					name, mf.GetName(), strings.ToLower(mf.GetType().String()), base, d, ok)
			}
		}
	}
}
