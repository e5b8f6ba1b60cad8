package demo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/sim"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // substring of the error; "" for valid
	}{
		{"defaults", Options{Speed: 20}, ""},
		{"every scenario", Options{Scenario: "hybrid", Speed: 1, SimTime: time.Hour}, ""},
		{"unknown scenario names the valid ones", Options{Scenario: "chatty", Speed: 20}, `unknown scenario "chatty" (valid: chat, agent, spec, offload-thrash, offload-healthy, hybrid)`},
		{"zero speed", Options{Speed: 0}, "speed must be a positive number"},
		{"negative speed", Options{Speed: -2}, "got -2"},
		{"NaN speed", Options{Speed: math.NaN()}, "speed must be a positive number"},
		{"too fast", Options{Speed: MaxSpeed + 1}, "--once"},
		{"negative sim time", Options{Speed: 1, SimTime: -time.Second}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func parse(t *testing.T, body []byte) *snapshot.Snapshot {
	t.Helper()
	fams, err := exposition.Parse(body, exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestOnce(t *testing.T) {
	o := Options{Scenario: "chat", Seed: 3, SimTime: 7 * time.Minute}
	body, now, err := Once(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := sim.DefaultEpoch.Add(7 * time.Minute); !now.Equal(want) {
		t.Errorf("now = %v, want %v", now, want)
	}
	snap := parse(t, body)
	if start := snap.StartTime(); start != float64(sim.DefaultEpoch.Unix()) {
		t.Errorf("process start = %v, want the epoch %d", start, sim.DefaultEpoch.Unix())
	}
	if snap.Get("requests_total") == 0 {
		t.Error("seven simulated minutes finished no request")
	}
	again, _, err := Once(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, again) {
		t.Error("the same options gave a different body")
	}
	for _, bad := range []Options{{SimTime: 0}, {SimTime: time.Minute, Speed: -1}, {SimTime: time.Minute, Scenario: "x"}, {SimTime: MaxSimTime + time.Second}} {
		if _, _, err := Once(context.Background(), bad); err == nil {
			t.Errorf("Once(%+v) accepted", bad)
		}
	}
}

// Once run in slices is the run in one go: the same body as the simulator
// run straight to the end.
func TestOnceSlicesAreOneRun(t *testing.T) {
	o := Options{Scenario: "agent", Seed: 5, SimTime: 4*onceChunk + onceChunk/3}
	body, _, err := Once(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s, m, err := o.engine(sim.DefaultEpoch)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(o.SimTime)
	var b bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, b.Bytes()) {
		t.Error("the sliced run differs from the run in one go")
	}
}

// endsAfter is a context that ends after Err has been asked n times.
type endsAfter struct {
	context.Context
	n int
}

func (c *endsAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A context that ends mid-run stops Once at the next slice, with the
// context's error: a week of simulated time is not run to the end.
func TestOnceCanceled(t *testing.T) {
	ctx := &endsAfter{Context: context.Background(), n: 3}
	if _, _, err := Once(ctx, Options{SimTime: MaxSimTime}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Once on an ended context = %v", err)
	}
	if ctx.n != -1 {
		t.Errorf("Err asked %d times, want 4 (three slices run, then stop)", 3-ctx.n)
	}
}

func hasSection(r *report.Report, id string) bool {
	for _, s := range r.Sections {
		if s.ID == id {
			return true
		}
	}
	return false
}

func hasNote(r *report.Report, id string) bool {
	for _, n := range r.Notes {
		if n.ID == id {
			return true
		}
	}
	return false
}

// The truths as the one-shot report states them after ten simulated
// minutes, with the report's "now" at the simulator's clock.
func TestOnceReport(t *testing.T) {
	within := func(got *report.Number, want, rel float64) bool {
		return got != nil && math.Abs(float64(*got)-want) <= rel*want
	}
	tests := []struct {
		scenario string
		check    func(t *testing.T, r *report.Report)
	}{
		{"chat", func(t *testing.T, r *report.Report) {
			for _, id := range []string{"live", "throughput", "phases", "prefix_cache", "latency", "size"} {
				if !hasSection(r, id) {
					t.Errorf("section %s missing", id)
				}
			}
			for _, id := range []string{"spec_decode", "kv_offload", "recurrent"} {
				if hasSection(r, id) {
					t.Errorf("section %s present", id)
				}
			}
		}},
		{"agent", func(t *testing.T, r *report.Report) {
			// Over the whole run, cold start included.
			if !within(r.Figures.PrefixCacheHitRatio, 30000.0/32000, 0.02) {
				t.Errorf("hit ratio %v, want within 2%% of 0.9375", deref(r.Figures.PrefixCacheHitRatio))
			}
		}},
		{"spec", func(t *testing.T, r *report.Report) {
			if !within(r.Figures.SpecDecodeAcceptance, (0.75+0.5625+0.421875+0.31640625)/4, 0.03) {
				t.Errorf("acceptance %v", deref(r.Figures.SpecDecodeAcceptance))
			}
			if !within(r.Figures.SpecDecodeTokensPerStep, 1+0.75+0.5625+0.421875+0.31640625, 0.03) {
				t.Errorf("tokens/step %v", deref(r.Figures.SpecDecodeTokensPerStep))
			}
		}},
		{"offload-thrash", func(t *testing.T, r *report.Report) {
			if p := r.Figures.KVOffloadPayback; p == nil || *p >= 0.25 || !hasNote(r, "kv_offload_thrashing") {
				t.Errorf("payback %v, thrashing note %v", deref(p), hasNote(r, "kv_offload_thrashing"))
			}
		}},
		{"offload-healthy", func(t *testing.T, r *report.Report) {
			if p := r.Figures.KVOffloadPayback; p == nil || *p <= 1 || hasNote(r, "kv_offload_thrashing") {
				t.Errorf("payback %v, thrashing note %v", deref(p), hasNote(r, "kv_offload_thrashing"))
			}
		}},
		{"hybrid", func(t *testing.T, r *report.Report) {
			if !hasNote(r, "recurrent_raise_budget") {
				t.Errorf("no raise-budget note; notes: %+v", r.Notes)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			body, now, err := Once(context.Background(), Options{Scenario: tc.scenario, Seed: 1, SimTime: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			snap := parse(t, body)
			snap.ScrapedAt = now
			r := analysis.Analyze(snap, analysis.Options{Now: now})
			// Uptime is the simulated ten minutes, so requests in flight
			// average summed request time over 600 s; the simulator
			// publishes no engine busy time, so no utilization.
			if r.Figures.MeanInFlight == nil || r.Figures.RequestSeconds == nil || r.Figures.Utilization != nil {
				t.Fatalf("in flight %v, request time %v, utilization %v", r.Figures.MeanInFlight, r.Figures.RequestSeconds, r.Figures.Utilization)
			}
			if want := float64(*r.Figures.RequestSeconds) / 600; math.Abs(float64(*r.Figures.MeanInFlight)-want) > 1e-9 {
				t.Errorf("in flight %v, want %v", *r.Figures.MeanInFlight, want)
			}
			tc.check(t, r)
		})
	}
}

func deref(p *report.Number) any {
	if p == nil {
		return nil
	}
	return *p
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Start(ctx, Options{Scenario: "chat", Speed: MaxSpeed, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/metrics") {
		t.Errorf("URL = %q", srv.URL())
	}
	resp, first := get(t, srv.URL())
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Process-Start-Time-Unix") == "" {
		t.Errorf("status %d, Process-Start-Time-Unix %q", resp.StatusCode, resp.Header.Get("Process-Start-Time-Unix"))
	}
	before := parse(t, first).Get("requests_total")
	// At 1000x, chat finishes requests within a few simulated seconds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, b := get(t, srv.URL())
		if parse(t, b).Get("requests_total") > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("requests_total did not move in 10 s at 1000x")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if el := srv.sim.Elapsed(); el <= 0 {
		t.Errorf("virtual clock at %v", el)
	}
	if resp, body := get(t, strings.TrimSuffix(srv.URL(), "metrics")); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "/metrics") {
		t.Errorf("index: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, strings.TrimSuffix(srv.URL(), "metrics")+"nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}

	cancel()
	select {
	case <-srv.done:
	case <-time.After(5 * time.Second):
		t.Fatal("server still running 5 s after its context ended")
	}
	stopped := srv.sim.Elapsed()
	time.Sleep(3 * tick)
	if srv.sim.Elapsed() != stopped {
		t.Error("the simulation kept running after the context ended")
	}
	if _, err := http.Get(srv.URL()); err == nil {
		t.Error("still serving after the context ended")
	}
}

// A demo served to other programs faster than the wall clock publishes no
// start: its requests' simulated times outrun any wall-clock uptime.
func TestStartNoStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Start(ctx, Options{Scenario: "chat", Speed: 20, Seed: 1, NoStart: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, srv.URL())
	if h := resp.Header.Get("Process-Start-Time-Unix"); h != "" || strings.Contains(string(body), "process_start_time_seconds") {
		t.Errorf("a start published: header %q\n%s", h, body)
	}
}

func TestStartListenErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()

	tests := []struct {
		addr  string
		inUse bool
		want  string
	}{
		{busy, true, "cannot listen on " + busy + ": the address is already in use"},
		{"not-an-address", false, "cannot listen on not-an-address: "},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := Start(context.Background(), Options{Speed: 1, Listen: tc.addr})
			var le *ListenError
			if !errors.As(err, &le) || le.InUse != tc.inUse || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %v (%T), want %q with InUse %v", err, err, tc.want, tc.inUse)
			}
		})
	}
	if _, err := Start(context.Background(), Options{Speed: -1}); err == nil || !strings.Contains(err.Error(), "speed") {
		t.Errorf("negative speed: %v", err)
	}
}

func TestMetricsURL(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9400}, "http://127.0.0.1:9400/metrics"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 9400}, "http://127.0.0.1:9400/metrics"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 80}, "http://127.0.0.1:80/metrics"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 80}, "http://[::1]:80/metrics"},
	}
	for _, tc := range tests {
		if got := metricsURL(tc.addr); got != tc.want {
			t.Errorf("metricsURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// The served exposition passes promtool's lint apart from the naming the
// metric set keeps on purpose (docs/metrics.md): the "tabbyapi:" prefix
// with a colon, as llama.cpp's and vLLM's, and four counter names without
// _total kept for their dashboards.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("INFERSCOPE_CI") != "" {
			t.Fatal("promtool not on PATH, and CI must not skip this (.ci/run installs Debian's prometheus)")
		}
		t.Skip("promtool not installed (Debian: apt install prometheus)")
	}
	for _, name := range Scenarios() {
		body, _, err := Once(context.Background(), Options{Scenario: name, Seed: 1, SimTime: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, _ := cmd.CombinedOutput() // exits non-zero on the justified problems too
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" || justified(line) {
				continue
			}
			t.Errorf("%s: promtool: %s", name, line)
		}
	}
}

func justified(line string) bool {
	metric, text, _ := strings.Cut(line, " ")
	switch text {
	case "metric names should not contain ':'":
		return strings.HasPrefix(metric, "tabbyapi:")
	case `counter metrics should have "_total" suffix`:
		_, name, _ := strings.Cut(metric, ":")
		return slices.Contains([]string{"prefix_cache_queries", "prefix_cache_hits", "n_tokens_max", "tokens_predicted_max"}, name)
	}
	return false
}

// BenchmarkTick is the work of one tick of the live demo at the default
// speed: catching a running chat simulation up by 20 × 50 ms of virtual time.
// Its time over the 50 ms tick is the demo's steady CPU share without
// scrapes.
func BenchmarkTick(b *testing.B) {
	o := Options{Scenario: "chat", Speed: 20, Seed: 1}
	s, _, err := o.engine(sim.DefaultEpoch)
	if err != nil {
		b.Fatal(err)
	}
	s.RunUntil(10 * time.Minute) // warm: conversations under way
	step := time.Duration(o.Speed * float64(tick))
	for b.Loop() {
		s.Run(step)
	}
	b.ReportMetric(100*b.Elapsed().Seconds()/float64(b.N)/tick.Seconds(), "%cpu")
}
