package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBodyTimeout: a client that drips its body slower than the body
// timeout gets 408 and its connection closed, whether the body is one the
// proxy reads whole or one it forwards as it arrives; the upstream is
// never asked to wait for it, and a measured request counts as aborted.
func TestBodyTimeout(t *testing.T) {
	for _, c := range []struct {
		name     string
		declared int // Content-Length the client announces
	}{{"buffered", 100}, {"forwarded", 5000}} {
		t.Run(c.name, func(t *testing.T) {
			var answered atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err == nil {
					answered.Add(1)
				}
				w.Write([]byte(`{}`))
			}))
			defer up.Close()
			p, srv := start(t, up.URL, Options{BodyTimeout: 300 * time.Millisecond, MaxInspect: 1000})
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", c.declared)
			// ... and nothing more: a drip that stopped.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !strings.Contains(string(b), "did not arrive within 300ms") {
				t.Errorf("status %d, close %v, %q: want 408 and the connection closed", resp.StatusCode, resp.Close, b)
			}
			waitIdle(t, p)
			if answered.Load() != 0 {
				t.Errorf("the upstream answered a request whose body never came")
			}
			if got := scrapeProxy(t, p).outcome("chat_completions", "aborted"); got != 1 {
				t.Errorf("aborted %v, want 1", got)
			}
		})
	}
}

// TestSteadyBody: a body larger than the proxy holds may take longer
// than the body timeout, as long as what the proxy holds comes within it
// and the rest keeps coming.
func TestSteadyBody(t *testing.T) {
	var got int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
	}))
	defer up.Close()
	_, srv := start(t, up.URL, Options{BodyTimeout: 300 * time.Millisecond, MaxInspect: 1000})
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"model":"m","pad":"` + strings.Repeat("x", 1000)))
		for range 12 { // 1.2 s in all, 100 ms apart
			time.Sleep(100 * time.Millisecond)
			pw.Write(bytes.Repeat([]byte("x"), 200))
		}
		pw.Write([]byte(`"}`))
		pw.Close()
	}()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := len(`{"model":"m","pad":""}`) + 3400; resp.StatusCode != 200 || got != want {
		t.Errorf("status %d, the upstream got %d bytes of %d", resp.StatusCode, got, want)
	}
}

// TestUpstreamHeaderTimeout: with a header timeout, an upstream that takes
// a request and says nothing gets 504, counted as an error and not sent
// again; without one the proxy waits.
func TestUpstreamHeaderTimeout(t *testing.T) {
	var hits atomic.Int64
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		w.Write([]byte(`{}`))
	}))
	defer up.Close()
	defer close(release)
	p, srv := start(t, up.URL, Options{UpstreamHeaderTimeout: 200 * time.Millisecond})
	resp, body := post(t, srv.URL, "/v1/chat/completions", `{"model":"m"}`)
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "no answer within 200ms") || hits.Load() != 1 {
		t.Errorf("status %d, %q, sent %d times: want 504, once", resp.StatusCode, body, hits.Load())
	}
	waitIdle(t, p)
	if got := scrapeProxy(t, p).outcome("chat_completions", "error"); got != 1 {
		t.Errorf("error %v, want 1", got)
	}
}

// TestInjectUsageLongEvent: through --inject-usage, an event longer than
// the bound on a line passes through as it came (the client gets the
// bytes the upstream sends without the injection), the request counts
// as oversized, and the usage after it is read.
func TestInjectUsageLongEvent(t *testing.T) {
	long := `data: {"model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", maxLine+10) + `"}}]}` + "\n\n"
	usageChunk := `data: {"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}` + "\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}` + "\n\n"))
		for i := 0; i < len(long); i += 4096 { // in pieces, flushed
			w.Write([]byte(long[i:min(i+4096, len(long))]))
			w.(http.Flusher).Flush()
		}
		w.Write([]byte(`data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"))
		if req.StreamOptions.IncludeUsage {
			w.Write([]byte(usageChunk))
		}
		w.Write([]byte("data: [DONE]\n\n"))
	}))
	defer up.Close()
	_, direct := post(t, up.URL, "/v1/chat/completions", `{"model":"m","stream":true}`)
	p, srv := start(t, up.URL, Options{InjectUsage: true})
	_, got := post(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true}`)
	if !bytes.Equal(got, direct) || bytes.Contains(direct, []byte(`"usage"`)) {
		t.Errorf("the client got %d bytes, the upstream sends %d without the injection", len(got), len(direct))
	}
	waitIdle(t, p)
	pub := scrapeProxy(t, p)
	if got := pub.vals["inferscope_proxy_oversized_total"]["endpoint=chat_completions"]; got != 1 {
		t.Errorf("oversized %v, want 1", got)
	}
	if got := pub.vals["tokens_predicted_total"]["m"]; got != 2 {
		t.Errorf("tokens_predicted_total %v, want 2 from the usage after the long event", got)
	}
	if n := pub.counts["time_to_first_token_seconds"]["m"]; n != 0 {
		t.Errorf("a time to first token was published, though the first token was in the unread event")
	}
}

// TestCredentials: user:password@ in the upstream URL reaches the
// upstream as basic auth, in place of what a client sent.
func TestCredentials(t *testing.T) {
	var auth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
	}))
	defer up.Close()
	_, srv := start(t, strings.Replace(up.URL, "http://", "http://proxy-user:s3cret@", 1), Options{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/tags", nil)
	req.Header.Set("Authorization", "Bearer ollama")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := "Basic " + "cHJveHktdXNlcjpzM2NyZXQ=" // base64("proxy-user:s3cret")
	if auth != want {
		t.Errorf("the upstream got Authorization %q, want %q", auth, want)
	}
}

// TestParseUpstream: an upstream is read as every other target: host:port
// gets http://, a URL keeps its prefix and its credentials.
func TestParseUpstream(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"localhost:11434/v1", "http://localhost:11434/v1", ""},
		{"gpu-box", "http://gpu-box", ""},
		{"[::1]:8080", "http://[::1]:8080", ""},
		{"https://api.example.com/openai", "https://api.example.com/openai", ""},
		{"http://user:pw@h:1", "http://user:pw@h:1", ""},
		{"ftp://h", "", "is not an http:// or https:// URL"},
		{"http://:80", "", "has no host"},
		{"h:0", "", "invalid port"},
		{"h:70000", "", "invalid port"},
		{"http://h/?k=1", "", "has a query or fragment"},
		{"http://h/#x", "", "has a query or fragment"},
		{"h:port", "", "not a URL or host:port"},
		{"", "", "is empty"},
	}
	for _, tt := range tests {
		u, err := ParseUpstream(tt.in)
		switch {
		case tt.err == "" && (err != nil || u.String() != tt.want):
			t.Errorf("%q: %v, %v; want %s", tt.in, u, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: %v, %v; want an error with %q", tt.in, u, err, tt.err)
		case err != nil && err.(*UpstreamError).Hint == "":
			t.Errorf("%q: no hint", tt.in)
		}
	}
}

// TestNotAnOpenProxy: a request that names another host (an absolute
// URI, a Host header, CONNECT) goes to the upstream or nowhere, never to
// that host.
func TestNotAnOpenProxy(t *testing.T) {
	var other atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	var mu sync.Mutex
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.Method+" "+r.URL.Path)
	}))
	defer up.Close()
	_, srv := start(t, up.URL, Options{})
	host := strings.TrimPrefix(elsewhere.URL, "http://")
	for _, raw := range []string{
		"GET " + elsewhere.URL + "/secret HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /secret HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"CONNECT " + host + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(raw))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			resp.Body.Close()
		}
		conn.Close()
	}
	if other.Load() != 0 {
		t.Errorf("another host got %d requests through the proxy", other.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) < 2 || paths[0] != "GET /secret" || paths[1] != "GET /secret" {
		t.Errorf("the upstream got %q", paths)
	}
}
