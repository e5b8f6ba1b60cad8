package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestInvalidUsage: usage that cannot be true makes that request's
// reported figures unknown, counted as invalid, never clamped; the request
// still counts, with the times the proxy measured.
func TestInvalidUsage(t *testing.T) {
	tests := []struct {
		name, path, body string
		valid            bool
	}{
		{"plausible", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}`, true},
		{"integral in another spelling", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":1.2e1,"completion_tokens":3.0}}`, true},
		{"at the bound", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":10000000,"completion_tokens":1}}`, true},
		{"negative", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":3}}`, false},
		{"fractional", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":12.5,"completion_tokens":3}}`, false},
		{"over 10 million", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":10000001,"completion_tokens":3}}`, false},
		{"int64's largest", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":3}}`, false},
		{"1e15", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":1e15}}`, false},
		{"a string", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":"12","completion_tokens":3}}`, false},
		{"cached over the prompt", "/v1/chat/completions", `{"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":13}}}`, false},
		{"llama.cpp, negative time", "/v1/chat/completions", `{"model":"m","choices":[],"timings":{"cache_n":0,"prompt_n":12,"prompt_ms":-1,"predicted_n":3,"predicted_ms":20}}`, false},
		{"llama.cpp, a time of 31 years", "/v1/chat/completions", `{"model":"m","choices":[],"timings":{"cache_n":0,"prompt_n":12,"prompt_ms":1e12,"predicted_n":3,"predicted_ms":20}}`, false},
		{"llama.cpp, negative cache", "/v1/chat/completions", `{"model":"m","choices":[],"timings":{"cache_n":-4,"prompt_n":12,"prompt_ms":1,"predicted_n":3,"predicted_ms":20}}`, false},
		{"Ollama, negative count", "/api/generate", `{"model":"m","response":"x","done":true,"prompt_eval_count":12,"eval_count":-3,"prompt_eval_duration":1000,"eval_duration":2000}`, false},
		{"Ollama, plausible", "/api/generate", `{"model":"m","response":"x","done":true,"prompt_eval_count":12,"eval_count":3,"prompt_eval_duration":1000,"eval_duration":2000}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tt.body))
			}))
			defer up.Close()
			p, srv := start(t, up.URL, Options{})
			post(t, srv.URL, tt.path, `{"model":"m"}`)
			waitIdle(t, p)
			checkValidity(t, scrapeProxy(t, p), classifyPath(tt.path), tt.valid)
		})
	}
}

func classifyPath(path string) string {
	r, _ := http.NewRequest(http.MethodPost, path, nil)
	return apis[classify(r)].name
}

// checkValidity checks the one finished request's figures: published when
// valid, absent and counted as invalid when not.
func checkValidity(t *testing.T, pub published, endpoint string, valid bool) {
	t.Helper()
	if got := pub.vals["requests_total"]["m"]; got != 1 {
		t.Errorf("requests_total %v, want 1: the request counts either way", got)
	}
	if got := pub.counts["e2e_request_latency_seconds"]["m"]; got != 1 {
		t.Errorf("e2e count %v, want 1: the proxy's own time counts either way", got)
	}
	invalid := pub.vals["inferscope_proxy_invalid_usage_total"]["endpoint="+endpoint]
	for _, name := range []string{"tokens_predicted_total", "prompt_seconds_total", "prompt_tokens_total", "prompt_tokens_all_total"} {
		if _, ok := pub.vals[name]["m"]; ok && !valid {
			t.Errorf("%s published from usage that cannot be true", name)
		}
	}
	if _, ok := pub.vals["tokens_predicted_total"]["m"]; valid && (!ok || invalid != 0) {
		t.Errorf("valid usage: tokens_predicted_total published %v, invalid %v", ok, invalid)
	}
	if !valid && invalid != 1 {
		t.Errorf("inferscope_proxy_invalid_usage_total %v, want 1", invalid)
	}
}

// TestPromptOverContext: a prompt longer than the context the upstream
// reported in its model list (llama.cpp's meta.n_ctx, vLLM's
// max_model_len) cannot be true; one within it is.
func TestPromptOverContext(t *testing.T) {
	for _, c := range []struct {
		name, list string
		prompt     string
		valid      bool
	}{
		{"llama.cpp, within", `{"object":"list","data":[{"id":"m","object":"model","meta":{"n_ctx":1024,"n_ctx_train":4096}}]}`, "1024", true},
		{"llama.cpp, over", `{"object":"list","data":[{"id":"m","object":"model","meta":{"n_ctx":1024,"n_ctx_train":4096}}]}`, "1025", false},
		{"vLLM, over", `{"object":"list","data":[{"id":"other","max_model_len":100},{"id":"m","max_model_len":2048}]}`, "2049", false},
		{"another model's context", `{"object":"list","data":[{"id":"other","max_model_len":100},{"id":"x","max_model_len":100}]}`, "2049", true},
		{"the only model, named otherwise", `{"object":"list","data":[{"id":"llama.gguf","meta":{"n_ctx":1024}}]}`, "1025", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodGet {
					w.Write([]byte(c.list))
					return
				}
				w.Write([]byte(`{"model":"m","choices":[],"usage":{"prompt_tokens":` + c.prompt + `,"completion_tokens":3}}`))
			}))
			defer up.Close()
			p, srv := start(t, up.URL, Options{})
			resp, err := http.Get(srv.URL + "/v1/models")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			post(t, srv.URL, "/v1/chat/completions", `{"model":"m"}`)
			waitIdle(t, p)
			checkValidity(t, scrapeProxy(t, p), "chat_completions", c.valid)
		})
	}
}
