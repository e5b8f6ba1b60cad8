package promql

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/promql/promtool"
)

// Every GPU figure, evaluated by promtool over series in dcgm-exporter's
// names, against values worked by hand: two GPUs on one node.
func TestGPUFiguresPromtool(t *testing.T) {
	tool := promtool.Require(t, "promtool")
	g, err := NewGPU(Options{})
	if err != nil {
		t.Fatal(err)
	}
	lb := func(name, gpu string) string {
		return name + `{gpu="` + gpu + `",UUID="GPU-` + gpu + `",Hostname="node-1",job="dcgm"}`
	}
	in := []promtool.Input{
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "0"), Values: "97x10"},
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "1"), Values: "50x10"},
		{Series: lb("DCGM_FI_PROF_SM_ACTIVE", "0"), Values: "0.9x10"},
		{Series: lb("DCGM_FI_PROF_SM_ACTIVE", "1"), Values: "0.5x10"},
		{Series: lb("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "0"), Values: "0.6x10"},
		{Series: lb("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "1"), Values: "0.2x10"},
		{Series: lb("DCGM_FI_PROF_DRAM_ACTIVE", "0"), Values: "0.8x10"},
		{Series: lb("DCGM_FI_PROF_DRAM_ACTIVE", "1"), Values: "0.2x10"},
		{Series: lb("DCGM_FI_DEV_POWER_USAGE", "0"), Values: "400x10"},
		{Series: lb("DCGM_FI_DEV_POWER_USAGE", "1"), Values: "300x10"},
		// 1,000,000 mJ a minute each: 16.67 W each.
		{Series: lb("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0"), Values: "0+1000000x10"},
		{Series: lb("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "1"), Values: "5000000+1000000x10"},
		{Series: lb("DCGM_FI_DEV_FB_USED", "0"), Values: "70000x10"},
		{Series: lb("DCGM_FI_DEV_FB_FREE", "0"), Values: "10000x10"},
		{Series: lb("DCGM_FI_DEV_FB_USED", "1"), Values: "40000x10"},
		{Series: lb("DCGM_FI_DEV_FB_FREE", "1"), Values: "40000x10"},
		{Series: lb("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0"), Values: "4x10"},
		{Series: lb("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "1"), Values: "1x10"},
		{Series: lb("DCGM_FI_DEV_XID_ERRORS", "0"), Values: "0x10"},
		{Series: lb("DCGM_FI_DEV_XID_ERRORS", "1"), Values: "79x10"},
	}
	want := map[string]float64{
		"gpu/utilization":   0.735,
		"gpu/sm_active":     0.7,
		"gpu/tensor_active": 0.4,
		"gpu/dram_active":   0.5,
		"gpu/power":         700,
		"gpu/energy":        2 * 1e6 / 60 / 1000,
		"gpu/memory":        110000.0 / 160000,
		"gpu/throttle":      0.5,
		"gpu/xid":           79,
	}
	// Aggregated over both GPUs of the node.
	all, err := NewGPU(Options{By: []string{"Hostname"}})
	if err != nil {
		t.Fatal(err)
	}
	var tests []promtool.ExprTest
	for _, f := range all.Figures() {
		v, ok := want[f.ID]
		if !ok {
			t.Fatalf("no worked value for %s", f.ID)
		}
		tests = append(tests, promtool.ExprTest{Expr: f.Expr, EvalTime: "8m", Samples: []promtool.Sample{{Labels: `{Hostname="node-1"}`, Value: v}}})
	}
	// Per GPU, by the default labels: GPU 0 alone is held down.
	for _, f := range g.Figures() {
		if f.ID == "gpu/throttle" {
			tests = append(tests, promtool.ExprTest{Expr: f.Expr, EvalTime: "8m", Samples: []promtool.Sample{
				{Labels: `{Hostname="node-1", gpu="0"}`, Value: 1}, {Labels: `{Hostname="node-1", gpu="1"}`, Value: 0}}})
		}
	}
	dir := t.TempDir()
	if _, err := promtool.Write(dir, "gpu_test.yml", promtool.File{Tests: []promtool.Group{{Interval: "1m", InputSeries: in, ExprTests: tests}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.yml"), []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "test", "rules", "gpu_test.yml"); err != nil || !strings.Contains(out, "SUCCESS") {
		t.Fatalf("%v\n%s", err, out)
	}
}
