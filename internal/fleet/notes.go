package fleet

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// An instance's report: the one-shot analysis of its reading at the
// window's end, its notes on what happened judged on the window, and the
// window's rates first, as --since shows them.

// windowLabel is the window's column key and header: "5m", "1h".
func windowLabel(d time.Duration) string { return units.Duration(d.Round(time.Second)) }

// instanceReport is the instance's single-server report, with the
// window's rates first, as --since shows them.
func instanceReport(in *Instance, o Options) *report.Report {
	rep := analysis.Analyze(in.snap, analysis.Options{Now: in.snap.ScrapedAt, Hist: o.Hist, Raw: o.Raw, WithRates: true})
	// Notes on what happened judge the window, as the watch view's do.
	rep = rates.Judge(rep, in.snap, &in.delta.Delta, windowWords(o))
	sec, figs := rateSection(in.Figures, in.delta, o, in)
	rep.Sections = append([]report.Section{sec}, rep.Sections...)
	rep.Rates = figs
	rep.Header = append(instanceHeader(in), rep.Header...)
	return rep
}

// instanceHeader says where the instance's figures come from.
func instanceHeader(in *Instance) []string {
	var h []string
	if in.Dialect != "" {
		ts := make([]string, len(in.Targets))
		for i, t := range in.Targets {
			ts[i] = t.String()
		}
		h = append(h, fmt.Sprintf("instance %s (%s), read from the store", in.ID, strings.Join(ts, ", ")))
	}
	return h
}

// windowWords names the window in the notes: "the last 5m", or a past
// range's times.
func windowWords(o Options) string {
	if o.Range {
		return "the range " + rangeWords(o)
	}
	return "the last " + windowLabel(o.To.Sub(o.From))
}

// rangeWords are a past range's times: "2026-11-01 00:30:00 to 01:30:00 UTC".
func rangeWords(o Options) string {
	return o.From.UTC().Format("2006-01-02 15:04:05") + " to " + o.To.UTC().Format("15:04:05 MST")
}

// rateSection is the window's rates table of one instance (or the
// totals: their figures computed already), with a row for each thing
// that shaped the window.
func rateSection(f Figures, d windowDelta, o Options, in *Instance) (report.Section, map[string]map[string]*float64) {
	w := o.To.Sub(o.From)
	title := "Rates over the last " + windowLabel(w)
	if o.Range {
		title = "Rates from " + rangeWords(o)
	}
	sec := report.Section{ID: "rates", Title: title, Wide: true}
	say := func(id, label, value, note string) {
		sec.Rows = append(sec.Rows, report.Row{ID: id, Label: label, Value: value, Note: note, Severity: report.Dim})
	}
	if in != nil {
		switch {
		case d.fromZero:
			say("window_born", "started", clock(in.bornAt), "inside the window: counted from zero at its process start")
		case !in.bornAt.IsZero():
			say("window_born", "first seen", clock(in.bornAt), "inside the window: counted from its first sample, what it did before is not in these figures")
		}
		for _, t := range d.resets {
			say("window_restart", "restarted", clock(t), "counters counted from zero there (raw samples), as rate() does")
		}
		if in.State == Gone || in.State == Down {
			say("window_gone", "last sample", clock(in.lastAt), "figures end there")
		}
	}
	label := windowLabel(w)
	col := rates.Column{Key: label, Header: "Δ " + windowLabel(time.Duration(d.Seconds*float64(time.Second))), Delta: &d.Delta}
	if f.Totals != nil {
		col.Delta, col.Figures, col.Seconds = nil, f.Rates, f.Seconds
	}
	t, figs := rates.Table(f.Rows, []rates.Column{col})
	sec.Table = t
	return sec, figs
}

// unreadableReport stands for an instance the dialect could not read.
func unreadableReport(in *Instance, err error) *report.Report {
	return &report.Report{
		Schema: analysis.Schema, Source: in.ID, Dialect: in.Dialect,
		Header:   instanceHeader(in),
		Sections: []report.Section{},
		Notes:    []report.Note{{ID: "fleet_unreadable", Severity: report.Warn, Text: "its series in the store cannot be read: " + err.Error()}},
	}
}

// Thresholds of the fleet notes (docs/fleet.md lists them).
const (
	// ImbalanceFactor: an instance serving more than this many times the
	// median request rate means the router does not spread the load.
	ImbalanceFactor = 2.0
	// ImbalanceMin is the fewest instances with traffic the imbalance
	// is judged over: of two, neither is far from their median.
	ImbalanceMin = 3
	// OutlierFactor and OutlierFloor: an instance whose TTFT p99 is more
	// than OutlierFactor times the fleet's median p99, and above
	// OutlierFloor, is slower than its peers for a reason of its own.
	OutlierFactor = 2.0
	OutlierFloor  = 1.0 // seconds
	// maxListed is how many instance ids a note names.
	maxListed = 5
)

// Note ids of the fleet as a whole.
const (
	NoteDown       = "fleet_instance_down"
	NoteGone       = "fleet_instance_gone"
	NoteImbalance  = "fleet_load_imbalance"
	NoteOutlier    = "fleet_ttft_outlier"
	NoteRestarts   = "fleet_restarts"
	NoteNew        = "fleet_new_instances"
	NoteRouter     = "fleet_router_duplicates"
	NoteNative     = "fleet_native_histograms"
	NoteNoMetadata = "fleet_metadata_missing"
	NoteUnreadable = "fleet_unreadable"
	NoteCoverage   = "fleet_totals_partial"
	NoteReplicas   = "fleet_replica_copies"
	NoteReadWhole  = "fleet_read_whole"
	NoteGPUs       = "fleet_gpus"
	NoteUnjoined   = "fleet_gpus_unjoined"
)

// said is what discovery and the reads found of the fleet beyond its
// instances, for its notes.
type said struct {
	routerSeries int
	noMetadata   bool
	// copies are, by replica label, how many instances' series repeat
	// under it.
	copies map[string]int
	// gpus are the GPUs in the store and how they joined.
	gpus *gpuRead
}

// notesOf are the fleet's own notes: what no single instance's report can
// say.
func notesOf(f *Fleet, s said) []report.Note {
	var out []report.Note
	add := func(id string, sev report.Severity, format string, a ...any) {
		out = append(out, report.Note{ID: id, Severity: sev, Text: fmt.Sprintf(format, a...)})
	}
	stateNotes(f.Instances, add)
	balance(f.Instances, add)
	outliers(f.Instances, add)
	if n := s.routerSeries; n > 0 {
		add(NoteRouter, report.Info, "skipped %d series that a router re-publishes with a %s label (vLLM production-stack): added to the engines' own they would count every request twice",
			n, routerLabel)
	}
	native := 0
	for _, in := range f.Instances {
		if in.native > 0 {
			native++
		}
	}
	if native > 0 {
		add(NoteNative, report.Info, "%s stored as native or custom-bucket histograms: read from their histogram values as the classic buckets they stand for",
			units.Plural(float64(native), "instance's histograms", "instances' histograms"))
	}
	if s.noMetadata {
		add(NoteNoMetadata, report.Info, "%s returned no metric metadata (VictoriaMetrics keeps none, nor does a backfilled Prometheus): types are read from the series' names, and vLLM 0.8's block-counting prefix counters are told from later token-counting ones by their size, not their HELP text",
			f.Backend)
	}
	for _, l := range slices.Sorted(maps.Keys(s.copies)) {
		if n := s.copies[l]; n > 0 {
			add(NoteReplicas, report.Bad, "the series of %s repeat under the label %s (an HA pair read twice?): every count is added twice; read them once with --replica-label %s (or --dedup on a Thanos querier)",
				units.Plural(float64(n), "instance"), l, l)
		}
	}
	gpuNotes(f, s.gpus, add)
	if c := coverage(f.Totals); c != "" {
		add(NoteCoverage, report.Info, "%s", c)
	}
	if ws := readWholly(f.Instances); len(ws) > 0 {
		add(NoteReadWhole, report.Info, "%s read whole from %s series, where the store's sums cannot give the table: %s",
			units.Plural(float64(len(ws)), "instance"), their(len(ws)), listIDs(ws, func(in *Instance) string { return in.Why }))
	}
	return out
}

// readWholly are the instances a pushdown read whole, each with why.
func readWholly(ins []*Instance) []*Instance {
	var out []*Instance
	for _, in := range ins {
		if in.Why != "" {
			out = append(out, in)
		}
	}
	return out
}

func their(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// stateNotes say which instances were down, gone, restarted, new or
// unreadable.
func stateNotes(ins []*Instance, add func(string, report.Severity, string, ...any)) {
	byState := map[State][]*Instance{}
	for _, in := range ins {
		byState[in.State] = append(byState[in.State], in)
	}
	if ds := byState[Down]; len(ds) > 0 {
		add(NoteDown, report.Bad, "%s down (up == 0 at the window's end): %s; figures end at the last sample",
			units.Plural(float64(len(ds)), "instance"), listIDs(ds, lastSeen))
	}
	if gs := byState[Gone]; len(gs) > 0 {
		add(NoteGone, report.Info, "%s stopped publishing inside the window: %s; figures and rates end at the last sample",
			units.Plural(float64(len(gs)), "instance"), listIDs(gs, lastSeen))
	}
	if rs := byState[Restarted]; len(rs) > 0 {
		add(NoteRestarts, report.Warn, "%s restarted inside the window: %s; counters counted from zero at each restart, from raw samples",
			units.Plural(float64(len(rs)), "instance"), listIDs(rs, restartedAt))
	}
	if ns := byState[New]; len(ns) > 0 {
		add(NoteNew, report.Info, "%s first seen inside the window: %s; counted from the process start where it lies in the window (else from the first sample), with rates over that time, which the totals add as shown",
			units.Plural(float64(len(ns)), "instance"), listIDs(ns, bornAt))
	}
	if us := byState[Unreadable]; len(us) > 0 {
		add(NoteUnreadable, report.Warn, "%s could not be read: %s", units.Plural(float64(len(us)), "instance"), listIDs(us, func(in *Instance) string { return in.Err.Error() }))
	}
}

// listIDs names up to maxListed instances, each with what detail says.
func listIDs(ins []*Instance, detail func(*Instance) string) string {
	var parts []string
	for i, in := range ins {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(ins)-maxListed))
			break
		}
		s := in.ID
		if d := detail(in); d != "" {
			s += " (" + d + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

func lastSeen(in *Instance) string {
	if in.lastAt.IsZero() {
		return ""
	}
	return "last sample " + clock(in.lastAt)
}

func restartedAt(in *Instance) string {
	ts := make([]string, len(in.delta.resets))
	for i, t := range in.delta.resets {
		ts[i] = clock(t)
	}
	return "at " + strings.Join(ts, ", ")
}

func bornAt(in *Instance) string {
	if in.bornAt.IsZero() {
		return ""
	}
	return "from " + clock(in.bornAt)
}

// balance notes an instance serving far more requests than the median.
func balance(ins []*Instance, add func(string, report.Severity, string, ...any)) {
	type rate struct {
		in *Instance
		v  float64
	}
	var rs []rate
	for _, in := range ins {
		if v := in.Figures.value("requests"); v != nil && in.State != Down {
			rs = append(rs, rate{in, *v})
		}
	}
	if len(rs) < ImbalanceMin {
		return
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].v < rs[j].v })
	med := median(len(rs), func(i int) float64 { return rs[i].v })
	top := rs[len(rs)-1]
	if med <= 0 || top.v/med <= ImbalanceFactor {
		return
	}
	add(NoteImbalance, report.Warn, "%s serves %.1f× the median request rate (%s vs %s requests/s over %d instances): unless it is that much larger than its peers (data-parallel engines, a bigger GPU), the router is not spreading the load",
		top.in.ID, top.v/med, units.Count(top.v), units.Count(med), len(rs))
}

// outliers notes instances whose TTFT p99 is far above the fleet's
// median.
func outliers(ins []*Instance, add func(string, report.Severity, string, ...any)) {
	type p99 struct {
		in *Instance
		v  float64
	}
	var ps []p99
	for _, in := range ins {
		if v := in.Figures.value("ttft_p99"); v != nil {
			ps = append(ps, p99{in, *v})
		}
	}
	if len(ps) < ImbalanceMin {
		return
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].v < ps[j].v })
	med := median(len(ps), func(i int) float64 { return ps[i].v })
	var slow []*Instance
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].v > OutlierFactor*med && ps[i].v > OutlierFloor {
			slow = append(slow, ps[i].in)
		}
	}
	if len(slow) == 0 {
		return
	}
	add(NoteOutlier, report.Warn, "TTFT p99 more than %.0f× the fleet's median (%s): %s; compare their reports (queue, KV cache, prefill) with their peers'",
		OutlierFactor, units.Seconds(med), listIDs(slow, func(in *Instance) string { return units.Seconds(*in.Figures.value("ttft_p99")) }))
}

func median(n int, at func(int) float64) float64 {
	if n%2 == 1 {
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}

// coverage says which of the table's totals are made of only some of the
// instances: those that publish each figure's series (and have a figure
// for it over the window).
func coverage(t *Instance) string {
	if t == nil {
		return ""
	}
	var parts []string
	for _, c := range tableRates {
		for i, row := range t.Figures.Rows {
			if tot := t.Figures.Totals[i]; row.ID == c.id && tot.Over > 0 && tot.Over < tot.Of {
				parts = append(parts, fmt.Sprintf("%s over %d of %d", c.header, tot.Over, tot.Of))
			}
		}
	}
	for _, c := range gpuColumns {
		if cv, ok := t.Figures.GPUCoverage[c.id]; ok && cv.Over > 0 && cv.Over < cv.Of {
			parts = append(parts, fmt.Sprintf("%s over %d of %d", c.header, cv.Over, cv.Of))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "totals add up only the instances that give each figure: " + strings.Join(parts, ", ")
}
