// Package discovertest serves on loopback what discovery meets on a
// machine: a server publishing a fixture's metrics, an Ollama (no
// /metrics), a llama.cpp router, a port that takes connections and never
// answers, a port nothing listens on. The answers are written from the
// servers' code, cited at each; the tests of internal/discover and of the
// command line share them.
package discovertest

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// Port is the port a test server listens on.
func Port(t testing.TB, srv *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Serve serves h on a loopback port until the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Metrics serves body as /metrics (text format 0.0.4) and, where version
// is not "", {"version": version} as /version, as vLLM's API server does
// (vllm-project/vllm vllm/frontend/entrypoints/serve/instrumentator/basic.py
// @055e47c: show_version). Every other path is 404.
func Metrics(t testing.TB, body []byte, version string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(body)
	})
	if version != "" {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"version": version})
		})
	}
	return Serve(t, mux)
}

// Ollama answers as ollama/ollama's server does (server/routes.go
// @00188139, GenerateRoutes): "Ollama is running" at /, {"version"} at
// /api/version, the loaded models at /api/ps, the installed ones at
// /v1/models, and gin's "404 page not found" for any other path, /metrics
// included.
func Ollama(t testing.TB, version string, loaded ...string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("Ollama is running")) })
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": version})
	})
	mux.HandleFunc("GET /api/ps", func(w http.ResponseWriter, _ *http.Request) {
		type model struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		}
		ms := []model{}
		for _, m := range loaded {
			ms = append(ms, model{m, m})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": ms})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		data := []map[string]any{}
		for _, m := range loaded {
			data = append(data, map[string]any{"id": m, "object": "model", "created": 1764000000, "owned_by": "library"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 page not found"))
	})
	return Serve(t, mux)
}

// RouterModel is one model a fake router serves.
type RouterModel struct {
	ID     string
	Status string // "loaded", "unloaded", …
}

// Router is a fake llama.cpp router (llama-server started without a
// model), answering as ggml-org/llama.cpp tools/server does at 82bb485
// (b10309): server.cpp binds /metrics and /slots to proxy_get, and /props,
// /v1/models and /models to the router's own; server-models.cpp's
// router_validate_model answers 400 with {"error": {"code", "message",
// "type"}} for a model missing, unknown or (with autoload=false) not
// running. A running model's /metrics and /slots are the bodies given.
type Router struct {
	Models  []RouterModel
	Metrics []byte // a running model's /metrics
	Slots   []byte // a running model's /slots

	mu       sync.Mutex
	requests []string // "GET /metrics?model=…", in order
	loads    int      // GETs that would have loaded a model (autoload not false)
}

// Requests are the requests the router took, as "PATH?QUERY".
func (r *Router) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Loads is how many GETs named a model that was not running and did not
// say autoload=false: each would have made the router load it.
func (r *Router) Loads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loads
}

// Serve starts the router on a loopback port until the test ends.
func (r *Router) Serve(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, q *http.Request) {
		r.proxyGet(w, q, "text/plain; version=0.0.4", r.Metrics)
	})
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, q *http.Request) {
		r.proxyGet(w, q, "application/json; charset=utf-8", r.Slots)
	})
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, q *http.Request) {
		r.log(q)
		if q.URL.Query().Get("model") != "" {
			r.proxyGet(w, q, "application/json; charset=utf-8", []byte(`{"build_info":"b10309-82bb48500"}`))
			return
		}
		// get_router_props: the router's own, with a placeholder model.
		writeJSON(w, http.StatusOK, map[string]any{
			"role": "router", "max_instances": 4, "models_autoload": true,
			"model_alias": "llama-server", "model_path": "none",
			"default_generation_settings": map[string]any{"params": map[string]any{}, "n_ctx": 0},
			"build_info":                  "b10309-82bb48500",
		})
	})
	models := func(w http.ResponseWriter, q *http.Request) {
		r.log(q)
		data := []map[string]any{}
		for _, m := range r.Models {
			data = append(data, map[string]any{
				"id": m.ID, "aliases": []string{}, "tags": []string{}, "object": "model", "owned_by": "llamacpp",
				"created": 1764000000, "status": map[string]any{"value": m.Status, "args": []string{"llama-server"}},
			})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "object": "list"})
	}
	mux.HandleFunc("GET /v1/models", models)
	mux.HandleFunc("GET /models", models)
	return Serve(t, mux)
}

func (r *Router) log(q *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := q.URL.Path
	if q.URL.RawQuery != "" {
		s += "?" + q.URL.RawQuery
	}
	r.requests = append(r.requests, s)
}

// proxyGet is proxy_get: the model validated, then the child's answer.
func (r *Router) proxyGet(w http.ResponseWriter, q *http.Request, contentType string, body []byte) {
	if q.URL.Path != "/props" {
		r.log(q)
	}
	name := q.URL.Query().Get("model")
	autoload := q.URL.Query().Get("autoload")
	if name == "" {
		routerError(w, "model name is missing from the request")
		return
	}
	var found *RouterModel
	for i := range r.Models {
		if r.Models[i].ID == name {
			found = &r.Models[i]
		}
	}
	if found == nil {
		routerError(w, "model '"+name+"' not found")
		return
	}
	running := found.Status == "loaded" || found.Status == "loading" || found.Status == "sleeping"
	if !running {
		if autoload == "false" || autoload == "0" {
			routerError(w, "model is not loaded")
			return
		}
		// The real router would load it here and wait: the fake counts
		// it, and answers as if it had not.
		r.mu.Lock()
		r.loads++
		r.mu.Unlock()
		routerError(w, "model is not loaded")
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(body)
}

// routerError is res_err over format_error_response(…,
// ERROR_TYPE_INVALID_REQUEST).
func routerError(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{
		"error": map[string]any{"code": 400, "message": msg, "type": "invalid_request_error"},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// ClosedPort is a loopback port nothing listens on (one a listener had
// and gave back).
func ClosedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// SilentPort takes connections and never answers, until the test ends;
// accepted receives once per connection taken.
func SilentPort(t testing.TB) (port int, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port, ch
}
