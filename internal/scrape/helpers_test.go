package scrape

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"
)

// fixedNow is the clock of every test that does not measure time.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func testOptions() Options {
	return Options{Timeout: 5 * time.Second, Now: func() time.Time { return fixedNow }}
}

// wantError asserts err is an *Error of kind k whose message holds every
// part, and that it is fit for a terminal.
func wantError(t *testing.T, err error, k Kind, parts ...string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error of kind %v", err, err, k)
	}
	if e.Kind != k {
		t.Fatalf("kind = %v (%q), want %v", e.Kind, e.Msg, k)
	}
	for _, p := range parts {
		if !strings.Contains(e.Msg, p) {
			t.Errorf("message %q lacks %q", e.Msg, p)
		}
	}
	checkPrintable(t, e)
	return e
}

// checkPrintable asserts the conventions every message and hint follows:
// one line, no control or escape characters, lower-case start, no trailing
// period.
func checkPrintable(t *testing.T, e *Error) {
	t.Helper()
	for _, s := range append([]string{e.Msg}, e.Hints...) {
		if s == "" {
			t.Errorf("empty message or hint in %+v", e)
			continue
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidiControl(r) {
				t.Errorf("%q holds control character %U", s, r)
			}
		}
		if first := []rune(s)[0]; unicode.IsUpper(first) {
			t.Errorf("%q starts with a capital", s)
		}
		if strings.HasSuffix(s, ".") {
			t.Errorf("%q ends with a period", s)
		}
	}
}

func hasHint(e *Error, part string) bool {
	for _, h := range e.Hints {
		if strings.Contains(h, part) {
			return true
		}
	}
	return false
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rawServer accepts connections and answers each with reply, whatever was
// asked: a server that does not speak HTTP.
func rawServer(t *testing.T, reply []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				c.Read(buf)
				if reply != nil {
					c.Write(reply)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// silentServer accepts connections and never sends a byte: a port that
// never completes a TLS handshake, or never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c) // held open, never written to
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

const sampleText = `# HELP tabbyapi:prompt_tokens_total Prompt tokens processed.
# TYPE tabbyapi:prompt_tokens_total counter
tabbyapi:prompt_tokens_total 1234
# TYPE tabbyapi:requests_running gauge
tabbyapi:requests_running 2
`

const sampleOpenMetrics = `# HELP tabbyapi:prompt_tokens Prompt tokens processed.
# TYPE tabbyapi:prompt_tokens counter
tabbyapi:prompt_tokens_total 1234
tabbyapi:prompt_tokens_created 1.7e+09
# TYPE tabbyapi:requests_running gauge
tabbyapi:requests_running 2
# EOF
`

// isBidiControl is the test's own list of the bidi controls that must never
// reach the terminal.
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// newTextServer serves sampleText at every path.
func newTextServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(sampleText))
	}))
	t.Cleanup(srv.Close)
	return srv
}
