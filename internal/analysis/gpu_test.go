package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func gpuReading(devs ...map[string]float64) *snapshot.GPUs {
	g := &snapshot.GPUs{Kind: snapshot.GPUFromDCGM, Status: snapshot.GPUsRead, Source: "test"}
	for i, d := range devs {
		g.Devices = append(g.Devices, snapshot.GPU{ID: string(rune('0' + i)), Model: "H100", Scalars: d})
	}
	return g
}

func fp(v float64) *float64 { return &v }

func notesOf(r *report.Report) map[string]report.Note {
	out := map[string]report.Note{}
	for _, n := range r.Notes {
		out[n.ID] = n
	}
	return out
}

// Each GPU note fires on a hand-made window that makes it, and not on its
// neighbour that must not; the row it judges takes its colour.
func TestGPUNotes(t *testing.T) {
	vllm := snapshot.Advice{KVFix: "raise gpu_memory_utilization, lower max_model_len, or store the cache as kv_cache_dtype=fp8"}
	decode := map[string]float64{snapshot.PromptSecondsTotal: 10, snapshot.TokensPredictedSecondsTotal: 90, snapshot.TokensPredictedTotal: 9000, snapshot.PromptTokensTotal: 1000}
	cases := []struct {
		name     string
		scalars  map[string]float64 // the engine's gauges
		e        EngineWindow
		g        GPUWindow
		note     string
		fires    bool
		contains string
	}{
		{name: "busy engine idle", scalars: map[string]float64{snapshot.RequestsProcessing: 0},
			e: EngineWindow{Running: fp(0)}, g: GPUWindow{Utilization: fp(0.8)}, note: "gpu_busy_engine_idle", fires: true, contains: "another process"},
		{name: "busy with the engine", e: EngineWindow{Running: fp(3)}, g: GPUWindow{Utilization: fp(0.8)}, note: "gpu_busy_engine_idle"},
		{name: "idle while the engine works", e: EngineWindow{Seconds: 60, Counters: decode}, g: GPUWindow{Utilization: fp(0.05)}, note: "gpu_idle_engine_busy", fires: true},
		{name: "idle and idle", e: EngineWindow{Seconds: 60, Counters: map[string]float64{snapshot.TokensPredictedTotal: 0, snapshot.PromptTokensTotal: 0}}, g: GPUWindow{Utilization: fp(0.05)}, note: "gpu_idle_engine_busy"},
		{name: "bandwidth-bound", e: EngineWindow{Seconds: 60, Counters: decode}, g: GPUWindow{DRAMActive: fp(0.8), TensorActive: fp(0.3)}, note: "gpu_decode_bandwidth_bound", fires: true, contains: "drafter"},
		{name: "prefill-bound is neither", e: EngineWindow{Seconds: 60, Counters: map[string]float64{snapshot.PromptSecondsTotal: 90, snapshot.TokensPredictedSecondsTotal: 10}}, g: GPUWindow{DRAMActive: fp(0.8), TensorActive: fp(0.3)}, note: "gpu_decode_bandwidth_bound"},
		{name: "compute-bound", e: EngineWindow{Seconds: 60, Counters: decode}, g: GPUWindow{DRAMActive: fp(0.4), TensorActive: fp(0.7)}, note: "gpu_decode_compute_bound", fires: true},
		{name: "energy per token", e: EngineWindow{Seconds: 60, Counters: decode}, g: GPUWindow{Label: "the last 1m", Energy: fp(27000), Seconds: 60}, note: "gpu_energy_per_token", fires: true, contains: "3.00 J per generated token"},
		{name: "no energy from one reading", e: EngineWindow{Seconds: 60, Counters: decode}, g: GPUWindow{}, note: "gpu_energy_per_token"},
		{name: "throttled while the queue grew", e: EngineWindow{WaitingStart: fp(2), WaitingEnd: fp(20), Counters: decode}, g: GPUWindow{Throttled: fp(0.5), Reasons: 0x4, Readings: 10}, note: "gpu_throttled_under_load", fires: true, contains: "power cap"},
		{name: "throttled at the fleet window's end", e: EngineWindow{WaitingStart: fp(2), WaitingEnd: fp(20), Counters: decode}, g: GPUWindow{Label: "the last 5m", Throttled: fp(1), Reasons: 0x4, ThrottledAtEnd: true}, note: "gpu_throttled_under_load", fires: true, contains: "(power cap) at the end of the last 5m while the queue grew"},
		{name: "idle bit is no throttle", e: EngineWindow{WaitingStart: fp(2), WaitingEnd: fp(20), Counters: decode}, g: GPUWindow{Throttled: fp(0), Reasons: 0x1, Readings: 10}, note: "gpu_throttled_under_load"},
		{name: "throttled, queue shrank", e: EngineWindow{WaitingStart: fp(20), WaitingEnd: fp(2), Counters: decode}, g: GPUWindow{Throttled: fp(1), Reasons: 0x40, Readings: 10}, note: "gpu_throttled_under_load"},
		{name: "offload holds PCIe", e: EngineWindow{Seconds: 10, Counters: map[string]float64{snapshot.KVOffloadReadBytesTotal: 6e9, snapshot.KVOffloadWrittenBytesTotal: 4e9}}, g: GPUWindow{PCIe: fp(1.5e9)}, note: "gpu_offload_pcie", fires: true},
		{name: "offload a trickle", e: EngineWindow{Seconds: 10, Counters: map[string]float64{snapshot.KVOffloadReadBytesTotal: 1e6, snapshot.KVOffloadWrittenBytesTotal: 1e6}}, g: GPUWindow{PCIe: fp(1.5e9)}, note: "gpu_offload_pcie"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Scalars: c.scalars, Advice: vllm}
			c.g.End = gpuReading(map[string]float64{snapshot.GPUMemoryUsedBytes: 70e9, snapshot.GPUMemoryFreeBytes: 10e9})
			a := &analyzer{s: s, r: &report.Report{}}
			a.gpuSection(c.e, c.g)
			n, fired := notesOf(a.r)[c.note]
			if fired != c.fires {
				t.Fatalf("%s fired %v, want %v: %v", c.note, fired, c.fires, a.r.Notes)
			}
			if c.fires && !strings.Contains(n.Text, c.contains) {
				t.Errorf("%q does not say %q", n.Text, c.contains)
			}
		})
	}
}

// The power shown is the energy counter's where it can be the GPUs' draw,
// else the readings' mean with the note naming the counter's: by hand,
// 8,700 J a second against readings of 435 W is 20 times (the demo fleet at
// its speed), 480 against 400 is their draw, and 900 W with no readings
// is over 1.2 times a 700 W limit.
func TestPowerOf(t *testing.T) {
	cases := []struct {
		name                     string
		counter, readings, limit *float64
		power, fromCounter       *float64
		note                     bool
		contains                 string
	}{
		{name: "counter and readings agree", counter: fp(480), readings: fp(400), limit: fp(700), power: fp(480)},
		{name: "a counter 20 times the readings", counter: fp(8700), readings: fp(435), limit: fp(700), power: fp(435), fromCounter: fp(8700), note: true, contains: "20× the 435 W"},
		{name: "a counter under half the readings", counter: fp(100), readings: fp(435), power: fp(435), fromCounter: fp(100), note: true, contains: "0.23×"},
		{name: "no readings, within the limit", counter: fp(690), limit: fp(700), power: fp(690)},
		{name: "no readings, over the limit", counter: fp(900), limit: fp(700), power: fp(900), fromCounter: fp(900), note: true, contains: "more than their limit of 700 W"},
		{name: "no counter", readings: fp(435), power: fp(435)},
		{name: "neither", power: nil},
	}
	same := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			power, counter := PowerOf(c.counter, c.readings, c.limit)
			if !same(power, c.power) || !same(counter, c.fromCounter) {
				t.Fatalf("PowerOf = %v, %v; want %v, %v", deref(power), deref(counter), deref(c.power), deref(c.fromCounter))
			}
			a := &analyzer{s: &snapshot.Snapshot{}, r: &report.Report{}}
			a.gpuSection(EngineWindow{Seconds: 60}, GPUWindow{Label: "the last 1m", Seconds: 60, Power: power, CounterPower: counter, PowerLimit: c.limit,
				End: gpuReading(map[string]float64{snapshot.GPUMemoryUsedBytes: 70e9, snapshot.GPUMemoryFreeBytes: 10e9})})
			n, fired := notesOf(a.r)["gpu_energy_disagrees"]
			if fired != c.note || (fired && !strings.Contains(n.Text, c.contains)) {
				t.Errorf("gpu_energy_disagrees fired %v (%q), want %v saying %q", fired, n.Text, c.note, c.contains)
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func TestGPUMemoryNotes(t *testing.T) {
	vllm := snapshot.Advice{KVFix: "raise gpu_memory_utilization, lower max_model_len"}
	cases := []struct {
		name      string
		kv        float64
		used, fr  float64
		note      string
		fires     bool
		contains  string
		wantColor report.Severity
	}{
		{"full", 0.5, 79.5, 0.5, "gpu_memory_full", true, "out-of-memory", report.Warn},
		{"not full", 0.5, 70, 10, "gpu_memory_full", false, "", report.None},
		{"headroom", 0.95, 60, 20, "gpu_kv_headroom", true, "raise gpu_memory_utilization", report.Warn},
		{"no headroom", 0.95, 76, 4, "gpu_kv_headroom", false, "", report.None},
		{"room, cache not full", 0.5, 60, 20, "gpu_kv_headroom", false, "", report.None},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Scalars: map[string]float64{snapshot.KVCacheUsageRatio: c.kv}, Advice: vllm}
			s.GPU = gpuReading(map[string]float64{snapshot.GPUMemoryUsedBytes: c.used * 1e9, snapshot.GPUMemoryFreeBytes: c.fr * 1e9})
			r := Analyze(s, Options{})
			n, fired := notesOf(r)[c.note]
			if fired != c.fires || (fired && !strings.Contains(n.Text, c.contains)) {
				t.Fatalf("%s fired %v (%q), want %v", c.note, fired, n.Text, c.fires)
			}
			for _, sec := range r.Sections {
				for _, row := range sec.Rows {
					if sec.ID == "gpu" && row.ID == "memory" && row.Severity != c.wantColor {
						t.Errorf("memory row %q, want %q", row.Severity, c.wantColor)
					}
				}
			}
		})
	}
}

func TestGPUXIDAndNotRead(t *testing.T) {
	s := &snapshot.Snapshot{Scalars: map[string]float64{}}
	s.GPU = gpuReading(map[string]float64{snapshot.GPULastXID: 0}, map[string]float64{snapshot.GPULastXID: 79})
	s.GPU.Devices[1].XIDMessage = "GPU has fallen off the bus"
	r := Analyze(s, Options{})
	if n, ok := notesOf(r)["gpu_xid"]; !ok || n.Severity != report.Bad || !strings.Contains(n.Text, "XID 79 on GPU 1 (GPU has fallen off the bus)") {
		t.Errorf("xid note %+v", n)
	}
	s.GPU = &snapshot.GPUs{Source: "nvidia-smi", Status: snapshot.GPUsFailed, Why: "nvidia-smi is not on PATH"}
	r = Analyze(s, Options{})
	if n, ok := notesOf(r)["gpu_not_read"]; !ok || n.Severity != report.Info || !strings.Contains(n.Text, "not on PATH") {
		t.Errorf("not-read note %+v", n)
	}
	if r.GPU == nil || r.GPU.Status != "failed" {
		t.Errorf("json %+v", r.GPU)
	}
}

// Absent is absent: a reading without a figure has no row and no JSON
// figure for it, never 0; a MIG instance is not counted into the sums.
func TestGPUAbsentAndMIG(t *testing.T) {
	g := gpuReading(map[string]float64{snapshot.GPUPowerWatts: 400, snapshot.GPUUtilization: 0.5},
		map[string]float64{snapshot.GPUPowerWatts: 300})
	g.Devices = append(g.Devices, snapshot.GPU{ID: "0/13", MIG: "1g.10gb", Scalars: map[string]float64{snapshot.GPUPowerWatts: 999, snapshot.GPUUtilization: 1}})
	w := GPUState(g)
	if *w.Power != 700 || *w.Utilization != 0.5 {
		t.Errorf("power %v, utilization %v: the MIG instance or an absent figure was counted", *w.Power, *w.Utilization)
	}
	if w.DRAMActive != nil || w.Energy != nil || w.Throttled != nil {
		t.Error("a figure no device publishes is present")
	}
	if _, _, ok := EnergyPerToken(EngineWindow{Counters: map[string]float64{snapshot.TokensPredictedTotal: 0}}, GPUWindow{Energy: fp(10)}); ok {
		t.Error("energy per token over no token")
	}
	j, tpw, ok := EnergyPerToken(EngineWindow{Counters: map[string]float64{snapshot.TokensPredictedTotal: 400}}, GPUWindow{Energy: fp(100)})
	if !ok || j != 0.25 || math.Abs(tpw-4) > 1e-12 {
		t.Errorf("energy per token %v, %v", j, tpw)
	}
}
