// Package demo runs the simulator behind the exporter for `inferscope demo`:
// either serving /metrics while the simulation runs in scaled real time
// ([Start]), or simulating a span of virtual time as fast as possible and
// returning the exposition at its end ([Once]).
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/sim"
)

// Defaults of [Options] as the command line offers them.
const (
	DefaultScenario = sim.DefaultScenario
	// DefaultSpeed runs a simulated minute in three wall seconds.
	DefaultSpeed   = 20
	DefaultSeed    = 1
	DefaultSimTime = 10 * time.Minute
)

// MaxSpeed bounds Speed: beyond it a tick's worth of simulation stops being
// small next to the tick.
const MaxSpeed = 1000

// DefaultListen is the address served when Options.Listen is empty: a free
// port on the loopback interface.
const DefaultListen = "127.0.0.1:0"

// tick is how often the live simulation catches up with the wall clock.
const tick = 50 * time.Millisecond

// MaxSimTime bounds Options.SimTime: a week of simulated time takes [Once]
// some seconds, and covers the longest rate window (24 h) many times over.
const MaxSimTime = 7 * 24 * time.Hour

// onceChunk is how much virtual time [Once] runs between looks at its
// context: a few milliseconds of work on the busiest scenario.
const onceChunk = time.Minute

// Options choose what the demo simulates and where it serves it.
type Options struct {
	// Scenario names a simulator scenario ([Scenarios]); "" is the default.
	Scenario string
	// Speed is simulated seconds per wall second for [Start]; [Once] runs as
	// fast as it can and ignores it.
	Speed float64
	// Seed fixes the run: the same seed gives the same workload.
	Seed uint64
	// NoStart publishes no process start: set where other programs read a
	// simulation run faster than the wall clock, whose requests take more
	// simulated time than the wall-clock uptime a start would give (the
	// demo's own view reads the server on the simulated clock instead).
	NoStart bool
	// SimTime is how much virtual time [Once] simulates.
	SimTime time.Duration
	// Listen is the address [Start] serves on; "" is [DefaultListen].
	Listen string
	// API, when set, is where [Start] also serves an OpenAI- and
	// Ollama-compatible API backed by the simulated engine (see api.go);
	// the scenario's own workload is then off: only the API's requests
	// arrive.
	API string
	// Generation, when set, is told every generation the simulator
	// finishes, as it records it (its true queue, prefill and decode
	// times): the truth a client's figures are checked against in tests.
	Generation func(exporter.Generation)
}

// Scenarios lists the scenario names, the default first.
func Scenarios() []string { return sim.Scenarios() }

// Validate reports the first option that cannot work, in words fit for a
// user who typed it.
func (o Options) Validate() error {
	if o.Scenario != "" {
		if _, err := sim.Scenario(o.Scenario, o.Seed); err != nil {
			return err
		}
	}
	switch {
	case math.IsNaN(o.Speed) || o.Speed <= 0:
		return fmt.Errorf("speed must be a positive number of simulated seconds per wall second, got %v", o.Speed)
	case o.Speed > MaxSpeed:
		return fmt.Errorf("speed %v is above the most the demo runs in real time (%d); for a fast result use --once", o.Speed, MaxSpeed)
	case o.SimTime < 0:
		return fmt.Errorf("simulated time must not be negative, got %v", o.SimTime)
	case o.SimTime > MaxSimTime:
		return fmt.Errorf("simulated time %v is more than the demo simulates (at most %v, a week)", o.SimTime, MaxSimTime)
	}
	return nil
}

func (o Options) scenario() string {
	if o.Scenario == "" {
		return sim.DefaultScenario
	}
	return o.Scenario
}

// engine builds the simulator for o with its virtual clock starting at
// epoch, wired to an exporter that publishes epoch as the process start.
func (o Options) engine(epoch time.Time) (*sim.Sim, *exporter.Metrics, error) {
	cfg, err := sim.Scenario(o.scenario(), o.Seed)
	if err != nil {
		return nil, nil, err
	}
	cfg.Epoch = epoch
	cfg.Workload.Off = o.API != ""
	s, err := sim.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("scenario %s: %w", o.scenario(), err)
	}
	var unknown exporter.Quantity
	if o.NoStart {
		unknown = exporter.UnknownStart
	}
	m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: epoch, Unknown: unknown})
	if o.Generation != nil {
		s.SetRecorder(tee{m, o.Generation})
	} else {
		s.SetRecorder(m)
	}
	return s, m, nil
}

// tee records a generation into the exporter and tells a watcher.
type tee struct {
	m  *exporter.Metrics
	to func(exporter.Generation)
}

func (t tee) RecordGeneration(g exporter.Generation) {
	t.m.RecordGeneration(g)
	t.to(g)
}

// Once simulates o.SimTime of virtual time as fast as possible and returns
// the text exposition at its end, with the simulator's clock as wall time.
// The clock starts at the fixed [sim.DefaultEpoch], which is also the
// published process start, so now − start is the simulated uptime and the
// same options give the same body. It returns ctx's error soon after ctx
// ends (the simulation runs in slices, which does not change the run).
func Once(ctx context.Context, o Options) (body []byte, now time.Time, err error) {
	body, _, now, err = OnceWithGPU(ctx, o)
	return body, now, err
}

// OnceWithGPU is [Once], and the simulated GPU's dcgm-exporter metrics at
// the run's end (its shares over the whole run, its only sample period).
func OnceWithGPU(ctx context.Context, o Options) (body, gpuBody []byte, now time.Time, err error) {
	if o.Speed == 0 {
		o.Speed = 1 // unused here; only a bad value given on purpose is an error
	}
	if err := o.Validate(); err != nil {
		return nil, nil, time.Time{}, err
	}
	if o.SimTime <= 0 {
		return nil, nil, time.Time{}, fmt.Errorf("simulated time must be positive, got %v", o.SimTime)
	}
	s, m, err := o.engine(sim.DefaultEpoch)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	for t := time.Duration(0); t < o.SimTime; {
		if err := ctx.Err(); err != nil {
			return nil, nil, time.Time{}, err
		}
		t = min(t+onceChunk, o.SimTime)
		s.RunUntil(t)
	}
	var b, gb bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("writing the simulator's metrics: %w", err)
	}
	if err := sim.NewGPU(s, sim.DefaultGPU()).WriteText(&gb); err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("writing the simulated GPU's metrics: %w", err)
	}
	return b.Bytes(), gb.Bytes(), s.Now(), nil
}

// ListenError is an address [Start] could not serve on.
type ListenError struct {
	Addr  string
	InUse bool // another process holds the address
	Err   error
}

func (e *ListenError) Error() string {
	if e.InUse {
		return fmt.Sprintf("cannot listen on %s: the address is already in use", e.Addr)
	}
	return fmt.Sprintf("cannot listen on %s: %v", e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

func addrInUse(err error) bool {
	if errors.Is(err, syscall.EADDRINUSE) {
		return true
	}
	// Windows reports WSAEADDRINUSE, which syscall.EADDRINUSE does not match.
	msg := err.Error()
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "one usage of each socket address")
}

// Server is a running demo: a simulation advancing with the wall clock and
// an HTTP server publishing its metrics.
type Server struct {
	url      string
	scenario string
	// sim is the running simulator, and done is closed once the context
	// given to [Start] has ended and the simulation and the HTTP server
	// have stopped: the package's tests watch both.
	sim  *sim.Sim
	done chan struct{}
	api  string // the API's base URL, when served
	// gpu is the simulated dcgm-exporter beside the engine (issue 32),
	// served at /gpu/metrics.
	gpu *sim.GPU
}

// GPUURL is where the simulated GPU's dcgm-exporter metrics are served:
// /gpu/metrics beside the engine's /metrics.
func (s *Server) GPUURL() string { return strings.TrimSuffix(s.url, "/metrics") + GPUPath }

// GPUPath is the simulated dcgm-exporter's path on the demo's server.
const GPUPath = "/gpu/metrics"

// GPU is the simulated GPU, whose configuration gives its ground truth.
func (s *Server) GPU() *sim.GPU { return s.gpu }

// Now is the simulated server's own clock: its published process start
// (the moment [Start] ran) plus the virtual time it has run, o.Speed times
// the wall time since. Its request times are on this clock; a reader on
// the wall clock sees them take longer than the process has been up.
func (s *Server) Now() time.Time { return s.sim.Now() }

// URL is where the metrics are served, e.g. http://127.0.0.1:40123/metrics.
func (s *Server) URL() string { return s.url }

// APIURL is the API's base URL, e.g. http://127.0.0.1:11434; "" when
// Options.API was not set.
func (s *Server) APIURL() string { return s.api }

func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Start begins a simulation in scaled real time, o.Speed simulated seconds
// per wall second from now, and serves its /metrics on o.Listen until ctx
// ends. The published process start is the moment Start ran, so scraped
// counters move Speed times faster than on the simulated server.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	addr := o.Listen
	if addr == "" {
		addr = DefaultListen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ListenError{Addr: addr, InUse: addrInUse(err), Err: err}
	}
	start := time.Now()
	s, m, err := o.engine(start)
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &Server{url: metricsURL(ln.Addr()), scenario: o.scenario(), sim: s, done: make(chan struct{}), gpu: sim.NewGPU(s, sim.DefaultGPU())}
	apiDone, every := closed(), tick
	if o.API != "" {
		catchUp := func() { s.RunUntil(time.Duration(float64(time.Since(start)) * o.Speed)) }
		if srv.api, apiDone, err = serveAPI(ctx, o.API, s, catchUp); err != nil {
			ln.Close()
			return nil, err
		}
		every = apiTick
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.Handle(GPUPath, srv.gpu)
	mux.HandleFunc("/", srv.index)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln) // returns http.ErrServerClosed on shutdown
	}()
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		drive(ctx, s, start, o.Speed, every)
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
		<-served
		<-stepped
		<-apiDone
		close(srv.done)
	}()
	return srv, nil
}

// drive advances the simulation to speed × the wall time since start on
// every tick. Each call catches up from where the last stopped, so a late
// tick costs nothing but a coarser view.
func drive(ctx context.Context, s *sim.Sim, start time.Time, speed float64, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.RunUntil(time.Duration(float64(time.Since(start)) * speed))
		}
	}
}

// metricsURL is the URL a client on this machine reaches the listener at:
// an unspecified host (":9400", "0.0.0.0:9400") is reached on loopback.
func metricsURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/metrics"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/metrics"
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "inferscope demo: a simulated inference server (scenario %s: %s)\nmetrics: /metrics\n",
		s.scenario, sim.Describe(s.scenario))
}
