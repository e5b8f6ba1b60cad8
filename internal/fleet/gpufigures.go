package fleet

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// An instance's GPUs in the table: their figures over the window beside
// its engine's (the joins are analysis'), the totals as the rows'
// arithmetic, and the fleet's notes on what joined.

// GPUFigures are an instance's GPUs' numbers in the table; Figures.GPU is
// nil where no GPU joined it.
type GPUFigures struct {
	// GPUs is how many joined (a MIG instance is one).
	GPUs int
	// Watts is the mean power over the window, summed over the GPUs;
	// Energy the joules they used; JoulesPerToken that energy over the
	// tokens the engine generated (Generated), where both are counted.
	Watts, Energy, JoulesPerToken, Generated *float64
	// Utilization is the GPUs' utilization over the window, averaged over
	// the whole GPUs (wholeUtil of them).
	Utilization *float64
	wholeUtil   int
}

// of is the GPUs joined to the instance id, nil where none.
func (r *gpuRead) of(id string) *InstanceGPUs {
	if r == nil {
		return nil
	}
	return r.byGroup[id]
}

// withGPUs makes the instance's GPU section and notes of its GPUs' window
// beside its engine's (analysis.JudgeGPU), and its GPU figures; first is
// its reading at the window's start (the queue then).
func withGPUs(in *Instance, gpus *InstanceGPUs, first *snapshot.Snapshot) {
	in.GPUs = gpus
	var waiting *float64
	if v, ok := first.Scalar(snapshot.RequestsDeferred); ok {
		waiting = &v
	}
	e := rates.EngineWindow(&in.delta.Delta, waiting, in.snap)
	in.snap.GPU = gpus.Window.End
	in.Report = analysis.JudgeGPU(in.Report, in.snap, e, gpus.Window)
	g := gpus.Window
	f := &GPUFigures{GPUs: gpus.Count(), Watts: g.Power, Energy: g.Energy, Utilization: g.Utilization}
	if j, _, ok := analysis.EnergyPerToken(e, g); ok {
		gen := e.Counters[snapshot.TokensPredictedTotal]
		f.JoulesPerToken, f.Generated = &j, &gen
	}
	if g.End != nil && g.Utilization != nil {
		for _, d := range g.End.Devices {
			if d.Whole() {
				f.wholeUtil++
			}
		}
	}
	in.Figures.GPU = f
}

// gpuTotals are the totals' GPU figures, the rows' arithmetic: watts and
// energy summed over the rows that have them, joules per token the
// summed energy over the summed generated tokens of the rows that have
// both, utilization the mean over every row's whole GPUs; and how many
// rows each covers.
func gpuTotals(ins []*Instance) (*GPUFigures, map[string]Coverage) {
	t := &GPUFigures{}
	var watts, energy, joules, gen, util float64
	cov := map[string]Coverage{}
	n, has := 0, false
	for _, in := range ins {
		if in.snap == nil {
			continue
		}
		n++
		g := in.Figures.GPU
		if g == nil {
			continue
		}
		has = true
		t.GPUs += g.GPUs
		if g.Watts != nil {
			watts += *g.Watts
			cov[GPUWatts] = Coverage{Over: cov[GPUWatts].Over + 1}
		}
		if g.Energy != nil {
			energy += *g.Energy
		}
		if g.JoulesPerToken != nil {
			joules += *g.Energy
			gen += *g.Generated
			cov[GPUJoulesPerToken] = Coverage{Over: cov[GPUJoulesPerToken].Over + 1}
		}
		if g.Utilization != nil && g.wholeUtil > 0 {
			util += *g.Utilization * float64(g.wholeUtil)
			t.wholeUtil += g.wholeUtil
			cov[GPUUtilization] = Coverage{Over: cov[GPUUtilization].Over + 1}
		}
	}
	if !has {
		return nil, nil
	}
	if c := cov[GPUWatts].Over; c > 0 {
		t.Watts = &watts
		t.Energy = &energy
	}
	if cov[GPUJoulesPerToken].Over > 0 && gen > 0 {
		j := joules / gen
		t.JoulesPerToken, t.Generated = &j, &gen
	}
	if t.wholeUtil > 0 {
		u := util / float64(t.wholeUtil)
		t.Utilization = &u
	}
	for _, id := range []string{GPUWatts, GPUJoulesPerToken, GPUUtilization} {
		cov[id] = Coverage{Over: cov[id].Over, Of: n}
	}
	return t, cov
}

// The GPU columns' ids: --sort keys, and the totals' coverage keys.
const (
	GPUWatts          = "gpu_watts"
	GPUJoulesPerToken = "gpu_joules_per_token"
	GPUUtilization    = "gpu_utilization"
)

// gpuColumns are the GPU figures the table shows, with their headers.
var gpuColumns = []struct{ id, header string }{
	{GPUWatts, "GPU W"},
	{GPUJoulesPerToken, "J/tok"},
	{GPUUtilization, "GPU util"},
}

// gpuValue is an instance's GPU figure of a column, nil where none.
func gpuValue(f Figures, id string) *float64 {
	if f.GPU == nil {
		return nil
	}
	switch id {
	case GPUWatts:
		return f.GPU.Watts
	case GPUJoulesPerToken:
		return f.GPU.JoulesPerToken
	case GPUUtilization:
		return f.GPU.Utilization
	}
	return nil
}

// gpuCell writes a GPU figure as the report's GPU section does.
func gpuCell(id string, v *float64) string {
	if v == nil {
		return units.Missing
	}
	switch id {
	case GPUWatts:
		return analysis.Watts(*v)
	case GPUJoulesPerToken:
		return analysis.Joules(*v)
	}
	return units.Percent(*v)
}

// gpuNotes say how the store's GPUs joined the instances, and which
// joined none (never put in a row).
func gpuNotes(f *Fleet, r *gpuRead, add func(string, report.Severity, string, ...any)) {
	if r == nil {
		return
	}
	by := map[string]int{}
	joined := 0
	for _, in := range f.Instances {
		if in.GPUs != nil {
			by[in.GPUs.Join]++
			joined += in.GPUs.Count()
		}
	}
	var hows []string
	for _, how := range []string{"pod", "host", "pod, host"} {
		if n := by[how]; n > 0 {
			hows = append(hows, fmt.Sprintf("%s by %s", units.Plural(float64(n), "instance"), how))
		}
	}
	if joined > 0 {
		rule := map[GPUJoin]string{
			GPUJoinAuto: "a GPU given to a pod by that pod's namespace and pod, one given to none by its host",
			GPUJoinPod:  "a GPU by the namespace and pod it is given to",
			GPUJoinHost: "a GPU by its host",
		}[r.join]
		add(NoteGPUs, report.Info, "%s of dcgm-exporter in the store joined %d of %s (--gpu-join %s: %s): %s; each row's GPU figures are its GPUs' over the window",
			units.Plural(float64(joined), "GPU"), len(byJoin(f.Instances)), units.Plural(float64(len(f.Instances)), "instance"),
			r.join, rule, strings.Join(hows, ", "))
	}
	if len(r.unjoined) > 0 {
		narrowed := ""
		if r.narrowed {
			narrowed = " (--selector and --instance narrow the instances, not the GPUs: those of instances outside them are among these)"
		}
		add(NoteUnjoined, report.Info, "%s of the store's %d joined no instance and are in no row%s: %s",
			units.Plural(float64(len(r.unjoined)), "GPU"), r.devices, narrowed, listed(r.unjoined))
	}
}

func byJoin(ins []*Instance) []*Instance {
	var out []*Instance
	for _, in := range ins {
		if in.GPUs != nil {
			out = append(out, in)
		}
	}
	return out
}

// listed names up to maxListed things, and how many more.
func listed(s []string) string {
	if len(s) <= maxListed {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:maxListed], ", ") + fmt.Sprintf(", and %d more", len(s)-maxListed)
}
