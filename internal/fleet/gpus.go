package fleet

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The GPUs beside the engines (issue 32), asked beside the window: the
// DCGM series in the same store, each GPU told apart by
// promql.DeviceLabels, joined to the instances discovery found (joinGPUs:
// by the Kubernetes pod dcgm-exporter gives the GPU to, else by host),
// and read over the window as the instances are: on the store-computed
// path each GPU's means, energy readings and reading at the window's end
// from the store (internal/promql's GPU library), on the whole read from
// its raw samples, computed here the same way. What did not join is said
// in a fleet note, never put in a row. Each instance's GPUs make one
// analysis.GPUWindow, summed and meaned over its whole GPUs as the
// single-instance report does (analysis.GPUSum, GPUMean), and its GPU
// notes are analysis.JudgeGPU's.

// GPUJoin is how the fleet joins the store's GPUs to its instances
// (--gpu-join).
type GPUJoin string

const (
	// GPUJoinAuto joins a GPU that dcgm-exporter's pod mapping gives to a
	// pod by that pod (namespace and pod), and one given to none by host.
	GPUJoinAuto GPUJoin = "auto"
	// GPUJoinPod joins only by pod.
	GPUJoinPod GPUJoin = "pod"
	// GPUJoinHost joins only by host: the host of an instance's scrape
	// target against the GPU's Hostname label and the host of its
	// exporter's target.
	GPUJoinHost GPUJoin = "host"
	// GPUJoinOff reads no GPU.
	GPUJoinOff GPUJoin = "off"
)

// GPUJoins lists what --gpu-join takes.
func GPUJoins() []string {
	return []string{string(GPUJoinAuto), string(GPUJoinPod), string(GPUJoinHost), string(GPUJoinOff)}
}

// gpuDevice is one GPU of the store, as the reading at the window's end
// found it.
type gpuDevice struct {
	key    string
	labels map[string]string // promql.DeviceLabels' values ("" where absent)
	// ns and pod are the workload dcgm-exporter gives the GPU to; hosts
	// its Hostname and its exporter's target's host.
	ns, pod string
	hosts   []string
	// end are its series' newest samples at the window's end.
	end []endSample
}

// endSample is one of a GPU's newest samples: its family, value, and the
// words of an XID (err_msg).
type endSample struct {
	family, msg string
	value       float64
}

// name says which GPU it is in a note: host/gpu, with its pod.
func (d *gpuDevice) name() string {
	host := d.labels["Hostname"]
	if host == "" && len(d.hosts) > 0 {
		host = d.hosts[len(d.hosts)-1]
	}
	s := host + "/gpu " + d.labels["gpu"]
	if id := d.labels["GPU_I_ID"]; id != "" {
		s += "/" + id
	}
	return s
}

// workload is the pod dcgm-exporter's pod mapping gives a GPU to, under
// any of its names: exported_* where Prometheus renamed them beside its
// own target labels, the old names, the current ones.
func workload(l map[string]string) (ns, pod string) {
	for _, p := range [][2]string{{"exported_namespace", "exported_pod"}, {"pod_namespace", "pod_name"}, {"namespace", "pod"}} {
		if l[p[1]] != "" {
			return l[p[0]], l[p[1]]
		}
	}
	return "", ""
}

// hostOf is the host of a target's address ("10.0.0.1:8000": 10.0.0.1).
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// gpuRead is what the GPU stage found: each instance's GPUs by its id,
// and what did not join.
type gpuRead struct {
	join GPUJoin
	// devices is how many GPUs the store had at the window's end.
	devices  int
	byGroup  map[string]*InstanceGPUs
	unjoined []string // each GPU that joined no instance, with why
	// narrowed says a selector narrowed the instances (not the GPUs).
	narrowed bool
}

// InstanceGPUs are the GPUs joined to one instance and their window.
type InstanceGPUs struct {
	// Join is how they joined it: "pod", "host" (or both, "pod, host").
	Join    string
	devices []*gpuDevice
	// Window is what they did over the fleet's window.
	Window analysis.GPUWindow
	// Whole says they were read from raw samples, and Why, where the
	// store's figures were asked for, why.
	Whole bool
	Why   string
}

// Count is how many GPUs (MIG instances each one) joined.
func (ig *InstanceGPUs) Count() int { return len(ig.devices) }

// deviceWindow is one GPU's window: its shares' and rates' means (GPU
// names, their units), its energy over the window and the seconds between
// the energy's two readings (nil where either end lacks it).
type deviceWindow struct {
	means   map[string]float64
	invalid []snapshot.Problem
	energy  *float64
	seconds float64
}

// readGPUs reads the store's GPUs at the window's end and joins them to
// the instances of d; then each joined GPU's window, from the store's
// figures (a pushdown) or its raw samples (a rebuild). nil where the
// store has no GPU, or the join is off.
func readGPUs(ctx context.Context, q *querier, d *discovery) (*gpuRead, error) {
	join := q.o.GPUJoin
	if join == "" {
		join = GPUJoinAuto
	}
	if join == GPUJoinOff {
		return nil, nil
	}
	// The means take the samples after the window's start to its end, as
	// the whole read does: a range 1 ms short of the window reads them on
	// every store (Prometheus before 3.0 takes a sample at the range's
	// start too, later ones and VictoriaMetrics do not).
	w := q.o.To.Sub(q.o.From)
	if w > time.Millisecond {
		w -= time.Millisecond
	}
	lib, err := promql.NewGPU(promql.Options{By: promql.DeviceLabels, Window: promDuration(w)})
	if err != nil {
		return nil, err
	}
	// The DCGM families the store holds (from its index: a store without
	// GPUs is asked this alone), which are the ones asked.
	start, end := q.listed()
	names, err := q.labelValues(ctx, "gpu: the dcgm-exporter families the store holds", model.MetricNameLabel, nil, start, end)
	if err != nil {
		return nil, err
	}
	held := heldFamilies(names)
	if len(held.End) == 0 {
		return nil, nil
	}
	// The GPUs' readings at the window's end and, on the store-computed
	// path, their figures over the window, all at once.
	byID, err := promql.NewGPU(promql.Options{By: promql.DeviceID, Window: promDuration(w)})
	if err != nil {
		return nil, err
	}
	var devices []*gpuDevice
	var stored *storedGPUs
	err = alongside(ctx,
		func(ctx context.Context) (err error) { devices, err = readEnd(ctx, q, lib, byID, held.End); return },
		func(ctx context.Context) (err error) {
			if q.o.Read == Pushdown {
				stored, err = fetchStored(ctx, q, byID, held)
			}
			return
		})
	if err != nil {
		return nil, err
	}
	if len(devices) == 0 {
		return nil, nil
	}
	r := &gpuRead{join: join, devices: len(devices), byGroup: map[string]*InstanceGPUs{}, narrowed: len(q.o.Selector) > 0}
	joinGPUs(r, devices, d.groups)
	if len(r.byGroup) == 0 {
		return r, nil
	}
	var joined []*gpuDevice
	for _, ig := range r.byGroup {
		joined = append(joined, ig.devices...)
	}
	windows := map[string]*deviceWindow{}
	raw := joined
	if q.o.Read == Pushdown {
		var why map[string]string
		windows, why = stored.windows(joined)
		raw = nil
		for _, dv := range joined {
			if why[dv.key] != "" {
				raw = append(raw, dv)
			}
		}
		for _, ig := range r.byGroup {
			for _, dv := range ig.devices {
				if w := why[dv.key]; w != "" {
					ig.Whole, ig.Why = true, w
				}
			}
		}
	} else {
		for _, ig := range r.byGroup {
			ig.Whole = true
		}
	}
	if len(raw) > 0 {
		rw, err := rawWindows(ctx, q, raw)
		if err != nil {
			return nil, err
		}
		for k, w := range rw {
			windows[k] = w
		}
	}
	// The GPU section says where they were read: "dcgm-exporter at" the
	// store.
	source := "the store"
	if c, ok := q.api.(interface{ URL() string }); ok {
		source = c.URL()
	}
	for _, ig := range r.byGroup {
		ig.Window = gpuWindowOf(ig.devices, windows, q.o, source)
	}
	return r, nil
}

// heldGPU are the DCGM families of promql.DeviceFamilies a store holds,
// and whether it holds the energy counter.
type heldGPU struct {
	Mean, End []string
	energy    bool
}

// heldFamilies are the families of promql.DeviceFamilies among the
// store's names.
func heldFamilies(names []string) heldGPU {
	h := heldGPU{energy: slices.Contains(names, promql.DeviceFamilies.Energy)}
	for _, f := range promql.DeviceFamilies.Mean {
		if slices.Contains(names, f) {
			h.Mean = append(h.Mean, f)
		}
	}
	for _, f := range promql.DeviceFamilies.End {
		if slices.Contains(names, f) {
			h.End = append(h.End, f)
		}
	}
	return h
}

// identity are the families a GPU is found by, the first the store holds:
// utilization, which every exporter's default counters publish, else its
// energy or memory.
var identity = []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_FB_USED"}

// readEnd reads each GPU's newest samples at the window's end, family by
// family (one query each, run at once): the first of identity it holds by
// every label of the GPU (lib), which finds the GPUs and whose they are,
// the rest by the labels that tell a GPU apart (byID), half as many in
// each answer.
func readEnd(ctx context.Context, q *querier, lib, byID *promql.GPU, families []string) ([]*gpuDevice, error) {
	first := families[0]
	for _, f := range identity {
		if slices.Contains(families, f) {
			first = f
			break
		}
	}
	exprs := []tagged{{tag: first, expr: lib.DeviceLast(first)}}
	for _, f := range families {
		if f != first {
			exprs = append(exprs, tagged{tag: f, expr: byID.DeviceLast(f)})
		}
	}
	byKey := map[string]*gpuDevice{}
	byIDKey := map[string][]endSample{}
	var out []*gpuDevice
	err := q.tagged(ctx, "gpu: each GPU's reading at the window's end (dcgm-exporter's series)", exprs, q.o.To, func(i int, s *model.Sample) {
		if math.IsNaN(float64(s.Value)) {
			return
		}
		es := endSample{family: exprs[i].tag, msg: string(s.Metric["err_msg"]), value: float64(s.Value)}
		if i > 0 {
			k := labelsKey(s.Metric, promql.DeviceID)
			byIDKey[k] = append(byIDKey[k], es)
			return
		}
		k := deviceKey(s.Metric)
		dv := byKey[k]
		if dv == nil {
			l := make(map[string]string, len(promql.DeviceLabels))
			for _, n := range promql.DeviceLabels {
				l[n] = string(s.Metric[model.LabelName(n)])
			}
			dv = &gpuDevice{key: k, labels: l}
			dv.ns, dv.pod = workload(l)
			for _, h := range []string{l["Hostname"], hostOf(l["instance"])} {
				if h != "" && !slices.Contains(dv.hosts, h) {
					dv.hosts = append(dv.hosts, h)
				}
			}
			byKey[k] = dv
			out = append(out, dv)
		}
		dv.end = append(dv.end, es)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	for _, dv := range out {
		dv.end = append(dv.end, byIDKey[dv.idKey()]...)
		// In the families' order, whichever answer came first.
		sort.SliceStable(dv.end, func(i, j int) bool {
			return slices.Index(promql.DeviceFamilies.End, dv.end[i].family) < slices.Index(promql.DeviceFamilies.End, dv.end[j].family)
		})
	}
	return out, nil
}

// idKey is the GPU's key by promql.DeviceID, as labelsKey gives it.
func (dv *gpuDevice) idKey() string {
	var b strings.Builder
	for _, n := range promql.DeviceID {
		b.WriteString(dv.labels[n])
		b.WriteByte(0)
	}
	return b.String()
}

// joinGPUs gives each GPU to the one instance it joins, or says why it
// joins none: a GPU given to a pod joins the instance of that pod (by pod,
// unless --gpu-join host); one given to none joins the one instance whose
// target's host is the GPU's (by host, unless --gpu-join pod). A pod or a
// host with several instances joins none: its GPUs cannot be told apart
// between them.
func joinGPUs(r *gpuRead, devices []*gpuDevice, groups []*group) {
	byPod := map[[2]string][]*group{}
	byHost := map[string][]*group{}
	for _, g := range groups {
		for p := range g.pods {
			byPod[p] = append(byPod[p], g)
		}
		hosts := map[string]bool{}
		for t := range g.targets {
			hosts[hostOf(t.Instance)] = true
		}
		for h := range hosts {
			byHost[h] = append(byHost[h], g)
		}
	}
	give := func(g *group, how string, dv *gpuDevice) {
		ig := r.byGroup[g.id]
		if ig == nil {
			ig = &InstanceGPUs{Join: how}
			r.byGroup[g.id] = ig
		} else if ig.Join != how {
			ig.Join = "pod, host"
		}
		ig.devices = append(ig.devices, dv)
	}
	for _, dv := range devices {
		if dv.pod != "" && r.join != GPUJoinHost {
			switch gs := byPod[[2]string{dv.ns, dv.pod}]; len(gs) {
			case 1:
				give(gs[0], "pod", dv)
			case 0:
				r.unjoined = append(r.unjoined, fmt.Sprintf("%s (given to pod %s/%s, no instance read)", dv.name(), dv.ns, dv.pod))
			default:
				r.unjoined = append(r.unjoined, fmt.Sprintf("%s (pod %s/%s holds %d instances)", dv.name(), dv.ns, dv.pod, len(gs)))
			}
			continue
		}
		if r.join == GPUJoinPod {
			r.unjoined = append(r.unjoined, dv.name()+" (given to no pod)")
			continue
		}
		var gs []*group
		for _, h := range dv.hosts {
			for _, g := range byHost[h] {
				if !slices.Contains(gs, g) {
					gs = append(gs, g)
				}
			}
		}
		switch len(gs) {
		case 1:
			give(gs[0], "host", dv)
		case 0:
			r.unjoined = append(r.unjoined, dv.name()+" (no instance on its host)")
		default:
			r.unjoined = append(r.unjoined, fmt.Sprintf("%s (its host runs %d instances)", dv.name(), len(gs)))
		}
	}
}

// Tags of the store's GPU figures.
const (
	gpuTagMean     = "m:"
	gpuTagEnergy   = "e:"
	gpuTagEnergyAt = "t:"
	gpuTagResets   = "r:"
)

// storedGPUs are the store's figures of every GPU over the window, by its
// key: the readings at the window's end and start.
type storedGPUs struct {
	end, start map[string]*storedReading
}

// storedReading is what the store said of one GPU at one time.
type storedReading struct {
	means              map[string]float64 // by family
	energy, at, resets *float64
}

// fetchStored asks the store for each GPU's window: each mean family's
// avg_over_time, its energy counter and when it was read at the window's
// two ends, and its restarts.
func fetchStored(ctx context.Context, q *querier, lib *promql.GPU, held heldGPU) (*storedGPUs, error) {
	var atEnd []tagged
	for _, f := range held.Mean {
		atEnd = append(atEnd, tagged{tag: gpuTagMean + f, expr: lib.DeviceMean(f)})
	}
	var both []tagged
	if held.energy {
		both = []tagged{{tag: gpuTagEnergy, expr: lib.DeviceEnergy()}, {tag: gpuTagEnergyAt, expr: lib.DeviceEnergyAt()}}
		atEnd = append(atEnd, both...)
		// Restarts since the reading at the start, which lies within the
		// lookback before it.
		atEnd = append(atEnd, tagged{tag: gpuTagResets, expr: lib.DeviceEnergyResets(promDuration(q.o.To.Sub(q.o.From) + Lookback))})
	}
	readAt := func(purpose string, exprs []tagged, at time.Time) (map[string]*storedReading, error) {
		out := map[string]*storedReading{}
		err := q.tagged(ctx, purpose, exprs, at, func(i int, s *model.Sample) {
			k := labelsKey(s.Metric, promql.DeviceID)
			r := out[k]
			if r == nil {
				r = &storedReading{means: map[string]float64{}}
				out[k] = r
			}
			v := float64(s.Value)
			switch tag := exprs[i].tag; {
			case strings.HasPrefix(tag, gpuTagMean):
				r.means[tag[len(gpuTagMean):]] = v
			case tag == gpuTagEnergy:
				r.energy = &v
			case tag == gpuTagEnergyAt:
				r.at = &v
			case tag == gpuTagResets:
				r.resets = &v
			}
		})
		return out, err
	}
	out := &storedGPUs{}
	err := alongside(ctx,
		func(ctx context.Context) (err error) {
			out.end, err = readAt("gpu: each GPU's means over the window, its energy counter and restarts, at the window's end", atEnd, q.o.To)
			return
		},
		func(ctx context.Context) (err error) {
			if len(both) > 0 {
				out.start, err = readAt("gpu: each GPU's energy counter at the window's start", both, q.o.From)
			}
			return
		})
	return out, err
}

// windows are the joined GPUs' windows from the store's figures; why
// names the GPUs whose energy counter restarted inside the window (or
// fell): they are read from raw samples.
func (st *storedGPUs) windows(joined []*gpuDevice) (map[string]*deviceWindow, map[string]string) {
	out, why := map[string]*deviceWindow{}, map[string]string{}
	for _, dv := range joined {
		w := &deviceWindow{means: map[string]float64{}}
		out[dv.key] = w
		// By the GPU's DeviceID: a GPU given to another pod inside the
		// lookback (two label sets of one GPU) has the window of both.
		id := dv.idKey()
		e, s := st.end[id], st.start[id]
		if e == nil {
			continue
		}
		for _, f := range promql.DeviceFamilies.Mean {
			if v, ok := e.means[f]; ok {
				w.mean(f, v, dv)
			}
		}
		switch {
		case e.energy == nil || s == nil || s.energy == nil || e.at == nil || s.at == nil:
		case e.resets != nil && *e.resets > 0 || *e.energy < *s.energy:
			why[dv.key] = "its energy counter restarted inside the window"
		default:
			w.setEnergy(*s.energy, *e.energy, *e.at-*s.at)
		}
	}
	return out, why
}

// deviceKey is the key of the GPU a sample grouped by DeviceLabels is of.
func deviceKey(m model.Metric) string { return labelsKey(m, promql.DeviceLabels) }

// labelsKey is the values of the labels names of m, each ended by a 0.
func labelsKey(m model.Metric, names []string) string {
	var b strings.Builder
	b.Grow(128)
	for _, n := range names {
		b.WriteString(string(m[model.LabelName(n)]))
		b.WriteByte(0)
	}
	return b.String()
}

// mean keeps a family's mean over the window as its GPU name's value, or
// names it as no reading.
func (w *deviceWindow) mean(family string, raw float64, dv *gpuDevice) {
	if math.IsNaN(raw) {
		return
	}
	name, v, why := gpu.DCGMValue(family, raw)
	switch {
	case name == "":
	case why != "":
		w.invalid = append(w.invalid, snapshot.Problem{Series: family + " of " + dv.name() + " over the window", Reason: why})
	default:
		w.means[name] += v
	}
}

// setEnergy keeps the energy between two readings of the counter (mJ).
func (w *deviceWindow) setEnergy(from, to, seconds float64) {
	name, a, why1 := gpu.DCGMValue(promql.DeviceFamilies.Energy, from)
	_, b, why2 := gpu.DCGMValue(promql.DeviceFamilies.Energy, to)
	if name == "" || why1 != "" || why2 != "" {
		return
	}
	e := b - a
	w.energy, w.seconds = &e, seconds
}

// rawWindows reads each GPU's raw samples over the window and its
// lookback, and computes what the store's figures give: each mean
// family's mean of the samples inside the window (after its start, to its
// end, as avg_over_time takes them), the energy counter's increase from
// its newest sample at the window's start to its newest at the end (a
// fall counted from zero: the driver restarted), and the newest sample of
// each series at the end.
func rawWindows(ctx context.Context, q *querier, devices []*gpuDevice) (map[string]*deviceWindow, error) {
	out := make([]*deviceWindow, len(devices))
	rng := promDuration(q.o.To.Sub(q.o.From) + Lookback)
	from, to := model.TimeFromUnixNano(q.o.From.UnixNano()), model.TimeFromUnixNano(q.o.To.UnixNano())
	lb := model.Time(Lookback / time.Millisecond)
	err := inParallel(ctx, len(devices), 0, func(ctx context.Context, i int) error {
		dv := devices[i]
		var ms []promql.Matcher
		for _, n := range promql.DeviceLabels {
			ms = append(ms, promql.Matcher{Label: n, Op: "=", Value: dv.labels[n]})
		}
		m, err := q.raw(ctx, "gpu, read whole: one GPU's raw samples over the window", promql.DeviceRaw(ms, rng), q.o.To)
		if err != nil {
			return err
		}
		w := &deviceWindow{means: map[string]float64{}}
		means := map[string][]float64{}
		var energy *float64
		var seconds float64
		for _, ss := range m {
			family := string(ss.Metric[model.MetricNameLabel])
			var vals []float64
			var first, last *model.SamplePair
			inc, prev := 0.0, math.NaN()
			for j := range ss.Values {
				p := &ss.Values[j]
				v := float64(p.Value)
				if math.IsNaN(v) {
					continue // a staleness marker: no reading
				}
				if p.Timestamp > from && p.Timestamp <= to {
					vals = append(vals, v)
				}
				if family != promql.DeviceFamilies.Energy || p.Timestamp > to {
					continue
				}
				switch {
				case p.Timestamp <= from:
					if p.Timestamp > from-lb {
						first, prev, inc = p, v, 0
					}
				case first != nil:
					if v < prev {
						inc += v
					} else {
						inc += v - prev
					}
					prev, last = v, p
				}
			}
			if len(vals) > 0 && slices.Contains(promql.DeviceFamilies.Mean, family) {
				sum := 0.0
				for _, v := range vals {
					sum += v
				}
				means[family] = append(means[family], sum/float64(len(vals)))
			}
			if first != nil {
				if last == nil {
					last = first
				}
				if last.Timestamp > to-lb && (energy == nil || inc > *energy) {
					e := inc
					energy, seconds = &e, float64(last.Timestamp-first.Timestamp)/1000
				}
			}
		}
		for _, f := range promql.DeviceFamilies.Mean {
			if vs := means[f]; len(vs) > 0 {
				sum := 0.0
				for _, v := range vs {
					sum += v
				}
				w.mean(f, sum/float64(len(vs)), dv)
			}
		}
		if energy != nil {
			// The increase, as two readings whose difference it is.
			w.setEnergy(0, *energy, seconds)
		}
		out[i] = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	byKey := map[string]*deviceWindow{}
	for i, dv := range devices {
		byKey[dv.key] = out[i]
	}
	return byKey, nil
}

// gpuWindowOf is an instance's GPUs' window: their reading at the window's
// end (the state now, read by internal/gpu as a scrape of the exporter),
// each share's mean over the window averaged over the whole GPUs and each
// rate summed (analysis.GPUMean, GPUSum), the energy the counters' sum
// over the window where every whole GPU has it at both ends, the power
// that energy over its time (else the mean of the power readings, summed),
// throttle reasons and XID as the end's.
func gpuWindowOf(devices []*gpuDevice, windows map[string]*deviceWindow, o Options, source string) analysis.GPUWindow {
	end := gpu.FromDCGMSeries(gpuSeries(devices))
	end.Source, end.Status, end.At = source, snapshot.GPUsRead, o.To.UTC()
	byKey := map[string]*snapshot.GPU{}
	for i := range end.Devices {
		d := &end.Devices[i]
		byKey[d.Host+"\x00"+d.UUID+"\x00"+d.ID] = d
	}
	// means holds each GPU with its means over the window as its figures.
	means := &snapshot.GPUs{Kind: end.Kind, Status: snapshot.GPUsRead}
	energy, power, allEnergy := 0.0, 0.0, true
	for _, dv := range devices {
		d := byKey[dv.endKey()]
		if d == nil {
			continue
		}
		if dv.pod != "" {
			// The workload the join read, under whichever names it had.
			d.Namespace, d.Pod, d.Container = dv.ns, dv.pod, firstOf(dv.labels["exported_container"], dv.labels["container_name"], dv.labels["container"])
		}
		w := windows[dv.key]
		if w == nil {
			w = &deviceWindow{}
		}
		end.Invalid = append(end.Invalid, w.invalid...)
		m := *d
		m.Scalars = w.means
		means.Devices = append(means.Devices, m)
		// The device's figures the end does not read (its profiling
		// shares, traffic) are its means over the window.
		for name, v := range w.means {
			if _, has := d.Scalars[name]; !has {
				d.Scalars[name] = v
			}
		}
		if _, has := d.Scalars[snapshot.GPUEnergyJoules]; !has || !d.Whole() {
			continue
		}
		if w.energy == nil || w.seconds <= 0 {
			allEnergy = false
			continue
		}
		energy += *w.energy
		power += *w.energy / w.seconds
	}
	end.Missing = gpu.DCGMMissing(end)
	g := analysis.GPUWindow{Label: windowWords(o), Seconds: o.To.Sub(o.From).Seconds(), End: end}
	g.Utilization = analysis.GPUMean(means, snapshot.GPUUtilization)
	g.SMActive = analysis.GPUMean(means, snapshot.GPUSMActive)
	g.DRAMActive = analysis.GPUMean(means, snapshot.GPUDRAMActive)
	g.TensorActive = analysis.GPUMean(means, snapshot.GPUTensorActive)
	g.MemoryBusy = analysis.GPUMean(means, snapshot.GPUMemoryBusy)
	g.PCIe = sumBoth(analysis.GPUSum(means, snapshot.GPUPCIeTxBytesPerSecond), analysis.GPUSum(means, snapshot.GPUPCIeRxBytesPerSecond))
	g.NVLink = sumBoth(analysis.GPUSum(means, snapshot.GPUNVLinkTxBytesPerSecond), analysis.GPUSum(means, snapshot.GPUNVLinkRxBytesPerSecond))
	g.PowerLimit = analysis.GPUSum(end, snapshot.GPUPowerLimitWatts)
	var fromCounter *float64
	if analysis.GPUSum(end, snapshot.GPUEnergyJoules) != nil && allEnergy {
		g.Energy, fromCounter = &energy, &power
	}
	g.Power, g.CounterPower = analysis.PowerOf(fromCounter, analysis.GPUSum(means, snapshot.GPUPowerWatts), g.PowerLimit)
	if mask, ok := analysis.GPUThrottle(end); ok {
		g.Reasons = mask
		limited := 0.0
		if mask&snapshot.ThrottleLimiting != 0 {
			limited = 1
		}
		g.Throttled, g.ThrottledAtEnd = &limited, true
	}
	return g
}

// endKey is the key internal/gpu gives the device in a reading: its host,
// UUID and id (a MIG instance's with its GPU instance).
func (dv *gpuDevice) endKey() string {
	id := dv.labels["gpu"]
	if dv.labels["GPU_I_ID"] != "" {
		id += "/" + dv.labels["GPU_I_ID"]
	}
	if id == "" {
		id = dv.labels["UUID"]
	}
	return dv.labels["Hostname"] + "\x00" + dv.labels["UUID"] + "\x00" + id
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func sumBoth(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	v := *a + *b
	return &v
}

// readLabels are the labels internal/gpu reads of a series: which device
// it is of, the pod it is given to.
var readLabels = []string{"GPU_I_ID", "GPU_I_PROFILE", "Hostname", "UUID", "container", "gpu", "modelName", "namespace", "pod"}

// gpuSeries are the devices' newest samples as internal/gpu reads a
// scrape of the exporter's series, with the labels it reads (a device's
// made once for all of its series).
func gpuSeries(devices []*gpuDevice) []gpu.Series {
	var out []gpu.Series
	for _, dv := range devices {
		base := make(map[string]string, len(readLabels))
		for _, l := range readLabels {
			if v := dv.labels[l]; v != "" {
				base[l] = v
			}
		}
		for _, p := range dv.end {
			ls := base
			if p.msg != "" {
				ls = maps.Clone(base)
				ls["err_msg"] = p.msg
			}
			out = append(out, gpu.Series{Family: p.family, Labels: ls, Value: p.value})
		}
	}
	return out
}
