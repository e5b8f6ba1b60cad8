package rates

import (
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// GPUWindowOf is the GPUs' window over readings, oldest first (failed
// readings and nil skipped): each share's mean over the readings after the
// first (whose shares are of the time before), the energy counters'
// increase from the first reading to the last (a fall is
// the driver's counter restarting: counted from zero, as rate() does), the
// mean power as that energy over the readings' span where both ends have
// it and it can be their draw (else the readings' mean: analysis.PowerOf),
// the share of readings throttled, and the
// last reading as the state now. Label names the window in the notes; a
// window of one reading is that reading's state, its notes judging now.
// With no reading read it has no End: there is nothing to say.
func GPUWindowOf(readings []*snapshot.GPUs, label string) analysis.GPUWindow {
	var good []*snapshot.GPUs
	var last *snapshot.GPUs
	for _, g := range readings {
		if g == nil {
			continue
		}
		last = g
		if g.Status == snapshot.GPUsRead {
			good = append(good, g)
		}
	}
	if len(good) == 0 {
		return analysis.GPUWindow{End: last, Label: label}
	}
	if len(good) == 1 {
		// One reading says what the GPUs do now, not what they did over
		// the window: its notes judge now.
		return analysis.GPUState(good[0])
	}
	w := analysis.GPUWindow{Label: label, Readings: len(good) - 1, End: good[len(good)-1]}
	w.Seconds = good[len(good)-1].At.Sub(good[0].At).Seconds()
	// A reading's shares are over the exporter's sample period up to it:
	// the first reading's are of the time before the window, so the means
	// are over the readings after it, as the fleet's avg_over_time over
	// the window (its start left out) reads the same samples.
	var states []analysis.GPUWindow
	for _, g := range good[1:] {
		states = append(states, analysis.GPUState(g))
	}
	pick := func(f func(analysis.GPUWindow) *float64) *float64 {
		sum, n := 0.0, 0
		for _, s := range states {
			if v := f(s); v != nil {
				sum += *v
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return ptr(sum / float64(n))
	}
	w.Utilization = pick(func(s analysis.GPUWindow) *float64 { return s.Utilization })
	w.SMActive = pick(func(s analysis.GPUWindow) *float64 { return s.SMActive })
	w.DRAMActive = pick(func(s analysis.GPUWindow) *float64 { return s.DRAMActive })
	w.TensorActive = pick(func(s analysis.GPUWindow) *float64 { return s.TensorActive })
	w.MemoryBusy = pick(func(s analysis.GPUWindow) *float64 { return s.MemoryBusy })
	w.PCIe = pick(func(s analysis.GPUWindow) *float64 { return s.PCIe })
	w.NVLink = pick(func(s analysis.GPUWindow) *float64 { return s.NVLink })
	w.Throttled = pick(func(s analysis.GPUWindow) *float64 { return s.Throttled })
	for _, s := range states {
		w.Reasons |= s.Reasons
	}
	w.PowerLimit = states[len(states)-1].PowerLimit
	w.Energy = energyBetween(good)
	var fromCounter *float64
	if w.Energy != nil && w.Seconds > 0 {
		fromCounter = ptr(*w.Energy / w.Seconds)
	}
	w.Power, w.CounterPower = analysis.PowerOf(fromCounter, pick(func(s analysis.GPUWindow) *float64 { return s.Power }), w.PowerLimit)
	return w
}

// energyBetween is the whole GPUs' energy counters' increase from the first
// reading to the last, each device's from consecutive readings that both
// have it; nil where a GPU at the end has no energy at the start.
func energyBetween(good []*snapshot.GPUs) *float64 {
	type key struct{ host, uuid, id string }
	at := func(g *snapshot.GPUs) map[key]float64 {
		m := map[key]float64{}
		for _, d := range g.Devices {
			if v, ok := d.Scalar(snapshot.GPUEnergyJoules); ok && d.Whole() {
				m[key{d.Host, d.UUID, d.ID}] = v
			}
		}
		return m
	}
	first, end := at(good[0]), at(good[len(good)-1])
	if len(end) == 0 {
		return nil
	}
	for k := range end {
		if _, ok := first[k]; !ok {
			return nil
		}
	}
	total := 0.0
	prev := first
	for _, g := range good[1:] {
		cur := at(g)
		for k, v := range cur {
			p, ok := prev[k]
			switch {
			case !ok:
				continue
			case v < p:
				total += v // the driver's counter restarted
			default:
				total += v - p
			}
		}
		for k, v := range cur {
			prev[k] = v
		}
	}
	return ptr(total)
}

// EngineWindow is the engine's side of a window as the GPU joins read it:
// the window's increases d, the requests waiting at its start
// (waitingStart, nil where not known), and the queue at its end (end).
func EngineWindow(d *Delta, waitingStart *float64, end *snapshot.Snapshot) analysis.EngineWindow {
	e := analysis.EngineWindow{Seconds: d.Seconds, Counters: d.Counters, WaitingStart: waitingStart}
	if end != nil {
		if v, ok := end.Scalar(snapshot.RequestsDeferred); ok {
			e.WaitingEnd = ptr(v)
		}
		if v, ok := end.Scalar(snapshot.RequestsProcessing); ok {
			e.Running = ptr(v)
		}
	}
	return e
}

// judgeGPU makes r say what the GPUs did over the window d, whose GPU
// readings are readings, which ends at the scrape end, with waitingStart
// requests waiting at its start (nil where not known).
func judgeGPU(r *report.Report, d *Delta, waitingStart *float64, end *snapshot.Snapshot, readings []*snapshot.GPUs, label string) *report.Report {
	if end == nil || end.GPU == nil || d == nil {
		return r
	}
	return analysis.JudgeGPU(r, end, EngineWindow(d, waitingStart, end), GPUWindowOf(readings, label))
}

// waitingOf is the requests waiting in s, nil where not published.
func waitingOf(s *snapshot.Snapshot) *float64 {
	if s == nil {
		return nil
	}
	if v, ok := s.Scalar(snapshot.RequestsDeferred); ok {
		return ptr(v)
	}
	return nil
}

// gpuReadings are the GPU readings of the samples from the one at or after
// from to the newest, and the snapshot's queue at the first of them.
func (h *History) gpuReadings(from time.Time) (readings []*snapshot.GPUs, waitingStart *float64) {
	for i := 0; i < h.Len(); i++ {
		s := h.At(i)
		if s.At.Before(from) {
			continue
		}
		if waitingStart == nil && s.hasWaiting {
			waitingStart = ptr(s.waiting)
		}
		readings = append(readings, s.gpu)
	}
	return readings, waitingStart
}
