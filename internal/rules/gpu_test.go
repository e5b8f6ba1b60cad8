package rules

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
)

// The GPU alerts, proven by promtool over series in dcgm-exporter's own
// names and labels: each fires where its note would (a GPU power-capped
// at 97% utilization, an XID 79, memory 99% used) and not where it would
// not (a GPU idle with its idle bit set, thermal bits at 20% utilization,
// XID 0, memory 92% used); the old throttle name is read too.
func TestGPURulesPromtool(t *testing.T) {
	tool := promtool.Require(t, "promtool")
	g, err := promql.NewGPU(promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := GenerateGPU(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := set.Write(&b, Prometheus); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu-rules.yml"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "check", "rules", "gpu-rules.yml"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lb := func(name, gpu string) string {
		return name + `{gpu="` + gpu + `",UUID="GPU-` + gpu + `",Hostname="node-1",modelName="NVIDIA H100 80GB HBM3",job="dcgm"}`
	}
	in := []promtool.Input{
		// GPU 0: power-capped (0x4) at 97%: throttled under load.
		{Series: lb("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0"), Values: "4x20"},
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "0"), Values: "97x20"},
		// GPU 1: idle (0x1) and idle: not.
		{Series: lb("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "1"), Values: "1x20"},
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "1"), Values: "0x20"},
		// GPU 2: software thermal (0x20) under the old name, at 20%: not
		// under load.
		{Series: lb("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "2"), Values: "32x20"},
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "2"), Values: "20x20"},
		// GPU 3: hardware thermal (0x40) plus idle bit, at 60%, old name.
		{Series: lb("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "3"), Values: "65x20"},
		{Series: lb("DCGM_FI_DEV_GPU_UTIL", "3"), Values: "60x20"},
		{Series: lb("DCGM_FI_DEV_XID_ERRORS", "0"), Values: "0x20"},
		{Series: lb("DCGM_FI_DEV_XID_ERRORS", "1"), Values: "0 0 79x18"},
		{Series: lb("DCGM_FI_DEV_FB_USED", "0"), Values: "80000x20"},
		{Series: lb("DCGM_FI_DEV_FB_FREE", "0"), Values: "800x20"},
		{Series: lb("DCGM_FI_DEV_FB_USED", "1"), Values: "74000x20"},
		{Series: lb("DCGM_FI_DEV_FB_FREE", "1"), Values: "6435x20"},
	}
	want := func(alert, gpu string, annotations map[string]string) promtool.Alert {
		a, _ := alertNamed(set, alert)
		labels := map[string]string{"Hostname": "node-1", "gpu": gpu}
		for k, v := range a.Labels {
			labels[k] = v
		}
		return promtool.Alert{Labels: labels, Annotations: annotations}
	}
	expand := func(alert, gpu string, value float64) map[string]string {
		a, _ := alertNamed(set, alert)
		out := map[string]string{}
		for k, v := range a.Annotations {
			s, err := Expand(v, map[string]string{"Hostname": "node-1", "gpu": gpu}, value)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = s
		}
		return out
	}
	file := promtool.File{RuleFiles: []string{"gpu-rules.yml"}, EvaluationInterval: "1m", Tests: []promtool.Group{{
		Interval: "1m", InputSeries: in,
		AlertTests: []promtool.AlertTest{
			{EvalTime: "10m", Alertname: "InferscopeGPUThrottledUnderLoad", ExpAlerts: []promtool.Alert{
				want("InferscopeGPUThrottledUnderLoad", "0", expand("InferscopeGPUThrottledUnderLoad", "0", 1)),
				want("InferscopeGPUThrottledUnderLoad", "3", expand("InferscopeGPUThrottledUnderLoad", "3", 1)),
			}},
			{EvalTime: "10m", Alertname: "InferscopeGPUXIDError", ExpAlerts: []promtool.Alert{
				want("InferscopeGPUXIDError", "1", expand("InferscopeGPUXIDError", "1", 79)),
			}},
			{EvalTime: "1m", Alertname: "InferscopeGPUXIDError"},
			{EvalTime: "10m", Alertname: "InferscopeGPUMemoryFull", ExpAlerts: []promtool.Alert{
				want("InferscopeGPUMemoryFull", "0", expand("InferscopeGPUMemoryFull", "0", 80000.0/80800)),
			}},
			// Held 5 minutes: not yet at 3.
			{EvalTime: "3m", Alertname: "InferscopeGPUMemoryFull"},
		},
	}}}
	if _, err := promtool.Write(dir, "gpu_test.yml", file); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "test", "rules", "gpu_test.yml"); err != nil || !strings.Contains(out, "SUCCESS") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func alertNamed(s *Set, name string) (Alert, bool) {
	for _, a := range s.Alerts {
		if a.Alert == name {
			return a, true
		}
	}
	return Alert{}, false
}

// The GPU rules beside a server's, in every format, with a selector and
// other labels: promtool checks them, and vmalert reads its format.
func TestGPURulesFormats(t *testing.T) {
	tool := promtool.Require(t, "promtool")
	vmalert := promtool.Require(t, "vmalert")
	sel, err := promql.ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, o := range []promql.Options{{}, {Selector: sel, By: []string{"namespace", "pod"}, Window: "10m"}} {
		g, err := promql.NewGPU(o)
		if err != nil {
			t.Fatal(err)
		}
		set, err := GenerateGPU(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []Format{Prometheus, VMAlert} {
			var b bytes.Buffer
			if err := set.Write(&b, f); err != nil {
				t.Fatal(err)
			}
			name := string(f) + string(rune('0'+i)) + ".yml"
			if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if f == VMAlert {
				if out, err := promtool.Run(dir, vmalert, "-dryRun", "-loggerLevel=ERROR", "-rule="+name); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				continue
			}
			if out, err := promtool.Run(dir, tool, "check", "rules", name); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
	}
}
