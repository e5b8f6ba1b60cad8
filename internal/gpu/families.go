package gpu

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// ErrNotGPU is returned for families that are neither dcgm-exporter's nor
// AMD's device-metrics-exporter's.
var ErrNotGPU = errors.New("no GPU metrics: neither dcgm-exporter's DCGM_FI_* series nor AMD device-metrics-exporter's gpu_* series")

const mib = 1 << 20

// field is how one family is read: into which GPU name, times what.
type field struct {
	name  string
	scale float64
	// share: a fraction after scaling, 0..1 (a little above is rounding).
	share bool
	// counter: the value is a running total (no int32 blank can be told
	// from a real value of it).
	counter bool
	// only is a label the series must carry with this value (AMD's
	// gpu_clock{clock_type="system"}).
	onlyLabel, onlyValue string
}

// dcgmFields maps dcgm-exporter's families (DCGM's field names) onto GPU
// names. Where two fields give one figure, the first listed wins
// (preferred).
var dcgmFields = []struct {
	family string
	field
}{
	{"DCGM_FI_DEV_GPU_UTIL", field{name: snapshot.GPUUtilization, scale: 0.01, share: true}},
	{"DCGM_FI_PROF_SM_ACTIVE", field{name: snapshot.GPUSMActive, scale: 1, share: true}},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", field{name: snapshot.GPUGraphicsActive, scale: 1, share: true}},
	{"DCGM_FI_PROF_DRAM_ACTIVE", field{name: snapshot.GPUDRAMActive, scale: 1, share: true}},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", field{name: snapshot.GPUTensorActive, scale: 1, share: true}},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", field{name: snapshot.GPUMemoryBusy, scale: 0.01, share: true}},
	{"DCGM_FI_DEV_FB_USED", field{name: snapshot.GPUMemoryUsedBytes, scale: mib}},
	{"DCGM_FI_DEV_FB_FREE", field{name: snapshot.GPUMemoryFreeBytes, scale: mib}},
	{"DCGM_FI_DEV_FB_TOTAL", field{name: snapshot.GPUMemoryTotalBytes, scale: mib}},
	{"DCGM_FI_DEV_POWER_USAGE", field{name: snapshot.GPUPowerWatts, scale: 1}},
	{"DCGM_FI_DEV_POWER_MGMT_LIMIT", field{name: snapshot.GPUPowerLimitWatts, scale: 1}},
	{"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", field{name: snapshot.GPUPowerLimitWatts, scale: 1}},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", field{name: snapshot.GPUEnergyJoules, scale: 0.001, counter: true}},
	{"DCGM_FI_DEV_SM_CLOCK", field{name: snapshot.GPUSMClockHertz, scale: 1e6}},
	{"DCGM_FI_DEV_MAX_SM_CLOCK", field{name: snapshot.GPUSMClockMaxHertz, scale: 1e6}},
	{"DCGM_FI_DEV_GPU_TEMP", field{name: snapshot.GPUTemperatureCelsius, scale: 1}},
	{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", field{name: snapshot.GPUThrottleReasons, scale: 1}},
	{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", field{name: snapshot.GPUThrottleReasons, scale: 1}},
	{"DCGM_FI_DEV_XID_ERRORS", field{name: snapshot.GPULastXID, scale: 1}},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", field{name: snapshot.GPUPCIeTxBytesPerSecond, scale: 1}},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", field{name: snapshot.GPUPCIeRxBytesPerSecond, scale: 1}},
	{"DCGM_FI_PROF_NVLINK_TX_BYTES", field{name: snapshot.GPUNVLinkTxBytesPerSecond, scale: 1}},
	{"DCGM_FI_PROF_NVLINK_RX_BYTES", field{name: snapshot.GPUNVLinkRxBytesPerSecond, scale: 1}},
	{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", field{name: snapshot.GPUNVLinkBandwidthTotal, scale: 1, counter: true}},
}

// amdFields maps AMD's device-metrics-exporter families onto GPU names:
// only those whose meaning is DCGM's (docs/gpu.md says which).
var amdFields = []struct {
	family string
	field
}{
	{"gpu_gfx_activity", field{name: snapshot.GPUUtilization, scale: 0.01, share: true}},
	{"gpu_umc_activity", field{name: snapshot.GPUMemoryBusy, scale: 0.01, share: true}},
	{"gpu_power_usage", field{name: snapshot.GPUPowerWatts, scale: 1}},
	{"gpu_energy_consumed", field{name: snapshot.GPUEnergyJoules, scale: 1e-6, counter: true}},
	{"gpu_used_vram", field{name: snapshot.GPUMemoryUsedBytes, scale: mib}},
	{"gpu_free_vram", field{name: snapshot.GPUMemoryFreeBytes, scale: mib}},
	{"gpu_total_vram", field{name: snapshot.GPUMemoryTotalBytes, scale: mib}},
	{"gpu_junction_temperature", field{name: snapshot.GPUTemperatureCelsius, scale: 1}},
	{"gpu_edge_temperature", field{name: snapshot.GPUTemperatureCelsius, scale: 1}},
	{"gpu_clock", field{name: snapshot.GPUSMClockHertz, scale: 1e6, onlyLabel: "clock_type", onlyValue: "system"}},
	{"gpu_max_clock", field{name: snapshot.GPUSMClockMaxHertz, scale: 1e6, onlyLabel: "clock_type", onlyValue: "system"}},
}

// labels say which device a series is of, per source.
type labels struct {
	id, uuid, model, host, migProfile, migID string
}

var (
	dcgmLabels = labels{id: "gpu", uuid: "UUID", model: "modelName", host: "Hostname", migProfile: "GPU_I_PROFILE", migID: "GPU_I_ID"}
	amdLabels  = labels{id: "gpu_id", uuid: "gpu_uuid", model: "card_model", host: "hostname", migID: "gpu_partition_id"}
)

// FromFamilies reads a dcgm-exporter's or an AMD device-metrics-exporter's
// families into a reading (Source, At and Status are the caller's); an
// error wrapping [ErrNotGPU] where the families are neither's.
func FromFamilies(fams []*dto.MetricFamily) (*snapshot.GPUs, error) {
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	series := func(family string) []sample {
		f := byName[family]
		if f == nil {
			return nil
		}
		out := make([]sample, len(f.GetMetric()))
		for i, m := range f.GetMetric() {
			v, ok := value(m)
			out[i] = sample{labels: labelMap(m), value: v, ok: ok, textOf: func() string { return labelText(m) }}
		}
		return out
	}
	switch {
	case hasPrefix(fams, "DCGM_FI_"):
		g := read(series, snapshot.GPUFromDCGM, dcgmFields, dcgmLabels)
		g.Missing = append(g.Missing, dcgmMissing(g)...)
		return g, nil
	case byName["gpu_gfx_activity"] != nil || byName["gpu_used_vram"] != nil || byName["gpu_power_usage"] != nil:
		g := read(series, snapshot.GPUFromAMD, amdFields, amdLabels)
		g.Missing = append(g.Missing, amdMissing...)
		return g, nil
	}
	return nil, fmt.Errorf("%w", ErrNotGPU)
}

// A Series is one dcgm-exporter series' value: its family, the device's
// labels (gpu, UUID, modelName, Hostname, the MIG and pod mapping's
// labels; err_msg of an XID), its value. The fleet reads a store's
// newest samples of its GPUs as these.
type Series struct {
	Family string
	Labels map[string]string
	Value  float64
}

// FromDCGMSeries reads dcgm-exporter's series into a reading as
// FromFamilies reads a scrape of it (Source, At and Status are the
// caller's).
func FromDCGMSeries(ss []Series) *snapshot.GPUs {
	byFamily := map[string][]sample{}
	for _, x := range ss {
		t := func() string {
			parts := []string{"gpu=" + strconv.Quote(x.Labels["gpu"])}
			if id := x.Labels["GPU_I_ID"]; id != "" {
				parts = append(parts, "GPU_I_ID="+strconv.Quote(id))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
		byFamily[x.Family] = append(byFamily[x.Family], sample{labels: x.Labels, value: x.Value, ok: !math.IsNaN(x.Value), textOf: t})
	}
	g := read(func(f string) []sample { return byFamily[f] }, snapshot.GPUFromDCGM, dcgmFields, dcgmLabels)
	g.Missing = append(g.Missing, dcgmMissing(g)...)
	return g
}

// sample is one series of a family as read computes it.
type sample struct {
	labels map[string]string
	value  float64
	ok     bool
	// textOf names the series in a problem (its device's labels), made
	// only where one is.
	textOf func() string
}

func (x *sample) name() string { return x.textOf() }

func hasPrefix(fams []*dto.MetricFamily, prefix string) bool {
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), prefix) {
			return true
		}
	}
	return false
}

// read reads every mapped family, device by device.
func read(series func(family string) []sample, kind string, fields []struct {
	family string
	field
}, lb labels) *snapshot.GPUs {
	g := &snapshot.GPUs{Kind: kind}
	devices := map[string]*snapshot.GPU{}
	var order []string
	for _, fd := range fields {
		ms := series(fd.family)
		for i := range ms {
			m := &ms[i]
			lv := m.labels
			if fd.onlyLabel != "" && !strings.EqualFold(lv[fd.onlyLabel], fd.onlyValue) {
				continue
			}
			key, dev := deviceOf(lv, lb)
			d := devices[key]
			if d == nil {
				d = dev
				devices[key] = d
				order = append(order, key)
			}
			if _, done := d.Scalars[fd.name]; done {
				continue // an earlier field, or an earlier series, gave it
			}
			v, ok := m.value, m.ok
			if !ok {
				continue
			}
			if blank(v, fd.counter) {
				g.Invalid = append(g.Invalid, snapshot.Problem{Series: fd.family + m.name(), Reason: "it is DCGM's blank value (not supported, not found or not permitted on this device)"})
				continue
			}
			v *= fd.scale
			if why := implausible(v, fd.field); why != "" {
				g.Invalid = append(g.Invalid, snapshot.Problem{Series: fd.family + m.name(), Reason: why})
				continue
			}
			if fd.share {
				v = math.Min(v, 1)
			}
			d.Scalars[fd.name] = v
			if fd.name == snapshot.GPULastXID && v != 0 {
				d.XIDMessage = lv["err_msg"]
			}
		}
	}
	for _, k := range order {
		g.Devices = append(g.Devices, *devices[k])
	}
	sort.SliceStable(g.Devices, func(i, j int) bool { return lessID(g.Devices[i].ID, g.Devices[j].ID) })
	return g
}

// deviceOf is the device a series' labels name, and its key.
func deviceOf(lv map[string]string, lb labels) (string, *snapshot.GPU) {
	d := &snapshot.GPU{
		ID: lv[lb.id], UUID: lv[lb.uuid], Model: lv[lb.model], Host: lv[lb.host],
		Namespace: lv["namespace"], Pod: lv["pod"], Container: lv["container"],
		Scalars: map[string]float64{},
	}
	if d.Host == "" {
		d.Host = lv["hostname"]
	}
	if lb.migProfile != "" && lv[lb.migID] != "" {
		d.MIG = lv[lb.migProfile]
		if d.MIG == "" {
			d.MIG = "instance"
		}
		d.ID += "/" + lv[lb.migID]
	}
	if d.ID == "" {
		d.ID = d.UUID
	}
	return d.Host + "\x00" + d.UUID + "\x00" + d.ID, d
}

// lessID orders device ids numerically where they are numbers ("2" before
// "10"), MIG instances after their GPU.
func lessID(a, b string) bool {
	na, ra := leadingInt(a)
	nb, rb := leadingInt(b)
	if na != nb {
		return na < nb
	}
	return ra < rb
}

func leadingInt(s string) (int, string) {
	n, i := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 9 {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 {
		return math.MaxInt32, s
	}
	return n, s[i:]
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func labelText(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if l.GetName() == "gpu" || l.GetName() == "gpu_id" || l.GetName() == "GPU_I_ID" {
			parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	case m.Untyped != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	return v, !math.IsNaN(v)
}

// DCGM's blank values (dcgm_structs.h): a field not supported, not found
// or not permitted is published by older exporters as these numbers, which
// are no readings. The int32 ones can be a real count (energy in mJ), so
// only a reading that cannot reach them is judged by them.
const (
	int32Blank = 0x7ffffff0
	int64Blank = 0x7ffffffffffffff0
	fp64Blank  = 140737488355328.0 // 2^47
)

func blank(v float64, counter bool) bool {
	switch {
	case v >= int64Blank: // float64 rounds all four to 2^63
		return true
	case v >= fp64Blank && v <= fp64Blank+3:
		return true
	case !counter && v >= int32Blank && v <= int32Blank+3:
		return true
	}
	return false
}

// implausible says why a reading cannot be, "" when it can.
func implausible(v float64, f field) string {
	switch {
	case math.IsInf(v, 0):
		return "it is infinite"
	case v < 0:
		return "it is below zero"
	case f.share && v > 1.01:
		return fmt.Sprintf("a share of %.3g is above 1", v)
	}
	return ""
}

// dcgmMissing says, in one line, which figures no device has and the
// counters-file lines that would publish them.
// DCGMMissing says what FromFamilies says dcgm-exporter's reading g
// lacks (GPUs.Missing), for a reading whose figures were added to after
// it was read (the fleet's: its means over a window beside the end's).
func DCGMMissing(g *snapshot.GPUs) []string { return dcgmMissing(g) }

func dcgmMissing(g *snapshot.GPUs) []string {
	need := []struct{ name, what, field string }{
		{snapshot.GPUSMActive, "SM active", "DCGM_FI_PROF_SM_ACTIVE"},
		{snapshot.GPUDRAMActive, "DRAM active", "DCGM_FI_PROF_DRAM_ACTIVE"},
		{snapshot.GPUTensorActive, "tensor active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"},
		{snapshot.GPUPCIeTxBytesPerSecond, "PCIe traffic", "DCGM_FI_PROF_PCIE_TX_BYTES, _RX_BYTES"},
		{snapshot.GPUPowerLimitWatts, "power limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"},
		{snapshot.GPUEnergyJoules, "energy", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
		{snapshot.GPUSMClockMaxHertz, "SM clock maximum", "DCGM_FI_DEV_MAX_SM_CLOCK"},
		{snapshot.GPUThrottleReasons, "throttle reasons", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"},
	}
	var what, fields []string
	profiling := false
	for _, n := range need {
		if !anyHas(g, n.name) {
			what = append(what, n.what)
			fields = append(fields, n.field)
			profiling = profiling || strings.HasPrefix(n.field, "DCGM_FI_PROF_")
		}
	}
	if len(what) == 0 {
		return nil
	}
	out := []string{strings.Join(what, ", ") + ": add " + strings.Join(fields, ", ") + " to dcgm-exporter's counters file (-f)"}
	if profiling {
		out = append(out, "DCGM_FI_PROF_* fields need DCGM's profiling module (datacenter GPUs)")
	}
	return out
}

var amdMissing = []string{
	"SM, DRAM and tensor activity: AMD's exporter publishes no counterpart (gpu_umc_activity, memory busy, is shown instead)",
	"throttle reasons and XID errors: AMD's exporter publishes no counterpart",
}

func anyHas(g *snapshot.GPUs, name string) bool {
	for i := range g.Devices {
		if _, ok := g.Devices[i].Scalar(name); ok {
			return true
		}
	}
	return false
}

// DCGMValue reads one value of a dcgm-exporter family as the reading
// does (the fleet reads the store's means and raw samples by it): the
// GPU name it is read into and its value in that name's unit; why says
// why it is no reading (DCGM's blank value, one that cannot be); name is
// "" for a family not read.
func DCGMValue(family string, raw float64) (name string, v float64, why string) {
	for _, fd := range dcgmFields {
		if fd.family != family {
			continue
		}
		if blank(raw, fd.counter) {
			return fd.name, 0, "it is DCGM's blank value (not supported, not found or not permitted on this device)"
		}
		v = raw * fd.scale
		if why := implausible(v, fd.field); why != "" {
			return fd.name, 0, why
		}
		if fd.share {
			v = math.Min(v, 1)
		}
		return fd.name, v, ""
	}
	return "", 0, ""
}
