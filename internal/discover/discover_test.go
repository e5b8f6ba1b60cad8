package discover_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/discover/discovertest"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tabbyLike is the repository's exporter driven by the simulator, as
// inferscope demo serves it: tabbyAPI's metric set, no model label.
func tabbyLike(t *testing.T) int {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := demo.Start(ctx, demo.Options{Listen: "127.0.0.1:0", Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// want is what a port must be found to be; fields left zero are not
// checked.
type want struct {
	kind              discover.Kind
	dialect, name     string
	version           string
	models            []discover.Model
	metricsPath, why  string
	prefixesHaveNames []string
}

// Every kind of answer discovery meets, on real loopback listeners, each
// told apart by what it answered: the vLLM fixture's models are the two
// its series label (read from the file by hand), the versions are the
// fakes' own.
func TestProbeTellsEachServer(t *testing.T) {
	vllm := discovertest.Metrics(t, read(t, "../../testdata/dialects/vllm-new.prom"), "0.11.1")
	ollama := discovertest.Ollama(t, "0.12.3", "llama3.2:3b")
	router := (&discovertest.Router{
		Models:  []discovertest.RouterModel{{ID: "qwen2.5-0.5b", Status: "loaded"}, {ID: "tiny-llama", Status: "unloaded"}},
		Metrics: read(t, "../../testdata/real/llama.cpp-b10309-tiny.prom"),
	}).Serve(t)
	// Triton's metrics port: Prometheus text under nv_, no dialect's.
	triton := discovertest.Metrics(t, []byte("# TYPE nv_inference_request_success counter\nnv_inference_request_success{model=\"ensemble\",version=\"1\"} 12\n"), "")
	// trtllm-serve: JSON at /metrics, the text at /prometheus/metrics
	// (vLLM's text here: no TensorRT-LLM dialect is needed to prove the
	// path is tried).
	trt := http.NewServeMux()
	trt.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]"))
	})
	vllmText := read(t, "../../testdata/dialects/vllm-0.10.prom")
	trt.HandleFunc("GET /prometheus/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write(vllmText) })
	trtSrv := discovertest.Serve(t, trt)
	// llama-server without --metrics: 501 at /metrics, its /props.
	noMetrics := http.NewServeMux()
	noMetrics.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotImplemented)
		w.Write([]byte(`{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with ` + "`--metrics`" + `","type":"not_supported_error"}}`))
	})
	noMetrics.HandleFunc("GET /props", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"model_alias":"tiny-llama","build_info":"b10309-82bb48500","endpoint_metrics":false}`))
	})
	noMetricsSrv := discovertest.Serve(t, noMetrics)
	silent, _ := discovertest.SilentPort(t)

	ports := []discover.Port{
		{Number: tabbyLike(t), Servers: []string{"tabbyAPI"}},
		{Number: discovertest.Port(t, vllm), Servers: []string{"vLLM"}},
		{Number: discovertest.Port(t, ollama), Servers: []string{"Ollama"}},
		{Number: discovertest.Port(t, router), Servers: []string{"llama.cpp"}},
		{Number: discovertest.Port(t, triton), Servers: []string{"Triton"}},
		{Number: discovertest.Port(t, trtSrv), Servers: []string{"TensorRT-LLM"}},
		{Number: discovertest.Port(t, noMetricsSrv), Servers: []string{"llama.cpp"}},
		{Number: discovertest.ClosedPort(t), Servers: []string{"SGLang"}},
		{Number: silent, Servers: []string{"TGI"}},
	}
	wants := []want{
		{kind: discover.Metrics, dialect: "tabbyapi", name: "tabbyAPI", metricsPath: "/metrics"},
		{kind: discover.Metrics, dialect: "vllm", name: "vLLM", version: "0.11.1", metricsPath: "/metrics",
			models: []discover.Model{{ID: "Qwen/Qwen3-Next-80B-A3B-Instruct"}, {ID: "meta-llama/Llama-3.3-70B-Instruct"}}},
		{kind: discover.NoMetrics, name: "Ollama", version: "0.12.3", models: []discover.Model{{ID: "llama3.2:3b", Status: "loaded"}}},
		{kind: discover.Router, dialect: "llamacpp", name: "llama.cpp router", version: "b10309-82bb48500", metricsPath: "/metrics",
			models: []discover.Model{{ID: "qwen2.5-0.5b", Status: "loaded"}, {ID: "tiny-llama", Status: "unloaded"}}},
		{kind: discover.Unread, metricsPath: "/metrics", prefixesHaveNames: []string{"nv_"}},
		{kind: discover.Metrics, dialect: "vllm", name: "vLLM", metricsPath: "/prometheus/metrics",
			models: []discover.Model{{ID: "Qwen/Qwen3-30B-A3B"}}},
		{kind: discover.NoMetrics, dialect: "llamacpp", name: "llama.cpp", version: "b10309-82bb48500",
			models: []discover.Model{{ID: "tiny-llama"}}, why: "started without --metrics"},
		{kind: discover.Closed},
		{kind: discover.Silent},
	}
	// A bound of seconds: what is tested is how each is told, not how
	// fast a loaded machine parses (TestProbeBoundedOverSilentPort holds
	// the default bound).
	res, err := discover.Probe(context.Background(), "127.0.0.1", discover.Options{Ports: ports, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ports) != len(wants) {
		t.Fatalf("%d ports answered for %d asked", len(res.Ports), len(wants))
	}
	for i, w := range wants {
		got := res.Ports[i]
		if got.Port != ports[i].Number || !reflect.DeepEqual(got.Expected, ports[i].Servers) {
			t.Errorf("port %d: listed as %d %v", i, got.Port, got.Expected)
		}
		check(t, got, w)
	}
	if n := len(res.Reportable()); n != 4 {
		t.Errorf("%d reportable, want 4 (tabbyAPI, vLLM, the router, trtllm's path)", n)
	}
	if n := len(res.Answering()); n != 7 {
		t.Errorf("%d answering, want 7", n)
	}
}

func check(t *testing.T, got discover.Server, w want) {
	t.Helper()
	where := got.Address
	if got.Kind != w.kind {
		t.Errorf("%s: kind %s (%s), want %s", where, got.Kind, got.Why, w.kind)
	}
	if got.Dialect != w.dialect {
		t.Errorf("%s: dialect %q, want %q", where, got.Dialect, w.dialect)
	}
	if w.name != "" && got.Name != w.name {
		t.Errorf("%s: name %q, want %q", where, got.Name, w.name)
	}
	if got.Version != w.version {
		t.Errorf("%s: version %q, want %q", where, got.Version, w.version)
	}
	if !reflect.DeepEqual(got.Models, w.models) {
		t.Errorf("%s: models %v, want %v", where, got.Models, w.models)
	}
	if w.metricsPath != "" && !strings.HasSuffix(got.MetricsURL, got.Address+w.metricsPath) {
		t.Errorf("%s: metrics read at %q, want %s", where, got.MetricsURL, w.metricsPath)
	}
	if w.metricsPath == "" && got.MetricsURL != "" {
		t.Errorf("%s: metrics read at %q, want none", where, got.MetricsURL)
	}
	if w.why != "" && got.Why != w.why {
		t.Errorf("%s: why %q, want %q", where, got.Why, w.why)
	}
	for _, p := range w.prefixesHaveNames {
		if !strings.Contains(strings.Join(got.Prefixes, " "), p) {
			t.Errorf("%s: prefixes %v lack %s", where, got.Prefixes, p)
		}
	}
}

// The probe's bound holds over a port that takes the connection and never
// answers: it cannot end before the bound (a deadline does not fire
// early), and ends soon after it (the upper limit is generous: the test
// asserts the bound is applied, not the machine's speed).
func TestProbeBoundedOverSilentPort(t *testing.T) {
	silent, accepted := discovertest.SilentPort(t)
	start := time.Now()
	res, err := discover.Probe(context.Background(), "127.0.0.1", discover.Options{Ports: []discover.Port{{Number: silent}}})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted:
	default:
		t.Fatal("the silent port never took a connection")
	}
	if got := res.Ports[0]; got.Kind != discover.Silent {
		t.Errorf("kind %s (%s), want silent", got.Kind, got.Why)
	}
	if res.Timeout != discover.DefaultTimeout || discover.DefaultTimeout != 300*time.Millisecond {
		t.Errorf("bound %v, default %v: want 300ms", res.Timeout, discover.DefaultTimeout)
	}
	if took < discover.DefaultTimeout || took > 10*time.Second {
		t.Errorf("took %v with a bound of %v", took, discover.DefaultTimeout)
	}
}

// The caller's context ends a probe at once (Ctrl-C), whatever its own
// bound: here an hour, over a port that never answers, canceled once the
// port has taken the connection.
func TestProbeGivesWayToContext(t *testing.T) {
	silent, accepted := discovertest.SilentPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		_, err = discover.Probe(ctx, "127.0.0.1", discover.Options{Ports: []discover.Port{{Number: silent}}, Timeout: time.Hour})
	}()
	<-accepted
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end with its context")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// Every port is probed at once: nine silent ports end within one bound,
// not nine.
func TestProbeRunsPortsAtOnce(t *testing.T) {
	var ports []discover.Port
	var accepted []<-chan struct{}
	for range 9 {
		p, a := discovertest.SilentPort(t)
		ports = append(ports, discover.Port{Number: p})
		accepted = append(accepted, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *discover.Result, 1)
	go func() {
		res, _ := discover.Probe(ctx, "127.0.0.1", discover.Options{Ports: ports, Timeout: time.Hour})
		done <- res
	}()
	// Every port takes its connection while the others still wait: one
	// after another, the second would never be asked before the hour.
	for _, a := range accepted {
		select {
		case <-a:
		case <-time.After(10 * time.Second):
			t.Fatal("a port was not asked while the others waited")
		}
	}
	cancel()
	<-done
}

// The headers given go to the host probed, every request of it.
func TestProbeSendsHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	})
	srv := discovertest.Serve(t, mux)
	h := http.Header{"Authorization": {"Bearer k"}}
	res, err := discover.Probe(context.Background(), "127.0.0.1", discover.Options{Ports: []discover.Port{{Number: discovertest.Port(t, srv)}}, Headers: h})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Ports[0]; got.Kind != discover.Other || got.Status != http.StatusNotFound {
		t.Errorf("kind %s status %d, want other 404", got.Kind, got.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("asked %v: want /metrics, /api/version and /v1/models", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " Bearer k") {
			t.Errorf("%q: the header was not sent", s)
		}
	}
}

func TestCheckHost(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "localhost", "gpu-box", "gpu-box.lan", "::1", "[::1]", "10.0.0.5", "my_container"} {
		if err := discover.CheckHost(h); err != nil {
			t.Errorf("%q refused: %v", h, err)
		}
	}
	for h, why := range map[string]string{
		"":                "empty",
		"gpu-box:8000":    "with a port",
		"10.0.0.0/24":     "network",
		"http://gpu-box":  "network or a path",
		"[10.0.0.1]":      "IPv6",
		"gpu box":         "not a host name",
		"-leading.dash":   "not a host name",
		"a..b":            "not a host name",
		"[::1]:8000":      "with a port",
		"\x1b[31mred\x1b": "not a host name",
	} {
		err := discover.CheckHost(h)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want it refused as %q", h, err, why)
		}
	}
}
