package rates

import (
	"math"
	"strconv"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// TrendLength is the most refresh intervals a session's trends keep: the
// widest sparkline drawn.
const TrendLength = 60

// Trend keys of the gauges, beside the rows' ids.
const (
	TrendKV    = "kv_cache" // the KV cache in use, a share 0..1
	TrendQueue = "queue"    // requests waiting
)

// Trend keys of the GPU section's rows (issue 32): each its row's id under
// "gpu_", read from the GPU reading of each refresh (gpuTrends).
const (
	TrendGPUUtilization = "gpu_utilization" // mean utilization, a share 0..1
	TrendGPUDRAM        = "gpu_dram_active" // mean DRAM active, a share 0..1
	TrendGPUPower       = "gpu_power"       // watts, summed over the GPUs
	TrendGPUMemory      = "gpu_memory"      // bytes used, summed over the GPUs
)

// point is one refresh interval of a session's trends: the rows' figures
// over it (each row's "now" figure when it ended), the gauges its scrape
// read, and its latency histograms' increase.
type point struct {
	// figs are every row's figure (by index in rows) over the interval;
	// nil where the interval has no figures (a failed scrape, a restart,
	// the session's first scrape).
	figs []Figure
	// kv, run and wait are the gauges the interval's scrape read; NaN
	// where it did not (or failed).
	kv, run, wait float64
	// hists are the interval's increase of each histogram (histNames);
	// nil where not known.
	hists [nHists]*histogram.Histogram
	// gpu are the GPU section's gauges the interval's reading gave, by
	// trend key; nil where it had none.
	gpu map[string]float64
}

// trends are a session's points at one step, oldest first, at most
// TrendLength of them.
type trends struct {
	step   time.Duration
	points []point
	// linked says the newest point ends at the history's newest sample:
	// the next scrape's increase is one interval's.
	linked bool
}

// SetTrendStep starts keeping trends at step, the refresh interval; a new
// step starts them over (a trend's values are one interval apart), as
// does 0, which keeps none.
func (h *History) SetTrendStep(step time.Duration) {
	if step != h.trend.step {
		h.trend = trends{step: step}
	}
}

// Missed records a refresh whose scrape failed: a gap in every trend, and
// the next good scrape's increase spans more than an interval (a gap too).
// The view calls it also after a pause, where refreshes did not happen.
func (h *History) Missed() {
	if h.trend.step <= 0 {
		return
	}
	h.trend.add(point{kv: math.NaN(), run: math.NaN(), wait: math.NaN()})
	h.trend.linked = false
}

// addPoint records the interval ending at the newest sample smp, from prev
// (nil after a restart or at the start) and the scrape s.
func (h *History) addPoint(prev, smp *Sample, s *snapshot.Snapshot) {
	if h.trend.step <= 0 {
		return
	}
	p := point{kv: math.NaN(), run: math.NaN(), wait: math.NaN()}
	if v, ok := analysis.KVUsage(s); ok {
		p.kv = v
	}
	if v, ok := s.Scalar(snapshot.RequestsProcessing); ok {
		p.run = v
	}
	if v, ok := s.Scalar(snapshot.RequestsDeferred); ok {
		p.wait = v
	}
	p.gpu = gpuPoint(s.GPU)
	if prev != nil && h.trend.linked {
		d := h.delta(prev, smp)
		p.figs = Compute(d, rows)
		for i, name := range histNames {
			if inc, ok := d.Hists[name]; ok {
				p.hists[i] = &inc
			}
		}
	}
	h.trend.add(p)
	h.trend.linked = true
}

func (t *trends) add(p point) {
	if len(t.points) == TrendLength {
		copy(t.points, t.points[1:])
		t.points = t.points[:TrendLength-1]
	}
	t.points = append(t.points, p)
}

// Trends returns the series behind the sparklines: one per row the newest
// scrape supports (by its id), and the KV cache in use and the requests
// waiting (TrendKV, TrendQueue) where the newest scrape read them. Each
// holds one value per interval kept, oldest first; nil when no trends are
// kept.
func (h *History) Trends() map[string]*report.Trend {
	pts := h.trend.points
	if h.trend.step <= 0 || len(pts) == 0 {
		return nil
	}
	step := report.Number(h.trend.step.Seconds())
	out := map[string]*report.Trend{}
	for i, r := range rows {
		if h.rows&(1<<i) == 0 || r.kind == kSampled {
			// The sampled busy share needs more scrapes than one interval.
			continue
		}
		t := &report.Trend{StepSeconds: step, Values: make(report.List[report.Number], len(pts)), FromFloor: r.kind == kQuantile, Say: r.say}
		for j, p := range pts {
			t.Values[j] = report.Number(math.NaN())
			if p.figs != nil && p.figs[i].Value != nil {
				t.Values[j] = report.Number(*p.figs[i].Value)
			}
		}
		if r.judged != "" {
			t.Colours = colours(t.Values, func(v float64) report.Severity { return analysis.Colour(r.judged, v) })
		}
		out[r.ID] = t
	}
	last := pts[len(pts)-1]
	if !math.IsNaN(last.kv) {
		t := gaugeTrend(step, pts, func(p point) float64 { return p.kv }, units.Percent)
		t.Colours = colours(t.Values, func(v float64) report.Severity { return analysis.Colour("live/kv_cache", v) })
		out[TrendKV] = t
	}
	if !math.IsNaN(last.wait) {
		t := gaugeTrend(step, pts, func(p point) float64 { return p.wait }, units.Integer)
		t.Of = "queued"
		t.Colours = make([]report.Severity, len(pts))
		for j, p := range pts {
			t.Colours[j] = analysis.QueueColour(p.run, p.wait)
		}
		out[TrendQueue] = t
	}
	gpuTrends(out, step, pts)
	return out
}

// gpuPoint is what a GPU reading gives the trends.
func gpuPoint(g *snapshot.GPUs) map[string]float64 {
	if g == nil || g.Status != snapshot.GPUsRead {
		return nil
	}
	w := analysis.GPUState(g)
	out := map[string]float64{}
	for key, v := range map[string]*float64{TrendGPUUtilization: w.Utilization, TrendGPUDRAM: w.DRAMActive, TrendGPUPower: w.Power,
		TrendGPUMemory: analysis.GPUSum(g, snapshot.GPUMemoryUsedBytes)} {
		if v != nil {
			out[key] = *v
		}
	}
	return out
}

// gpuTrends adds the GPU gauges' trends where the newest reading has them.
func gpuTrends(out map[string]*report.Trend, step report.Number, pts []point) {
	last := pts[len(pts)-1].gpu
	say := map[string]func(float64) string{TrendGPUUtilization: units.Percent, TrendGPUDRAM: units.Percent,
		TrendGPUPower: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " W" }, TrendGPUMemory: units.Bytes}
	for key, f := range say {
		if _, ok := last[key]; !ok {
			continue
		}
		out[key] = gaugeTrend(step, pts, func(p point) float64 {
			if v, ok := p.gpu[key]; ok {
				return v
			}
			return math.NaN()
		}, f)
	}
}

func gaugeTrend(step report.Number, pts []point, of func(point) float64, say func(float64) string) *report.Trend {
	t := &report.Trend{StepSeconds: step, Values: make(report.List[report.Number], len(pts)), Say: say}
	for j, p := range pts {
		t.Values[j] = report.Number(of(p))
	}
	return t
}

// colours gives each value that is one its band's colour.
func colours(values []report.Number, colour func(float64) report.Severity) []report.Severity {
	out := make([]report.Severity, len(values))
	for j, v := range values {
		if !math.IsNaN(float64(v)) {
			out[j] = colour(float64(v))
		}
	}
	return out
}

// say writes a value of the row as its cells write one (its range in a
// sparkline's picture).
func (r Row) say(v float64) string {
	if r.kind == kQuantile {
		return units.Seconds(v)
	}
	return r.Cell(Figure{Value: &v})
}

// Heat returns each latency histogram's increase per interval kept
// (TTFT and end-to-end, by their canonical names), in the bucket layout
// of the newest interval that has one; an interval with another layout,
// or none, is a gap. Nil when no trends are kept or no interval has
// either histogram.
func (h *History) Heat() map[string]*report.Heat {
	pts := h.trend.points
	if h.trend.step <= 0 || len(pts) == 0 {
		return nil
	}
	var out map[string]*report.Heat
	for i, name := range histNames {
		var layout *histogram.Histogram
		for j := len(pts) - 1; j >= 0 && layout == nil; j-- {
			layout = pts[j].hists[i]
		}
		if layout == nil {
			continue
		}
		hm := &report.Heat{Title: heatTitles[name], StepSeconds: report.Number(h.trend.step.Seconds()), Counts: make(report.List[[]report.Number], len(pts))}
		for _, b := range layout.Buckets {
			hm.Bounds = append(hm.Bounds, b.UpperBound)
			hm.LE = append(hm.LE, formatLE(b.UpperBound))
		}
		for j, p := range pts {
			if inc := p.hists[i]; inc != nil && sameBounds(inc, layout) {
				hm.Counts[j] = perBucket(inc)
			}
		}
		if out == nil {
			out = map[string]*report.Heat{}
		}
		out[name] = hm
	}
	return out
}

// heatTitles name the latency histograms in the picture.
var heatTitles = map[string]string{
	snapshot.TimeToFirstTokenSeconds:  "time to first token",
	snapshot.E2ERequestLatencySeconds: "end-to-end",
}

func sameBounds(a, b *histogram.Histogram) bool {
	if len(a.Buckets) != len(b.Buckets) {
		return false
	}
	for i := range a.Buckets {
		if a.Buckets[i].UpperBound != b.Buckets[i].UpperBound {
			return false
		}
	}
	return true
}

// perBucket is each bucket's own observations in an increase.
func perBucket(inc *histogram.Histogram) []report.Number {
	nc := inc.NonCumulative()
	out := make([]report.Number, len(nc))
	for i, b := range nc {
		out[i] = report.Number(b.Count)
	}
	return out
}

// formatLE writes an upper bound as the le label does.
func formatLE(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
