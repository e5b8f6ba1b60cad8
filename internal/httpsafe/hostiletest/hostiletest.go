// Package hostiletest serves, on loopback, what a hostile or broken server
// answers, for the tests of the HTTP policy (internal/httpsafe) and of
// every reader that goes through it: a redirect to another host, an
// endless or slowly streamed body, a gzip bomb, JSON nested past any
// reasonable depth. [Allocated] measures what a reader allocated while it
// met them: a bound on allocation is a bound on peak memory, and, unlike
// wall time, does not depend on the machine.
package hostiletest

import (
	"bytes"
	"compress/gzip"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// OtherHost starts h on another loopback address than httptest's
// 127.0.0.1 (127.0.0.2, where the system answers on all of 127/8; else
// another port of 127.0.0.1, which is another host as far as credentials
// go) and returns its URL.
func OtherHost(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// Recorder is a handler that keeps the headers of every request it
// receives, and answers body.
type Recorder struct {
	Body    string
	mu      sync.Mutex
	headers []http.Header
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.Write([]byte(r.Body))
}

// Requests returns the headers of the requests received so far.
func (r *Recorder) Requests() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// RedirectTo answers every request with 307 to base and the request's
// path and query: a store that sends its clients to another host.
func RedirectTo(base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", base+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
}

// Stream answers with head, then filler repeated until total bytes have
// been sent or the client goes away, flushing each piece, pausing pause
// between pieces (0: none), and never saying how long the body is. A
// /series answer that never ends is Stream(`{"status":"success","data":[`,
// `{"__name__":"x"},`, …).
func Stream(head, filler string, total int64, pause time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		piece := []byte(strings.Repeat(filler, max(1, 64<<10/len(filler))))
		sent, err := w.Write([]byte(head))
		flush := http.NewResponseController(w).Flush
		for n := int64(sent); err == nil && n < total; {
			var k int
			k, err = w.Write(piece[:min(int64(len(piece)), total-n)])
			n += int64(k)
			if err == nil {
				err = flush()
			}
			if pause > 0 {
				select {
				case <-time.After(pause):
				case <-r.Context().Done():
					return
				}
			}
		}
	})
}

// GzipBomb returns gzip data that decompresses to size zero bytes: 1 MiB
// members, each about a kilobyte, joined (gzip readers read every member
// of a stream, as the format asks). 1 GiB takes about 1 MB.
func GzipBomb(size int64) []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	const unit = 1 << 20
	zw.Write(make([]byte, unit))
	zw.Close()
	var out bytes.Buffer
	for n := int64(0); n < size; n += unit {
		out.Write(member.Bytes())
	}
	return out.Bytes()
}

// Gzipped serves body with Content-Encoding: gzip, its wire length
// announced.
func Gzipped(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
	})
}

// Nested returns a Prometheus API answer whose "infos" (a field every
// reader skips) is depth arrays nested in one another, never closed: a
// reader that recurses into what it skips without a bound overflows its
// stack.
func Nested(depth int) []byte {
	return []byte(`{"status":"success","infos":` + strings.Repeat("[", depth))
}

// Allocated returns how many bytes the process allocated while f ran: a
// bound on the peak memory f needed. Other goroutines' allocations count
// too; a test that uses it should not run in parallel with others.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
