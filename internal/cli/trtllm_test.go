package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// trtllmServer answers as trtllm-serve does: JSON at /metrics, the
// Prometheus text at /prometheus/metrics where text is given (404
// otherwise, as without return_perf_metrics).
func trtllmServer(t *testing.T, text []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("[]"))
		case r.URL.Path == "/prometheus/metrics" && text != nil:
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write(text)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A trtllm-serve given as host:port is read at /prometheus/metrics, and
// the report says where the text came from, in text and JSON; given with
// its /metrics, the path is kept and the error says where the text is.
func TestTRTLLMServeTextPath(t *testing.T) {
	srv := trtllmServer(t, readFile(t, "../../testdata/dialects/trtllm-new.prom"))
	host := strings.TrimPrefix(srv.URL, "http://")
	out, errOut, code := runCLI(t, "", host, "--width", "120")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	said := "read from " + srv.URL + "/prometheus/metrics: " + srv.URL + "/metrics answered JSON"
	if !strings.Contains(out, said) || !strings.Contains(out, "· trtllm ·") {
		t.Errorf("the report does not say where its text came from (%q):\n%s", said, out)
	}
	out, _, _ = runCLI(t, "", "--json", host)
	var doc struct {
		Source string   `json:"source"`
		Header []string `json:"header"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source != srv.URL+"/prometheus/metrics" || !strings.Contains(strings.Join(doc.Header, "\n"), said) {
		t.Errorf("JSON: source %q, header %q", doc.Source, doc.Header)
	}

	_, errOut, code = runCLI(t, "", srv.URL+"/metrics")
	if code != ExitError || !strings.Contains(errOut, "the body is JSON") || !strings.Contains(errOut, "/prometheus/metrics") {
		t.Errorf("an explicit /metrics: exit %d, stderr:\n%s", code, errOut)
	}

	// Started without return_perf_metrics: nothing at the other path, and
	// the error says it was tried.
	bare := trtllmServer(t, nil)
	_, errOut, code = runCLI(t, "", strings.TrimPrefix(bare.URL, "http://"))
	if code != ExitError || !strings.Contains(errOut, "inferscope tried "+bare.URL+"/prometheus/metrics") || !strings.Contains(errOut, "404") {
		t.Errorf("no text path: exit %d, stderr:\n%s", code, errOut)
	}
}

// A watch asks trtllm-serve's /metrics once: a GET there drains the
// iteration stats its Prometheus collector counts from. Every frame says
// where the text came from.
func TestTRTLLMServeWatchAsksMetricsOnce(t *testing.T) {
	text := readFile(t, "../../testdata/dialects/trtllm-new.prom")
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/metrics" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("[]"))
			return
		}
		w.Write(text)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ios, _, _ := iostreams.Test("", false, 0)
	out := &lockedBuffer{}
	ios.Out = out
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--watch", "0.2s", "--width", "200", strings.TrimPrefix(srv.URL, "http://")}, ios)
	}()
	for strings.Count(out.String(), "=== ") < 3 {
		select {
		case code := <-done:
			t.Fatalf("the watch ended: exit %d", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if hits["/metrics"] != 1 || hits["/prometheus/metrics"] < 3 {
		t.Errorf("requests %v: want /metrics once, then /prometheus/metrics alone", hits)
	}
	frames := strings.Split(out.String(), "=== ")[1:]
	for i, f := range frames[:3] {
		if !strings.Contains(f, srv.URL+"/metrics answered JSON") {
			t.Errorf("frame %d does not say where its text came from:\n%.400s", i, f)
		}
	}
}
