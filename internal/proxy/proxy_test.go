package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
)

// fixture is a recorded response under testdata/proxy: its body (the
// provenance line taken off) and its content type, by extension.
type fixture struct {
	body []byte
	ct   string
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "proxy", name))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(first, []byte("# provenance: ")) {
		t.Fatalf("%s: the first line must say where the response comes from", name)
	}
	ct := map[string]string{".sse": "text/event-stream", ".ndjson": "application/x-ndjson", ".json": "application/json"}[filepath.Ext(name)]
	return fixture{rest, ct}
}

// pieces splits a body as the server sends it: SSE event by event, NDJSON
// line by line, JSON whole.
func (f fixture) pieces() [][]byte {
	switch f.ct {
	case "text/event-stream":
		return bytes.SplitAfter(f.body, []byte("\n\n"))
	case "application/x-ndjson":
		return bytes.SplitAfter(f.body, []byte("\n"))
	}
	return [][]byte{f.body}
}

// replay serves a fixture, each piece flushed, gap apart.
func replay(f fixture, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", f.ct)
		for i, p := range f.pieces() {
			if len(p) == 0 {
				continue
			}
			if i > 0 && gap > 0 {
				time.Sleep(gap)
			}
			w.Write(p)
			w.(http.Flusher).Flush()
		}
	}
}

// start runs a proxy to upstream and returns it with its server.
func start(t testing.TB, upstream string, o Options) (*Proxy, *httptest.Server) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	o.Upstream = u
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.CloseIdleConnections() })
	return p, srv
}

// published is a scrape of the proxy's metrics: each family's series by
// model label ("" unlabelled), histograms as their count and sum.
type published struct {
	vals, counts, sums map[string]map[string]float64
	text               string
}

func scrapeProxy(t testing.TB, p *Proxy) published {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Metrics().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(buf.Bytes(), exposition.Text)
	if err != nil {
		t.Fatalf("parsing the proxy's exposition: %v", err)
	}
	pub := published{map[string]map[string]float64{}, map[string]map[string]float64{}, map[string]map[string]float64{}, buf.String()}
	put := func(m map[string]map[string]float64, name, key string, v float64) {
		if m[name] == nil {
			m[name] = map[string]float64{}
		}
		m[name][key] = v
	}
	for _, mf := range fams {
		name := strings.TrimPrefix(mf.GetName(), "tabbyapi:")
		for _, mt := range mf.GetMetric() {
			var key []string
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "model" {
					key = append(key, lp.GetValue())
				} else {
					key = append(key, lp.GetName()+"="+lp.GetValue())
				}
			}
			k := strings.Join(key, ",")
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				put(pub.vals, name, k, mt.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				put(pub.vals, name, k, mt.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				put(pub.counts, name, k, float64(mt.GetHistogram().GetSampleCount()))
				put(pub.sums, name, k, mt.GetHistogram().GetSampleSum())
			}
		}
	}
	return pub
}

// outcomes is the proxy's own count of requests by endpoint and outcome.
func (p published) outcome(endpoint, outcome string) float64 {
	return p.vals["inferscope_proxy_requests_total"]["endpoint="+endpoint+",outcome="+outcome]
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// post sends a request through the proxy and reads the whole answer.
func post(t testing.TB, base, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
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

// waitIdle waits until the proxy has finished every request (a handler
// finishes after the client has its last byte).
func waitIdle(t testing.TB, p *Proxy) {
	t.Helper()
	for i := 0; p.InFlight() != 0; i++ {
		if i > 2000 {
			t.Fatalf("%d requests still in flight", p.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const gap = 25 * time.Millisecond

// TestMeasures: each API's recorded response, replayed through the proxy,
// publishes what it says (figures by hand from the fixture) and nothing it
// does not say.
func TestMeasures(t *testing.T) {
	for _, tt := range measureCases {
		t.Run(tt.fixture, func(t *testing.T) {
			up := httptest.NewServer(replay(loadFixture(t, tt.fixture), gap))
			defer up.Close()
			p, srv := start(t, up.URL, Options{})
			post(t, srv.URL, tt.path, `{"model":"x"}`)
			waitIdle(t, p)
			tt.check(t, scrapeProxy(t, p))
		})
	}
}

// measureCase is a recorded response and what the proxy must publish of it.
type measureCase struct {
	fixture, path, model string
	want                 map[string]float64
	absent               []string
	ttft                 time.Duration // the least TTFT can be (pieces before the first token × gap); -1: no TTFT
}

var measureCases = []measureCase{
	{"ollama_chat_stream.ndjson", "/api/chat", "llama3.2",
		map[string]float64{"requests_total": 1, "prompt_tokens_all_total": 26, "tokens_predicted_total": 282,
			"prompt_seconds_total": 0.342546, "tokens_predicted_seconds_total": 4.535599, "n_tokens_max": 26},
		[]string{"prompt_tokens_total", "cached_tokens_total", "prefix_cache_hits", "request_queue_time_seconds", "spec_decode_requests_total"}, 0},
	{"ollama_generate.json", "/api/generate", "llama3.2",
		map[string]float64{"requests_total": 1, "prompt_tokens_all_total": 26, "tokens_predicted_total": 290,
			"prompt_seconds_total": 0.325953, "tokens_predicted_seconds_total": 4.709213},
		[]string{"prompt_tokens_total", "time_to_first_token_seconds"}, -1},
	{"ollama_generate_cached.ndjson", "/api/generate", "qwen3",
		map[string]float64{"requests_total": 1, "tokens_predicted_total": 2, "prompt_seconds_total": 0.002, "tokens_predicted_seconds_total": 0.15},
		[]string{"prompt_tokens_all_total", "prompt_tokens_total", "n_tokens_max", "request_prompt_tokens"}, 0},
	{"llamacpp_chat_stream.sse", "/v1/chat/completions", "qwen2.5-7b",
		map[string]float64{"requests_total": 1, "prompt_tokens_total": 26, "cached_tokens_total": 1184, "prefix_cache_queries": 1210,
			"prefix_cache_hits": 1184, "tokens_predicted_total": 2, "prompt_seconds_total": 0.0415, "tokens_predicted_seconds_total": 0.02425},
		[]string{"prompt_tokens_all_total", "request_queue_time_seconds"}, gap},
	{"vllm_chat_stream_usage.sse", "/v1/chat/completions", "meta-llama/Llama-3.1-8B-Instruct",
		map[string]float64{"requests_total": 1, "prompt_tokens_total": 512, "cached_tokens_total": 1536, "tokens_predicted_total": 12},
		[]string{"prompt_seconds_total", "tokens_predicted_seconds_total", "request_prefill_time_seconds", "prompt_tokens_all_total"}, 2 * gap},
	{"openai_chat.json", "/v1/chat/completions", "gpt-4o-mini",
		map[string]float64{"requests_total": 1, "prompt_tokens_total": 108, "cached_tokens_total": 1792, "tokens_predicted_total": 3},
		[]string{"prompt_seconds_total", "time_to_first_token_seconds"}, -1},
	{"openai_completions_stream_nousage.sse", "/v1/completions", "mistral-7b",
		map[string]float64{"requests_total": 1},
		[]string{"prompt_tokens_total", "prompt_tokens_all_total", "tokens_predicted_total", "request_generation_tokens"}, 0},
}

// check compares what the proxy published with the case's figures.
func (tt measureCase) check(t *testing.T, pub published) {
	t.Helper()
	for name, want := range tt.want {
		if got, ok := pub.vals[name][tt.model]; !ok || !near(got, want) {
			t.Errorf("%s{model=%q} = %v (served %v), want %v", name, tt.model, got, ok, want)
		}
	}
	for _, name := range tt.absent {
		_, scalar := pub.vals[name][tt.model]
		_, hist := pub.counts[name][tt.model]
		if scalar || hist {
			t.Errorf("%s served; the API does not say it", name)
		}
	}
	tt.checkTimes(t, pub)
}

// checkTimes checks the time to first token, first byte and end to end.
func (tt measureCase) checkTimes(t *testing.T, pub published) {
	t.Helper()
	ttft, e2e := pub.sums["time_to_first_token_seconds"][tt.model], pub.sums["e2e_request_latency_seconds"][tt.model]
	if n := pub.counts["e2e_request_latency_seconds"][tt.model]; n != 1 {
		t.Errorf("e2e count %v, want 1", n)
	}
	if tt.ttft >= 0 {
		if n := pub.counts["time_to_first_token_seconds"][tt.model]; n != 1 {
			t.Errorf("TTFT count %v, want 1", n)
		}
		if ttft < tt.ttft.Seconds() || ttft > e2e {
			t.Errorf("TTFT %vs: want at least %v (the pieces before the first token) and at most e2e %vs", ttft, tt.ttft, e2e)
		}
	}
	api := map[string]string{"/api/chat": "ollama_chat", "/api/generate": "ollama_generate", "/v1/chat/completions": "chat_completions", "/v1/completions": "completions"}[tt.path]
	if got := pub.outcome(api, "finished"); got != 1 {
		t.Errorf("finished %s requests: %v, want 1\n%s", api, got, pub.text)
	}
	// The replay sends its headers with the first piece: the first byte
	// comes before the first token that follows a role chunk.
	if n, s := pub.counts["inferscope_proxy_time_to_first_byte_seconds"]["endpoint="+api], pub.sums["inferscope_proxy_time_to_first_byte_seconds"]["endpoint="+api]; n != 1 || s > e2e || tt.ttft > 0 && s >= ttft {
		t.Errorf("time to first byte: count %v, sum %vs (TTFT %vs, e2e %vs)", n, s, ttft, e2e)
	}
}

// TestFaithful: the client receives the same status, body bytes and
// headers through the proxy as from the upstream directly, streamed or
// not; what the client sent reaches the upstream unchanged.
func TestFaithful(t *testing.T) {
	for _, name := range []string{"ollama_chat_stream.ndjson", "ollama_generate.json", "llamacpp_chat_stream.sse", "vllm_chat_stream_usage.sse", "openai_chat.json"} {
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, name)
			var got struct {
				body []byte
				auth string
				ua   string
			}
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.body, _ = io.ReadAll(r.Body)
				got.auth, got.ua = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
				w.Header().Set("X-Upstream", "yes")
				replay(f, 0)(w, r)
			}))
			defer up.Close()
			_, srv := start(t, up.URL, Options{})
			reqBody := `{"model":"m","messages":[{"role":"user","content":"héllo"}],"stream":true}`
			var bodies [2][]byte
			for i, base := range []string{up.URL, srv.URL} {
				var resp *http.Response
				resp, bodies[i] = faithfulRequest(t, base, reqBody)
				if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "yes" || resp.Header.Get("Content-Type") != f.ct {
					t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
				}
				if i == 1 && f.ct != "application/json" && (!strings.Contains(resp.Header.Get("Cache-Control"), "no-transform") || resp.Header.Get("X-Accel-Buffering") != "no") {
					t.Errorf("a stream without Cache-Control no-transform and X-Accel-Buffering no: %v", resp.Header)
				}
				if string(got.body) != reqBody || got.auth != "Bearer sk-secret" || got.ua != "test-client/1" {
					t.Errorf("the upstream got %q, auth %q, user agent %q", got.body, got.auth, got.ua)
				}
			}
			if !bytes.Equal(bodies[0], bodies[1]) || !bytes.Equal(bodies[1], f.body) {
				t.Errorf("the bytes differ through the proxy:\ndirect %q\nproxy  %q", bodies[0], bodies[1])
			}
		})
	}
}

// faithfulRequest sends a request with credentials and a user agent, and
// reads its answer.
func faithfulRequest(t *testing.T, base, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-secret")
	req.Header.Set("User-Agent", "test-client/1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestStreamsEventByEvent: each event reaches the client before the
// upstream sends the next: the proxy holds nothing back.
func TestStreamsEventByEvent(t *testing.T) {
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 3 {
			w.Write([]byte(`{"model":"m","response":"t` + string(rune('0'+i)) + `","done":false}` + "\n"))
			w.(http.Flusher).Flush()
			<-next // the client must have read this line before the next is sent
		}
		w.Write([]byte(`{"model":"m","response":"","done":true,"eval_count":3}` + "\n"))
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{})
	resp, err := http.Post(srv.URL+"/api/generate", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, `"t`+string(rune('0'+i))+`"`) {
			t.Fatalf("line %d: %q, %v", i, line, err)
		}
		next <- struct{}{}
	}
	io.Copy(io.Discard, br)
	waitIdle(t, p)
	if got := scrapeProxy(t, p).vals["tokens_predicted_total"]["m"]; got != 3 {
		t.Errorf("tokens_predicted_total %v, want 3", got)
	}
}

// TestAborted: a client that goes away mid-stream cancels the upstream
// request and counts as aborted, not as a finished generation.
func TestAborted(t *testing.T) {
	upstreamDone := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			w.Write([]byte(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	waitIdle(t, p)
	pub := scrapeProxy(t, p)
	if got := pub.outcome("chat_completions", "aborted"); got != 1 {
		t.Errorf("aborted %v, want 1\n%s", got, pub.text)
	}
	if got := pub.outcome("chat_completions", "finished"); got != 0 {
		t.Errorf("finished %v, want 0", got)
	}
	if _, ok := pub.vals["requests_total"]; ok {
		t.Errorf("an aborted stream was recorded as a finished generation")
	}
}

// TestUpstreamFailures: an upstream that breaks off mid-stream counts as
// aborted; an error status and an unreachable upstream as errors, with a
// 502 that says nothing of the request.
func TestUpstreamFailures(t *testing.T) {
	broke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write([]byte(`{"model":"m","response":"a","done":false}` + "\n"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}))
	defer broke.Close()
	p, srv := start(t, broke.URL, Options{})
	if resp, err := http.Post(srv.URL+"/api/generate", "application/json", strings.NewReader(`{}`)); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitIdle(t, p)
	if got := scrapeProxy(t, p).outcome("ollama_generate", "aborted"); got != 1 {
		t.Errorf("a broken stream: aborted %v, want 1", got)
	}

	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"model not found"}`, http.StatusNotFound)
	}))
	defer status.Close()
	p, srv = start(t, status.URL, Options{})
	resp, body := post(t, srv.URL, "/api/chat", `{}`)
	if resp.StatusCode != 404 || !strings.Contains(string(body), "model not found") {
		t.Errorf("status %d, body %q: the upstream's answer must pass through", resp.StatusCode, body)
	}
	waitIdle(t, p)
	if got := scrapeProxy(t, p).outcome("ollama_chat", "error"); got != 1 {
		t.Errorf("error status: error %v, want 1", got)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	p, srv = start(t, deadURL, Options{})
	resp, body = post(t, srv.URL, "/v1/chat/completions?key=sk-secret", `{"messages":"secret prompt"}`)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "secret") || strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("unreachable: status %d, body %q", resp.StatusCode, body)
	}
	if got := scrapeProxy(t, p).outcome("chat_completions", "error"); got != 1 {
		t.Errorf("unreachable: error %v, want 1", got)
	}
}

// TestInjectUsage: a stream that did not ask for usage gets
// include_usage upstream, the usage-only chunk is removed before the client
// sees it, and its figures are published; a request that asked for usage,
// or does not stream, is sent unchanged.
func TestInjectUsage(t *testing.T) {
	f := loadFixture(t, "vllm_chat_stream_usage.sse")
	var sent []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ = io.ReadAll(r.Body)
		replay(f, 0)(w, r)
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{InjectUsage: true})

	_, body := post(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":false},"messages":[]}`)
	var req struct {
		StreamOptions map[string]any `json:"stream_options"`
		Messages      []any          `json:"messages"`
	}
	if err := json.Unmarshal(sent, &req); err != nil || req.StreamOptions["include_usage"] != true || req.StreamOptions["continuous_usage_stats"] != false || req.Messages == nil {
		t.Errorf("the upstream got %s: want include_usage added and the rest kept", sent)
	}
	if bytes.Contains(body, []byte(`"choices":[]`)) {
		t.Errorf("the injected usage chunk reached the client:\n%s", body)
	}
	want := bytes.Replace(f.body, []byte(`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1735689600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":2048,"total_tokens":2060,"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":1536}}}`+"\n\n"), nil, 1)
	if !bytes.Equal(body, want) {
		t.Errorf("the client got other bytes than the stream less the usage chunk:\n%s", body)
	}
	waitIdle(t, p)
	if got := scrapeProxy(t, p).vals["tokens_predicted_total"]["meta-llama/Llama-3.1-8B-Instruct"]; got != 12 {
		t.Errorf("tokens_predicted_total %v, want 12 from the injected usage", got)
	}

	for _, asked := range []string{
		`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","stream":false}`,
		`{"model":"m"}`,
	} {
		_, body := post(t, srv.URL, "/v1/chat/completions", asked)
		if string(sent) != asked {
			t.Errorf("sent %s for %s: want it unchanged", sent, asked)
		}
		if !bytes.Equal(body, f.body) {
			t.Errorf("for %s the client did not get the upstream's bytes", asked)
		}
	}
}

// TestLargeBodyForwardedWhole: a body beyond the inspection bound is
// forwarded byte for byte, and not rewritten.
func TestLargeBodyForwardedWhole(t *testing.T) {
	var sent []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	defer up.Close()
	_, srv := start(t, up.URL, Options{InjectUsage: true, MaxInspect: 1000})
	big := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`
	post(t, srv.URL, "/v1/chat/completions", big)
	if string(sent) != big {
		t.Errorf("the upstream got %d bytes, want the %d sent, unchanged", len(sent), len(big))
	}
}

// TestEncodedAnswer: an answer the upstream compressed unasked passes
// through as it came and counts as a generation without figures.
func TestEncodedAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte("\x0b\x02\x80{}\x03"))
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"qwen\"3"}`))
	req.Header.Set("Accept-Encoding", "identity") // so the client does not decode it either
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "\x0b\x02\x80{}\x03" || resp.Header.Get("Content-Encoding") != "br" {
		t.Errorf("got %q, %v", b, resp.Header)
	}
	waitIdle(t, p)
	pub := scrapeProxy(t, p)
	if got := pub.vals["requests_total"]["qwen\"3"]; got != 1 {
		t.Errorf("requests_total %v, want 1 under the request's model", pub.vals["requests_total"])
	}
	if _, ok := pub.vals["tokens_predicted_total"]; ok {
		t.Errorf("tokens published from a body the proxy could not read")
	}
}

// TestModelLoad: Ollama's answer to a request without a prompt (it loads
// the model) is no generation.
func TestModelLoad(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","response":"","done":true,"done_reason":"load"}`))
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{})
	post(t, srv.URL, "/api/generate", `{"model":"llama3.2"}`)
	waitIdle(t, p)
	pub := scrapeProxy(t, p)
	if _, ok := pub.vals["requests_total"]; ok || pub.sum("inferscope_proxy_requests_total") != 0 {
		t.Errorf("a model load was counted:\n%s", pub.text)
	}
}

// TestPassThrough: other endpoints are forwarded and not measured.
func TestPassThrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"models":[{"name":"llama3.2"}]}`))
	}))
	defer up.Close()
	p, srv := start(t, up.URL, Options{})
	resp, err := http.Get(srv.URL + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"models":[{"name":"llama3.2"}]}` {
		t.Errorf("got %q", b)
	}
	pub := scrapeProxy(t, p)
	if _, ok := pub.vals["requests_total"]; ok {
		t.Errorf("a model list was recorded as a generation")
	}
}
