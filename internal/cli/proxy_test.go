package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// TestProxyRefuses: what the proxy cannot do as asked is one error and a
// hint, before anything listens.
func TestProxyRefuses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0"}, "--upstream is required"},
		{[]string{"--upstream", "http://127.0.0.1:11434"}, "--listen is required"},
		{[]string{"--upstream", "ftp://127.0.0.1:11434", "--listen", "127.0.0.1:0"}, "is not an http:// or https:// URL"},
		{[]string{"--upstream", "127.0.0.1:99999", "--listen", "127.0.0.1:0"}, "has an invalid port"},
		{[]string{"--upstream", "http://:8080", "--listen", "127.0.0.1:0"}, "has no host"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--drain-timeout", "-1s"}, "--drain-timeout -1s is out of range"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--drain-timeout", "soon"}, "not a duration"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--upstream-header-timeout", "2d"}, "--upstream-header-timeout 48h is out of range"},
		{[]string{"--upstream", "http://h/?key=1", "--listen", "127.0.0.1:0"}, "has a query"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--json"}, "--json is for the live view"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--watch", "1ms"}, "shorter than the shortest refresh interval"},
		{[]string{"--upstream", "http://h", "--listen", busy.Addr().String()}, "already in use"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "extra"}, "unexpected argument"},
		{[]string{"--upstream", "http://h", "--listen", "127.0.0.1:0", "--bogus"}, "unknown flag --bogus"},
	}
	for _, tt := range tests {
		_, errOut, code := runCLI(t, "", append([]string{"proxy"}, tt.args...)...)
		if code != ExitError || !strings.Contains(errOut, "inferscope: error: ") || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "inferscope: hint: ") {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q and a hint", tt.args, code, errOut, tt.want)
		}
	}
}

// freeAddr is a loopback address nothing listens on (a test's proxy takes
// it a moment later).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestProxyCommand: `inferscope proxy` in front of a recorded Ollama
// stream: curl receives the same bytes through it as from the server, and
// `inferscope` on its /metrics reports what the stream said (by hand from
// the fixture) as it reports on any server.
func TestProxyCommand(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not on PATH")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "proxy", "ollama_chat_stream.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(raw), "\n") // the provenance line off
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, line := range strings.SplitAfter(body, "\n") {
			w.Write([]byte(line))
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()

	addr := freeAddr(t)
	stop, errb := runProxyCLI(t, "--upstream", up.URL, "--listen", addr)

	get := func(base string) string {
		out, err := exec.Command(curl, "-sS", "-N", base+"/api/chat", "-d", `{"model":"llama3.2","messages":[{"role":"user","content":"why is the sky blue?"}]}`).Output()
		if err != nil {
			t.Fatalf("curl %s: %v", base, err)
		}
		return string(out)
	}
	direct, proxied := get(up.URL), get("http://"+addr)
	if direct != proxied || proxied != body {
		t.Errorf("curl got other bytes through the proxy:\ndirect  %q\nproxied %q", direct, proxied)
	}

	checkReport(t, addr)
	if code := stop(); code != ExitOK {
		t.Errorf("exit %d after Ctrl-C, want %d (drained and stopped)", code, ExitOK)
	}
	if s := errb.String(); !strings.Contains(s, "inferscope: proxy: http://"+addr+" -> "+up.URL) {
		t.Errorf("stderr %q does not say where it proxies", s)
	}
}

// runProxyCLI runs `inferscope proxy args` until stop (Ctrl-C), which
// returns its exit code; stderr may be read after stop.
func runProxyCLI(t *testing.T, args ...string) (stop func() int, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	io, _, errb := iostreams.Test("", false, 0)
	done := make(chan int)
	go func() { done <- run(ctx, append([]string{"proxy"}, args...), io) }()
	listen := args[slices.Index(args, "--listen")+1]
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			break
		}
		if i > 500 {
			cancel()
			t.Fatal("the proxy did not listen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() int { cancel(); return <-done }, errb
}

// checkReport: `inferscope ADDR --json` on the proxy reports the recorded
// Ollama stream's figures (by hand from the fixture), and nothing Ollama
// does not tell.
func checkReport(t *testing.T, addr string) {
	t.Helper()
	out, errOut, code := runCLI(t, "", addr, "--json")
	if code != ExitOK {
		t.Fatalf("inferscope %s: exit %d: %s", addr, code, errOut)
	}
	var rep struct {
		Scalars map[string]float64
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"requests_total": 1, "prompt_tokens_all_total": 26, "tokens_predicted_total": 282, "prompt_seconds_total": 0.342546}
	for k, v := range want {
		if got, ok := rep.Scalars[k]; !ok || got != v {
			t.Errorf("the report's %s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, k := range []string{"cached_tokens_total", "kv_cache_usage_ratio", "requests_deferred"} {
		if _, ok := rep.Scalars[k]; ok {
			t.Errorf("the report has %s, which Ollama does not tell", k)
		}
	}
}

// TestProxyMetricsElsewhere: with --metrics, the metric set is served on
// that address and /metrics on --listen goes to the upstream like any path
// (a vLLM behind the proxy keeps its own).
func TestProxyMetricsElsewhere(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("upstream's own " + r.URL.Path))
	}))
	defer up.Close()
	listen, metrics := freeAddr(t), freeAddr(t)
	stop, _ := runProxyCLI(t, "--upstream", up.URL, "--listen", listen, "--metrics", metrics)
	defer stop()
	get := func(url string) string {
		for i := 0; ; i++ {
			resp, err := http.Get(url)
			if err == nil {
				b, _ := ioReadAll(resp)
				return b
			}
			if i > 500 {
				t.Fatalf("%s: %v", url, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := get("http://" + listen + "/metrics"); got != "upstream's own /metrics" {
		t.Errorf("/metrics on --listen: %q, want the upstream's", got)
	}
	if got := get("http://" + metrics + "/metrics"); !strings.Contains(got, "tabbyapi:requests_processing 0") {
		t.Errorf("/metrics on --metrics: %q", got)
	}
}

func ioReadAll(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(resp.Body)
	return b.String(), err
}
