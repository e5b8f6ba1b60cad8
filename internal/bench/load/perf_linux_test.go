//go:build linux

package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// The performance targets of issue 29, as benchmarks run once each
// (-benchtime 1x); the figures are reported metrics, not assertions. The
// server runs in a process of its own (this test binary, started again),
// so that the generator's CPU time is its own.
var (
	pacerRate     = flag.Float64("pacer.rate", 2000, "BenchmarkPacer: arrivals a second")
	pacerDuration = flag.Duration("pacer.duration", 30*time.Second, "BenchmarkPacer: how long")
	streamsN      = flag.Int("streams.n", 2000, "BenchmarkStreams: concurrent streams")
	streamsRate   = flag.Int("streams.rate", 20, "BenchmarkStreams: events a second on each stream")
	streamsFor    = flag.Duration("streams.duration", 20*time.Second, "BenchmarkStreams: how long the measured part lasts (after 3 s of warm-up)")
	manyN         = flag.Int("many.n", 200000, "BenchmarkMany: requests in the run")
	streamsLength = flag.Duration("streams.length", 2*time.Second, "BenchmarkStreams: a stream's mean length (uniform from half to one and a half)")
)

const serverEnv = "INFERSCOPE_LOAD_BENCH_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv); mode != "" {
		serveBench(mode)
		return
	}
	os.Exit(m.Run())
}

// serveBench is the benchmark's server: "instant" answers a stream of one
// token at once; "paced:N:GAP" streams a role chunk, then from N/2 to
// 3N/2 content events GAP apart (the first after a random part of GAP),
// usage and [DONE]: the streams neither tick nor end together.
func serveBench(mode string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	n, gap := 1, time.Duration(0)
	if rest, ok := strings.CutPrefix(mode, "paced:"); ok {
		a, b, _ := strings.Cut(rest, ":")
		n, _ = strconv.Atoi(a)
		gap, _ = time.ParseDuration(b)
	}
	role := []byte(`data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	tok := []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"t word"},"finish_reason":null}]}` + "\n\n")
	tail := []byte(`data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n")
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		if gap == 0 {
			w.Write(slices.Concat(role, tok, tail))
			return
		}
		w.Write(role)
		f.Flush()
		next := time.Now().Add(time.Duration(rand.Int64N(int64(gap))))
		for range n/2 + rand.IntN(n+1) {
			time.Sleep(time.Until(next))
			next = next.Add(gap)
			if _, err := w.Write(tok); err != nil {
				return
			}
			f.Flush()
		}
		w.Write(tail)
	}))
}

// startServer starts the benchmark's server in a process of its own.
func startServer(b *testing.B, mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	cmd.Path = "http://" + strings.TrimSpace(addr) // where it listens
	return cmd
}

// indexed sends {"i": i}, so that a connection can tell whose it is.
type indexed struct{}

func (indexed) Next(i int) workload.Request {
	return workload.Request{Body: fmt.Appendf(nil, `{"model":"m","stream":true,"i":%d}`, i), PromptTokens: 7}
}

// BenchmarkPacer: Poisson arrivals at -pacer.rate for -pacer.duration
// against a server that answers at once: the share of the scheduled
// arrivals delivered, and the send lateness (target: within 0.5%, p99 ≤
// 1 ms).
func BenchmarkPacer(b *testing.B) {
	srv := startServer(b, "instant")
	for b.Loop() {
		wall := time.Now()
		sum, err := Run(context.Background(), Plan{Target: Target{Base: mustURL(b, srv.Path), API: ChatCompletions}, Rate: *pacerRate,
			Duration: *pacerDuration, Seed: 1, Source: indexed{}}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Errors > 0 {
			b.Errorf("%d errors", sum.Errors)
		}
		l := sum.Lateness
		b.ReportMetric(float64(sum.Scheduled), "scheduled")
		b.ReportMetric(100*float64(sum.Sent)/float64(sum.Scheduled), "delivered-%")
		b.ReportMetric(float64(sum.Sent)/pacerDuration.Seconds(), "sent/s")
		b.ReportMetric(float64(l.P50.Microseconds()), "late-p50-µs")
		b.ReportMetric(float64(l.P99.Microseconds()), "late-p99-µs")
		b.ReportMetric(float64(l.Max.Microseconds()), "late-max-µs")
		b.ReportMetric(100*float64(l.Late)/float64(max(l.Count, 1)), "late>1ms-%")
		b.ReportMetric(sum.CPU.Seconds()/time.Since(wall).Seconds(), "gen-cores")
	}
}

// BenchmarkMany: -many.n requests in one closed-loop run of 64 against a
// server that answers at once, every record handed to a function that
// keeps nothing: the generator's peak resident memory (the bench's own
// target, 1,000,000 requests within 200 MB with records streamed to a
// file, is measured where the records are written).
func BenchmarkMany(b *testing.B) {
	srv := startServer(b, "instant")
	for b.Loop() {
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Skipf("cannot reset the peak RSS: %v", err)
		}
		wall := time.Now()
		n := 0
		sum, err := Run(context.Background(), Plan{Target: Target{Base: mustURL(b, srv.Path), API: ChatCompletions}, Concurrency: 64,
			Requests: *manyN, Source: indexed{}}, func(Record) { n++ }, nil)
		if err != nil || sum.Completed != *manyN || n != *manyN {
			b.Fatalf("%d completed of %d, %d records: %v", sum.Completed, *manyN, n, err)
		}
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(*manyN)/time.Since(wall).Seconds(), "req/s")
		b.ReportMetric(sum.CPU.Seconds()*1e6/float64(*manyN), "gen-cpu-µs/req")
	}
}

// peakRSS is the process's peak resident memory since the last reset, in
// bytes.
func peakRSS(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip(err)
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Skip("no VmHWM")
	return 0
}

// BenchmarkStreams: -streams.n streams at once (a closed loop), each
// -streams.rate events a second for about -streams.length, every event
// timestamped, for -streams.duration after a warm-up of 3 s (the first
// 2,000 connections all open at once, which no steady state does): the
// generator's CPU (target: under one core) and, with the tap, the TTFT of
// each measured request against the kernel's receive time of the same
// bytes on the same socket (SO_TIMESTAMPNS; target: within 50 µs at p99).
func BenchmarkStreams(b *testing.B) {
	events := int(streamsLength.Seconds() * float64(*streamsRate))
	gap := time.Second / time.Duration(*streamsRate)
	for _, tapped := range []bool{false, true} {
		name := "cpu"
		if tapped {
			name = "ttft-vs-kernel"
		}
		b.Run(name, func(b *testing.B) {
			srv := startServer(b, fmt.Sprintf("paced:%d:%s", events, gap))
			for b.Loop() {
				p := Plan{Target: Target{Base: mustURL(b, srv.Path), API: ChatCompletions}, Concurrency: *streamsN, Duration: *streamsFor,
					Warmup: Warmup{Duration: 3 * time.Second}, Source: indexed{}}
				tap := &taps{first: map[int]int64{}}
				if tapped {
					p.dial = tap.dial
				}
				var mu sync.Mutex
				firstAt := map[int]int64{}
				wall := time.Now()
				sum, err := Run(context.Background(), p, func(r Record) {
					mu.Lock()
					if r.TTFT >= 0 && !r.Warmup {
						firstAt[r.Index] = int64(r.Sent + r.TTFT) // from the start, for now
					}
					mu.Unlock()
				}, nil)
				if err != nil {
					b.Fatal(err)
				}
				secs := time.Since(wall).Seconds()
				if sum.Errors > 0 {
					b.Errorf("%d completed, %d errors", sum.Completed, sum.Errors)
				}
				b.ReportMetric(sum.CPU.Seconds()/secs, "gen-cores")
				b.ReportMetric(float64(sum.ITL.TotalCount()+int64(sum.Completed))/(sum.MeasuredTo-sum.MeasuredFrom).Seconds(), "events/s")
				b.ReportMetric(float64(sum.Completed), "measured")
				if !tapped {
					continue
				}
				var diffs []float64
				tap.mu.Lock()
				for i, at := range firstAt {
					if k, ok := tap.first[i]; ok {
						diffs = append(diffs, float64(sum.Start.Add(time.Duration(at)).UnixNano()-k)/1e3)
					}
				}
				tap.mu.Unlock()
				if len(diffs) < len(firstAt)*9/10 {
					b.Fatalf("%d requests paired with the kernel's times of %d", len(diffs), len(firstAt))
				}
				slices.Sort(diffs)
				b.ReportMetric(float64(len(diffs)), "paired")
				b.ReportMetric(diffs[len(diffs)/2], "ttft-diff-p50-µs")
				b.ReportMetric(diffs[len(diffs)*99/100], "ttft-diff-p99-µs")
				b.ReportMetric(diffs[len(diffs)-1], "ttft-diff-max-µs")
			}
		})
	}
}

// taps are connections that ask the kernel to timestamp every segment
// received (SO_TIMESTAMPNS), and note, for the request each carries, the
// time the kernel received the read that held its first content event.
type taps struct {
	mu    sync.Mutex
	first map[int]int64 // request index → kernel time, ns since the epoch
}

func (t *taps) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) })
	if serr != nil {
		return nil, serr
	}
	return &tapConn{TCPConn: tc, rc: rc, t: t, idx: -1, oob: make([]byte, 128)}, nil
}

type tapConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	t    *taps
	idx  int
	done bool
	seen []byte
	oob  []byte
}

var marker = []byte(`"content":"t`)

// Write notes the index of each request written (a kept-alive connection
// carries one after another).
func (c *tapConn) Write(p []byte) (int, error) {
	if _, rest, ok := bytes.Cut(p, []byte(`"i":`)); ok {
		if end := bytes.IndexByte(rest, '}'); end > 0 {
			c.idx, _ = strconv.Atoi(string(rest[:end]))
			c.done, c.seen = false, c.seen[:0]
		}
	}
	return c.TCPConn.Write(p)
}

func (c *tapConn) Read(p []byte) (int, error) {
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return max(n, 0), err
	}
	if n == 0 {
		return 0, io.EOF
	}
	if !c.done && c.idx >= 0 {
		c.seen = append(c.seen, p[:n]...)
		if bytes.Contains(c.seen, marker) {
			c.done, c.seen = true, c.seen[:0]
			if ts, ok := kernelTime(c.oob[:oobn]); ok {
				c.t.mu.Lock()
				c.t.first[c.idx] = ts
				c.t.mu.Unlock()
			}
		}
	}
	return n, nil
}

// kernelTime reads SCM_TIMESTAMPNS from a control message.
func kernelTime(oob []byte) (int64, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return sec*1e9 + nsec, true
		}
	}
	return 0, false
}
