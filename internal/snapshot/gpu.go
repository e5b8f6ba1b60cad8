package snapshot

import (
	"math"
	"time"
)

// GPUs is one reading of the GPUs an engine runs on, taken beside its
// scrape (issue 32): a dcgm-exporter's /metrics (or a saved one), AMD's
// device-metrics-exporter, or local nvidia-smi. Like the engine's, its
// quantities are canonical (the GPU names below), each absent where the
// source does not publish it, never 0. It is its own reading, with its own
// time and counters: a GPU's counters (energy) restart with its driver,
// not with the engine, so they are never folded with the engine's.
type GPUs struct {
	// Source is where the reading came from: a URL, a file, or
	// "nvidia-smi" (the command as run).
	Source string
	// Kind is what published it: GPUFromDCGM, GPUFromAMD or GPUFromSMI.
	Kind string
	// At is when the reading was taken (the time a saved file carries).
	At time.Time
	// Status is GPUsRead, or GPUsFailed with Why saying what failed (a
	// source given and not read is said, never left out).
	Status, Why string
	// Devices are the GPUs read, in the source's order; a MIG instance
	// is a device of its own beside its GPU.
	Devices []GPU
	// Missing lists the GPU figures a person would expect that the source
	// does not publish, each with what would publish it.
	Missing []string
	// Invalid lists series whose values cannot be (DCGM's blank values,
	// a share outside 0..1, a negative reading): left out of every figure.
	Invalid []Problem
	// Raw is the source's own text (an exposition, or nvidia-smi's CSV
	// after a header line naming its fields), which --save keeps beside
	// the engine's scrape; nil where there is none.
	Raw []byte
}

// What published a GPU reading: GPUs.Kind.
const (
	GPUFromDCGM = "dcgm"       // NVIDIA's dcgm-exporter
	GPUFromAMD  = "amd"        // AMD's device-metrics-exporter
	GPUFromSMI  = "nvidia-smi" // nvidia-smi --query-gpu, run locally
)

// Whether a GPU reading was had: GPUs.Status.
const (
	GPUsRead   = "read"
	GPUsFailed = "failed"
)

// GPU is one device of a reading.
type GPU struct {
	// ID is the device's index as its source numbers it ("0"); a MIG
	// instance's is its GPU's with the instance ("0/13").
	ID string
	// UUID, Model and Host are as the source labels them; "" where it
	// does not.
	UUID, Model, Host string
	// MIG is a MIG instance's profile ("1g.5gb"); "" for a whole GPU.
	MIG string
	// Namespace, Pod and Container are the Kubernetes workload the
	// exporter says the device is given to (dcgm-exporter's pod mapping);
	// "" where it says none. The fleet joins engines to GPUs by them.
	Namespace, Pod, Container string
	// XIDMessage is the exporter's words for the last XID error
	// (dcgm-exporter's err_msg label), "" where it gives none.
	XIDMessage string
	// Scalars hold the device's figures by their GPU names below.
	Scalars map[string]float64
}

// Scalar returns a device figure and whether it is present and finite.
func (g *GPU) Scalar(name string) (float64, bool) {
	v, ok := g.Scalars[name]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Whole reports whether the device is a whole GPU, not a MIG instance:
// the instance's figures (power, energy, memory) are its GPU's alone.
func (g *GPU) Whole() bool { return g.MIG == "" }

// The GPU names: the keys of GPU.Scalars. Each says its unit and kind, as
// the engine's names do; GPUDeclared looks one up. Shares are fractions
// 0..1 whatever the source's unit (DCGM's utilization is a percent, its
// profiling ratios fractions), bytes are bytes (DCGM's memory is MiB),
// clocks hertz, energy joules.
const (
	// GPUUtilization is a gauge of the share of the last sample period in
	// which a kernel ran on the GPU (DCGM_FI_DEV_GPU_UTIL, nvidia-smi's
	// utilization.gpu, AMD's gpu_gfx_activity): busy at all, not how much
	// of it; a fraction 0..1.
	GPUUtilization = "gpu_utilization_ratio"
	// GPUSMActive is a gauge of the share of cycles an SM had a warp
	// (DCGM_FI_PROF_SM_ACTIVE, profiling module); a fraction 0..1.
	GPUSMActive = "gpu_sm_active_ratio"
	// GPUGraphicsActive is a gauge of the share of time the graphics or
	// compute engine was active (DCGM_FI_PROF_GR_ENGINE_ACTIVE); a
	// fraction 0..1.
	GPUGraphicsActive = "gpu_graphics_active_ratio"
	// GPUDRAMActive is a gauge of the share of cycles the memory interface
	// sent or received data (DCGM_FI_PROF_DRAM_ACTIVE): memory bandwidth
	// in use; a fraction 0..1.
	GPUDRAMActive = "gpu_dram_active_ratio"
	// GPUTensorActive is a gauge of the share of cycles the tensor pipe
	// was active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE); a fraction 0..1.
	GPUTensorActive = "gpu_tensor_active_ratio"
	// GPUMemoryBusy is a gauge of the share of the last sample period in
	// which device memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL,
	// nvidia-smi's utilization.memory, AMD's gpu_umc_activity): a coarse
	// stand-in for DRAM active where profiling is off; a fraction 0..1.
	GPUMemoryBusy = "gpu_memory_busy_ratio"
	// GPUMemoryUsedBytes and GPUMemoryFreeBytes are gauges of device
	// memory in use and free; bytes.
	GPUMemoryUsedBytes = "gpu_memory_used_bytes"
	GPUMemoryFreeBytes = "gpu_memory_free_bytes"
	// GPUMemoryTotalBytes is a gauge of device memory the source says the
	// device has (nvidia-smi's memory.total, AMD's gpu_total_vram); bytes.
	GPUMemoryTotalBytes = "gpu_memory_total_bytes"
	// GPUPowerWatts is a gauge of the power drawn; watts.
	GPUPowerWatts = "gpu_power_watts"
	// GPUPowerLimitWatts is a gauge of the power limit the driver holds
	// the device to (DCGM_FI_DEV_POWER_MGMT_LIMIT, else the enforced
	// limit; nvidia-smi's power.limit); watts.
	GPUPowerLimitWatts = "gpu_power_limit_watts"
	// GPUEnergyJoules is a counter of energy used since the driver loaded
	// (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, in mJ; AMD's
	// gpu_energy_consumed, in µJ); joules.
	GPUEnergyJoules = "gpu_energy_joules_total"
	// GPUSMClockHertz and GPUSMClockMaxHertz are gauges of the SM clock
	// and its maximum (AMD: the system clock, its gfx clock); hertz.
	GPUSMClockHertz    = "gpu_sm_clock_hertz"
	GPUSMClockMaxHertz = "gpu_sm_clock_max_hertz"
	// GPUTemperatureCelsius is a gauge of the GPU's temperature (AMD: the
	// junction, else the edge); degrees Celsius.
	GPUTemperatureCelsius = "gpu_temperature_celsius"
	// GPUThrottleReasons is a gauge of the bitmask of reasons the clocks
	// are held down (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, before 3.2
	// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS; nvidia-smi's
	// clocks_throttle_reasons.active), decoded by ThrottleReasons.
	GPUThrottleReasons = "gpu_throttle_reasons"
	// GPULastXID is a gauge of the last XID error the driver reported,
	// 0 for none (DCGM_FI_DEV_XID_ERRORS); an XID code.
	GPULastXID = "gpu_last_xid"
	// GPUPCIeTxBytesPerSecond and GPUPCIeRxBytesPerSecond are gauges of
	// PCIe traffic out of and into the device over the last sample period
	// (DCGM_FI_PROF_PCIE_TX_BYTES, _RX_BYTES: rates, not counters); bytes
	// per second.
	GPUPCIeTxBytesPerSecond = "gpu_pcie_tx_bytes_per_second"
	GPUPCIeRxBytesPerSecond = "gpu_pcie_rx_bytes_per_second"
	// GPUNVLinkTxBytesPerSecond and GPUNVLinkRxBytesPerSecond are the same
	// for NVLink (DCGM_FI_PROF_NVLINK_TX_BYTES, _RX_BYTES); bytes per
	// second.
	GPUNVLinkTxBytesPerSecond = "gpu_nvlink_tx_bytes_per_second"
	GPUNVLinkRxBytesPerSecond = "gpu_nvlink_rx_bytes_per_second"
	// GPUNVLinkBandwidthTotal is a counter of DCGM's NVLink bandwidth
	// counters over all lanes (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL), in
	// the unit the driver counts; its rate is shown, never as bytes.
	GPUNVLinkBandwidthTotal = "gpu_nvlink_bandwidth_total"
)

// gpuDeclared is every GPU name with its kind.
var gpuDeclared = map[string]Kind{
	GPUUtilization: Gauge, GPUSMActive: Gauge, GPUGraphicsActive: Gauge, GPUDRAMActive: Gauge,
	GPUTensorActive: Gauge, GPUMemoryBusy: Gauge,
	GPUMemoryUsedBytes: Gauge, GPUMemoryFreeBytes: Gauge, GPUMemoryTotalBytes: Gauge,
	GPUPowerWatts: Gauge, GPUPowerLimitWatts: Gauge, GPUEnergyJoules: Counter,
	GPUSMClockHertz: Gauge, GPUSMClockMaxHertz: Gauge, GPUTemperatureCelsius: Gauge,
	GPUThrottleReasons: Gauge, GPULastXID: Gauge,
	GPUPCIeTxBytesPerSecond: Gauge, GPUPCIeRxBytesPerSecond: Gauge,
	GPUNVLinkTxBytesPerSecond: Gauge, GPUNVLinkRxBytesPerSecond: Gauge, GPUNVLinkBandwidthTotal: Counter,
}

// GPUDeclared returns the kind of a GPU name; ok is false for a name not
// declared here.
func GPUDeclared(name string) (k Kind, ok bool) {
	k, ok = gpuDeclared[name]
	return k, ok
}

// GPUShares are the GPU names that hold a fraction 0..1.
var GPUShares = []string{GPUUtilization, GPUSMActive, GPUGraphicsActive, GPUDRAMActive, GPUTensorActive, GPUMemoryBusy}

// A throttle reason: one bit of GPUThrottleReasons, as NVML and DCGM
// number them (nvmlClocksEventReasons; DCGM_CLOCKS_EVENT_REASON_*).
type ThrottleReason struct {
	Bit uint64
	// Name is DCGM's word for it ("power_cap"), as dcgm-exporter labels
	// its clock events; Words says it for a person.
	Name, Words string
	// Limits says the reason holds the clocks down under load (power,
	// heat, a hardware slowdown), where the others are idling or a
	// setting.
	Limits bool
}

// ThrottleReasons are the bits, in order.
var ThrottleReasons = []ThrottleReason{
	{0x1, "gpu_idle", "idle", false},
	{0x2, "clocks_setting", "application clocks setting", false},
	{0x4, "power_cap", "power cap", true},
	{0x8, "hw_slowdown", "hardware slowdown", true},
	{0x10, "sync_boost", "sync boost", false},
	{0x20, "sw_thermal", "software thermal slowdown", true},
	{0x40, "hw_thermal", "hardware thermal slowdown", true},
	{0x80, "hw_power_brake", "hardware power brake", true},
	{0x100, "display_clocks", "display clocks setting", false},
}

// ThrottleLimiting is the mask of the reasons that hold the clocks down
// under load.
var ThrottleLimiting = func() uint64 {
	var m uint64
	for _, r := range ThrottleReasons {
		if r.Limits {
			m |= r.Bit
		}
	}
	return m
}()

// DecodeThrottle returns the reasons set in a bitmask, in order; bits no
// reason names are returned as unknown, their value in unknown.
func DecodeThrottle(mask uint64) (reasons []ThrottleReason, unknown uint64) {
	for _, r := range ThrottleReasons {
		if mask&r.Bit != 0 {
			reasons = append(reasons, r)
			mask &^= r.Bit
		}
	}
	return reasons, mask
}
