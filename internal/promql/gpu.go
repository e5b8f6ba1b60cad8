package promql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// GPU is the PromQL of the GPU figures and alerts over dcgm-exporter's
// names (issue 32): what the rules, the dashboards and (later) the fleet
// read of the GPUs beside the engines, one definition for all. Shares are
// averaged over the GPUs of a group, watts and bytes summed, as the
// report's GPU section does; DCGM's percentages are divided by 100, its
// MiB multiplied out, its energy (mJ) read as a rate in watts. Throttle
// reasons are DCGM's bitmask under either of its names
// (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, before DCGM 3.2
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS).
type GPU struct {
	sel    []Matcher
	by     []string
	window string
}

// DefaultGPUBy are the labels that tell one GPU from another in
// dcgm-exporter's series.
var DefaultGPUBy = []string{"Hostname", "gpu"}

// NewGPU returns the GPU library for o (By nil: DefaultGPUBy).
func NewGPU(o Options) (*GPU, error) {
	w := o.Window
	if w == "" {
		w = DefaultWindow
	}
	if !ValidWindow(w) {
		return nil, fmt.Errorf("window %q is no duration", w)
	}
	by := o.By
	if by == nil {
		by = DefaultGPUBy
	}
	return &GPU{sel: o.Selector, by: by, window: w}, nil
}

// By are the labels the expressions aggregate to.
func (g *GPU) By() []string { return append([]string(nil), g.by...) }

// Window is the range of the windowed expressions.
func (g *GPU) Window() string { return g.window }

func (g *GPU) series(name string) string {
	var ms []string
	for _, m := range g.sel {
		ms = append(ms, m.String())
	}
	if len(ms) == 0 {
		return name
	}
	return name + "{" + strings.Join(ms, ", ") + "}"
}

// throttleSeries matches the throttle bitmask under both names.
func (g *GPU) throttleSeries() string {
	ms := []string{`__name__=~"DCGM_FI_DEV_CLOCKS_EVENT_REASONS|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"`}
	for _, m := range g.sel {
		ms = append(ms, m.String())
	}
	return "{" + strings.Join(ms, ", ") + "}"
}

func (g *GPU) grouping() string {
	if len(g.by) == 0 {
		return ""
	}
	return " by (" + strings.Join(g.by, ", ") + ")"
}

// Limiting is the expression that is 1 for each series whose throttle
// reasons include one that holds the clocks down under load (power, heat,
// a hardware slowdown), 0 otherwise: PromQL has no bitwise and, so each
// bit is floor(x / bit) % 2.
func (g *GPU) Limiting() string {
	var bits []string
	for _, r := range snapshot.ThrottleReasons {
		if r.Limits {
			bits = append(bits, fmt.Sprintf("floor(%s / %d) %% 2", g.throttleSeries(), r.Bit))
		}
	}
	return "clamp_max(" + strings.Join(bits, " + ") + ", 1)"
}

// Figures are the GPU figures as recorded series.
func (g *GPU) Figures() []Figure {
	avg := func(name string, scale float64) string {
		e := "avg" + g.grouping() + " (" + g.series(name) + ")"
		if scale != 1 {
			e += " / " + strconv.FormatFloat(1/scale, 'g', -1, 64)
		}
		return e
	}
	sum := func(name string) string { return "sum" + g.grouping() + " (" + g.series(name) + ")" }
	return []Figure{
		{ID: "gpu/utilization", Title: "GPU utilization", Unit: Ratio, Metric: "inferscope_gpu_utilization", Op: "avg", Expr: avg("DCGM_FI_DEV_GPU_UTIL", 0.01)},
		{ID: "gpu/sm_active", Title: "SM active", Unit: Ratio, Metric: "inferscope_gpu_sm_active", Op: "avg", Expr: avg("DCGM_FI_PROF_SM_ACTIVE", 1)},
		{ID: "gpu/tensor_active", Title: "tensor active", Unit: Ratio, Metric: "inferscope_gpu_tensor_active", Op: "avg", Expr: avg("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1)},
		{ID: "gpu/dram_active", Title: "DRAM active", Unit: Ratio, Metric: "inferscope_gpu_dram_active", Op: "avg", Expr: avg("DCGM_FI_PROF_DRAM_ACTIVE", 1)},
		{ID: "gpu/power", Title: "power, watts", Unit: Factor, Metric: "inferscope_gpu_power_watts", Op: "sum", Expr: sum("DCGM_FI_DEV_POWER_USAGE")},
		{ID: "gpu/energy", Title: "power from the energy counter, watts", Unit: Factor, Metric: "inferscope_gpu_energy_watts", Op: "rate" + g.window,
			Expr: "sum" + g.grouping() + " (rate(" + g.series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") + "[" + g.window + "])) / 1000"},
		{ID: "gpu/memory", Title: "memory used", Unit: Ratio, Metric: "inferscope_gpu_memory_used", Op: "ratio", Expr: g.memoryUsed()},
		{ID: "gpu/throttle", Title: "GPUs held down for power or heat", Unit: Ratio, Metric: "inferscope_gpu_throttled", Op: "avg", Expr: "avg" + g.grouping() + " (" + g.Limiting() + ")"},
		{ID: "gpu/xid", Title: "last XID error", Unit: Count, Metric: "inferscope_gpu_last_xid", Op: "max", Expr: "max" + g.grouping() + " (" + g.series("DCGM_FI_DEV_XID_ERRORS") + ")"},
	}
}

func (g *GPU) memoryUsed() string {
	used := "sum" + g.grouping() + " (" + g.series("DCGM_FI_DEV_FB_USED") + ")"
	free := "sum" + g.grouping() + " (" + g.series("DCGM_FI_DEV_FB_FREE") + ")"
	return used + " / (" + used + " + " + free + ")"
}

// Conditions are the GPU alerts' conditions: throttling under load (the
// GPU held down while at least gpu_busy_engine_idle's busy share utilized),
// an XID, memory nearly full; each with the report's thresholds.
func (g *GPU) Conditions() ([]Condition, error) {
	limit := func(note string, i int) (float64, error) {
		b, ok := analysis.NoteBand(note)
		if !ok || len(b.Limits) <= i {
			return 0, fmt.Errorf("no band makes %s", note)
		}
		return b.Limits[i], nil
	}
	busy, err := limit("gpu_busy_engine_idle", 0)
	if err != nil {
		return nil, err
	}
	full, err := limit("gpu_memory_full", 0)
	if err != nil {
		return nil, err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return []Condition{
		{ID: "gpu_throttled_under_load", Note: true, Unit: Ratio, Value: "the share of the group's GPUs held down",
			Expr:   "avg" + g.grouping() + " (" + g.Limiting() + ") > 0 and on (" + strings.Join(g.by, ", ") + ") avg" + g.grouping() + " (" + g.series("DCGM_FI_DEV_GPU_UTIL") + ") / 100 >= " + f(busy),
			Limits: []float64{0, busy}},
		{ID: "gpu_xid", Note: true, Unit: Count, Value: "the last XID error",
			Expr: "max" + g.grouping() + " (" + g.series("DCGM_FI_DEV_XID_ERRORS") + ") > 0", Limits: []float64{0}},
		{ID: "gpu_memory_full", Note: true, Unit: Ratio, Value: "the share of device memory used",
			Expr: g.memoryUsed() + " >= " + f(full), Limits: []float64{full}},
	}, nil
}

// isGPUNote reports a note one of the GPU's conditions decides.
func isGPUNote(id string) bool {
	g, err := NewGPU(Options{})
	if err != nil {
		return false
	}
	conds, err := g.Conditions()
	if err != nil {
		return false
	}
	for _, c := range conds {
		if c.ID == id {
			return true
		}
	}
	return false
}
