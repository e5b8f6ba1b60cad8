package sim

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// GPUConfig is the simulated GPU under a [Sim] (issue 32): what each kind
// of engine step costs it. A prefill step is compute-heavy (tensor and SM
// busy, memory less so), a decode step bandwidth-heavy (reading weights
// and the KV cache for a few tokens), and an idle GPU draws its idle
// power; so its power, DRAM and SM activity follow the engine's own work.
type GPUConfig struct {
	Model string
	// IdleWatts, PrefillWatts and DecodeWatts are the power drawn idle and
	// during each kind of step; LimitWatts the power limit.
	IdleWatts, PrefillWatts, DecodeWatts, LimitWatts float64
	// MemoryBytes is the device's memory, UsedShare what the engine holds
	// of it (weights and its KV cache, reserved up front).
	MemoryBytes float64
	UsedShare   float64
	// Prefill and Decode are each kind of step's activity shares.
	Prefill, Decode Activity
	// ClockHz and IdleClockHz are the SM clock busy and idle.
	ClockHz, IdleClockHz float64
	// Namespace, Pod and Container are the Kubernetes workload
	// dcgm-exporter's pod mapping gives the GPU to, published as its
	// namespace, pod and container labels (NVIDIA/dcgm-exporter
	// pkg/dcgmexporter/const.go); none where Pod is "".
	Namespace, Pod, Container string
}

// Activity is what a kind of step keeps busy, as shares of its time.
type Activity struct{ SM, DRAM, Tensor float64 }

// DefaultGPU is an H100-like GPU.
func DefaultGPU() GPUConfig {
	return GPUConfig{
		Model: "Simulated H100 80GB", IdleWatts: 70, PrefillWatts: 650, DecodeWatts: 420, LimitWatts: 700,
		MemoryBytes: 80 << 30, UsedShare: 0.92,
		Prefill: Activity{SM: 0.95, DRAM: 0.35, Tensor: 0.85},
		Decode:  Activity{SM: 0.60, DRAM: 0.85, Tensor: 0.25},
		ClockHz: 1980e6, IdleClockHz: 345e6,
	}
}

// EnergyJoules is the energy the GPU used by the end of the run t after
// elapsed of simulated time: the ground truth the GPU's counter
// publishes.
func (c GPUConfig) EnergyJoules(t Totals, elapsed time.Duration) float64 {
	idle := elapsed - t.PrefillBusy - t.DecodeBusy
	return c.IdleWatts*idle.Seconds() + c.PrefillWatts*t.PrefillBusy.Seconds() + c.DecodeWatts*t.DecodeBusy.Seconds()
}

// GPU is a simulated dcgm-exporter beside a [Sim]: its /metrics in
// dcgm-exporter's names and labels. The shares and the power it publishes
// are over the time since its previous scrape (dcgm-exporter's are over
// DCGM's own sample period), its energy a counter since the run began.
type GPU struct {
	s   *Sim
	cfg GPUConfig

	mu   sync.Mutex
	last mark
}

// mark is the run's state at a scrape.
type mark struct {
	at                     time.Duration
	prefill, decode, bytes float64
}

// NewGPU returns the GPU under s.
func NewGPU(s *Sim, c GPUConfig) *GPU { return &GPU{s: s, cfg: c} }

// Config is the GPU's configuration.
func (g *GPU) Config() GPUConfig { return g.cfg }

func offloadBytes(t Totals) float64 {
	o := t.Offload
	return float64(o.Stores+o.Restores) * float64(o.SlotBytes)
}

// WriteText writes the GPU's metrics, as dcgm-exporter does, and makes now
// the start of the next scrape's sample period.
func (g *GPU) WriteText(w io.Writer) error {
	t, el := g.s.Totals(), g.s.Elapsed()
	g.mu.Lock()
	now := mark{at: el, prefill: t.PrefillBusy.Seconds(), decode: t.DecodeBusy.Seconds(), bytes: offloadBytes(t)}
	prev := g.last
	g.last = now
	g.mu.Unlock()
	c := g.cfg
	dt := (now.at - prev.at).Seconds()
	pre, dec := now.prefill-prev.prefill, now.decode-prev.decode
	share := func(p, d float64) float64 {
		if dt <= 0 {
			return 0
		}
		return min(1, (p*pre+d*dec)/dt)
	}
	busy := share(1, 1)
	energy := c.EnergyJoules(t, el)
	power := c.IdleWatts
	if dt > 0 {
		power = (c.IdleWatts*(dt-pre-dec) + c.PrefillWatts*pre + c.DecodeWatts*dec) / dt
	}
	pcie := 0.0
	if dt > 0 {
		pcie = (now.bytes - prev.bytes) / dt
	}
	clock, reasons := c.ClockHz, 0
	if busy == 0 {
		clock, reasons = c.IdleClockHz, 1 // gpu_idle, as a real idle GPU reports
	}
	used := c.MemoryBytes * c.UsedShare
	labels := fmt.Sprintf(`gpu="0",UUID="GPU-5e1f0000-0000-4000-8000-000000000000",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName=%q,Hostname="sim"`, c.Model)
	if c.Pod != "" {
		labels += fmt.Sprintf(`,container=%q,namespace=%q,pod=%q`, c.Container, c.Namespace, c.Pod)
	}
	rows := []struct {
		name, typ, help string
		v               float64
	}{
		{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", clock / 1e6},
		{"DCGM_FI_DEV_MAX_SM_CLOCK", "gauge", "Maximum SM clock frequency (in MHz).", c.ClockHz / 1e6},
		{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 35 + 40*power/c.LimitWatts},
		{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", power},
		{"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).", c.LimitWatts},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", energy * 1000},
		{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 100 * busy},
		{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 100 * share(c.Prefill.DRAM, c.Decode.DRAM)},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask).", float64(reasons)},
		{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0},
		{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", (c.MemoryBytes - used) / (1 << 20)},
		{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", used / (1 << 20)},
		{"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.", share(c.Prefill.SM, c.Decode.SM)},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", share(c.Prefill.Tensor, c.Decode.Tensor)},
		{"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data.", share(c.Prefill.DRAM, c.Decode.DRAM)},
		{"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", pcie / 2},
		{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", pcie / 2},
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %g\n", r.name, r.help, r.name, r.typ, r.name, labels, r.v); err != nil {
			return err
		}
	}
	return nil
}

// ServeHTTP serves the metrics.
func (g *GPU) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = g.WriteText(w)
}
