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

// DeviceLabels are the labels that tell one GPU in a store from another
// and say whose it is, which the fleet groups the GPU window's readings by
// (NewGPU's By) and joins to the engines on: dcgm-exporter's device labels
// (gpu, UUID, modelName, Hostname, a MIG instance's GPU_I_PROFILE and
// GPU_I_ID), the Kubernetes pod its pod mapping gives the device to
// (namespace, pod, container: NVIDIA/dcgm-exporter
// pkg/dcgmexporter/const.go, commit 7ec7bb75c2758ca8944853d633c471c2b69c616e;
// pod_namespace, pod_name, container_name under
// --kubernetes-use-old-namespace; exported_namespace, exported_pod,
// exported_container where Prometheus renamed them beside its own target
// labels of the exporter's pod), and the scrape target.
var DeviceLabels = []string{"Hostname", "gpu", "UUID", "modelName", "GPU_I_PROFILE", "GPU_I_ID",
	"namespace", "pod", "container", "pod_namespace", "pod_name", "container_name",
	"exported_namespace", "exported_pod", "exported_container", "job", "instance"}

// DeviceID are the labels that tell one GPU from another as its exporter
// is scraped, without whom it is given to: the fleet's figures of a GPU
// over a window are grouped by them (half the labels of DeviceLabels in
// each answer), and joined to its DeviceLabels by their values.
var DeviceID = []string{"Hostname", "gpu", "UUID", "GPU_I_ID", "job", "instance"}

// DeviceFamilies are dcgm-exporter's families the fleet reads of each GPU
// over a window: the shares and rates it means over the window (Mean),
// the gauges it reads at the window's end (End: the state now, memory,
// power, limits, clocks, temperature, throttle reasons, XID; and
// utilization, which every exporter publishes), and the
// energy counter. internal/gpu maps each onto its GPU name.
var DeviceFamilies = struct {
	Mean, End []string
	Energy    string
}{
	Mean: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
		"DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
		"DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"},
	End: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_TOTAL",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MAX_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_XID_ERRORS"},
	Energy: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
}

// The GPU window of each device, as a store computes it (the fleet's
// pushdown; its whole read computes the same from raw samples):

// DeviceLast is a family's newest sample of each GPU at an instant (the
// largest where the GPU's labels hold several series), with the words of
// the last XID (err_msg) where the family is DCGM_FI_DEV_XID_ERRORS: each
// GPU's reading at the window's end, which the fleet reads as a scrape of
// the exporter.
func (g *GPU) DeviceLast(family string) string {
	by := g.grouping()
	if family == "DCGM_FI_DEV_XID_ERRORS" && len(g.by) > 0 {
		by = " by (" + strings.Join(append(append([]string(nil), g.by...), "err_msg"), ", ") + ")"
	}
	return "max" + by + " (" + g.series(family) + ")"
}

// DeviceMean is a family's mean over the window for each GPU (of its raw
// samples in the window, as avg_over_time takes them), in the family's
// own unit.
func (g *GPU) DeviceMean(family string) string {
	return "avg" + g.grouping() + " (avg_over_time(" + g.series(family) + "[" + g.window + "]))"
}

// DeviceEnergy is each GPU's energy counter (mJ) at an instant, and
// DeviceEnergyAt when its newest sample there was taken: the window's
// energy is the difference of two readings (never increase(), which
// extrapolates), over the time between their samples.
func (g *GPU) DeviceEnergy() string {
	return "max" + g.grouping() + " (" + g.series(DeviceFamilies.Energy) + ")"
}

// DeviceEnergyAt is the time of each GPU's newest energy sample.
func (g *GPU) DeviceEnergyAt() string {
	return "max" + g.grouping() + " (timestamp(" + g.series(DeviceFamilies.Energy) + "))"
}

// DeviceEnergyResets counts each GPU's energy counter's restarts over
// rng (a driver reload): where any, the difference of two readings is not
// the window's energy, and the GPU is read from raw samples.
func (g *GPU) DeviceEnergyResets(rng string) string {
	return "max" + g.grouping() + " (resets(" + g.series(DeviceFamilies.Energy) + "[" + rng + "]))"
}

// DeviceRaw is every DCGM series of the matchers (one GPU's labels) over
// a range ending at the query's time: the whole read's raw samples.
func DeviceRaw(matchers []Matcher, rng string) string {
	ms := []string{`__name__=~"` + strings.Join(uniq(append(append([]string(nil), DeviceFamilies.End...), DeviceFamilies.Mean...)), "|") + `"`}
	for _, m := range matchers {
		ms = append(ms, m.String())
	}
	return "{" + strings.Join(ms, ", ") + "}[" + rng + "]"
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
