package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
)

// The performance target of issue 29: a million requests in one run with
// the bench's peak RSS at most 200 MB, every record streamed to a file.
// The server is an instant one (a few SSE events and usage) in a process
// of its own, so that only the bench's memory is measured:
//
//	INFERSCOPE_MILLION=1000000 go test ./internal/bench -run TestMillionRequests -v -timeout 1h
//
// docs/performance.md has the figures.
func TestMillionRequests(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("INFERSCOPE_MILLION"))
	if n <= 0 {
		t.Skip("set INFERSCOPE_MILLION to the number of requests")
	}
	base := startInstantServer(t)
	records, err := os.CreateTemp(t.TempDir(), "records-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer records.Close()
	rw := NewRecordWriter(records, JSONL)
	u, _ := url.Parse(base)
	cfg := Config{
		Plan: load.Plan{Concurrency: 64, Requests: n, Target: load.Target{Base: u, API: load.ChatCompletions, Model: "instant"},
			Source: chatSource{words: 8, output: 4}},
		Records: rw, Build: build, Interval: time.Second, Describe: Describe{Target: base, Model: "instant"},
	}
	start := time.Now()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	peak := ru.Maxrss * 1024 // kilobytes on Linux
	fi, _ := records.Stat()
	t.Logf("%d requests (%d completed, %d failed) in %v (%.0f/s); peak RSS %.1f MB; records %.1f MB; %s",
		rep.Client.Sent, rep.Client.Completed, rep.Client.Failed, took.Round(time.Second), float64(rep.Client.Sent)/took.Seconds(),
		float64(peak)/(1<<20), float64(fi.Size())/(1<<20), runtime.Version())
	if rep.Client.Completed != n {
		t.Errorf("%d of %d completed: %v", rep.Client.Completed, n, rep.Client.Errors)
	}
	if got := lines(t, records.Name()); got != n {
		t.Errorf("%d records written, want %d", got, n)
	}
	if peak > 200<<20 {
		t.Errorf("peak RSS %.1f MB, more than 200 MB", float64(peak)/(1<<20))
	}
}

func lines(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// startInstantServer runs this test binary again as the instant server
// (TestInstantServer) and returns its base URL.
func startInstantServer(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInstantServer$")
	cmd.Env = append(os.Environ(), "INFERSCOPE_INSTANT_SERVER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// TestInstantServer is the instant server when run by startInstantServer:
// it prints its URL and serves until killed.
func TestInstantServer(t *testing.T) {
	if os.Getenv("INFERSCOPE_INSTANT_SERVER") != "1" {
		t.Skip("a helper process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("http://" + ln.Addr().String())
	chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": "tok"}}}})
	last, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": "tok"}, "finish_reason": "length"}}})
	usage, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 4}})
	var body strings.Builder
	for range 3 {
		fmt.Fprintf(&body, "data: %s\n\n", chunk)
	}
	fmt.Fprintf(&body, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", last, usage)
	answer := []byte(body.String())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(answer)
	}))
}

var _ workload.Source = chatSource{}
