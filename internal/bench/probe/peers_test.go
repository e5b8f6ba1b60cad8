package probe

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/benchtest"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
)

// TestPeers probes a real llama.cpp server, with its own account as the
// judge: each request's decode speed as the client timed it is the one
// its timings say, the probe's requests together decoded as its counters
// say, and no prompt's first token was served from a cache. It needs the
// peers built by shared/tools/peers_setup.sh: INFERSCOPE_PEERS=/tmp/peers
// go test -run TestPeers ./internal/bench/probe. It starts the server on a
// free port, and stops it. (testdata/recorded/llama-server is such a
// probe kept, and TestRecordedDecodeProbe holds it to the server's
// predicted_tokens_seconds.)
func TestPeers(t *testing.T) {
	dir := os.Getenv("INFERSCOPE_PEERS")
	if dir == "" {
		t.Skip("INFERSCOPE_PEERS is not set (the directory of llama-server and tiny-llama.gguf)")
	}
	port := freePort(t)
	base := startPeer(t, port, filepath.Join(dir, "llama-server"), "-m", filepath.Join(dir, "tiny-llama.gguf"), "--metrics",
		"--port", port, "-np", "4", "-c", "4096")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	target := load.Target{Base: u, API: load.Completions, Model: "tiny"}
	tok, err := workload.FindTokenizer(t.Context(), load.Client(target), u, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cal, err := workload.Calibrate(t.Context(), workload.Shape{API: load.Completions, Model: "tiny"}, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Target: target, Probes: []string{Prefill, Decode}, Lengths: []int{200, 800}, Batches: []int{1, 4},
		Repeat: 2, PromptTokens: 32, OutputTokens: 128, Calibration: cal, Seed: uint64(time.Now().UnixNano()),
		Scrape: benchtest.Scrape(base + "/metrics"), Metrics: base + "/metrics", Record: func(r load.Record) {
			if r.Error != "" {
				t.Logf("request %d: %s %s", r.Index, r.Error, r.ErrorDetail)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Prefill.Points {
		// The completions API: nothing before the prompt's own first words
		// but the BOS, which a slot may keep.
		if p.Requests != 2 || p.Server == nil || p.ServerFrom != FromTimings || float64(p.CachedTokens) > 1 {
			t.Errorf("prefill %+v", p)
			continue
		}
		// The client's TTFT holds the server's prefill and the way there
		// and back: its speed is never above the server's.
		if float64(p.Client.Max) > float64(p.Server.Max)*1.01 {
			t.Errorf("prefill at %d tokens: the client %v tok/s, beyond the server's %v", p.Length, p.Client.Max, p.Server.Max)
		}
		t.Logf("prefill at %d (%v computed): client %.0f, server %.0f tok/s", p.Length, p.PromptTokens, float64(p.Client.Median), float64(p.Server.Median))
	}
	for _, p := range res.Decode.Points {
		if p.Requests != 2*p.Batch || p.Server == nil || p.ServerFrom != FromTimings || p.EarlyStops != 0 {
			t.Fatalf("decode %+v", p)
		}
		t.Logf("decode at batch %d: client %.0f a request (%.0f together), server %.0f; overlap %.2f", p.Batch, float64(p.PerRequest.Median),
			float64(p.Total.Median), float64(p.Server.Median), float64(p.Overlap))
		// The client times the events it read, the server its sampling:
		// a few milliseconds apart on a machine shared with builds.
		if math.Abs(float64(p.PerRequest.Median)/float64(p.Server.Median)-1) > 0.05 {
			t.Errorf("decode at batch %d: the client %v tok/s a request, the server's timings %v", p.Batch, p.PerRequest.Median, p.Server.Median)
		}
	}
	for _, n := range res.Notes {
		t.Logf("note %s: %s", n.ID, n.Text)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// startPeer starts a server and waits for its /health, stopping it when
// the test ends.
func startPeer(t *testing.T, port, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
	}
	t.Fatal("the server did not come up")
	return ""
}
