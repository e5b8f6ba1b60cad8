package demo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/sim"
)

// MaxFleet bounds StartFleet: every server simulates on this machine.
const MaxFleet = 64

// FleetServer is one simulated server of a demo fleet. Besides serving
// its metrics it can be frozen (the simulation stops; /metrics keeps
// serving its last state) and restarted (a new process on the same
// address: every counter from zero, a new start time), which tests of
// the fleet view use to know the exact totals a store should hold.
type FleetServer struct {
	scenario string
	seed     uint64
	speed    float64
	pod      string
	url      string
	addr     string

	hs *http.Server

	mu     sync.Mutex
	sim    *sim.Sim
	m      *exporter.Metrics
	gpu    *sim.GPU
	frozen bool
	// virtual is how much simulated time the current process has run.
	virtual time.Duration
}

// URL is where the server's metrics are: http://127.0.0.1:PORT/metrics.
func (s *FleetServer) URL() string { return s.url }

// Addr is the server's host:port.
func (s *FleetServer) Addr() string { return s.addr }

// Scenario names the workload it simulates.
func (s *FleetServer) Scenario() string { return s.scenario }

// Pod is the name the fleet's prometheus.yml gives it.
func (s *FleetServer) Pod() string { return s.pod }

// Freeze stops the simulation; the server keeps answering scrapes with
// its last state.
func (s *FleetServer) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
}

// Resume starts the simulation again from where it stopped.
func (s *FleetServer) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = false
}

// Totals is the current process's exact account of its run.
func (s *FleetServer) Totals() sim.Totals {
	s.mu.Lock()
	sm := s.sim
	s.mu.Unlock()
	return sm.Totals()
}

// Restart replaces the process: a new simulation on the same address,
// its counters from zero, its start time now. It runs unless the server
// is frozen.
func (s *FleetServer) Restart() error {
	o := Options{Scenario: s.scenario, Seed: s.seed + 1000, Speed: s.speed}
	sm, m, err := o.engine(time.Now())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sim, s.m, s.virtual = sm, m, 0
	s.gpu = s.newGPU(sm)
	return nil
}

// newGPU is the simulated dcgm-exporter beside the server's engine, its
// GPU given to the server's pod as dcgm-exporter's pod mapping gives it
// (the fleet joins it by that pod).
func (s *FleetServer) newGPU(sm *sim.Sim) *sim.GPU {
	c := sim.DefaultGPU()
	c.Namespace, c.Pod, c.Container = FleetNamespace, s.pod, "engine"
	return sim.NewGPU(sm, c)
}

// GPUURL is where the server's simulated dcgm-exporter serves.
func (s *FleetServer) GPUURL() string { return "http://" + s.addr + GPUPath }

// Stop ends the server's HTTP service: a server down, whose scrapes fail.
func (s *FleetServer) Stop() { s.hs.Close() }

func (s *FleetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m, g := s.m, s.gpu
	s.mu.Unlock()
	switch r.URL.Path {
	case "/metrics":
		m.Handler().ServeHTTP(w, r)
	case GPUPath:
		g.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// step advances the simulation by speed × dt unless frozen.
func (s *FleetServer) step(dt time.Duration) {
	s.mu.Lock()
	if s.frozen {
		s.mu.Unlock()
		return
	}
	s.virtual += time.Duration(float64(dt) * s.speed)
	sm, to := s.sim, s.virtual
	s.mu.Unlock()
	sm.RunUntil(to)
}

// StartFleet starts n simulated servers on free loopback ports, each with
// a scenario in turn ([Scenarios]) and its own seed, running at o.Speed
// until ctx ends. o.Scenario and o.Listen are ignored.
func StartFleet(ctx context.Context, n int, o Options) ([]*FleetServer, error) {
	if n < 1 || n > MaxFleet {
		return nil, fmt.Errorf("a demo fleet has 1 to %d servers, not %d", MaxFleet, n)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scenarios := Scenarios()
	var servers []*FleetServer
	var wg sync.WaitGroup
	for i := range n {
		sc := scenarios[i%len(scenarios)]
		s := &FleetServer{scenario: sc, seed: o.Seed + uint64(i), speed: o.Speed, pod: fmt.Sprintf("%s-%d", sc, i)}
		// A store counts a server born in its window from its start: the
		// fleet keeps it, whatever the speed.
		sm, m, err := Options{Scenario: sc, Seed: s.seed, Speed: o.Speed}.engine(time.Now())
		if err != nil {
			return nil, err
		}
		s.sim, s.m = sm, m
		s.gpu = s.newGPU(sm)
		ln, err := net.Listen("tcp", DefaultListen)
		if err != nil {
			return nil, &ListenError{Addr: DefaultListen, InUse: addrInUse(err), Err: err}
		}
		s.url = metricsURL(ln.Addr())
		s.addr = strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/metrics")
		hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
		s.hs = hs
		wg.Add(2)
		go func() {
			defer wg.Done()
			hs.Serve(ln)
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				hs.Close()
			}
		}()
		servers = append(servers, s)
	}
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				for _, s := range servers {
					s.step(now.Sub(last))
				}
				last = now
			}
		}
	}()
	return servers, nil
}

// FleetBy is the --by that names the demo fleet's servers as FleetConfig
// labels them; the default, job,instance, would name them by their ports.
const FleetBy = "namespace,pod"

// FleetCommand reads the demo fleet through a Prometheus on its default
// port: the one next step the demo prints and FleetConfig's comment names.
const FleetCommand = "inferscope fleet --prometheus http://127.0.0.1:9090 --by " + FleetBy

// FleetNamespace is the namespace FleetConfig gives the demo's servers.
const FleetNamespace = "demo"

// FleetConfig is a prometheus.yml that scrapes servers every interval,
// each target labelled namespace="demo" and pod="<scenario>-<i>" (FleetBy),
// as a Kubernetes scrape would label them; and each server's simulated
// dcgm-exporter (job inferscope-demo-gpu), whose series name the pod its
// GPU is given to, as dcgm-exporter's pod mapping does: the fleet joins
// each GPU to its server by that pod.
func FleetConfig(servers []*FleetServer, interval time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# inferscope demo fleet: %d simulated servers, each with a simulated GPU.\n", len(servers))
	b.WriteString("# prometheus --config.file=THIS_FILE, then " + FleetCommand + "\n")
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: inferscope-demo\n    static_configs:\n",
		promInterval(interval), promInterval(interval))
	for _, s := range servers {
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {namespace: %s, pod: %q}\n", s.addr, FleetNamespace, s.pod)
	}
	b.WriteString("  - job_name: inferscope-demo-gpu\n    metrics_path: " + GPUPath + "\n    static_configs:\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "      - targets: [%q]\n", s.addr)
	}
	return b.String()
}

func promInterval(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}
