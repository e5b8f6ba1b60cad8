package proxy

import (
	"bufio"
	"bytes"
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

// recorded is llama.cpp's server as recorded on the wire (testdata/proxy
// *.http): the exact bytes of a streamed answer, after which it closes the
// connection although it offered to keep it, and of an answer not
// streamed, after which it keeps it.
type recorded struct {
	ln           net.Listener
	stream, done []byte // as sent on the wire
	// streamBody, doneBody: what a client reads of them
	streamBody, doneBody []byte
	// late: close a connection after a stream only once the next request
	// on it has arrived, unanswered (the worst moment: the proxy has sent
	// on it); otherwise at once, as recorded.
	late bool
	// plainClose: close after an answer not streamed too, on the next
	// request (an idle timeout racing the next request).
	plainClose bool

	requests atomic.Int64 // requests read, answered or not
	wg       sync.WaitGroup
}

func startRecorded(t testing.TB, late, plainClose bool) *recorded {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorded{ln: ln, late: late, plainClose: plainClose,
		stream: rawFixture(t, "llamacpp_b10309_chat_stream.http"), done: rawFixture(t, "llamacpp_b10309_chat.http")}
	r.streamBody, r.doneBody = bodyOf(t, r.stream), bodyOf(t, r.done)
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Go(func() { r.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	return r
}

func rawFixture(t testing.TB, name string) []byte {
	f := loadFixture(t, name)
	return f.body
}

// bodyOf is the body of a response as sent on the wire.
func bodyOf(t testing.TB, raw []byte) []byte {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *recorded) url() string { return "http://" + r.ln.Addr().String() }

// serve answers the requests on one connection as the recording did.
func (r *recorded) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	closeNext := false
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		r.requests.Add(1)
		if closeNext {
			return // the next request arrived on a connection being closed
		}
		if bytes.Contains(body, []byte(`"stream":true`)) {
			c.Write(r.stream)
			if !r.late {
				return
			}
			closeNext = true
			continue
		}
		c.Write(r.done)
		closeNext = r.plainClose
	}
}

// TestNoErrorAfterStreams: 2,000 back-to-back requests, alternating
// streamed and not, through the proxy to llama.cpp's server as recorded,
// which closes its connection after every stream: not one fails, each
// client gets the recorded bytes, and what it took is counted.
func TestNoErrorAfterStreams(t *testing.T) {
	for _, c := range []struct {
		name string
		late bool
	}{{"closed-at-once", false}, {"closed-as-the-next-request-arrives", true}} {
		t.Run(c.name, func(t *testing.T) {
			up := startRecorded(t, c.late, false)
			var notices []string
			var mu sync.Mutex
			p, srv := start(t, up.url(), Options{Notice: func(s string) { mu.Lock(); notices = append(notices, s); mu.Unlock() }})
			t0 := time.Now()
			failed := alternate(t, up, srv.URL, 2000)
			waitIdle(t, p)
			pub := scrapeProxy(t, p)
			if failed > 0 || pub.outcome("chat_completions", "finished") != 2000 {
				t.Fatalf("%d of 2,000 failed; finished %v", failed, pub.outcome("chat_completions", "finished"))
			}
			retries := pub.vals["inferscope_proxy_upstream_retries_total"][""]
			// Closed at once, a connection reads nothing more: each request
			// was read once. Closed late, the request sent on it was read
			// too, and sent again.
			want := 2000.0
			if c.late {
				want += retries
			}
			if c.late && retries < 1 || float64(up.requests.Load()) != want {
				t.Errorf("the upstream read %d requests; the proxy counts %v retries of 2,000", up.requests.Load(), retries)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(notices) != 1 || !strings.Contains(notices[0], "closes its connection after each streamed answer") {
				t.Errorf("notices %q: want one, that the upstream closes after streams", notices)
			}
			t.Logf("%v retries, in %v", retries, time.Since(t0))
		})
	}
}

// alternate sends n requests one after the other, streamed and not in
// turn, and returns how many did not get the recorded answer.
func alternate(t *testing.T, up *recorded, base string, n int) (failed int) {
	client := &http.Client{Transport: &http.Transport{}}
	for i := range n {
		stream := i%2 == 0
		body, want := `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`, up.doneBody
		if stream {
			body, want = `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`, up.streamBody
		}
		resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil || !bytes.Equal(got, want) {
			failed++
			if failed < 5 {
				t.Errorf("request %d (stream %v): status %d, %v: %q", i, stream, resp.StatusCode, err, got)
			}
		}
	}
	return failed
}

// TestRetryOnlyBeforeAnswer: a request whose reused connection the
// upstream closes as it arrives is sent again, once, on a connection of
// its own; one that cannot be sent again (its body is beyond what the
// proxy holds) fails with 502, and so does one that got a byte of an
// answer before the connection broke.
func TestRetryOnlyBeforeAnswer(t *testing.T) {
	up := startRecorded(t, false, true) // every reused connection is closed as a request arrives
	p, srv := start(t, up.url(), Options{MaxInspect: 1000})
	client := &http.Client{Transport: &http.Transport{}}
	send := func(body string) int {
		resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 10 {
		if code := send(`{"model":"tiny"}`); code != 200 {
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	waitIdle(t, p)
	// Of ten, the first took a new connection, and the second found it
	// idle, was read and had it closed, and was sent again on one of its
	// own (closed after its answer); so every other one.
	if got, read := scrapeProxy(t, p).vals["inferscope_proxy_upstream_retries_total"][""], up.requests.Load(); got != 5 || read != 15 {
		t.Errorf("retries %v, requests read %d: want 5 and 15", got, read)
	}

	big := `{"model":"tiny","pad":"` + strings.Repeat("x", 2000) + `"}`
	before := up.requests.Load()
	if code := send(`{"model":"tiny"}`); code != 200 { // leaves an idle connection to reuse
		t.Fatalf("status %d", code)
	}
	if code := send(big); code != http.StatusBadGateway {
		t.Errorf("a body the proxy could not send again: status %d, want 502", code)
	}
	if n := up.requests.Load() - before; n != 2 {
		t.Errorf("the upstream read %d requests, want 2 (the big one once)", n)
	}

	// On a reused connection, a byte of an answer and then nothing.
	var hits atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Write([]byte(`{}`))
			return
		}
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Ty"))
		c.Close()
	}))
	defer broken.Close()
	_, bsrv := start(t, broken.URL, Options{})
	codes := []int{send2(t, bsrv.URL), send2(t, bsrv.URL)}
	if codes[0] != 200 || codes[1] != http.StatusBadGateway || hits.Load() != 2 {
		t.Errorf("an answer broken after its first byte: statuses %v, the upstream had %d requests; want [200 502] and 2", codes, hits.Load())
	}
}

func send2(t *testing.T, base string) int {
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
