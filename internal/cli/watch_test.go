package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// serveFile serves a fixture as a live /metrics.
func serveFile(t *testing.T, path string) *httptest.Server {
	body := readFile(t, path)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// --fail-on with --watch is a canary: the first refresh whose report has a
// note that severe is written whole, then the watch stops with exit 1 and
// says why; a severity no note reaches does not stop it.
func TestWatchFailOn(t *testing.T) {
	// One warn note on the state now (KV pressure): a note on what
	// happened would judge the window, and a file that never changes has
	// nothing happen in it.
	srv := serveFile(t, fixtures+"busy.prom")
	for _, json := range []bool{false, true} {
		args := []string{"--watch", "0.2s", "--fail-on", "warn", srv.URL}
		if json {
			args = append(args, "--json")
		}
		out, errOut, code := runCLI(t, "", args...)
		if code != ExitFailOn {
			t.Fatalf("json %v: exit %d: %s", json, code, errOut)
		}
		frames := strings.Count(out, "=== ")
		if json {
			frames = strings.Count(out, "\n")
		}
		if frames != 1 || !strings.Contains(out, "kv_cache_pressure") && !strings.Contains(out, "KV cache") {
			t.Errorf("json %v: %d frames, want the one that tripped:\n%.500s", json, frames, out)
		}
		if !strings.HasPrefix(errOut, "inferscope: --fail-on warn tripped at ") || !strings.Contains(errOut, ", the watch stopped: kv_cache_pressure (warn): ") ||
			strings.Count(errOut, "\n") != 1 {
			t.Errorf("stderr %q", errOut)
		}
	}
	// bad is not reached: the watch goes on until it is interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	io, _, _ := iostreams.Test("", false, 0)
	out := &lockedBuffer{}
	io.Out = out
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--watch", "0.2s", "--fail-on", "bad", srv.URL}, io) }()
	for strings.Count(out.String(), "=== ") < 2 {
		select {
		case code := <-done:
			t.Fatalf("--fail-on bad stopped the watch: exit %d", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d after the interrupt", code)
	}
}

// Ctrl-C pressed in the full-screen view ends it with 130, as the signal
// does.
func TestWatchViewCtrlC(t *testing.T) {
	srv := serveFile(t, fixtures+"idle.prom")
	keys, typist := io.Pipe()
	ios, _, errb := iostreams.Test("", true, 120)
	ios.In = keys
	go typist.Write([]byte{0x03})
	if code := run(context.Background(), []string{"--watch", "1s", srv.URL}, ios); code != ExitInterrupted {
		t.Errorf("exit %d: %s", code, errb)
	}
}

// A restarted llama.cpp read from two saved files without a start header:
// its seconds counters fell (the new process counts from zero) while its
// token counter rose past the old total. Every counter counts from zero:
// the new process generated 13,500 tokens in the 60 s between the scrapes,
// 225 tok/s; folding each counter on its own subtracted the old total and
// gave (13,500 − 10,644) / 60 = 47.6.
func TestSinceAcrossLlamaCppRestart(t *testing.T) {
	scrape := func(at string, predicted, predictedSeconds, prompt, promptSeconds float64) string {
		return "# inferscope: scraped_at=" + at + " source=http://gpu:8080/metrics\n" +
			"# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total " + ftoa(prompt) + "\n" +
			"# TYPE llamacpp:prompt_seconds_total counter\nllamacpp:prompt_seconds_total " + ftoa(promptSeconds) + "\n" +
			"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total " + ftoa(predicted) + "\n" +
			"# TYPE llamacpp:tokens_predicted_seconds_total counter\nllamacpp:tokens_predicted_seconds_total " + ftoa(predictedSeconds) + "\n" +
			"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total 5000\n" +
			"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n"
	}
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.prom"), filepath.Join(dir, "after.prom")
	os.WriteFile(before, []byte(scrape("2026-05-01T12:00:00Z", 10644, 220.5, 30000, 12)), 0o644)
	os.WriteFile(after, []byte(scrape("2026-05-01T12:01:00Z", 13500, 60, 42000, 3)), 0o644)
	out, errOut, code := runCLI(t, "", "--json", "--since", before, after)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Rates map[string]map[string]*float64
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// 13,500 / 60 and 42,000 / 60 by hand.
	if g := doc.Rates["since"]["generation"]; g == nil || *g != 225 {
		t.Errorf("generation %v tok/s, want 225", g)
	}
	if p := doc.Rates["since"]["prompt_computed"]; p == nil || *p != 700 {
		t.Errorf("prompt computed %v tok/s, want 700", p)
	}
	text, _, _ := runCLI(t, "", "--since", before, after)
	if !strings.Contains(text, "counters reset") {
		t.Errorf("the report does not say the counters reset:\n%s", text)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
