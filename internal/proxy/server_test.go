package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/proxy/proxytest"
)

// serve runs a Server for a proxy to upstream, clients and metrics on
// listeners of their own.
func serve(t *testing.T, upstream string) (*Proxy, *Server, string, string) {
	t.Helper()
	u, _ := url.Parse(upstream)
	p, err := New(Options{Upstream: u})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(p)
	s.Serve(cl, ml)
	t.Cleanup(s.Close)
	return p, s, "http://" + cl.Addr().String(), "http://" + ml.Addr().String()
}

// TestDrain: a drain turns /readyz unready at once while /healthz stays
// up, stops taking connections, and lets a stream in flight finish whole.
func TestDrain(t *testing.T) {
	up := httptest.NewServer(proxytest.Ticks(20, 30*time.Millisecond))
	defer up.Close()
	p, s, clients, metrics := serve(t, up.URL)
	if proxytest.Status(metrics+"/readyz") != 200 || proxytest.Status(metrics+"/healthz") != 200 {
		t.Fatal("not ready before the drain")
	}
	resp, br := proxytest.OpenStream(t, clients)
	defer resp.Body.Close()
	drained := make(chan int64)
	go func() { drained <- s.Drain(context.Background()) }()
	for i := 0; proxytest.Status(metrics+"/readyz") != http.StatusServiceUnavailable; i++ {
		if i > 100 {
			t.Fatal("/readyz still ready during the drain")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if proxytest.Status(metrics+"/healthz") != 200 {
		t.Error("/healthz failed during the drain")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(clients, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("a new client connection was taken during the drain")
	}
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("the stream in flight did not finish: %v, ends %q", err, rest[max(0, len(rest)-40):])
	}
	if cut := <-drained; cut != 0 {
		t.Errorf("the drain cut %d requests", cut)
	}
	if got := scrapeProxy(t, p).outcome("chat_completions", "finished"); got != 1 {
		t.Errorf("finished %v, want 1", got)
	}
}

// TestDrainTimeout: a stream that outlasts the drain is cut when it ends,
// and counts as aborted.
func TestDrainTimeout(t *testing.T) {
	up := httptest.NewServer(proxytest.Ticks(-1, 20*time.Millisecond))
	defer up.Close()
	p, s, clients, _ := serve(t, up.URL)
	resp, br := proxytest.OpenStream(t, clients)
	defer resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if cut := s.Drain(ctx); cut != 1 {
		t.Errorf("cut %d, want 1", cut)
	}
	if _, err := io.ReadAll(br); err == nil {
		t.Error("the stream ended cleanly, though it was cut")
	}
	waitIdle(t, p)
	if got := scrapeProxy(t, p).outcome("chat_completions", "aborted"); got != 1 {
		t.Errorf("aborted %v, want 1", got)
	}
}

// TestHealthOnClients: without a metrics listener, /metrics, /healthz and
// /readyz are the proxy's own on the clients' listener, and other paths go
// upstream.
func TestHealthOnClients(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("upstream")) }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p, _ := New(Options{Upstream: u})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s := NewServer(p)
	s.Serve(ln, nil)
	defer s.Close()
	base := "http://" + ln.Addr().String()
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n", "/health": "upstream"} {
		if b := get(t, base+path); b != want {
			t.Errorf("%s: %q, want %q", path, b, want)
		}
	}
	if !strings.Contains(get(t, base+"/metrics"), "inferscope_proxy_requests_total") {
		t.Error("/metrics is not the proxy's")
	}
}

func get(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestIdleConnsBounded: beyond the bound, the connection idle longest is
// closed, and one in use is never counted.
func TestIdleConnsBounded(t *testing.T) {
	c := idleConns{max: 2}
	conns := make([]net.Conn, 4)
	peers := make([]net.Conn, 4)
	for i := range conns {
		conns[i], peers[i] = net.Pipe()
		defer peers[i].Close()
	}
	closed := func(i int) bool {
		peers[i].SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := peers[i].Read(make([]byte, 1))
		return err == io.EOF
	}
	c.track(conns[0], http.StateIdle)
	c.track(conns[1], http.StateIdle)
	c.track(conns[0], http.StateActive) // in use again: not idle
	c.track(conns[2], http.StateIdle)
	if closed(0) || closed(1) || closed(2) {
		t.Fatal("a connection was closed within the bound")
	}
	c.track(conns[3], http.StateIdle) // three idle: the longest idle goes
	if !closed(1) || closed(2) || closed(3) {
		t.Errorf("closed: 1 %v, 2 %v, 3 %v; want only 1, idle longest", closed(1), closed(2), closed(3))
	}
}
