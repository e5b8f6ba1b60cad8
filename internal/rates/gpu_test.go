package rates

import (
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/snapshot"
)

func gpuAt(at time.Time, util, energy, throttle float64) *snapshot.GPUs {
	return &snapshot.GPUs{Status: snapshot.GPUsRead, Kind: snapshot.GPUFromDCGM, At: at, Devices: []snapshot.GPU{{ID: "0", UUID: "u", Scalars: map[string]float64{
		snapshot.GPUUtilization: util, snapshot.GPUEnergyJoules: energy, snapshot.GPUThrottleReasons: throttle, snapshot.GPUPowerWatts: 123,
	}}}}
}

// A watch session's GPU window: the shares' mean over the window's
// readings, the energy counters' increase (a driver restart counted from
// zero), power as that energy over the readings' span, the share of
// readings throttled; worked by hand.
func TestGPUWindowOf(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	readings := []*snapshot.GPUs{
		gpuAt(t0, 0.2, 1000, 0),
		{Status: snapshot.GPUsFailed, Why: "timeout"},
		gpuAt(t0.Add(10*time.Second), 0.6, 4000, 4),
		gpuAt(t0.Add(20*time.Second), 1.0, 500, 1), // the driver restarted: 500 J since
	}
	w := GPUWindowOf(readings, "the last 20s")
	// The first reading's shares are of the time before the window: the
	// means are over the two after it.
	if w.Readings != 2 || w.Seconds != 20 {
		t.Fatalf("readings %d, seconds %g", w.Readings, w.Seconds)
	}
	if math.Abs(*w.Utilization-0.8) > 1e-12 {
		t.Errorf("utilization %g, want (0.6 + 1.0) / 2", *w.Utilization)
	}
	if *w.Energy != 3000+500 {
		t.Errorf("energy %g, want 3500", *w.Energy)
	}
	if *w.Power != 3500.0/20 {
		t.Errorf("power %g", *w.Power)
	}
	if math.Abs(*w.Throttled-1.0/2) > 1e-12 || w.Reasons != 5 {
		t.Errorf("throttled %g, reasons %#x", *w.Throttled, w.Reasons)
	}
	// One reading judges now: no window, no energy.
	one := GPUWindowOf([]*snapshot.GPUs{nil, readings[0]}, "the last 20s")
	if one.Energy != nil || one.Label != "" || one.Readings != 1 {
		t.Errorf("one reading: %+v", one)
	}
	// A GPU at the end with no energy at the start: no energy at all.
	late := gpuAt(t0.Add(30*time.Second), 0.5, 900, 0)
	late.Devices[0].UUID = "v"
	if w := GPUWindowOf([]*snapshot.GPUs{readings[0], late}, "x"); w.Energy != nil {
		t.Errorf("energy %g from a GPU the window's start did not read", *w.Energy)
	}
}

// The watch's trends carry the GPU rows' gauges, a failed reading a gap.
func TestGPUTrends(t *testing.T) {
	h := NewHistory(time.Minute)
	h.SetTrendStep(time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	for i, u := range []float64{0.1, 0.5, math.NaN(), 0.9} {
		s := &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsTotal: float64(i)}}
		s.GPU = gpuAt(t0.Add(time.Duration(i)*time.Second), u, float64(i*100), 0)
		if math.IsNaN(u) {
			s.GPU = &snapshot.GPUs{Status: snapshot.GPUsFailed}
		}
		h.Add(s, t0.Add(time.Duration(i)*time.Second))
	}
	tr := h.Trends()[TrendGPUUtilization]
	if tr == nil || len(tr.Values) != 4 {
		t.Fatalf("trend %+v", tr)
	}
	want := []float64{0.1, 0.5, math.NaN(), 0.9}
	for i, v := range tr.Values {
		if got := float64(v); !(got == want[i] || math.IsNaN(got) && math.IsNaN(want[i])) {
			t.Errorf("value %d = %g, want %g", i, got, want[i])
		}
	}
}
