package scrape

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// trtllmServe answers as TensorRT-LLM's trtllm-serve does
// (tensorrt_llm/serve/openai_server.py): /metrics is the iteration stats as
// JSON, /prometheus/metrics the Prometheus text (when return_perf_metrics
// is on; textPath says what it answers, nil for 404). It counts the
// requests to each path.
func trtllmServe(t *testing.T, textPath []byte) (*httptest.Server, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch {
		case r.URL.Path == "/metrics":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("[]"))
		case strings.HasPrefix(r.URL.Path, TextPath) && textPath != nil:
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write(textPath)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

func trtllmText(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/dialects/trtllm-1.2.prom")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A target given without a path whose /metrics answers JSON is read at
// /prometheus/metrics, and the result says which URL answered JSON.
func TestTextPathTried(t *testing.T) {
	text := trtllmText(t)
	srv, hits := trtllmServe(t, text)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, target := range []string{host, srv.URL, "localhost:" + strings.Split(host, ":")[1]} {
		r, err := Fetch(context.Background(), target, testOptions())
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if !strings.HasSuffix(r.Source, "/prometheus/metrics") || !strings.HasSuffix(r.AnsweredJSON, "/metrics") || strings.HasSuffix(r.AnsweredJSON, TextPath) {
			t.Errorf("%s: source %q, answered JSON %q", target, r.Source, r.AnsweredJSON)
		}
		if !bytes.Equal(r.Body, text) || r.TextPathFailed != "" {
			t.Errorf("%s: body of %d bytes, want the text's %d; failed %q", target, len(r.Body), len(text), r.TextPathFailed)
		}
	}
	if hits["/metrics"] != 3 || hits[TextPath] != 3 {
		t.Errorf("requests %v, want each path asked once a scrape", hits)
	}
}

// A path the user gave is kept: its JSON answer is the result, and no
// other path is asked.
func TestTextPathNotTriedForAGivenPath(t *testing.T) {
	srv, hits := trtllmServe(t, trtllmText(t))
	r, err := Fetch(context.Background(), srv.URL+"/metrics", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != "[]" || r.AnsweredJSON != "" || r.TextPathFailed != "" || hits[TextPath] != 0 {
		t.Errorf("body %q, answered JSON %q, failed %q, requests %v: want the JSON alone", r.Body, r.AnsweredJSON, r.TextPathFailed, hits)
	}
}

// Where /prometheus/metrics has nothing to read (trtllm-serve started
// without return_perf_metrics: 404), the JSON answer is the result and
// says what the other path gave; a server whose /metrics is text is asked
// once.
func TestTextPathInVain(t *testing.T) {
	srv, _ := trtllmServe(t, nil)
	r, err := Fetch(context.Background(), srv.URL, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != "[]" || r.AnsweredJSON != "" || !strings.Contains(r.TextPathFailed, "/prometheus/metrics") || !strings.Contains(r.TextPathFailed, "404") {
		t.Errorf("body %q, answered JSON %q, failed %q: want the JSON and a 404 said", r.Body, r.AnsweredJSON, r.TextPathFailed)
	}

	json, _ := trtllmServe(t, []byte(`{"detail":"not here"}`))
	r, err = Fetch(context.Background(), json.URL, testOptions())
	if err != nil || !strings.Contains(r.TextPathFailed, "answered JSON too") {
		t.Errorf("both JSON: %v, failed %q", err, r.TextPathFailed)
	}

	hits := 0
	text := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Write([]byte("vllm:num_requests_running 1\n"))
	}))
	defer text.Close()
	if r, err := Fetch(context.Background(), text.URL, testOptions()); err != nil || r.AnsweredJSON != "" || hits != 1 {
		t.Errorf("a text /metrics: %v, answered JSON %q, %d requests", err, r.AnsweredJSON, hits)
	}
}

// A Ctrl-C while the other path is read ends the scrape as canceled.
func TestTextPathCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			w.Write([]byte("[]"))
			return
		}
		cancel()
		<-r.Context().Done()
	}))
	defer srv.Close()
	_, err := Fetch(ctx, srv.URL, testOptions())
	wantError(t, err, Canceled)
}

func TestIsJSON(t *testing.T) {
	for body, want := range map[string]bool{
		"[]": true, " \n{\"a\":1}": true, "\xef\xbb\xbf[1]": true,
		"# HELP x y\nx 1\n": false, "x{a=\"b\"} 1\n": false, "": false,
	} {
		if got := isJSON(&Result{Body: []byte(body)}); got != want {
			t.Errorf("isJSON(%q) = %v", body, got)
		}
	}
	if !isJSON(&Result{ContentType: "application/json; charset=utf-8", Body: []byte("x 1")}) {
		t.Error("a JSON media type is JSON")
	}
}

// Once found there, the text path is a target of its own, credentials
// kept; a target whose path was given, a file or stdin has none.
func TestTextTarget(t *testing.T) {
	for in, want := range map[string]string{
		"gpu:8000":                   "http://gpu:8000/prometheus/metrics",
		"http://u:p@gpu:8000":        "http://u:p@gpu:8000/prometheus/metrics",
		"https://gpu.example?x=1":    "https://gpu.example/prometheus/metrics",
		"https://gpu.example/":       "",
		"gpu:8000/metrics":           "",
		"http://gpu:8000/v1/metrics": "",
		"-":                          "",
		"./scrape.prom":              "",
	} {
		got, ok := TextTarget(in)
		if got != want || ok != (want != "") {
			t.Errorf("TextTarget(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
