package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/testwait"
)

// TestMain lets a test run the command line as its own process: with
// INFERSCOPE_TEST_MAIN=1 the test binary is inferscope, its arguments the
// command's. It installs the SIGINT handling Main does, then touches the
// file INFERSCOPE_TEST_READY names, so that a test signals it only once it
// can be caught.
func TestMain(m *testing.M) {
	if os.Getenv("INFERSCOPE_TEST_MAIN") == "1" {
		ctx, stop := interruptible()
		if p := os.Getenv("INFERSCOPE_TEST_READY"); p != "" {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				os.Exit(99)
			}
		}
		code := run(ctx, os.Args[1:], iostreams.System())
		stop()
		os.Exit(code)
	}
	flag.Parse()
	testwait.Parallel(6) // the slow tests mostly wait on servers they started
	os.Exit(m.Run())
}

// lockedBuffer collects a stream a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is inferscope running as a child process.
type proc struct {
	cmd      *exec.Cmd
	out, err *lockedBuffer
	done     chan error
}

// start runs inferscope with args and stdin, and waits until it can take
// SIGINT.
func start(t *testing.T, stdin io.Reader, args ...string) *proc {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "INFERSCOPE_TEST_MAIN=1", "INFERSCOPE_TEST_READY="+ready, "TERM=dumb")
	p := &proc{cmd: cmd, out: &lockedBuffer{}, err: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, p.out, p.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	p.waitFor(t, "ready", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return p
}

// waitFor polls cond until it holds; a process that ends or takes a minute
// fails the test.
func (p *proc) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("the process ended (%v) before %s; stderr:\n%s", err, what, p.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute; stderr:\n%s", what, p.err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// interrupt sends SIGINT and returns the exit code. The process must end
// promptly; a minute is only the bound past which it hangs.
func (p *proc) interrupt(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		t.Fatalf("SIGINT did not end the process; stderr:\n%s", p.err)
	}
	return -1
}

// Ctrl-C ends every mode with exit 130 and nothing half-written on stdout.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command as a process")
	}
	body := readFile(t, fixtures+"idle.prom")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	// A stdin that never ends: the write end stays open.
	silent := func(t *testing.T) io.Reader {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("stdin", func(t *testing.T) {
		p := start(t, silent(t), "-")
		if code := p.interrupt(t); code != ExitInterrupted || p.out.String() != "" {
			t.Errorf("exit %d, stdout %q, stderr %s", code, p.out, p.err)
		}
	})
	t.Run("since from stdin", func(t *testing.T) {
		p := start(t, silent(t), "--since", fixtures+"idle.prom", "-")
		if code := p.interrupt(t); code != ExitInterrupted || p.out.String() != "" {
			t.Errorf("exit %d, stdout %q, stderr %s", code, p.out, p.err)
		}
	})
	t.Run("a read that cannot be canceled", func(t *testing.T) {
		// Opening a FIFO blocks until a writer comes: nothing can cancel
		// it, and the command must not wait for it.
		p := start(t, nil, fifo)
		if code := p.interrupt(t); code != ExitInterrupted || p.out.String() != "" {
			t.Errorf("exit %d, stdout %q, stderr %s", code, p.out, p.err)
		}
	})
	t.Run("demo once", func(t *testing.T) {
		p := start(t, nil, "demo", "--once", "--sim-time", "168h", "--json")
		if code := p.interrupt(t); code != ExitInterrupted || p.out.String() != "" {
			t.Errorf("exit %d, stdout %q, stderr %s", code, p.out, p.err)
		}
	})
	t.Run("demo no-ui", func(t *testing.T) {
		p := start(t, nil, "demo", "--no-ui")
		p.waitFor(t, "the serving line", func() bool { return strings.Contains(p.err.String(), "serving until Ctrl-C") })
		if code := p.interrupt(t); code != ExitInterrupted {
			t.Errorf("exit %d, stderr %s", code, p.err)
		}
	})
	t.Run("demo no-ui SIGTERM", func(t *testing.T) {
		// SIGTERM keeps its default action: the process ends by the
		// signal, which a shell reports as 143, as every help says.
		p := start(t, nil, "demo", "--no-ui")
		p.waitFor(t, "the serving line", func() bool { return strings.Contains(p.err.String(), "serving until Ctrl-C") })
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			t.Fatal("SIGTERM did not end the process")
		}
		ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM || 128+int(ws.Signal()) != ExitTerminated {
			t.Errorf("state %v, want ended by SIGTERM (%d)", p.cmd.ProcessState, ExitTerminated)
		}
	})
	t.Run("watch text", func(t *testing.T) {
		p := start(t, nil, "--watch", "0.2s", srv.URL)
		p.waitFor(t, "two frames", func() bool { return strings.Count(p.out.String(), "\n\n=== ") >= 1 })
		code := p.interrupt(t)
		out := p.out.String()
		if code != ExitInterrupted || !strings.HasPrefix(out, "=== ") || !strings.HasSuffix(out, "\n\n") {
			t.Errorf("exit %d, stdout ends %q, stderr %s", code, out[max(0, len(out)-200):], p.err)
		}
		for i, f := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n=== ") {
			if !strings.Contains(f, "Rates over staggered windows") {
				t.Errorf("frame %d is not whole:\n%s", i+1, f)
			}
		}
	})
	t.Run("watch json", func(t *testing.T) {
		p := start(t, nil, "--watch", "0.2s", "--json", srv.URL)
		p.waitFor(t, "two lines", func() bool { return strings.Count(p.out.String(), "\n") >= 2 })
		code := p.interrupt(t)
		out := p.out.String()
		if code != ExitInterrupted || !strings.HasSuffix(out, "\n") {
			t.Errorf("exit %d, stderr %s", code, p.err)
		}
		for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("line %d is not whole JSON: %.100s…", i+1, l)
			}
		}
	})
	t.Run("watch a read that cannot be canceled", func(t *testing.T) {
		p := start(t, nil, "--watch", "1s", fifo)
		if code := p.interrupt(t); code != ExitInterrupted || p.out.String() != "" {
			t.Errorf("exit %d, stdout %q, stderr %s", code, p.out, p.err)
		}
	})
}

// In process: a canceled context ends a one-shot run blocked on stdin with
// 130 and no output.
func TestInterruptedOneShot(t *testing.T) {
	io, out, errb := iostreams.Test("", false, 0)
	io.In = blockingReader{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	if code := run(ctx, []string{"-"}, io); code != ExitInterrupted || out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

// A watch whose reads outlast --timeout shows the failure in its frames and
// goes on; the read left behind does not hold the next refresh. Without
// --timeout a watch's reads are given its interval (issue 21: a 2s watch
// kept the one-shot 30s and printed nothing for 30 s).
func TestWatchTimeout(t *testing.T) {
	for _, args := range [][]string{
		{"--watch", "0.2s", "--timeout", "0.2s"},
		{"--watch", "0.2s"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) { watchTimeout(t, args) })
	}
}

func watchTimeout(t *testing.T, args []string) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	io, _, _ := iostreams.Test("", false, 0)
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	io.Out, io.Err = out, errb
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, append(slices.Clone(args), fifo), io) }()
	var frames string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("the watch ended (exit %d): %s", code, errb)
		default:
		}
		if frames = out.String(); strings.Count(frames, "=== ") >= 2 {
			break
		}
	}
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(frames, "(timed out after 20") || !strings.Contains(frames, "ms reading ") || !strings.Contains(frames, ") — retrying") {
		t.Errorf("frames:\n%s", frames)
	}
}
