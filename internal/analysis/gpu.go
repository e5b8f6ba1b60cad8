package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// GPUWindow is what the GPUs did over a window (issue 32), for the
// instance: the devices' figures added (power, energy, memory, traffic)
// or averaged (the activity shares) over the whole GPUs, and over the
// window's readings. One reading (the one-shot report) is a window of
// no length. Every surface makes one from what it has (rates from a watch
// session's readings or two scrapes; the fleet, later, from a store's
// avg_over_time and increase) and the joins below read it, so a figure is
// one definition everywhere. A figure no reading has is nil, never 0.
type GPUWindow struct {
	// Label names the window in the notes ("the last 5m"); "" for one
	// reading, whose notes judge now.
	Label string
	// Seconds is how long the window took (0 for one reading); Readings
	// how many GPU readings its means are over.
	Seconds  float64
	Readings int
	// End is the reading at the window's end: the devices, and the state
	// now (memory, XID) the notes judge.
	End *snapshot.GPUs

	// Means over the readings of each share, averaged over whole GPUs.
	Utilization, SMActive, DRAMActive, TensorActive, MemoryBusy *float64
	// Power is the mean power drawn, summed over the GPUs: the energy
	// counter's increase over the seconds where it is known (exact), else
	// the readings' mean; PowerLimit the limits summed, at the end.
	Power, PowerLimit *float64
	// CounterPower is the energy counter's increase over the seconds where
	// it disagrees with the power readings (PowerOf): Power is then the
	// readings' mean, and the note says so. nil where they agree.
	CounterPower *float64
	// Energy is the joules the GPUs used over the window (the counters'
	// increase, a driver restart counted from zero); nil for one reading.
	Energy *float64
	// PCIe and NVLink are the mean bytes per second both ways, summed
	// over the GPUs.
	PCIe, NVLink *float64
	// Throttled is the share of readings in which a GPU held its clocks
	// down for power, heat or a hardware slowdown; Reasons every reason
	// seen (a bitmask of snapshot.ThrottleReasons). nil where no reading
	// published throttle reasons.
	Throttled *float64
	Reasons   uint64
	// ThrottledAtEnd says Throttled and Reasons are the end reading's
	// alone (the fleet's: a share over the window's readings would need a
	// subquery a GPU), not the window's: the note says so.
	ThrottledAtEnd bool
}

// EngineWindow is what the engine did over the same window, as the joins
// read it: the window's counter increases (nil for one reading, which
// judges the gauges alone) and the queue at its two ends.
type EngineWindow struct {
	Seconds  float64
	Counters map[string]float64
	// WaitingStart and WaitingEnd are the requests waiting at the
	// window's two ends (nil where not known); Running at its end.
	WaitingStart, WaitingEnd, Running *float64
}

// GPUState is the window of one reading: the GPUs now.
func GPUState(g *snapshot.GPUs) GPUWindow {
	if g == nil || g.Status != snapshot.GPUsRead {
		return GPUWindow{End: g}
	}
	w := GPUWindow{End: g, Readings: 1}
	for _, s := range [...]struct {
		name string
		into **float64
	}{
		{snapshot.GPUUtilization, &w.Utilization}, {snapshot.GPUSMActive, &w.SMActive},
		{snapshot.GPUDRAMActive, &w.DRAMActive}, {snapshot.GPUTensorActive, &w.TensorActive},
		{snapshot.GPUMemoryBusy, &w.MemoryBusy},
	} {
		*s.into = GPUMean(g, s.name)
	}
	w.Power = GPUSum(g, snapshot.GPUPowerWatts)
	w.PowerLimit = GPUSum(g, snapshot.GPUPowerLimitWatts)
	w.PCIe = sumOfSums(GPUSum(g, snapshot.GPUPCIeTxBytesPerSecond), GPUSum(g, snapshot.GPUPCIeRxBytesPerSecond))
	w.NVLink = sumOfSums(GPUSum(g, snapshot.GPUNVLinkTxBytesPerSecond), GPUSum(g, snapshot.GPUNVLinkRxBytesPerSecond))
	if mask, ok := GPUThrottle(g); ok {
		w.Reasons = mask
		w.Throttled = num64(0)
		if mask&snapshot.ThrottleLimiting != 0 {
			w.Throttled = num64(1)
		}
	}
	return w
}

func num64(v float64) *float64 { return &v }

func sumOfSums(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	return num64(*a + *b)
}

// GPUMean is a share averaged over the whole GPUs that publish it; nil
// where none does.
func GPUMean(g *snapshot.GPUs, name string) *float64 {
	sum, n := overWhole(g, name)
	if n == 0 {
		return nil
	}
	return num64(sum / float64(n))
}

// GPUSum is a quantity added over the whole GPUs that publish it; nil
// where none does.
func GPUSum(g *snapshot.GPUs, name string) *float64 {
	sum, n := overWhole(g, name)
	if n == 0 {
		return nil
	}
	return num64(sum)
}

// overWhole is name's sum over the whole GPUs (not MIG instances) that
// publish it, and how many do.
func overWhole(g *snapshot.GPUs, name string) (sum float64, n int) {
	for i := range g.Devices {
		d := &g.Devices[i]
		if v, ok := d.Scalar(name); ok && d.Whole() {
			sum += v
			n++
		}
	}
	return sum, n
}

// GPUThrottle is the reasons any GPU holds its clocks down for; ok is
// false where no GPU publishes them.
func GPUThrottle(g *snapshot.GPUs) (mask uint64, ok bool) {
	for i := range g.Devices {
		if v, has := g.Devices[i].Scalar(snapshot.GPUThrottleReasons); has {
			mask |= uint64(v)
			ok = true
		}
	}
	return mask, ok
}

// EnergyPerToken is the joules the GPUs used per generated token over a
// window, and the tokens generated per second per watt (its inverse); ok
// is false where the window has no energy, no generated count, or no
// token generated (0/0 is no figure).
func EnergyPerToken(e EngineWindow, g GPUWindow) (joules, tokPerSecPerWatt float64, ok bool) {
	gen, has := e.Counters[snapshot.TokensPredictedTotal]
	if g.Energy == nil || !has || gen <= 0 || *g.Energy <= 0 {
		return 0, 0, false
	}
	return *g.Energy / gen, gen / *g.Energy, true
}

// DecodeShare is decode's share of the requests' time in prefill or decode
// over the window; ok false where either part is not counted or neither
// moved.
func DecodeShare(e EngineWindow) (float64, bool) {
	p, ok1 := e.Counters[snapshot.PromptSecondsTotal]
	d, ok2 := e.Counters[snapshot.TokensPredictedSecondsTotal]
	if !ok1 || !ok2 || p+d <= 0 {
		return 0, false
	}
	return d / (p + d), true
}

// Bound is what held decode back over a window.
type Bound string

const (
	BoundNone      Bound = ""          // not decode-dominated, or the GPU not near either limit
	BoundBandwidth Bound = "bandwidth" // DRAM active high, compute low: reading memory sets the pace
	BoundCompute   Bound = "compute"   // compute active high, at least as high as DRAM
)

// DecodeBound says whether decode was bound by memory bandwidth or by
// compute over a window where decode dominates the requests' time: the
// DRAM active share against the compute share (tensor active where
// profiled, else SM active), each against gpuActive. compute is the share
// it compared, and ok is false where the window lacks a figure it needs.
func DecodeBound(e EngineWindow, g GPUWindow) (b Bound, dram, compute float64, ok bool) {
	share, has := DecodeShare(e)
	c := g.TensorActive
	if c == nil {
		c = g.SMActive
	}
	if !has || g.DRAMActive == nil || c == nil {
		return BoundNone, 0, 0, false
	}
	dram, compute = *g.DRAMActive, *c
	switch {
	case share < 1-prefillBound:
		return BoundNone, dram, compute, true
	case dram >= gpuActive && compute < dram:
		return BoundBandwidth, dram, compute, true
	case compute >= gpuActive && compute >= dram:
		return BoundCompute, dram, compute, true
	}
	return BoundNone, dram, compute, true
}

// KVHeadroom is the device memory free at the window's end (whole GPUs,
// summed) and its share of their memory; ok false where not published.
func KVHeadroom(g GPUWindow) (free, share float64, ok bool) {
	if g.End == nil {
		return 0, 0, false
	}
	f := GPUSum(g.End, snapshot.GPUMemoryFreeBytes)
	u := GPUSum(g.End, snapshot.GPUMemoryUsedBytes)
	if f == nil || u == nil || *f+*u <= 0 {
		return 0, 0, false
	}
	return *f, *f / (*f + *u), true
}

// growKV is the setting that grows the KV cache from free device memory:
// the first of the dialect's KV knobs, which every dialect writes as the
// one that takes more memory ("raise gpu_memory_utilization").
func growKV(a snapshot.Advice) string {
	first, _, _ := strings.Cut(a.KVFix, ",")
	if strings.HasPrefix(first, "raise ") {
		return first
	}
	return "give the engine more of the GPU's memory for its KV cache"
}

// gpuSection writes the GPU section and the GPU notes of the window g
// beside the engine's e (one reading: the one-shot report).
func (a *analyzer) gpuSection(e EngineWindow, g GPUWindow) {
	if g.End == nil {
		return
	}
	sec := report.Section{ID: "gpu", Title: "GPU"}
	a.r.GPU = gpuJSON(e, g)
	if g.End.Status != snapshot.GPUsRead {
		row := report.Row{ID: "source", Label: "source", Value: "not read", Note: g.End.Source}
		a.judge(&row, gpuNotRead, "the GPUs were not read from %s: %s", g.End.Source, g.End.Why)
		sec.Rows = append(sec.Rows, row)
		a.r.Sections = append(a.r.Sections, sec)
		return
	}
	for _, p := range g.End.Invalid {
		a.judge(nil, invalidSeries, "%s is invalid (%s): every figure derived from it is left out", p.Series, p.Reason)
	}
	over := ""
	if g.Label != "" && g.Readings > 1 {
		over = fmt.Sprintf("mean of %d readings", g.Readings)
	}
	sec.Rows = append(sec.Rows, report.Row{ID: "source", Label: "GPUs", Value: devicesSaid(g.End), Note: sourceSaid(g.End)})
	a.gpuActivity(&sec, e, g, over)
	a.gpuMemory(&sec, e, g)
	a.gpuPower(&sec, e, g, over)
	a.gpuClock(&sec, e, g)
	a.gpuErrors(&sec, g)
	a.gpuTraffic(&sec, e, g, over)
	if len(g.End.Devices) > 1 {
		sec.Table = deviceTable(g.End)
		sec.Fold = true
	}
	// What the source does not publish, said where its figures would be.
	for _, m := range g.End.Missing {
		sec.Rows = append(sec.Rows, report.Row{Note: "not published: " + m, Severity: report.Dim})
	}
	a.r.Sections = append(a.r.Sections, sec)
}

func devicesSaid(g *snapshot.GPUs) string {
	models := map[string]int{}
	var order []string
	for _, d := range g.Devices {
		m := d.Model
		if m == "" {
			m = "GPU " + d.ID
		}
		if !d.Whole() {
			m = "MIG " + d.MIG + " " + d.ID
		}
		if models[m] == 0 {
			order = append(order, m)
		}
		models[m]++
	}
	var parts []string
	for _, m := range order {
		if models[m] > 1 {
			parts = append(parts, fmt.Sprintf("%d × %s", models[m], m))
		} else {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ", ")
}

func sourceSaid(g *snapshot.GPUs) string {
	by := map[string]string{snapshot.GPUFromDCGM: "dcgm-exporter", snapshot.GPUFromAMD: "AMD device-metrics-exporter", snapshot.GPUFromSMI: "nvidia-smi"}[g.Kind]
	if g.Source != "" && g.Source != by {
		by += " at " + g.Source
	}
	return by
}

func (a *analyzer) gpuActivity(sec *report.Section, e EngineWindow, g GPUWindow, over string) {
	share := func(id, label string, v *float64, note string) *report.Row {
		if v == nil {
			return nil
		}
		sec.Rows = append(sec.Rows, report.Row{ID: id, Label: label, Value: units.Percent(*v), Bar: bar(*v), Note: note})
		return &sec.Rows[len(sec.Rows)-1]
	}
	if row := share("utilization", "utilization", g.Utilization, gpuNotes("a kernel running at all, not how much of the GPU", over)); row != nil {
		a.gpuBusyIdle(row, e, g)
	}
	share("sm_active", "SM active", g.SMActive, "")
	if g.SMActive == nil && g.End.Status == snapshot.GPUsRead {
		share("graphics_active", "graphics active", GPUMean(g.End, snapshot.GPUGraphicsActive), "")
	}
	share("tensor_active", "tensor active", g.TensorActive, "")
	share("dram_active", "DRAM active", g.DRAMActive, "memory bandwidth in use")
	if g.DRAMActive == nil {
		share("memory_busy", "memory busy", g.MemoryBusy, "memory read or written, sampled (no profiling)")
	}
	if b, dram, compute, ok := DecodeBound(e, g); ok && b != BoundNone {
		row := report.Row{ID: "decode", Label: "decode", Value: string(b) + "-bound"}
		share, _ := DecodeShare(e)
		switch b {
		case BoundBandwidth:
			row.Note = fmt.Sprintf("DRAM %s, compute %s", units.Percent(dram), units.Percent(compute))
			a.judge(&row, gpuDecodeBandwidth, "decode (%s of request time%s) is bound by memory bandwidth: DRAM active %s, compute %s; a smaller KV cache dtype, a quantized model or a drafter (more tokens per weight read) pays, more compute would not",
				units.Percent(share), in(g.Label), units.Percent(dram), units.Percent(compute))
		case BoundCompute:
			row.Note = fmt.Sprintf("compute %s, DRAM %s", units.Percent(compute), units.Percent(dram))
			a.judge(&row, gpuDecodeCompute, "decode (%s of request time%s) is bound by compute: compute active %s, DRAM %s; larger batches no longer come free, and a drafter or a smaller KV dtype would gain little",
				units.Percent(share), in(g.Label), units.Percent(compute), units.Percent(dram))
		}
		sec.Rows = append(sec.Rows, row)
	}
}

func in(label string) string {
	if label == "" {
		return ""
	}
	return " in " + label
}

func gpuNotes(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// gpuBusyIdle judges the GPU's utilization against the engine's work: busy
// while the engine ran nothing (another tenant), idle while it ran
// requests (a CPU-side bottleneck).
func (a *analyzer) gpuBusyIdle(row *report.Row, e EngineWindow, g GPUWindow) {
	u := *g.Utilization
	busy, known := engineBusy(e)
	switch {
	case !known:
	case !busy && u >= gpuBusy:
		a.judge(row, gpuBusyEngineIdle, "the GPUs are %s utilized%s while the engine ran no request: another process is using them (check `nvidia-smi` for its processes), and it will slow this engine down when requests come",
			units.Percent(u), in(g.Label))
	case busy && u <= gpuIdle:
		a.judge(row, gpuIdleEngineBusy, "the engine ran requests%s while the GPUs were %s utilized: the time goes outside the GPU (tokenization, scheduling, KV offload copies, a CPU-bound sampler), or these are not the GPUs it runs on",
			in(g.Label), units.Percent(u))
	}
}

// engineBusy says whether the engine ran requests: over a window, whether
// it generated or prefilled a token; for one reading, whether a request
// runs now. known is false where nothing says.
func engineBusy(e EngineWindow) (busy, known bool) {
	if e.Counters != nil {
		gen, ok1 := e.Counters[snapshot.TokensPredictedTotal]
		pr, ok2 := e.Counters[snapshot.PromptTokensTotal]
		if ok1 || ok2 {
			return gen+pr > 0, true
		}
	}
	if e.Running != nil {
		return *e.Running > 0, true
	}
	return false, false
}

func (a *analyzer) gpuMemory(sec *report.Section, e EngineWindow, g GPUWindow) {
	used := GPUSum(g.End, snapshot.GPUMemoryUsedBytes)
	free, share, ok := KVHeadroom(g)
	if used == nil || !ok {
		if used != nil {
			sec.Rows = append(sec.Rows, report.Row{ID: "memory", Label: "memory", Value: units.Bytes(*used) + " used"})
		}
		return
	}
	total := *used + free
	row := report.Row{ID: "memory", Label: "memory", Value: units.Bytes(*used) + " / " + units.Bytes(total), Bar: bar(*used / total),
		Note: units.Bytes(free) + " free"}
	kv, kvOK := KVUsage(a.s)
	switch {
	case 1-share >= gpuMemoryFull:
		a.judge(&row, gpuMemoryFullBand, "the GPUs' memory is %s used (%s free): one more allocation (a longer context, CUDA graphs, a second process) fails with out-of-memory; leave the engine less of it, or run fewer requests at once",
			units.Percent(1-share), units.Bytes(free))
	case kvOK && kv >= kvPressure && share >= gpuFreeShare:
		a.judge(&row, gpuKVHeadroom, "the KV cache is %s full while %s of the GPUs' memory (%s) is free: %s to give the cache that room",
			units.Percent(kv), units.Bytes(free), units.Percent(share), growKV(a.s.Advice))
	}
	sec.Rows = append(sec.Rows, row)
}

func (a *analyzer) gpuPower(sec *report.Section, e EngineWindow, g GPUWindow, over string) {
	if g.Power != nil {
		row := report.Row{ID: "power", Label: "power", Value: watts(*g.Power)}
		if g.PowerLimit != nil && *g.PowerLimit > 0 {
			row.Value += " of " + watts(*g.PowerLimit)
			row.Bar = bar(*g.Power / *g.PowerLimit)
		}
		if g.Energy != nil && g.CounterPower == nil {
			over = "energy over " + spanOf(g.Seconds)
		}
		row.Note = over
		const holds = "where the engine's counters run as fast (a simulation faster than the wall clock, as the demo's fleet) the energy per token still holds; otherwise the counter is not in joules, or not of these GPUs, and neither does it"
		switch c := g.CounterPower; {
		case c == nil:
		case *c != *g.Power:
			row.Note = "the readings' mean; the energy counter says " + watts(*c)
			a.judge(&row, gpuEnergyDisagrees, "the GPUs' energy counter rose by %s a second%s, %s× the %s their power readings drew, so the power shown is the readings' mean: "+holds,
				watts(*c), in(g.Label), strconv.FormatFloat(round3(*c / *g.Power), 'g', -1, 64), watts(*g.Power))
		case g.PowerLimit != nil:
			row.Note = "the energy counter's, above the limit"
			a.judge(&row, gpuEnergyDisagrees, "the GPUs' energy counter rose by %s a second%s, more than their limit of %s allows a mean draw: "+holds,
				watts(*c), in(g.Label), watts(*g.PowerLimit))
		}
		sec.Rows = append(sec.Rows, row)
	}
	if g.Energy == nil {
		return
	}
	row := report.Row{ID: "energy", Label: "energy", Value: joules(*g.Energy)}
	if j, tpw, ok := EnergyPerToken(e, g); ok {
		row.Note = fmt.Sprintf("%s per generated token · %s tok/s per W", joules(j), strconv.FormatFloat(round3(tpw), 'g', -1, 64))
		a.judge(&row, gpuEnergyPerToken, "the GPUs used %s per generated token%s (%s tok/s per W); while the GPUs are not saturated, running more requests at once lowers it",
			joules(j), in(g.Label), strconv.FormatFloat(round3(tpw), 'g', -1, 64))
	}
	sec.Rows = append(sec.Rows, row)
}

// PowerOf is a window's mean power from the energy counters' increase
// over its seconds (fromCounter, exact) and the power readings' mean
// (readings), either nil where not published. The counter's is shown
// unless it cannot be the GPUs' draw: over gpuCounterApart times the
// readings' mean or under its inverse, or, with no readings, over the
// GPUs' limits (limit) by gpuOverLimit. Then the readings' mean is shown
// (the counter's where there are none) and counter is the counter's, for
// the note.
func PowerOf(fromCounter, readings, limit *float64) (power, counter *float64) {
	if fromCounter == nil {
		return readings, nil
	}
	c := *fromCounter
	switch {
	case readings != nil && *readings > 0 && (c > gpuCounterApart**readings || c < *readings/gpuCounterApart):
		return readings, fromCounter
	case readings == nil && limit != nil && *limit > 0 && c > gpuOverLimit**limit:
		return fromCounter, fromCounter // nothing else to show: the note says it
	}
	return fromCounter, nil
}

func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func spanOf(s float64) string { return units.Seconds(s) }

func watts(w float64) string {
	if w >= 1000 {
		return strconv.FormatFloat(w/1000, 'f', 2, 64) + " kW"
	}
	return strconv.FormatFloat(w, 'f', 0, 64) + " W"
}

func joules(j float64) string {
	switch {
	case j >= 1e6:
		return strconv.FormatFloat(j/1e6, 'f', 2, 64) + " MJ"
	case j >= 1e3:
		return strconv.FormatFloat(j/1e3, 'f', 1, 64) + " kJ"
	case j >= 10:
		return strconv.FormatFloat(j, 'f', 0, 64) + " J"
	case j >= 0.1:
		return strconv.FormatFloat(j, 'f', 2, 64) + " J"
	}
	return strconv.FormatFloat(j*1e3, 'f', 1, 64) + " mJ"
}

func hertz(h float64) string {
	if h >= 1e9 {
		return strconv.FormatFloat(h/1e9, 'f', 2, 64) + " GHz"
	}
	return strconv.FormatFloat(h/1e6, 'f', 0, 64) + " MHz"
}

func (a *analyzer) gpuClock(sec *report.Section, e EngineWindow, g GPUWindow) {
	clk := GPUMean(g.End, snapshot.GPUSMClockHertz)
	if clk != nil {
		row := report.Row{ID: "clock", Label: "SM clock", Value: hertz(*clk)}
		if mx := GPUMean(g.End, snapshot.GPUSMClockMaxHertz); mx != nil && *mx > 0 {
			row.Value += " of " + hertz(*mx)
			row.Bar = bar(*clk / *mx)
		}
		sec.Rows = append(sec.Rows, row)
	}
	if t := maxOf(g.End, snapshot.GPUTemperatureCelsius); t != nil {
		sec.Rows = append(sec.Rows, report.Row{ID: "temperature", Label: "temperature", Value: strconv.FormatFloat(*t, 'f', 0, 64) + " °C", Note: hottest(g.End)})
	}
	if g.Throttled == nil {
		return
	}
	row := report.Row{ID: "throttle", Label: "throttle", Value: throttleSaid(g.Reasons)}
	switch {
	case g.ThrottledAtEnd:
		row.Note = "at the window's end"
	case g.Readings > 1:
		row.Note = fmt.Sprintf("clocks held down in %s of %d readings", units.Percent(*g.Throttled), g.Readings)
	}
	grew := e.WaitingEnd != nil && e.WaitingStart != nil && *e.WaitingEnd > *e.WaitingStart
	waiting := e.WaitingEnd != nil && *e.WaitingEnd > 0
	load := grew || (e.Counters == nil && waiting)
	if *g.Throttled > 0 && load {
		queue := fmt.Sprintf("with %s waiting", units.Noun(*e.WaitingEnd, "request"))
		if grew {
			queue = fmt.Sprintf("while the queue grew from %s to %s", units.Integer(*e.WaitingStart), units.Integer(*e.WaitingEnd))
		}
		when := in(g.Label)
		if g.ThrottledAtEnd {
			when = " at the window's end"
			if g.Label != "" {
				when = " at the end of " + g.Label
			}
		}
		a.judge(&row, gpuThrottledUnderLoad, "the GPUs held their clocks down (%s)%s %s: the card, not the engine, set the pace; check cooling, and the power limit (nvidia-smi -q -d POWER)",
			throttleSaid(g.Reasons&snapshot.ThrottleLimiting), when, queue)
	}
	sec.Rows = append(sec.Rows, row)
}

func throttleSaid(mask uint64) string {
	reasons, unknown := snapshot.DecodeThrottle(mask)
	var words []string
	for _, r := range reasons {
		words = append(words, r.Words)
	}
	if unknown != 0 {
		words = append(words, fmt.Sprintf("reasons %#x", unknown))
	}
	if len(words) == 0 {
		return "none"
	}
	return strings.Join(words, ", ")
}

func maxOf(g *snapshot.GPUs, name string) *float64 {
	var out *float64
	for i := range g.Devices {
		if v, ok := g.Devices[i].Scalar(name); ok && (out == nil || v > *out) {
			out = num64(v)
		}
	}
	return out
}

func hottest(g *snapshot.GPUs) string {
	n := 0
	for i := range g.Devices {
		if _, ok := g.Devices[i].Scalar(snapshot.GPUTemperatureCelsius); ok {
			n++
		}
	}
	if n < 2 {
		return ""
	}
	return "the hottest GPU"
}

func (a *analyzer) gpuErrors(sec *report.Section, g GPUWindow) {
	var xids []string
	seen := false
	for _, d := range g.End.Devices {
		v, ok := d.Scalar(snapshot.GPULastXID)
		if !ok {
			continue
		}
		seen = true
		if v != 0 {
			s := fmt.Sprintf("XID %s on GPU %s", units.Integer(v), d.ID)
			if d.XIDMessage != "" {
				s += " (" + d.XIDMessage + ")"
			}
			xids = append(xids, s)
		}
	}
	if !seen {
		return
	}
	row := report.Row{ID: "xid", Label: "XID errors", Value: "none"}
	if len(xids) > 0 {
		row.Value = strings.Join(xids, "; ")
		a.judge(&row, gpuXID, "the driver reported %s: an XID is a GPU or driver fault; look for NVRM Xid lines in the kernel log (dmesg), and NVIDIA's XID catalogue says whether the GPU needs a reset",
			strings.Join(xids, "; "))
	}
	sec.Rows = append(sec.Rows, row)
}

func (a *analyzer) gpuTraffic(sec *report.Section, e EngineWindow, g GPUWindow, over string) {
	if g.PCIe != nil {
		row := report.Row{ID: "pcie", Label: "PCIe", Value: units.Bytes(*g.PCIe) + "/s", Note: over}
		read, ok1 := e.Counters[snapshot.KVOffloadReadBytesTotal]
		wrote, ok2 := e.Counters[snapshot.KVOffloadWrittenBytesTotal]
		if ok1 && ok2 && e.Seconds > 0 && *g.PCIe > 0 {
			rate := (read + wrote) / e.Seconds
			share := rate / *g.PCIe
			row.Note = fmt.Sprintf("KV offload %s/s of it", units.Bytes(rate))
			if share >= offloadPCIeShare {
				a.judge(&row, gpuOffloadPCIe, "KV offload moved %s/s%s, %s of the GPUs' PCIe traffic (%s/s): its copies hold the bus, and a restore waits behind them; a larger KV cache in VRAM, or less offload churn, frees it",
					units.Bytes(rate), in(g.Label), units.Percent(math.Min(share, 1)), units.Bytes(*g.PCIe))
			}
		}
		sec.Rows = append(sec.Rows, row)
	}
	if g.NVLink != nil {
		sec.Rows = append(sec.Rows, report.Row{ID: "nvlink", Label: "NVLink", Value: units.Bytes(*g.NVLink) + "/s", Note: over})
	}
}

// deviceTable is a row per device, folded unless asked for.
func deviceTable(g *snapshot.GPUs) *report.Table {
	t := &report.Table{Header: []string{"GPU", "util", "SM", "DRAM", "memory", "power", "clock", "temp", "throttle"}}
	cell := func(d *snapshot.GPU, name string, f func(float64) string) string {
		if v, ok := d.Scalar(name); ok {
			return f(v)
		}
		return ""
	}
	for i := range g.Devices {
		d := &g.Devices[i]
		id := d.ID
		if d.Pod != "" {
			id += " " + d.Namespace + "/" + d.Pod
		}
		thr := cell(d, snapshot.GPUThrottleReasons, func(v float64) string { return throttleSaid(uint64(v)) })
		t.Rows = append(t.Rows, report.TableRow{ID: d.ID, Label: id, Cells: []string{
			cell(d, snapshot.GPUUtilization, units.Percent), cell(d, snapshot.GPUSMActive, units.Percent),
			cell(d, snapshot.GPUDRAMActive, units.Percent), cell(d, snapshot.GPUMemoryUsedBytes, units.Bytes),
			cell(d, snapshot.GPUPowerWatts, watts), cell(d, snapshot.GPUSMClockHertz, hertz),
			cell(d, snapshot.GPUTemperatureCelsius, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " °C" }),
			thr,
		}})
	}
	return t
}

// engineNow is the engine side of one reading: its gauges now, no window.
func engineNow(s *snapshot.Snapshot) EngineWindow {
	var e EngineWindow
	if v, ok := s.Scalar(snapshot.RequestsDeferred); ok {
		e.WaitingEnd = num64(v)
	}
	if v, ok := s.Scalar(snapshot.RequestsProcessing); ok {
		e.Running = num64(v)
	}
	return e
}

// gpu makes the GPU section of the one-shot report from the reading taken
// beside the scrape.
func (a *analyzer) gpu() {
	if a.s.GPU == nil {
		return
	}
	a.gpuSection(engineNow(a.s), GPUState(a.s.GPU))
}

// GPUNotes are the ids of the notes the GPU section makes.
func GPUNotes() []string {
	var out []string
	for _, b := range gpuBands {
		out = append(out, judgements[b].note)
	}
	return out
}

// JudgeGPU makes r, a report of s (the scrape at a window's end), say
// what the GPUs did over the window: its GPU section and GPU notes are
// made again from g beside the engine's window e (the joins), in place of
// the one reading's (a report made without a GPU reading, as the fleet's
// are, gets the section last). r is not changed; without a GPU reading it
// is r.
func JudgeGPU(r *report.Report, s *snapshot.Snapshot, e EngineWindow, g GPUWindow) *report.Report {
	if g.End == nil {
		return r
	}
	b := &analyzer{s: s, r: &report.Report{}}
	b.gpuSection(e, g)
	out := *r
	gpuIDs := map[string]bool{}
	for _, id := range GPUNotes() {
		gpuIDs[id] = true
	}
	out.Notes = nil
	for _, n := range r.Notes {
		if !gpuIDs[n.ID] {
			out.Notes = append(out.Notes, n)
		}
	}
	for _, n := range b.r.Notes {
		if gpuIDs[n.ID] {
			out.Notes = append(out.Notes, n)
		}
	}
	out.GPU = b.r.GPU
	out.Sections = make([]report.Section, 0, len(r.Sections)+1)
	replaced := false
	for _, sec := range r.Sections {
		if sec.ID == "gpu" {
			for _, ns := range b.r.Sections {
				if ns.ID == "gpu" {
					sec, replaced = ns, true
				}
			}
		}
		out.Sections = append(out.Sections, sec)
	}
	if !replaced {
		// Where Analyze puts it: before what the server does not publish.
		at := len(out.Sections)
		for i, sec := range out.Sections {
			if sec.ID == "unavailable" {
				at = i
			}
		}
		for _, ns := range b.r.Sections {
			if ns.ID == "gpu" {
				out.Sections = slices.Insert(out.Sections, at, ns)
			}
		}
	}
	return &out
}

// gpuJSON is the GPU object of --json: the window's figures and each
// device's.
func gpuJSON(e EngineWindow, g GPUWindow) *report.GPU {
	out := &report.GPU{Source: g.End.Source, Kind: g.End.Kind, Status: g.End.Status, Why: g.End.Why, Window: g.Label,
		Seconds: report.Number(g.Seconds), Readings: g.Readings, Figures: report.Map[report.Number]{},
		Throttle: report.List[string]{}, Devices: report.List[report.GPUDevice]{}}
	put := func(name string, v *float64) {
		if v != nil {
			out.Figures[name] = report.Number(*v)
		}
	}
	put("utilization", g.Utilization)
	put("sm_active", g.SMActive)
	put("dram_active", g.DRAMActive)
	put("tensor_active", g.TensorActive)
	put("memory_busy", g.MemoryBusy)
	put("power_watts", g.Power)
	put("power_limit_watts", g.PowerLimit)
	put("energy_joules", g.Energy)
	put("pcie_bytes_per_second", g.PCIe)
	put("nvlink_bytes_per_second", g.NVLink)
	put("throttled_share", g.Throttled)
	if g.End.Status == snapshot.GPUsRead {
		put("memory_used_bytes", GPUSum(g.End, snapshot.GPUMemoryUsedBytes))
		put("memory_free_bytes", GPUSum(g.End, snapshot.GPUMemoryFreeBytes))
	}
	if j, tpw, ok := EnergyPerToken(e, g); ok {
		put("joules_per_token", &j)
		put("tokens_per_second_per_watt", &tpw)
	}
	if b, _, _, ok := DecodeBound(e, g); ok {
		out.DecodeBound = string(b)
	}
	reasons, _ := snapshot.DecodeThrottle(g.Reasons)
	for _, r := range reasons {
		out.Throttle = append(out.Throttle, r.Name)
	}
	for _, d := range g.End.Devices {
		figs := report.Map[report.Number]{}
		for k, v := range d.Scalars {
			figs[k] = report.Number(v)
		}
		out.Devices = append(out.Devices, report.GPUDevice{ID: d.ID, UUID: d.UUID, Model: d.Model, MIG: d.MIG, Host: d.Host,
			Namespace: d.Namespace, Pod: d.Pod, Container: d.Container, Figures: figs})
	}
	return out
}

// Watts writes a power as the GPU section does ("412 W", "1.24 kW").
func Watts(w float64) string { return watts(w) }

// Joules writes an energy as the GPU section does ("0.83 J", "12 kJ").
func Joules(j float64) string { return joules(j) }
