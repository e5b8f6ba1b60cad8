package surfaces_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/sim"
)

// The simulated half hour: scraped every step from t0 to end; the fleet's
// "now" is the last 5 minutes, its range the last 20.
const step = 15 * time.Second

var (
	t0        = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	end       = t0.Add(30 * time.Minute)
	nowFrom   = end.Add(-5 * time.Minute)
	rangeFrom = end.Add(-20 * time.Minute)
)

// server is one simulated inference server of the fleet, and its scrapes.
type server struct {
	pod, instance, scenario string
	seed                    uint64
	// starts are its processes' start times: a second one is a restart.
	starts []time.Time
	// llamacpp serves llama.cpp's names (a llama-server of build b10309
	// and older: computed prompt tokens, no cached tokens, no request
	// count, a drafter-less server's spec-decode counters at 0, no start
	// time); else tabbyAPI's, the exporter's.
	llamacpp bool
	// perModel creates the generation series at the first request, after
	// the first scrape (vLLM's and llm-d's counters, the proxy's series).
	perModel bool
	// noStart publishes no process start time (llm-d's simulator).
	noStart bool

	scrapes []*reading
}

// reading is one scrape of a server.
type reading struct {
	at      time.Time
	fams    []*dto.MetricFamily
	snap    *snapshot.Snapshot
	process int // which of starts served it
	totals  sim.Totals
	// gpu is its simulated dcgm-exporter's scrape, taken beside it, and
	// energy the joules the simulator says the GPU used by then.
	gpu    []*dto.MetricFamily
	energy float64
}

// simulated is the simulated fleet: staggered starts, one restart, one
// instance born without counters and without a start time, one
// llama.cpp-like instance.
func simulated() []*server {
	return []*server{
		// Thrashes its KV offload: notes on what happened fire in every
		// window; the only one with an offload section.
		{pod: "thrash-a", instance: "10.0.0.1:8000", scenario: "offload-thrash", seed: 1, starts: []time.Time{t0.Add(-2 * time.Minute)}},
		// Born inside the range, its start time known.
		{pod: "chat-b", instance: "10.0.0.2:8000", scenario: "chat", seed: 2, starts: []time.Time{t0.Add(15*time.Minute + 5*time.Second)}},
		// Restarted inside the range (counters from zero, a new start).
		{pod: "chat-c", instance: "10.0.0.3:8000", scenario: "chat", seed: 3,
			starts: []time.Time{t0.Add(-time.Minute), t0.Add(20*time.Minute + 7*time.Second)}},
		// Born inside "now": its first scrape, as it starts, has no
		// counters yet, and it publishes no start time.
		{pod: "late-d", instance: "10.0.0.4:8000", scenario: "chat", seed: 4, starts: []time.Time{t0.Add(26*time.Minute + 15*time.Second)},
			perModel: true, noStart: true},
		{pod: "llama-e", instance: "10.0.0.5:8080", scenario: "chat", seed: 5, starts: []time.Time{t0.Add(-30 * time.Second)}, llamacpp: true},
	}
}

// labels are the target labels a scrape config gives the server.
func (s *server) labels() promtool.Labels {
	return promtool.Labels{"job": "surfaces", "instance": s.instance, "namespace": "sim", "pod": s.pod}
}

// gpuLabels are the target labels of its GPU's exporter: its node's, with
// no pod (the pod mapping's labels are the exporter's own).
func (s *server) gpuLabels() promtool.Labels {
	return promtool.Labels{"job": "dcgm-exporter", "instance": "node-" + s.pod + ":9400"}
}

// id is the server's instance id in the fleet view.
func (s *server) id() string { return "sim/" + s.pod }

// at is the server's scrape taken at t, nil when it took none.
func (s *server) at(t time.Time) *reading {
	for _, sc := range s.scrapes {
		if sc.at.Equal(t) {
			return sc
		}
	}
	return nil
}

// last is the server's newest scrape.
func (s *server) last() *reading { return s.scrapes[len(s.scrapes)-1] }

// modelled names the generations of a per-model exporter.
type modelled struct{ m *exporter.Metrics }

func (r modelled) RecordGeneration(g exporter.Generation) {
	g.Model = "tiny"
	r.m.RecordGeneration(g)
}

// process is one process of a server.
type process struct {
	start time.Time
	sim   *sim.Sim
	m     *exporter.Metrics
	gpu   *sim.GPU
}

func (s *server) process(k int) (*process, error) {
	cfg, err := sim.Scenario(s.scenario, s.seed+uint64(1000*k))
	if err != nil {
		return nil, err
	}
	cfg.Epoch = s.starts[k]
	sm, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	m := exporter.New(exporter.Options{Engine: sm, MaxSeqLen: cfg.MaxSeqLen, StartTime: cfg.Epoch, PerModel: s.perModel})
	if s.perModel {
		sm.SetRecorder(modelled{m})
	} else {
		sm.SetRecorder(m)
	}
	// Its GPU, given to its pod as dcgm-exporter's pod mapping gives it:
	// a driver of its own, whose energy counts from the process' start.
	gc := sim.DefaultGPU()
	gc.Namespace, gc.Pod, gc.Container = "sim", s.pod, "engine"
	return &process{start: cfg.Epoch, sim: sm, m: m, gpu: sim.NewGPU(sm, gc)}, nil
}

// simulate runs the server from t0 to end, scraping it every step while
// a process of it is up.
func (s *server) simulate() error {
	var p *process
	current := -1
	for at := t0; !at.After(end); at = at.Add(step) {
		k := -1
		for i, st := range s.starts {
			if !st.After(at) {
				k = i
			}
		}
		if k < 0 {
			continue
		}
		if k != current {
			var err error
			if p, err = s.process(k); err != nil {
				return err
			}
			current = k
		}
		p.sim.RunUntil(at.Sub(p.start))
		body, err := get(p.m)
		if err != nil {
			return fmt.Errorf("%s at %v: %w", s.pod, at, err)
		}
		if s.llamacpp {
			body = llamaCpp(body)
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			return fmt.Errorf("%s at %v: %w", s.pod, at, err)
		}
		if s.noStart {
			fams = withoutStart(fams)
		}
		snap, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			return fmt.Errorf("%s at %v: %w", s.pod, at, err)
		}
		snap.ScrapedAt = at
		snap.TimeSource = "scrape"
		snap.Source = s.id()
		var gb bytes.Buffer
		if err := p.gpu.WriteText(&gb); err != nil {
			return err
		}
		gfams, err := exposition.Parse(gb.Bytes(), exposition.Text)
		if err != nil {
			return fmt.Errorf("%s's GPU at %v: %w", s.pod, at, err)
		}
		t := p.sim.Totals()
		s.scrapes = append(s.scrapes, &reading{at: at, fams: fams, snap: snap, process: k, totals: t,
			gpu: gfams, energy: p.gpu.Config().EnergyJoules(t, p.sim.Elapsed())})
	}
	return nil
}

// get scrapes the exporter as a server's /metrics is scraped, in the
// text format.
func get(m *exporter.Metrics) ([]byte, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

func withoutStart(fams []*dto.MetricFamily) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, f := range fams {
		if !strings.HasSuffix(f.GetName(), "process_start_time_seconds") {
			out = append(out, f)
		}
	}
	return out
}

// llamaNames are the exporter's families a llama-server of b10309 has,
// under its names: computed prompt tokens but no cached ones, no request
// count, no histograms.
var llamaNames = map[string]string{
	"tabbyapi:prompt_tokens_total":            "llamacpp:prompt_tokens_total",
	"tabbyapi:prompt_seconds_total":           "llamacpp:prompt_seconds_total",
	"tabbyapi:tokens_predicted_total":         "llamacpp:tokens_predicted_total",
	"tabbyapi:tokens_predicted_seconds_total": "llamacpp:tokens_predicted_seconds_total",
	"tabbyapi:requests_processing":            "llamacpp:requests_processing",
	"tabbyapi:requests_deferred":              "llamacpp:requests_deferred",
}

var sampleName = regexp.MustCompile(`^(?:# (?:HELP|TYPE) )?([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// llamaCpp rewrites an exporter exposition in llama.cpp's names: the
// families llamaNames lists, and a drafter-less server's spec-decode
// counters at 0.
func llamaCpp(body []byte) []byte {
	var b strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		m := sampleName.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		to, ok := llamaNames[m[1]]
		if !ok {
			continue
		}
		b.WriteString(strings.Replace(line, m[1], to, 1) + "\n")
	}
	for _, c := range []string{"llamacpp:spec_decode_num_draft_tokens_total", "llamacpp:spec_decode_num_accepted_tokens_total"} {
		fmt.Fprintf(&b, "# TYPE %s counter\n%s 0\n", c, c)
	}
	return []byte(b.String())
}

// backfill writes every scrape of the fleet as an OpenMetrics file with
// timestamps (each sample's family together, its series in time order),
// with an up series per scrape, for a store to load.
func backfill(t *testing.T, servers []*server) string {
	t.Helper()
	lines := map[string]map[string][]string{} // sample name → series → lines
	for _, s := range servers {
		for _, sc := range s.scrapes {
			up := s.labels()
			up["__name__"] = "up"
			pts := append(promtool.Points(sc.fams, s.labels()), promtool.Point{Labels: up, Value: 1})
			pts = append(pts, promtool.Points(sc.gpu, s.gpuLabels())...)
			ts := strconv.FormatFloat(float64(sc.at.UnixMilli())/1000, 'f', -1, 64)
			for _, p := range pts {
				name := p.Labels["__name__"]
				sel := omSeries(p.Labels)
				if lines[name] == nil {
					lines[name] = map[string][]string{}
				}
				lines[name][sel] = append(lines[name][sel], sel+" "+strconv.FormatFloat(p.Value, 'g', -1, 64)+" "+ts)
			}
		}
	}
	var b strings.Builder
	for _, name := range sortedKeys(lines) {
		for _, sel := range sortedKeys(lines[name]) {
			for _, l := range lines[name][sel] {
				b.WriteString(l + "\n")
			}
		}
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "fleet.om")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// omSeries writes a series as OpenMetrics does: no space after a comma.
func omSeries(ls promtool.Labels) string {
	var parts []string
	for _, k := range sortedKeys(ls) {
		if k != "__name__" {
			parts = append(parts, k+"="+strconv.Quote(ls[k]))
		}
	}
	return ls["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
