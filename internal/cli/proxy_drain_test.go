package cli

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/proxy/proxytest"
)

// startProxy runs `inferscope proxy` as a process in front of upstream,
// with its metrics on a listener of their own, and waits until it serves.
func startProxy(t *testing.T, upstream string, extra ...string) (p *proc, clients, metrics string) {
	t.Helper()
	clients, metrics = freeAddr(t), freeAddr(t)
	host := strings.TrimPrefix(upstream, "http://") // host:port, as a user may write it
	p = start(t, nil, append([]string{"proxy", "--upstream", host, "--listen", clients, "--metrics", metrics}, extra...)...)
	p.waitFor(t, "the serving line", func() bool { return strings.Contains(p.err.String(), "serving until SIGTERM") })
	return p, "http://" + clients, "http://" + metrics
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait returns how the process ended: its exit code, or -1 and the
// signal that killed it.
func (p *proc) wait(t *testing.T, within time.Duration) (code int, killedBy syscall.Signal) {
	t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return -1, ws.Signal()
		}
		return ws.ExitStatus(), 0
	case <-time.After(within):
		t.Fatalf("the process did not end within %v; stderr:\n%s", within, p.err)
	}
	return 0, 0
}

// TestProxyDrains: SIGTERM with a stream in flight turns /readyz unready
// at once, lets the stream finish to its [DONE], and exits 0; Ctrl-C does
// the same, and exits 0 too (a service stopped as asked: docs/limits.md,
// docs/proxy.md and proxy --help say so); a stream that outlasts
// --drain-timeout is cut and the process still exits; a second signal
// ends it at once.
func TestProxyDrains(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the command as a process")
	}
	for _, c := range []struct {
		name string
		sig  os.Signal
		code int
	}{{"SIGTERM", syscall.SIGTERM, ExitOK}, {"Ctrl-C", os.Interrupt, ExitOK}} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(proxytest.Ticks(30, 40*time.Millisecond))
			defer up.Close()
			p, clients, metrics := startProxy(t, up.URL)
			if proxytest.Status(metrics+"/readyz") != 200 || proxytest.Status(metrics+"/healthz") != 200 {
				t.Fatalf("not ready: stderr %s", p.err)
			}
			resp, br := proxytest.OpenStream(t, clients)
			defer resp.Body.Close()
			p.signal(t, c.sig)
			p.waitFor(t, "/readyz unready", func() bool { return proxytest.Status(metrics+"/readyz") == http.StatusServiceUnavailable })
			rest, err := io.ReadAll(br)
			if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
				t.Errorf("the stream in flight did not finish: %v; stderr %s", err, p.err)
			}
			if code, sig := p.wait(t, 30*time.Second); code != c.code {
				t.Errorf("exit %d (signal %v), want %d; stderr %s", code, sig, c.code, p.err)
			}
			if !strings.Contains(p.err.String(), "draining: 1 request in flight") {
				t.Errorf("stderr does not say it drains: %s", p.err)
			}
		})
	}
	t.Run("drain timeout", func(t *testing.T) {
		up := httptest.NewServer(proxytest.Ticks(-1, 20*time.Millisecond))
		defer up.Close()
		p, clients, _ := startProxy(t, up.URL, "--drain-timeout", "300ms")
		resp, br := proxytest.OpenStream(t, clients)
		defer resp.Body.Close()
		p.signal(t, syscall.SIGTERM)
		if code, sig := p.wait(t, 30*time.Second); code != ExitOK {
			t.Errorf("exit %d (signal %v), want 0; stderr %s", code, sig, p.err)
		}
		if _, err := io.ReadAll(br); err == nil {
			t.Error("the stream ended cleanly, though the drain timed out")
		}
		if !strings.Contains(p.err.String(), "stopped with 1 request still in flight") {
			t.Errorf("stderr does not say what it cut: %s", p.err)
		}
	})
	for _, second := range []struct {
		name string
		sig  os.Signal
		code int // or killed by sig
	}{{"a second SIGTERM", syscall.SIGTERM, ExitOK}, {"Ctrl-C after SIGTERM", os.Interrupt, ExitInterrupted}} {
		t.Run(second.name, func(t *testing.T) {
			up := httptest.NewServer(proxytest.Ticks(-1, 20*time.Millisecond))
			defer up.Close()
			p, clients, _ := startProxy(t, up.URL)
			resp, _ := proxytest.OpenStream(t, clients)
			defer resp.Body.Close()
			p.signal(t, syscall.SIGTERM)
			p.waitFor(t, "the drain", func() bool { return strings.Contains(p.err.String(), "draining") })
			p.signal(t, second.sig)
			if code, sig := p.wait(t, 5*time.Second); code != second.code && sig != second.sig {
				t.Errorf("exit %d (signal %v) after %s during a drain, want %d; stderr %s", code, sig, second.name, second.code, p.err)
			}
		})
	}
}

// TestProxyHostPort: --upstream host:port is a server, as every other
// target; credentials in the URL are not printed.
func TestProxyHostPort(t *testing.T) {
	var auth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Write([]byte("upstream " + r.URL.Path))
	}))
	defer up.Close()
	addr := freeAddr(t)
	host := strings.TrimPrefix(up.URL, "http://")
	stop, errb := runProxyCLI(t, "--upstream", "u:pw@"+host, "--listen", addr)
	resp, err := http.Get("http://" + addr + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	if string(b) != "upstream /api/tags" || auth != "Basic dTpwdw==" {
		t.Errorf("got %q with Authorization %q through --upstream u:pw@%s", b, auth, host)
	}
	if s := errb.String(); strings.Contains(s, "pw") || !strings.Contains(s, "-> http://"+host) {
		t.Errorf("stderr %q: want the upstream as http://%s, without its password", s, host)
	}
}
