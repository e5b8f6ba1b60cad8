package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkInjectHugeEvent is one SSE event of 64 MiB without a blank
// line, through the proxy with InjectUsage: the process's CPU time, its
// peak resident memory and the client's time to its first byte (the
// upstream and the client run in the same process; they stream through
// fixed buffers).
func BenchmarkInjectHugeEvent(b *testing.B) {
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("a"), 32<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: "))
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
		}
		w.Write([]byte("\n\ndata: [DONE]\n\n"))
	}))
	defer up.Close()
	_, srv := start(b, up.URL, Options{InjectUsage: true})
	var cpu, first time.Duration
	var peak int64
	for b.Loop() {
		resetPeakRSS(b)
		before := rusage()
		t0 := time.Now()
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadByte(); err != nil {
			b.Fatal(err)
		}
		first += time.Since(t0)
		n, err := io.Copy(io.Discard, br)
		resp.Body.Close()
		if err != nil || n+1 != int64(len("data: ")+size+len("\n\ndata: [DONE]\n\n")) {
			b.Fatalf("read %d bytes, %v", n+1, err)
		}
		cpu += rusage() - before
		peak = max(peak, peakRSS(b))
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(first.Seconds()/float64(b.N), "first-byte-s/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
}

// resetPeakRSS restarts the kernel's count of the process's peak resident
// memory (Linux 4.0 and later).
func resetPeakRSS(tb testing.TB) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// peakRSS is the process's peak resident memory since resetPeakRSS, in
// bytes.
func peakRSS(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Skip("no VmHWM")
	return 0
}
