package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
)

// TestPictureGlyphs: the bars are drawn in block characters, or in ASCII
// with --ascii or where the locale is not UTF-8; the words keep theirs.
func TestPictureGlyphs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		ascii bool
	}{
		{name: "no locale", args: nil, ascii: false},
		{name: "UTF-8 locale", env: map[string]string{"LANG": "en_US.UTF-8"}, ascii: false},
		{name: "--ascii", args: []string{"--ascii"}, env: map[string]string{"LANG": "en_US.UTF-8"}, ascii: true},
		{name: "LANG=C", env: map[string]string{"LANG": "C"}, ascii: true},
		{name: "LC_ALL=POSIX over a UTF-8 LANG", env: map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "POSIX"}, ascii: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errb := iostreams.Test("", false, 0)
			io.Getenv = func(k string) string { return tc.env[k] }
			if code := run(context.Background(), append(tc.args, "--width", "100", fixtures+"busy.prom"), io); code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			text := out.String()
			blocks := strings.ContainsAny(text, "█░▏▎▍▌▋▊▉")
			hashes := strings.Contains(text, "#....") || strings.Contains(text, "##")
			if blocks == tc.ascii || hashes != tc.ascii {
				t.Errorf("ascii %v: blocks %v, # bars %v:\n%s", tc.ascii, blocks, hashes, text)
			}
		})
	}
}

// TestBreakdownGolden: vLLM's two data-parallel engines, one at 96% of its
// KV cache while their mean is 65%: folded, the spread; with --breakdown,
// a row each.
func TestBreakdownGolden(t *testing.T) {
	file := "../../testdata/dialects/vllm-dp2.prom"
	for _, tc := range []struct{ golden string }{{"vllm-dp2.txt"}, {"vllm-dp2.breakdown.txt"}} {
		args := []string{file, "--width", "120"}
		if strings.Contains(tc.golden, "breakdown") {
			args = append(args, "--breakdown")
		}
		out, errOut, code := runCLI(t, "", args...)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden.Check(t, tc.golden, out)
	}
	out, _, _ := runCLI(t, "", "--json", file)
	var r struct {
		Breakdowns map[string]struct {
			Unit  string
			Units []struct {
				ID      string
				Figures map[string]float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	e := r.Breakdowns["engines"]
	if e.Unit != "engine" || len(e.Units) != 2 || e.Units[1].Figures["kv_cache_usage"] != 0.96 || e.Units[1].Figures["requests_deferred"] != 9 {
		t.Errorf("engines: %+v", e)
	}
}

// llamaServer serves a recorded llama-server: /metrics and /slots as it
// answered them (testdata/real/llama-server-slots), /slots answering
// slots[i] at the i-th request (the last again after), or 501 as a server
// started with --no-slots does when slots is nil.
func llamaServer(t *testing.T, slots ...string) *httptest.Server {
	t.Helper()
	dir := "../../testdata/real/llama-server-slots/"
	metrics, err := os.ReadFile(dir + "metrics-busy.prom")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "llama.cpp")
		switch r.URL.Path {
		case "/metrics":
			w.Write(metrics)
		case "/slots":
			if len(slots) == 0 {
				body, _ := os.ReadFile(dir + "disabled-501.json")
				w.WriteHeader(http.StatusNotImplemented)
				w.Write(body)
				return
			}
			i := min(int(n.Add(1))-1, len(slots)-1)
			body, _ := os.ReadFile(dir + slots[i])
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSlots reads a real llama-server's /slots beside its /metrics, and
// says when it is not read: each slot's figures as read off the answer by
// hand (README.md there).
func TestSlots(t *testing.T) {
	srv := llamaServer(t, "busy.json")
	out, errOut, code := runCLI(t, "", srv.URL, "--width", "120", "--breakdown")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"slots busy        ██████████ 2 of 2",
		"0  generating  916 (89.5%)  125  2  790  160",
		"1  generating  199 (19.4%)  1  5  194  506",
	} {
		if !strings.Contains(squeeze(out), squeeze(want)) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, tc := range []struct {
		args []string
		srv  *httptest.Server
		want string
	}{
		{[]string{"--no-slots"}, srv, "/slots not read (--no-slots)"},
		{nil, llamaServer(t), "/slots is disabled on this server (start it without --no-slots to see each slot): HTTP 501: This server does not support slots endpoint. Start it with `--slots`"},
	} {
		out, _, _ := runCLI(t, "", append(tc.args, tc.srv.URL, "--width", "300", "--columns", "1")...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: no %q in\n%s", tc.args, tc.want, out)
		}
	}
	// A saved scrape has no slots to read.
	out, _, _ = runCLI(t, "", "../../testdata/real/llama-server-slots/metrics-busy.prom")
	if strings.Contains(out, "Slots") {
		t.Errorf("slots from a file:\n%s", out)
	}
}

// TestSlotSpeedWatch: a watch reads /slots at every refresh; a slot running
// the same request at two readings has a speed, one that changed request
// (slot 0 here) has none.
func TestSlotSpeedWatch(t *testing.T) {
	srv := llamaServer(t, "busy.json", "busy-later.json")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	io, _, _ := iostreams.Test("", false, 0)
	out := &lockedBuffer{}
	io.Out = out
	done := make(chan struct{})
	go func() {
		run(ctx, []string{"--watch", "200ms", "--json", srv.URL}, io)
		close(done)
	}()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Count(out.String(), "\n") >= 2 {
			break
		}
	}
	cancel()
	<-done
	second := strings.Split(out.String(), "\n")[1]
	var r struct {
		Breakdowns map[string]struct {
			Units []struct {
				ID      string
				Figures map[string]float64
			}
		}
	}
	if err := json.Unmarshal([]byte(second), &r); err != nil {
		t.Fatal(err)
	}
	units := r.Breakdowns["slots"].Units
	if len(units) != 2 {
		t.Fatalf("slots: %+v", r.Breakdowns)
	}
	if _, ok := units[0].Figures["tokens_per_second"]; ok {
		t.Errorf("slot 0 ran two requests, and has a speed: %v", units[0].Figures)
	}
	if v, ok := units[1].Figures["tokens_per_second"]; !ok || !(v > 0) {
		t.Errorf("slot 1 ran one request from 194 to 576 tokens, and has no speed: %v", units[1].Figures)
	}
}

// squeeze collapses runs of spaces, so that a row is compared by its words.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
