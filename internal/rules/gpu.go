package rules

import (
	"fmt"
	"io"
	"strings"

	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// gpuAlertDefs are the alerts over dcgm-exporter's names (issue 32), in
// the order of promql.GPU's conditions; each is a note of the report's GPU
// section.
var gpuAlertDefs = []alertDef{
	{id: "gpu_throttled_under_load", name: "GPUThrottledUnderLoad", hold: "5m",
		summary: "GPU clocks held down for power or heat under load",
		clause:  "the card, not the engine, set the pace",
		describe: func(snapshot.Advice, string) string {
			return "the GPUs held their clocks down (power cap, thermal or hardware slowdown) while utilized: the card, not the engine, set the pace; check cooling, and the power limit (nvidia-smi -q -d POWER)"
		}},
	{id: "gpu_xid", name: "GPUXIDError", hold: "",
		summary: "a GPU reported an XID error",
		clause:  "an XID is a GPU or driver fault",
		describe: func(snapshot.Advice, string) string {
			return "the driver reported XID " + count + ": an XID is a GPU or driver fault; look for NVRM Xid lines in the kernel log (dmesg), and NVIDIA's XID catalogue says whether the GPU needs a reset"
		}},
	{id: "gpu_memory_full", name: "GPUMemoryFull", hold: "5m",
		summary: "GPU memory nearly full",
		clause:  "one more allocation (a longer context, CUDA graphs, a second process) fails with out-of-memory",
		describe: func(snapshot.Advice, string) string {
			return "the GPUs' memory is " + percent + " used: one more allocation (a longer context, CUDA graphs, a second process) fails with out-of-memory; leave the engine less of it, or run fewer requests at once"
		}},
}

// GenerateGPU writes the recording rules and alerts over dcgm-exporter's
// names: the GPU section's figures and its alerts, in a set of their own
// (inferscope-gpu-records, inferscope-gpu-alerts) beside a server's.
func GenerateGPU(g *promql.GPU, o Options) (*Set, error) {
	if o.RunbookBase == "" {
		o.RunbookBase = DefaultRunbookBase
	}
	if o.Name == "" {
		o.Name = "inferscope-gpu"
	}
	set := &Set{Dialect: "gpu", Name: o.Name}
	level := strings.Join(g.By(), "_")
	if level == "" {
		level = "all"
	}
	for _, f := range g.Figures() {
		set.Records = append(set.Records, Rule{Record: level + ":" + f.Metric + ":" + f.Op, Expr: f.Expr})
	}
	conds, err := g.Conditions()
	if err != nil {
		return nil, err
	}
	where := location(g.By())
	for i, c := range conds {
		d := gpuAlertDefs[i]
		if d.id != c.ID {
			return nil, fmt.Errorf("GPU condition %s has no alert", c.ID)
		}
		sev, err := severity(c, d)
		if err != nil {
			return nil, err
		}
		set.Alerts = append(set.Alerts, Alert{Condition: c, Clause: d.clause, Rule: Rule{
			Alert: Prefix + d.name, Expr: c.Expr, For: d.hold,
			Labels: map[string]string{"severity": sev, "note_id": c.ID},
			Annotations: map[string]string{
				"summary":     d.summary + " on " + where,
				"description": d.describe(o.Advice, g.Window()),
				"runbook_url": literal(strings.TrimSuffix(o.RunbookBase, "#")) + "#" + c.ID,
			},
		}})
	}
	return set, nil
}

// Beside returns s's file with other sets' groups after its own (the GPU
// rules beside a server's), in one format.
func (s *Set) Beside(w io.Writer, f Format, others ...*Set) error {
	all := *s
	merged := s.File(f)
	for _, o := range others {
		merged.Groups = append(merged.Groups, o.File(f).Groups...)
	}
	if f != Operator {
		return Encode(w, merged)
	}
	return Encode(w, PrometheusRule{
		APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule",
		Metadata: Metadata{Name: all.Name, Labels: map[string]string{
			"app.kubernetes.io/name": "inferscope", "app.kubernetes.io/component": all.Dialect + "-rules",
		}},
		Spec: merged,
	})
}
