package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/discover/discovertest"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
)

// loadedBound bounds a run given no target in the tests that are not of
// the bound: on a machine loaded by -race and other builds, reading a
// 185 KB exposition takes a good part of 300 ms.
const loadedBound = 3 * time.Second

// runPorts runs inferscope with the port table ports (their first plays
// tabbyAPI's 5000) and a run given no target bounded by bound (0: the
// default), and returns stdout, stderr and the exit code.
func runPorts(t *testing.T, ports []discover.Port, bound time.Duration, args ...string) (string, string, int) {
	t.Helper()
	io, out, errb := iostreams.Test("", false, 0)
	// A run that found one server where the test expects several would
	// watch it for ever: the deadline ends it, and the test fails.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = context.WithValue(ctx, seamKey{}, probeSeam{ports: ports, bound: bound})
	code := run(ctx, args, io)
	return out.String(), errb.String(), code
}

// machine is a machine's worth of servers on loopback ports, each named
// for what it stands for, so that output can be made independent of the
// ports the listeners got.
type machine struct {
	ports []discover.Port
	names map[int]string // port → what it stands for
}

func (m *machine) add(name string, port int, servers ...string) {
	m.ports = append(m.ports, discover.Port{Number: port, Servers: servers})
	if m.names == nil {
		m.names = map[int]string{}
	}
	m.names[port] = name
}

// normal writes each port as what it stands for: :PORT_vllm, and the
// port after it (a proxy's) :PORT_vllm+1.
func (m *machine) normal(s string) string {
	for port, name := range m.names {
		s = regexp.MustCompile(`\b`+strconv.Itoa(port+1)+`\b`).ReplaceAllString(s, "PORT_"+name+"+1")
		s = regexp.MustCompile(`\b`+strconv.Itoa(port)+`\b`).ReplaceAllString(s, "PORT_"+name)
	}
	return s
}

func vllmServer(t *testing.T) int {
	return discovertest.Port(t, discovertest.Metrics(t, readFile(t, "../../testdata/dialects/vllm-new.prom"), "0.11.1"))
}

// routerServer is a llama.cpp router serving two models, one loaded: its
// child's /metrics and /slots are b10309's, recorded from a real server
// (testdata/real/llama-server-slots).
func routerServer(t *testing.T) (*discovertest.Router, int) {
	r := &discovertest.Router{
		Models:  []discovertest.RouterModel{{ID: "qwen2.5-0.5b", Status: "loaded"}, {ID: "tiny-llama", Status: "unloaded"}},
		Metrics: readFile(t, "../../testdata/real/llama-server-slots/metrics-busy.prom"),
		Slots:   readFile(t, "../../testdata/real/llama-server-slots/busy.json"),
	}
	return r, discovertest.Port(t, r.Serve(t))
}

// The listing of a machine with one server of each kind: what each is,
// its version and models, the command for it, and the ports where nothing
// answered (golden, the ports written as what they stand for).
func TestDiscoverListing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tabby, err := demo.Start(ctx, demo.Options{Listen: "127.0.0.1:0", Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tu, _ := url.Parse(tabby.URL())
	tabbyPort, _ := strconv.Atoi(tu.Port())
	_, router := routerServer(t)
	silent, _ := discovertest.SilentPort(t)
	var m machine
	m.add("tabbyapi", tabbyPort, "tabbyAPI")
	m.add("vllm", vllmServer(t), "vLLM", "TensorRT-LLM")
	m.add("router", router, "llama.cpp", "TGI")
	m.add("sglang", discovertest.ClosedPort(t), "SGLang")
	m.add("tgi", silent, "TGI")
	m.add("ollama", discovertest.Port(t, discovertest.Ollama(t, "0.12.3", "llama3.2:3b")), "Ollama")
	m.add("lmstudio", discovertest.ClosedPort(t), "LM Studio")

	out, errOut, code := runPorts(t, m.ports, 0, "discover", "--timeout", "2s")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden.Check(t, "discover/listing.txt", m.normal(out))

	out, _, code = runPorts(t, m.ports, 0, "discover", "--timeout", "2s", "-o", "json")
	if code != ExitOK || !json.Valid([]byte(out)) {
		t.Fatalf("exit %d, JSON valid: %v", code, json.Valid([]byte(out)))
	}
	golden.Check(t, "discover/listing.json", m.normal(out))
}

// Given no target where nothing listens on the first port, inferscope
// reads the one server with metrics that answers, and says it was found.
func TestNoTargetOneFound(t *testing.T) {
	var m machine
	m.add("tabbyapi", discovertest.ClosedPort(t), "tabbyAPI")
	m.add("vllm", vllmServer(t), "vLLM")
	m.add("ollama", discovertest.Port(t, discovertest.Ollama(t, "0.12.3")), "Ollama")
	out, errOut, code := runPorts(t, m.ports, loadedBound, "-o", "json")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Source  string   `json:"source"`
		Dialect string   `json:"dialect"`
		Header  []string `json:"header"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Dialect != "vllm" || !strings.HasSuffix(m.normal(rep.Source), ":PORT_vllm/metrics") {
		t.Errorf("read %s at %s", rep.Dialect, rep.Source)
	}
	if len(rep.Header) == 0 || !strings.HasPrefix(m.normal(rep.Header[0]), "found at 127.0.0.1:PORT_vllm, not given") ||
		!strings.Contains(rep.Header[0], "Ollama on") {
		t.Errorf("header %q", rep.Header)
	}
	// The text says it too, under the title.
	out, _, _ = runPorts(t, m.ports, loadedBound, "--width", "100")
	lines := strings.Split(m.normal(out), "\n")[:4]
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "found at 127.0.0.1:PORT_vllm, not given") }) {
		t.Errorf("title:\n%s", strings.Join(lines, "\n"))
	}
}

// Where anything listens on the first port (tabbyAPI's default), it is
// the target, as before discovery: reported, and not said to be found.
func TestNoTargetDefaultFirst(t *testing.T) {
	var m machine
	m.add("tabbyapi", vllmServer(t), "tabbyAPI")
	m.add("other", vllmServer(t), "vLLM")
	out, errOut, code := runPorts(t, m.ports, loadedBound, "-o", "json")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "found at") || !strings.Contains(m.normal(out), ":PORT_tabbyapi/metrics") {
		t.Errorf("not the first port's report:\n%.400s", m.normal(out))
	}
}

// Several servers with metrics and no target: each listed on stdout with
// its command, none read, exit 3 and one line on stderr.
func TestNoTargetSeveral(t *testing.T) {
	_, router := routerServer(t)
	var m machine
	m.add("tabbyapi", discovertest.ClosedPort(t), "tabbyAPI")
	m.add("vllm", vllmServer(t), "vLLM", "TensorRT-LLM")
	m.add("router", router, "llama.cpp", "TGI")
	m.add("ollama", discovertest.Port(t, discovertest.Ollama(t, "0.12.3", "llama3.2:3b")), "Ollama")
	for _, args := range [][]string{nil, {"-w", "2s"}, {"--since", "../../testdata/dialects/vllm-new.prom"}} {
		out, errOut, code := runPorts(t, m.ports, loadedBound, args...)
		if code != ExitSeveral {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, ExitSeveral, errOut)
		}
		if errOut != "inferscope: no target given, and 2 servers answer on this machine's default ports: give one as the target (each is listed on stdout with its command)\n" {
			t.Errorf("%v: stderr %q", args, errOut)
		}
		golden.Check(t, "discover/several.txt", m.normal(out))
	}
	out, _, code := runPorts(t, m.ports, loadedBound, "--json")
	if code != ExitSeveral || !json.Valid([]byte(out)) || !strings.Contains(out, `"kind": "router"`) {
		t.Errorf("JSON: exit %d\n%s", code, out)
	}
}

// Nothing answers: one error naming every port tried, and hints.
func TestNoTargetNone(t *testing.T) {
	var m machine
	m.add("tabbyapi", discovertest.ClosedPort(t), "tabbyAPI")
	m.add("vllm", discovertest.ClosedPort(t), "vLLM", "TensorRT-LLM")
	out, errOut, code := runPorts(t, m.ports, 0)
	if code != ExitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	golden.Check(t, "discover/none.txt", m.normal(errOut))
}

// Only a server without metrics answers: the error says so, and how to
// measure it through the proxy.
func TestNoTargetOnlyWithoutMetrics(t *testing.T) {
	silent, _ := discovertest.SilentPort(t)
	var m machine
	m.add("tabbyapi", discovertest.ClosedPort(t), "tabbyAPI")
	m.add("ollama", discovertest.Port(t, discovertest.Ollama(t, "0.12.3", "llama3.2:3b")), "Ollama")
	m.add("tgi", silent, "TGI")
	out, errOut, code := runPorts(t, m.ports, 0)
	if code != ExitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	golden.Check(t, "discover/without-metrics.txt", m.normal(errOut))
}

// A llama.cpp router without --model: the error lists its models, each
// with the command that reads it; with --model, the model's own metrics
// and slots are read, asked without loading anything (autoload=false);
// a model not loaded is refused in the router's words.
func TestRouterModel(t *testing.T) {
	r, port := routerServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	norm := func(s string) string { return strings.ReplaceAll(s, strconv.Itoa(port), "PORT") }

	out, errOut, code := runCLI(t, "", target)
	if code != ExitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	golden.Check(t, "discover/router-no-model.txt", norm(errOut))

	out, errOut, code = runCLI(t, "", "--model", "qwen2.5-0.5b", "-o", "json", target)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Dialect    string             `json:"dialect"`
		Header     []string           `json:"header"`
		Scalars    map[string]float64 `json:"scalars"`
		Breakdowns map[string]struct {
			Status string            `json:"status"`
			Units  []json.RawMessage `json:"units"`
		} `json:"breakdowns"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// metrics-busy.prom: llamacpp:prompt_tokens_total 396; busy.json: two
	// slots (both read by hand).
	if rep.Dialect != "llamacpp" || rep.Scalars["prompt_tokens_total"] != 396 {
		t.Errorf("read %s, prompt tokens %v", rep.Dialect, rep.Scalars["prompt_tokens_total"])
	}
	if !slices.Contains(rep.Header, "model qwen2.5-0.5b") {
		t.Errorf("header %q", rep.Header)
	}
	if s := rep.Breakdowns["slots"]; s.Status != "read" || len(s.Units) != 2 {
		t.Errorf("slots: %+v", s)
	}

	out, errOut, code = runCLI(t, "", "--model", "tiny-llama", target)
	if code != ExitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	golden.Check(t, "discover/router-not-loaded.txt", norm(errOut))
	_, errOut, _ = runCLI(t, "", "--model", "nope", target)
	if !strings.Contains(errOut, `it answered "model 'nope' not found"`) {
		t.Errorf("unknown model: %s", errOut)
	}

	if r.Loads() != 0 {
		t.Errorf("%d requests would have loaded a model", r.Loads())
	}
	want := []string{
		"/metrics", "/v1/models", // no --model: refused, the models listed
		"/metrics", "/metrics?autoload=false&model=qwen2.5-0.5b", "/slots?autoload=false&model=qwen2.5-0.5b",
		"/metrics", "/metrics?autoload=false&model=tiny-llama", "/v1/models",
		"/metrics", "/metrics?autoload=false&model=nope", "/v1/models",
	}
	if got := r.Requests(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// rules and dashboard take no --model: on a router their hints are each
// model's own URL, which the command then reads.
func TestRouterRulesHints(t *testing.T) {
	_, port := routerServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	for _, command := range []string{"rules", "dashboard"} {
		out, errOut, code := runCLI(t, "", command, target)
		if code != ExitError || out != "" {
			t.Fatalf("%s: exit %d, stdout %q", command, code, out)
		}
		if strings.Contains(errOut, "--model") {
			t.Errorf("%s: hints name --model, which it does not take:\n%s", command, errOut)
		}
		want := "inferscope: hint: inferscope " + command + " 'http://" + target + "/metrics?autoload=false&model=qwen2.5-0.5b' (loaded)"
		if !strings.Contains(errOut, want) {
			t.Fatalf("%s: stderr\n%s\nwant the line\n%s", command, errOut, want)
		}
		out, errOut, code = runCLI(t, "", command, "http://"+target+"/metrics?autoload=false&model=qwen2.5-0.5b")
		if code != ExitOK || out == "" {
			t.Errorf("%s with the hint's URL: exit %d: %s", command, code, errOut)
		}
	}
}

// discover takes one host, never a port, a network or two hosts.
func TestDiscoverRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"discover", "gpu-box:8000"}, "hint: to read one port, give it as the target: inferscope gpu-box:8000"},
		{[]string{"discover", "10.0.0.0/24"}, "a network or a path, not one host"},
		{[]string{"discover", "a", "b"}, "too many hosts: a b"},
		{[]string{"discover", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"discover", "-o", "yaml"}, `--output "yaml" is not a format`},
		{[]string{"discover", "--header", "nocolon"}, "--header"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != ExitError || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// discover sends --header to the host it probes, every request.
func TestDiscoverSendsHeader(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	mux := http.NewServeMux()
	body := readFile(t, "../../testdata/dialects/vllm-new.prom")
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("X-Key"))
		mu.Unlock()
		if r.URL.Path == "/metrics" {
			w.Write(body)
			return
		}
		http.NotFound(w, r)
	})
	srv := discovertest.Serve(t, mux)
	var m machine
	m.add("vllm", discovertest.Port(t, srv), "vLLM")
	if _, errOut, code := runPorts(t, m.ports, 0, "discover", "--timeout", "3s", "--header", "X-Key: k"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("asked %v", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " k") {
			t.Errorf("%q: no header", s)
		}
	}
}

// The one server found is a llama.cpp router: without --model, the error
// says it was found and lists its models from the probe; with --model,
// that model is read, its header saying the router was found.
func TestNoTargetRouter(t *testing.T) {
	_, router := routerServer(t)
	var m machine
	m.add("tabbyapi", discovertest.ClosedPort(t), "tabbyAPI")
	m.add("router", router, "llama.cpp", "TGI")
	out, errOut, code := runPorts(t, m.ports, loadedBound)
	if code != ExitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	golden.Check(t, "discover/router-found.txt", m.normal(errOut))
	out, errOut, code = runPorts(t, m.ports, loadedBound, "--model", "qwen2.5-0.5b", "-o", "json")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Header []string `json:"header"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Header) < 2 || !strings.HasPrefix(m.normal(rep.Header[0]), "found at 127.0.0.1:PORT_router, not given") || rep.Header[1] != "model qwen2.5-0.5b" {
		t.Errorf("header %q", rep.Header)
	}
}
