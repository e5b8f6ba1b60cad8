package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/httpsafe"
)

// render prints an error as the CLI does.
func render(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("not an *Error: %v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] inferscope: error: %s\n", e.Kind, e.Msg)
	for _, h := range e.Hints {
		fmt.Fprintf(&b, "inferscope: hint: %s\n", h)
	}
	return b.String()
}

// dialErr builds the error Go's client returns when a connection fails.
func dialErr(u string, inner error) error {
	return &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp", Err: inner}}
}

func mustResolve(t *testing.T, s string) Target {
	t.Helper()
	tg, err := resolve(s, fakeStat())
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestErrorCatalogue renders every kind of failure a user can meet into
// testdata/errors.golden, so the wording can be reviewed in one place, and
// checks that each says what to try: every error but a cancellation (the
// user's own Ctrl-C) has a hint. The assertions on each kind live in the
// other tests; this one guards the text.
func TestErrorCatalogue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics", "/404":
			http.NotFound(w, r)
		case "/401":
			w.WriteHeader(401)
		case "/500":
			w.WriteHeader(500)
			fmt.Fprint(w, "Traceback: \x1b[31mKeyError\x1b[0m 'tabbyapi'\n  File \"main.py\"")
		case "/501":
			w.WriteHeader(501)
			fmt.Fprint(w, `{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `+"`--metrics`"+`"}}`)
		case "/503":
			w.WriteHeader(503)
			fmt.Fprint(w, `{"detail":"Model is still loading"}`)
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte{0x1f, 0x8b, 0x08, 0, 1, 2, 3})
		case "/br":
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte("x"))
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/truncated-chunked":
			w.Write([]byte("a 1\n"))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // closes the connection mid-body
		default:
			code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
			w.WriteHeader(code)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	bg := context.Background()
	o := testOptions()
	o.Timeout = DefaultTimeout
	withKey := o
	withKey.Headers = http.Header{"Authorization": {"Bearer secret"}}
	short := o
	short.Timeout = 100 * time.Millisecond
	small := o
	small.MaxBytes = 1000

	expired, cancel := context.WithDeadline(bg, time.Unix(0, 0)) // the --timeout deadline, passed
	defer cancel()
	canceled, cancel2 := context.WithCancel(bg)
	cancel2()
	fetch := func(target string, o Options) error {
		_, err := Fetch(bg, target, o)
		return err
	}
	fetchCtx := func(ctx context.Context, target string, o Options) error {
		_, err := Fetch(ctx, target, o)
		return err
	}
	withStdin := func(r io.Reader, o Options) Options {
		o.Stdin = r
		return o
	}
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("corrupt.prom.gz", []byte{0x1f, 0x8b, 0x08, 0, 1, 2, 3}, 0o600)
	os.WriteFile("big.prom", bytes.Repeat([]byte("a 1\n"), 300), 0o600)
	never, _ := io.Pipe() // a stdin nothing is ever written to
	locked := mustResolve(t, "locked scrape.prom")
	cases := []struct {
		name string
		err  error
	}{
		{"no target, nothing on 5000", requestError(bg, bg, mustResolve(t, ""), o,
			dialErr(DefaultURL, os.NewSyscallError("connect", syscall.ECONNREFUSED)), 0, phaseConnect)},
		{"host:port refused", requestError(bg, bg, mustResolve(t, "gpu-box:5000"), o,
			dialErr("http://gpu-box:5000/metrics", os.NewSyscallError("connect", syscall.ECONNREFUSED)), 0, phaseConnect)},
		{"bare word, unknown host", requestError(bg, bg, mustResolve(t, "scrape"), o,
			dialErr("http://scrape/metrics", &net.DNSError{Err: "no such host", Name: "scrape", IsNotFound: true}), 0, phaseConnect)},
		{"url with query refused", requestError(bg, bg, mustResolve(t, "http://gpu-box:5000/metrics?a=1&b=2"), o,
			dialErr("http://gpu-box:5000/metrics?a=1&b=2", os.NewSyscallError("connect", syscall.ECONNREFUSED)), 0, phaseConnect)},
		{"timeout connecting", timeoutError(bg, expired, mustResolve(t, "gpu-box:5000"), o, context.DeadlineExceeded, DefaultTimeout, phaseConnect)},
		{"timeout in the TLS handshake", timeoutError(bg, expired, mustResolve(t, "https://gpu-box:5000"), o, context.DeadlineExceeded, DefaultTimeout, phaseTLS)},
		{"timeout waiting for the answer", timeoutError(bg, expired, mustResolve(t, "gpu-box:5000"), o, context.DeadlineExceeded, DefaultTimeout, phaseWait)},
		{"timeout in the headers", timeoutError(bg, expired, mustResolve(t, "gpu-box:5000"), o, context.DeadlineExceeded, DefaultTimeout, phaseHeaders)},
		{"timeout in body", timeoutError(bg, expired, mustResolve(t, "gpu-box:5000"), o, context.DeadlineExceeded, DefaultTimeout, phaseBody)},
		{"https to a port that never speaks TLS", fetch("https://"+silentServer(t), short)},
		{"https to a plain http port", fetch(strings.Replace(srv.URL, "http:", "https:", 1), o)},
		{"certificate of an unknown authority", fetch(tlsSrv.URL, o)},
		{"closed without answering", fetch("http://"+rawServer(t, nil), o)},
		{"not HTTP at all", fetch("http://"+rawServer(t, []byte("SSH-2.0-OpenSSH_9.6\r\n")), o)},
		{"malformed header", fetch("http://"+rawServer(t, []byte("HTTP/1.1 200 OK\r\nContent-Type text/plain\r\n\r\na 1\n")), o)},
		{"headers cut short", fetch("http://"+rawServer(t, []byte("HTTP/1.1 200 OK\r\nContent-Ty")), o)},
		{"body cut short", fetch("http://"+rawServer(t, []byte("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\na 1\n")), o)},
		{"chunked body cut short", fetch(srv.URL+"/truncated-chunked", o)},
		{"malformed chunked body", fetch("http://"+rawServer(t, []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\na 1\n")), o)},
		{"redirect away with credentials", requestError(bg, bg, mustResolve(t, "gpu-box:5000"), withKey,
			&url.Error{Op: "Get", URL: "http://gpu-box:5000/metrics", Err: &httpsafe.RedirectError{From: &url.URL{Scheme: "http", Host: "gpu-box:5000", Path: "/metrics"}, To: &url.URL{Scheme: "http", Host: "elsewhere:80", Path: "/metrics"}}}, 0, phaseWait)},
		{"redirect loop", fetch(srv.URL+"/loop", o)},
		{"404 at /metrics", fetch(srv.URL+"/metrics", o)},
		{"404 at another path", fetch(srv.URL+"/404", o)},
		{"401 without a key", fetch(srv.URL+"/401", o)},
		{"401 with a key", fetch(srv.URL+"/401", withKey)},
		{"400", fetch(srv.URL+"/400", o)},
		{"405", fetch(srv.URL+"/405", o)},
		{"407", fetch(srv.URL+"/407", o)},
		{"418", fetch(srv.URL+"/418", o)},
		{"429", fetch(srv.URL+"/429", o)},
		{"500 with a hostile page", fetch(srv.URL+"/500", o)},
		{"501 from llama.cpp without --metrics", fetch(srv.URL+"/501", o)},
		{"502", fetch(srv.URL+"/502", o)},
		{"503 while loading", fetch(srv.URL+"/503", o)},
		{"504", fetch(srv.URL+"/504", o)},
		{"599", fetch(srv.URL+"/599", o)},
		{"302 without a location", fetch(srv.URL+"/302", o)},
		{"too large", tooLarge("the answer from http://gpu-box:5000/metrics", DefaultMaxBytes, 0, false)},
		{"too large, size known", tooLarge("the answer from http://gpu-box:5000/metrics", DefaultMaxBytes, 70_000_000, false)},
		{"gzip bomb", tooLarge("the answer from http://gpu-box:5000/metrics", DefaultMaxBytes, 0, true)},
		{"corrupt gzip answer", fetch(srv.URL+"/gzip", o)},
		{"unasked-for encoding", fetch(srv.URL+"/br", o)},
		{"missing .prom file", fetch("before.prom", o)},
		{"missing path-like file", fetch("runs/before", o)},
		{"directory", fetch(".", o)},
		{"permission denied", openError(locked, sourceOf(locked), &fs.PathError{Op: "open", Path: locked.Path, Err: syscall.EACCES})},
		{"file too large", fetch("big.prom", small)},
		{"corrupt gzip file", fetch("corrupt.prom.gz", o)},
		{"no stdin", fetch("-", o)},
		{"stdin too large", fetch("-", withStdin(strings.NewReader(strings.Repeat("a 1\n", 300)), small))},
		{"stdin fails", fetch("-", withStdin(iotestErrReader{}, o))},
		{"stdin canceled", fetchCtx(canceled, "-", withStdin(never, o))},
		{"stdin past the deadline", readAsyncDeadline(t, withStdin(never, o))},
		{"bad port", fetch("gpu-box:50OO", o)},
		{"unsupported scheme", fetch("ftp://gpu-box/metrics", o)},
	}
	port := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	var b strings.Builder
	for _, c := range cases {
		var e *Error
		if !errors.As(c.err, &e) {
			t.Errorf("%s: %v is not an *Error", c.name, c.err)
		} else {
			checkPrintable(t, e)
			if len(e.Hints) == 0 && e.Kind != Canceled {
				t.Errorf("%s: no hint for %q", c.name, e.Msg)
			}
		}
		// Test servers' ports vary; tabbyAPI's default, 5000, stays.
		text := port.ReplaceAllStringFunc(render(c.err), func(s string) string {
			if s == "127.0.0.1:5000" {
				return s
			}
			return "127.0.0.1:PORT"
		})
		fmt.Fprintf(&b, "== %s\n%s\n", c.name, text)
	}
	// The golden is read from the package's testdata, whatever the
	// t.Chdir above.
	golden.Check(t, "errors.golden", b.String())
}

// readAsyncDeadline is a stdin read that the caller's deadline ends.
func readAsyncDeadline(t *testing.T, o Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	o.Now = time.Now
	_, err := Fetch(ctx, "-", o)
	var e *Error
	if errors.As(err, &e) && e.Kind == Timeout {
		// The wait varies from run to run; the golden keeps a fixed one.
		e.Msg = regexp.MustCompile(`after \S+ \S+ reading`).ReplaceAllString(e.Msg, "after 20 ms reading")
	}
	return err
}
