package fleet

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/storetest"
)

// The GPU fixture: dcgm-exporter's series beside the range fixture's
// engines, as a Prometheus scraping the exporter stores them. Their names
// and labels are a real exporter's (testdata/gpu/dcgm/lke-rtx4000-ada.prom:
// provenance linode/lke-ai-conformance README.md, commit
// af1e2ef1f6143c7c81117a16dce4bb6e61f0a450, GPU Operator v25.10.0's
// dcgm-exporter with its pod mapping: gpu, UUID, pci_bus_id, device,
// modelName, Hostname, DCGM_FI_DRIVER_VERSION, container, namespace, pod,
// pod_uid), with the target labels a scrape adds. Samples every 15 s, 7 s
// after the engines' (the window's ends fall between two): the newest at
// the window's start is T0+29m52s, at its end T0+89m52s, 3600 s apart, and
// the window holds 240 of them. Energy is watts × 1000 mJ a second.
//
//   - vllm-a: two GPUs given to pod llm/vllm-a (labels as the exporter
//     writes them, kept by honor_labels): GPU 0 at 300 W, utilization 80%
//     and 100% in turn (a mean of 90%), GPU 1 at 200 W and 70%.
//   - vllm-b: one GPU given to llm/vllm-b at 150 W whose driver restarted at
//     T0+60m (its energy counter from zero): read from raw samples.
//   - sglang-a: one GPU given to llm/sglang-a, scraped without honor_labels
//     (exported_namespace, exported_pod; namespace and pod the exporter's
//     own pod's), 300 W, utilization 5% while the engine serves
//     (gpu_idle_engine_busy), throttled for the power cap at the end.
//   - bare: a vLLM outside Kubernetes at gpu-host-1:8000 and one GPU on the
//     same host (Hostname gpu-host-1, no pod), 100 W: joined by host.
//   - two GPUs that join no instance: one given to pod llm/trainer, one on
//     node-9 given to none.
//   - vllm-d (gone inside the window) has no GPU.
type fixGPU struct {
	host, gpu, uuid, target string
	labels                  []string // the pod mapping's, as stored
	watts                   float64
	util                    [2]float64 // by sample parity, percent
	driverReload            time.Time  // energy counts from zero here
	throttleAtEnd           float64
}

var fixGPUOffset = 7 * time.Second

func fixGPUs() []fixGPU {
	return []fixGPU{
		{host: "node-1", gpu: "0", uuid: "GPU-a0", target: "10.1.0.1:9400", labels: []string{"container", "vllm", "namespace", "llm", "pod", "vllm-a", "pod_uid", ""},
			watts: 300, util: [2]float64{80, 100}},
		{host: "node-1", gpu: "1", uuid: "GPU-a1", target: "10.1.0.1:9400", labels: []string{"container", "vllm", "namespace", "llm", "pod", "vllm-a", "pod_uid", ""},
			watts: 200, util: [2]float64{70, 70}},
		{host: "node-2", gpu: "0", uuid: "GPU-b0", target: "10.1.0.2:9400", labels: []string{"container", "vllm", "namespace", "llm", "pod", "vllm-b", "pod_uid", ""},
			watts: 150, util: [2]float64{60, 60}, driverReload: fixT0.Add(60 * time.Minute)},
		{host: "node-3", gpu: "0", uuid: "GPU-s0", target: "10.1.0.3:9400",
			labels: []string{"exported_container", "sglang", "exported_namespace", "llm", "exported_pod", "sglang-a", "namespace", "gpu-operator", "pod", "nvidia-dcgm-exporter-x7k2p"},
			watts:  300, util: [2]float64{5, 5}, throttleAtEnd: 0x4},
		{host: "gpu-host-1", gpu: "0", uuid: "GPU-h0", target: "gpu-host-1:9400", watts: 100, util: [2]float64{50, 50}},
		{host: "node-1", gpu: "2", uuid: "GPU-t0", target: "10.1.0.1:9400", labels: []string{"container", "train", "namespace", "llm", "pod", "trainer"},
			watts: 400, util: [2]float64{100, 100}},
		{host: "node-9", gpu: "0", uuid: "GPU-n0", target: "10.1.0.9:9400", watts: 60, util: [2]float64{0, 0}},
	}
}

func fixGPUPods() []fixPod {
	steady := []fixSegment{{fixFirst, fixLast.Add(time.Second), fixVirtual}}
	var out []fixPod
	for _, p := range fixPods() {
		switch p.pod {
		case "vllm-a", "vllm-b", "vllm-d", "sglang-a":
			out = append(out, p)
		}
	}
	return append(out, fixPod{pod: "bare", job: "vllm", instance: "gpu-host-1:8000", model: "llama", dialect: "vllm",
		engines: []engineRates{fixEngineB}, segments: steady, bare: true})
}

// writeGPUs adds the GPU fixture's series.
func writeGPUs(w *omWriter) {
	k := 0
	for at := fixFirst.Add(fixGPUOffset); !at.After(fixLast); at = at.Add(fixStep) {
		for _, g := range fixGPUs() {
			lab := append([]string{"gpu", g.gpu, "UUID", g.uuid, "pci_bus_id", "00000000:00:02.0", "device", "nvidia" + g.gpu,
				"modelName", "NVIDIA H100 80GB HBM3", "Hostname", g.host, "DCGM_FI_DRIVER_VERSION", "580.95.05"}, g.labels...)
			lab = append(lab, "job", "dcgm-exporter", "instance", g.target)
			ls := labelStr(lab...)
			gauge := func(name string, v float64) { w.add(name, "gauge", name, ls, v, at) }
			boot := fixVirtual
			if !g.driverReload.IsZero() && !at.Before(g.driverReload) {
				boot = g.driverReload
			}
			gauge("DCGM_FI_DEV_GPU_UTIL", g.util[k%2])
			gauge("DCGM_FI_DEV_POWER_USAGE", g.watts)
			gauge("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", g.watts*1000*at.Sub(boot).Seconds())
			gauge("DCGM_FI_DEV_FB_USED", 60000)
			gauge("DCGM_FI_DEV_FB_FREE", 21000)
			gauge("DCGM_FI_DEV_XID_ERRORS", 0)
			throttle := 0.0
			if at.After(fixTo.Add(-time.Minute)) {
				throttle = g.throttleAtEnd
			}
			gauge("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", throttle)
		}
		k++
	}
}

// TestGPUJoin reads the GPU fixture's window from both stores, by the
// store's figures and from raw samples (both: they must agree), and holds
// each row's GPU figures to the fixture's arithmetic.
func TestGPUJoin(t *testing.T) {
	t.Parallel()
	path := writeFixtureOf(t, t.TempDir(), fixGPUPods(), writeGPUs)
	stores := map[string]*storetest.Store{
		"prometheus":      storetest.Prometheus(t, storetest.Config{Backfill: path}),
		"victoriametrics": storetest.VictoriaMetrics(t, storetest.Config{Backfill: path}),
	}
	const w = 3600.0
	type gpuWant struct {
		gpus                  int
		join                  string
		watts, energy, jPerTk float64
		util                  float64
	}
	// vllm-b's driver restarted at T0+60m: 1800 s counted to its last
	// sample before (T0+59m52s), 1792 s from zero after, of 150 W; its
	// engine restarted too, generating 100 tok/s over 3592.5 s.
	bEnergy := 150 * (1800.0 + 1792)
	wants := map[string]gpuWant{
		"vllm/10.0.0.1:8000":    {gpus: 2, join: "pod", watts: 500, energy: 500 * w, jPerTk: 500 * w / (300 * w), util: 0.8},
		"vllm/10.0.0.2:8000":    {gpus: 1, join: "pod", watts: bEnergy / w, energy: bEnergy, jPerTk: bEnergy / (100 * 3592.5), util: 0.6},
		"sglang/10.0.0.5:30000": {gpus: 1, join: "pod", watts: 300, energy: 300 * w, jPerTk: 300.0 / 150, util: 0.05},
		"vllm/gpu-host-1:8000":  {gpus: 1, join: "host", watts: 100, energy: 100 * w, jPerTk: 1, util: 0.5},
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			push, whole := both(t, client(t, s), Options{From: fixFrom, To: fixTo, Range: true})
			for _, f := range []*Fleet{push, whole} {
				var energy, gen, watts float64
				for _, in := range f.Instances {
					want, ok := wants[in.ID]
					g := in.Figures.GPU
					if !ok {
						if g != nil || in.GPUs != nil {
							t.Errorf("%s %s: GPUs joined, want none", f.Read, in.ID)
						}
						continue
					}
					if g == nil || in.GPUs == nil {
						t.Errorf("%s %s: no GPU joined", f.Read, in.ID)
						continue
					}
					if g.GPUs != want.gpus || in.GPUs.Join != want.join {
						t.Errorf("%s %s: %d GPUs by %s, want %d by %s", f.Read, in.ID, g.GPUs, in.GPUs.Join, want.gpus, want.join)
					}
					for _, c := range []struct {
						what      string
						got       *float64
						want, tol float64
					}{
						{"watts", g.Watts, want.watts, 1e-9}, {"energy", g.Energy, want.energy, 1e-9},
						{"J/token", g.JoulesPerToken, want.jPerTk, 1e-9}, {"utilization", g.Utilization, want.util, 1e-9},
					} {
						if c.got == nil || math.Abs(*c.got-c.want) > c.tol*math.Max(1, c.want) {
							t.Errorf("%s %s: %s %v, want %v", f.Read, in.ID, c.what, show(c.got), c.want)
						}
					}
					energy += want.energy
					watts += want.watts
					gen += want.energy / want.jPerTk
				}
				// The totals: the rows' arithmetic, over the 4 of 5 rows
				// with GPUs (vllm-d has none).
				tg := f.Totals.Figures.GPU
				if tg == nil || tg.Watts == nil || !approx(*tg.Watts, watts) || tg.JoulesPerToken == nil || !approx(*tg.JoulesPerToken, energy/gen) {
					t.Errorf("%s totals: %+v, want %v W and %v J/token", f.Read, tg, watts, energy/gen)
				}
				if c := f.Totals.Figures.GPUCoverage[GPUWatts]; c.Over != 4 || c.Of != 5 {
					t.Errorf("%s totals: watts over %d of %d, want 4 of 5", f.Read, c.Over, c.Of)
				}
				notes := map[string]string{}
				for _, n := range f.Notes {
					notes[n.ID] = n.Text
				}
				if !strings.Contains(notes[NoteUnjoined], "2 GPUs") || !strings.Contains(notes[NoteUnjoined], "llm/trainer") ||
					!strings.Contains(notes[NoteUnjoined], "node-9/gpu 0 (no instance on its host)") {
					t.Errorf("%s: unjoined note %q", f.Read, notes[NoteUnjoined])
				}
				if !strings.Contains(notes[NoteGPUs], "5 GPUs") || !strings.Contains(notes[NoteCoverage], "GPU W over 4 of 5") {
					t.Errorf("%s: notes %q", f.Read, notes)
				}
				for _, in := range f.Instances {
					if in.ID == "sglang/10.0.0.5:30000" && !strings.Contains(noteIDs(in), "gpu_idle_engine_busy") {
						t.Errorf("%s %s: notes %q, want gpu_idle_engine_busy", f.Read, in.ID, noteIDs(in))
					}
				}
			}
			for _, in := range push.Instances {
				if in.GPUs != nil && in.GPUs.Whole != (in.ID == "vllm/10.0.0.2:8000") {
					t.Errorf("pushdown %s: GPUs read whole %v (%s)", in.ID, in.GPUs.Whole, in.GPUs.Why)
				}
			}
		})
	}
}

// The join's rules, one GPU at a time: by pod where the pod mapping gives
// the GPU to one (any of its label names), else by host; --gpu-join pod
// and host each alone; a pod or host of several instances joins none.
func TestJoinGPUs(t *testing.T) {
	groups := []*group{
		{id: "vllm/10.0.0.1:8000", targets: map[Target]bool{{"vllm", "10.0.0.1:8000"}: true}, pods: map[[2]string]bool{{"llm", "vllm-a"}: true}},
		{id: "vllm/gpu-host-1:8000", targets: map[Target]bool{{"vllm", "gpu-host-1:8000"}: true}},
		{id: "vllm/gpu-host-2:8000", targets: map[Target]bool{{"vllm", "gpu-host-2:8000"}: true}},
		{id: "vllm/gpu-host-2:8001", targets: map[Target]bool{{"vllm", "gpu-host-2:8001"}: true}},
	}
	dev := func(pairs ...string) *gpuDevice {
		l := map[string]string{}
		for i := 0; i+1 < len(pairs); i += 2 {
			l[pairs[i]] = pairs[i+1]
		}
		dv := &gpuDevice{key: strings.Join(pairs, ","), labels: l}
		dv.ns, dv.pod = workload(l)
		for _, h := range []string{l["Hostname"], hostOf(l["instance"])} {
			if h != "" {
				dv.hosts = append(dv.hosts, h)
			}
		}
		return dv
	}
	for _, tc := range []struct {
		name string
		join GPUJoin
		dv   *gpuDevice
		want string // the group id, or "" for none
	}{
		{"pod", GPUJoinAuto, dev("Hostname", "node-1", "gpu", "0", "namespace", "llm", "pod", "vllm-a"), "vllm/10.0.0.1:8000"},
		{"renamed beside the exporter's own pod", GPUJoinAuto,
			dev("Hostname", "node-1", "gpu", "0", "namespace", "gpu-operator", "pod", "dcgm-x", "exported_namespace", "llm", "exported_pod", "vllm-a"), "vllm/10.0.0.1:8000"},
		{"old names", GPUJoinAuto, dev("Hostname", "node-1", "gpu", "0", "pod_namespace", "llm", "pod_name", "vllm-a"), "vllm/10.0.0.1:8000"},
		{"a pod no instance is", GPUJoinAuto, dev("Hostname", "gpu-host-1", "gpu", "0", "namespace", "llm", "pod", "trainer"), ""},
		{"by Hostname", GPUJoinAuto, dev("Hostname", "gpu-host-1", "gpu", "0"), "vllm/gpu-host-1:8000"},
		{"by the exporter's host", GPUJoinAuto, dev("gpu", "0", "instance", "gpu-host-1:9400"), "vllm/gpu-host-1:8000"},
		{"a host of two instances", GPUJoinAuto, dev("Hostname", "gpu-host-2", "gpu", "0"), ""},
		{"pod alone: no pod", GPUJoinPod, dev("Hostname", "gpu-host-1", "gpu", "0"), ""},
		{"host alone: the pod ignored", GPUJoinHost, dev("Hostname", "gpu-host-1", "gpu", "0", "namespace", "llm", "pod", "vllm-a"), "vllm/gpu-host-1:8000"},
	} {
		r := &gpuRead{join: tc.join, byGroup: map[string]*InstanceGPUs{}}
		joinGPUs(r, []*gpuDevice{tc.dv}, groups)
		got := ""
		for id := range r.byGroup {
			got = id
		}
		if got != tc.want || (got == "") != (len(r.unjoined) == 1) {
			t.Errorf("%s: joined %q (unjoined %q), want %q", tc.name, got, r.unjoined, tc.want)
		}
	}
}
