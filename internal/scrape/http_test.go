package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/exposition"
)

func TestFetchText(t *testing.T) {
	var got http.Header
	var gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotHost = r.Header.Clone(), r.Host
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, sampleText)
	}))
	defer srv.Close()

	o := testOptions()
	o.Headers = http.Header{"X-Api-Key": {"k1"}, "Host": {"tabby.internal"}}
	o.UserAgent = ""
	target := strings.TrimPrefix(srv.URL, "http://") // host:port, path filled in
	r, err := Fetch(context.Background(), target, o)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != sampleText {
		t.Errorf("body = %q", r.Body)
	}
	if r.Source != srv.URL+"/metrics" || r.ContentType != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("source %q content type %q", r.Source, r.ContentType)
	}
	if !r.ScrapedAt.Equal(fixedNow) || r.TimeSource != TimeScrape || r.FromFile {
		t.Errorf("scraped at %v (%s) fromFile=%v", r.ScrapedAt, r.TimeSource, r.FromFile)
	}
	if r.HeaderStart != 0 || r.StartToken != "" {
		t.Errorf("start header %v %q without a header", r.HeaderStart, r.StartToken)
	}
	// What the server saw.
	if a := got.Get("Accept"); !strings.HasPrefix(a, "text/plain;version=0.0.4") || strings.Contains(a, "openmetrics") {
		t.Errorf("Accept = %q: must ask for text 0.0.4 first and never name OpenMetrics", a)
	}
	if got.Get("Accept-Encoding") != "gzip" {
		t.Errorf("Accept-Encoding = %q", got.Get("Accept-Encoding"))
	}
	if ua := got.Get("User-Agent"); !strings.HasPrefix(ua, "inferscope/") || len(ua) <= len("inferscope/") {
		t.Errorf("User-Agent = %q", ua)
	}
	if got.Get("X-Api-Key") != "k1" || gotHost != "tabby.internal" {
		t.Errorf("X-Api-Key %q host %q", got.Get("X-Api-Key"), gotHost)
	}
}

func TestFetchEncodings(t *testing.T) {
	plain := []byte(sampleText)
	gz := gzipBytes(t, plain)
	tests := []struct {
		name     string
		encoding string
		body     []byte
		want     []byte
		kind     Kind
		msg      string
	}{
		{name: "identity", encoding: "", body: plain, want: plain},
		{name: "identity named", encoding: "identity", body: plain, want: plain},
		{name: "gzip", encoding: "gzip", body: gz, want: plain},
		{name: "x-gzip", encoding: "x-gzip", body: gz, want: plain},
		{name: "gzip unannounced", encoding: "", body: gz, want: plain},
		{name: "gzip corrupt", encoding: "gzip", body: append(gz[:len(gz)/2:len(gz)/2], 0, 1, 2), kind: Read, msg: "gzip data that is corrupt"},
		{name: "gzip header only", encoding: "gzip", body: []byte{0x1f, 0x8b}, kind: Read, msg: "corrupt"},
		{name: "brotli", encoding: "br", body: plain, kind: Read, msg: `Content-Encoding "br", which inferscope did not ask for`},
		{name: "double gzip", encoding: "gzip, gzip", body: gz, kind: Read, msg: "did not ask for"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.encoding != "" {
					w.Header().Set("Content-Encoding", tc.encoding)
				}
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				w.Write(tc.body)
			}))
			defer srv.Close()
			r, err := Fetch(context.Background(), srv.URL, testOptions())
			if tc.kind != 0 {
				wantError(t, err, tc.kind, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Body, tc.want) {
				t.Errorf("body = %q, want %q", r.Body, tc.want)
			}
		})
	}
}

// TestFetchOpenMetrics: an OpenMetrics answer is passed on with its content
// type, and the exposition package reads it.
func TestFetchOpenMetrics(t *testing.T) {
	const ct = "application/openmetrics-text; version=1.0.0; charset=utf-8"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, sampleOpenMetrics)
	}))
	defer srv.Close()
	r, err := Fetch(context.Background(), srv.URL+"/metrics", testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.ContentType != ct {
		t.Fatalf("content type %q", r.ContentType)
	}
	f, err := exposition.DetectFormat(r.ContentType, r.Body)
	if err != nil || f != exposition.OpenMetrics {
		t.Fatalf("format %v, %v", f, err)
	}
	fams, err := exposition.Parse(r.Body, f)
	if err != nil || len(fams) != 2 {
		t.Fatalf("parse: %d families, %v", len(fams), err)
	}
}

func TestFetchStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		switch code {
		case 500:
			// A hostile page: escape sequences and a fake second line.
			w.WriteHeader(500)
			fmt.Fprint(w, "boom \x1b]0;pwned\x07\x1b[2Jcleared\r\ninferscope: hint: run rm -rf\x00 "+strings.Repeat("x", 500))
		case 501:
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(501)
			fmt.Fprint(w, `{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `+"`--metrics`"+`","type":"not_supported_error"}}`)
		case 502:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			fmt.Fprint(w, "<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>")
		case 503:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprint(w, `{"detail":"model is loading"}`)
		case 302:
			w.WriteHeader(302) // no Location
		default:
			w.WriteHeader(code)
		}
	}))
	defer srv.Close()

	tests := []struct {
		path   string
		hdr    http.Header
		kind   Kind
		msg    []string
		hints  []string
		nohint string
	}{
		{path: "/404", kind: NotFound, msg: []string{"answered 404 not found"},
			hints: []string{"network.enable_metrics is true in config.yml", "--metrics", "--enable-metrics", "the path is /404"}},
		{path: "/401", kind: Unauthorized, msg: []string{"answered 401 unauthorized"},
			hints: []string{"--header 'Authorization: Bearer <key>'", "INFERSCOPE_BEARER_TOKEN"}, nohint: "were refused"},
		{path: "/403", hdr: http.Header{"Authorization": {"Bearer x"}}, kind: Unauthorized, msg: []string{"answered 403 forbidden"},
			hints: []string{"credentials sent were refused", "INFERSCOPE_BEARER_TOKEN"}},
		{path: "/500", kind: HTTPStatus, msg: []string{"answered 500 internal server error: boom cleared inferscope: hint: run rm -rf xxx", "…"},
			hints: []string{"its log should say why"}},
		{path: "/501", kind: HTTPStatus, msg: []string{"answered 501 not implemented: This server does not support metrics endpoint. Start it with `--metrics`"},
			hints: []string{"without --metrics"}},
		{path: "/502", kind: HTTPStatus, msg: []string{"answered 502 bad gateway: 502 Bad Gateway"}},
		{path: "/503", kind: HTTPStatus, msg: []string{"answered 503 service unavailable: model is loading"}, hints: []string{"loading its model"}},
		{path: "/418", kind: HTTPStatus, msg: []string{"answered 418 i'm a teapot"}},
		{path: "/302", kind: HTTPStatus, msg: []string{"answered 302 found"}, hints: []string{"redirect without a usable Location"}},
		{path: "/599", kind: HTTPStatus, msg: []string{"answered 599"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			o := testOptions()
			o.Headers = tc.hdr
			_, err := Fetch(context.Background(), srv.URL+tc.path, o)
			e := wantError(t, err, tc.kind, tc.msg...)
			code, _ := strconv.Atoi(tc.path[1:])
			if e.Status != code {
				t.Errorf("status %d, want %d", e.Status, code)
			}
			for _, h := range tc.hints {
				if !hasHint(e, h) {
					t.Errorf("no hint with %q in %q", h, e.Hints)
				}
			}
			if tc.nohint != "" && hasHint(e, tc.nohint) {
				t.Errorf("hint %q should not appear: %q", tc.nohint, e.Hints)
			}
			if n := len([]rune(e.Msg)); n > 400 {
				t.Errorf("message is %d runes long", n)
			}
		})
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slowbody" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "# TYPE a counter\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	o := testOptions()
	o.Now = nil // real clock: Waited must reflect the wait
	o.Timeout = 50 * time.Millisecond
	_, err := Fetch(context.Background(), srv.URL+"/metrics", o)
	e := wantError(t, err, Timeout, "timed out after 50ms waiting for "+srv.URL+"/metrics")
	if !hasHint(e, "--timeout 100ms") {
		t.Errorf("hints %q lack --timeout", e.Hints)
	}
	if e.Waited < o.Timeout {
		t.Errorf("waited %v, less than the timeout", e.Waited)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not unwrap to DeadlineExceeded", err)
	}

	_, err = Fetch(context.Background(), srv.URL+"/slowbody", o)
	wantError(t, err, Timeout, "timed out after 50ms reading the answer from")

	// The caller's own, shorter deadline is reported as it happened.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	o.Timeout = time.Minute
	_, err = Fetch(ctx, srv.URL+"/metrics", o)
	e = wantError(t, err, Timeout, "timed out after")
	if strings.Contains(e.Msg, "after 1m ") {
		t.Errorf("message %q names the option's timeout, not the deadline that fired", e.Msg)
	}
}

func TestFetchCanceled(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := Fetch(ctx, srv.URL, testOptions())
	wantError(t, err, Canceled, "canceled")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not unwrap to context.Canceled", err)
	}

	// Already canceled: no request at all.
	_, err = Fetch(ctx, srv.URL, testOptions())
	wantError(t, err, Canceled)
}

func TestFetchUnreachable(t *testing.T) {
	addr := closedPort(t)
	_, err := Fetch(context.Background(), addr, testOptions())
	e := wantError(t, err, Unreachable, "cannot reach http://"+addr+"/metrics: connection refused")
	if !hasHint(e, "curl -s http://"+addr+"/metrics | head") {
		t.Errorf("hints %q lack the curl command", e.Hints)
	}
}

func TestFetchGarbage(t *testing.T) {
	// Not HTTP at all, with escape sequences in the reply.
	addr := rawServer(t, []byte("\x1b[31mHELLO\x1b]0;title\x07\x00\x01garbage\r\n\r\n"))
	_, err := Fetch(context.Background(), "http://"+addr+"/metrics", testOptions())
	e := wantError(t, err, BadResponse, "the server at http://"+addr+"/metrics did not answer in HTTP: malformed HTTP response")
	if !hasHint(e, "https://"+addr+"/metrics") {
		t.Errorf("hints %q should suggest https", e.Hints)
	}

	// A malformed header: the server was reached.
	addr = rawServer(t, []byte("HTTP/1.1 200 OK\r\nContent-Type text/plain\r\n\r\na 1\n"))
	_, err = Fetch(context.Background(), addr, testOptions())
	wantError(t, err, BadResponse, "sent a malformed HTTP header")

	// Nothing at all: closed before a byte.
	addr = rawServer(t, nil)
	_, err = Fetch(context.Background(), addr, testOptions())
	e = wantError(t, err, Unreachable, "closed the connection without answering")
	if strings.Contains(e.Msg, "cannot reach") {
		t.Errorf("message %q", e.Msg)
	}

	// HTTP headers, then a body cut short.
	addr = rawServer(t, []byte("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: text/plain\r\n\r\nshort"))
	_, err = Fetch(context.Background(), addr, testOptions())
	e = wantError(t, err, Read, "the answer from http://"+addr+"/metrics was cut short: 5 B of the 1000 B announced arrived")
	if strings.Contains(e.Msg, "cannot reach") || !hasHint(e, "try again") {
		t.Errorf("message %q hints %q", e.Msg, e.Hints)
	}

	// A 200 whose body is binary garbage is delivered as is: judging it is
	// the parser's job, which must then fail cleanly.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("\x00\x01\x02\xff\xfe garbage {{{"))
	}))
	defer srv.Close()
	r, err := Fetch(context.Background(), srv.URL, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exposition.Parse(r.Body, exposition.Text); err == nil {
		t.Error("garbage parsed as an exposition")
	}
}

func TestFetchTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("a_total 1\n"), 1000) // 10 000 bytes
	bomb := gzipBytes(t, make([]byte, 8<<20))        // 8 MiB of zeros, ~8 KiB on the wire
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write(big)
		case "/chunked":
			for i := 0; i < len(big); i += 1000 {
				w.Write(big[i : i+1000])
				w.(http.Flusher).Flush()
			}
		case "/bomb":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		case "/exact":
			w.Write(big[:1000])
		}
	}))
	defer srv.Close()

	o := testOptions()
	o.MaxBytes = 1000
	for _, path := range []string{"/length", "/chunked"} {
		_, err := Fetch(context.Background(), srv.URL+path, o)
		e := wantError(t, err, TooLarge, "the answer from "+srv.URL+path+" is larger than the 1000 B cap")
		if !hasHint(e, "--max-bytes") {
			t.Errorf("hints %q lack --max-bytes", e.Hints)
		}
	}
	r, err := Fetch(context.Background(), srv.URL+"/exact", o)
	if err != nil || len(r.Body) != 1000 {
		t.Fatalf("a body of exactly MaxBytes: %v", err)
	}

	o.MaxBytes = 64 << 10
	if len(bomb) > int(o.MaxBytes) {
		t.Fatalf("the bomb is %d bytes compressed; the test needs it under the cap", len(bomb))
	}
	_, err = Fetch(context.Background(), srv.URL+"/bomb", o)
	wantError(t, err, TooLarge, "decompresses to more than the 64.0 KiB cap")
}

func TestFetchRedirect(t *testing.T) {
	var otherHits atomic.Int32
	var otherKey atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherKey.Store(r.Header.Get("X-Api-Key") + "|" + r.Header.Get("Authorization"))
		fmt.Fprint(w, "other 1\n")
	}))
	defer other.Close()

	var sameKey atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/real", http.StatusMovedPermanently)
		case "/real":
			sameKey.Store(r.Header.Get("X-Api-Key"))
			fmt.Fprint(w, "same 1\n")
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	otherURL := other.URL + "/metrics"
	withKey := func() Options {
		o := testOptions()
		o.Headers = http.Header{"X-Api-Key": {"secret-key"}}
		return o
	}

	// Same host: followed, header kept.
	r, err := Fetch(context.Background(), srv.URL+"/here", withKey())
	if err != nil || string(r.Body) != "same 1\n" || sameKey.Load() != "secret-key" {
		t.Fatalf("same-host redirect: %v body %q key %v", err, r.Body, sameKey.Load())
	}

	// Another host with credentials: refused before any request reaches it.
	_, err = Fetch(context.Background(), srv.URL+"/away", withKey())
	e := wantError(t, err, Redirect, "redirected to another host, "+otherURL, "not following it with your credentials")
	if !hasHint(e, "scrape "+otherURL+" directly") {
		t.Errorf("hints %q", e.Hints)
	}
	if otherHits.Load() != 0 {
		t.Fatalf("the other host was contacted %d times", otherHits.Load())
	}

	// Credentials in the URL count too.
	u, _ := url.Parse(srv.URL + "/away")
	u.User = url.UserPassword("u", "pw")
	_, err = Fetch(context.Background(), u.String(), testOptions())
	e = wantError(t, err, Redirect, "redirected to another host")
	if strings.Contains(e.Msg, "pw") {
		t.Errorf("message %q shows the password", e.Msg)
	}
	if otherHits.Load() != 0 {
		t.Fatalf("the other host was contacted %d times", otherHits.Load())
	}

	// Another host, nothing secret to leak: followed.
	r, err = Fetch(context.Background(), srv.URL+"/away", testOptions())
	if err != nil || string(r.Body) != "other 1\n" || otherKey.Load() != "|" {
		t.Fatalf("credential-free redirect: %v body %q headers %v", err, r.Body, otherKey.Load())
	}

	_, err = Fetch(context.Background(), srv.URL+"/loop", testOptions())
	wantError(t, err, Redirect, "redirected more than 5 times")
}

func TestFetchStartHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Process-Start-Time-Unix", r.URL.Query().Get("v"))
		fmt.Fprint(w, "a 1\n")
	}))
	defer srv.Close()
	tests := []struct {
		v         string
		want      float64
		wantToken string
		mayRefuse bool
	}{
		{v: "1772366400", want: 1772366400, wantToken: "1772366400"},       // tabbyAPI: 2026-03-01T12:00Z, seconds
		{v: "1772366400000", want: 1772366400, wantToken: "1772366400000"}, // milliseconds
		{v: "432000123456", want: 0, wantToken: "432000123456"},            // llama.cpp: 5 days of monotonic µs
		{v: "abc\u202e123", want: 0, wantToken: "abc123"},                  // garbage, bidi override removed
		{v: strings.Repeat("9", 100), want: 0, wantToken: strings.Repeat("9", 63) + "…"},
		{v: "abc\x1b[31m", want: 0, wantToken: "abc", mayRefuse: true}, // Go's client may refuse it outright
	}
	for _, tc := range tests {
		t.Run(tc.v, func(t *testing.T) {
			r, err := Fetch(context.Background(), srv.URL+"/metrics?v="+url.QueryEscape(tc.v), testOptions())
			if err != nil {
				// Go's client refuses some control bytes in header values
				// outright; that is as safe as cleaning them.
				if !tc.mayRefuse {
					t.Fatal(err)
				}
				wantError(t, err, BadResponse, "malformed HTTP header")
				return
			}
			if r.HeaderStart != tc.want || r.StartToken != tc.wantToken {
				t.Errorf("HeaderStart %v token %q, want %v %q", r.HeaderStart, r.StartToken, tc.want, tc.wantToken)
			}
		})
	}
}

func TestParseStartHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // 1772366400
	tests := []struct {
		raw  string
		want float64
	}{
		{"1772366400", 1772366400},
		{" 1772366400 ", 1772366400},
		{"1772366400.25", 1772366400.25},
		{"1772366400000", 1772366400},       // ms
		{"1772366400000000", 1772366400},    // µs
		{"1772366400000000000", 1772366400}, // ns
		{"946684800", 946684800},            // 2000-01-01 exactly
		{"946684799", 0},                    // just before
		{"1772452800", 1772452800},          // now + 1 day exactly
		{"1772452801", 0},                   // beyond now + 1 day, and no smaller unit fits
		{"432000123456", 0},                 // llama.cpp µs since boot, 5 days up
		{"12345", 0},                        // µs since boot, just booted
		{"0", 0},                            //
		{"-1772366400", 0},                  // sign
		{"1e9", 0},                          // exponent forms are not sent by anyone
		{"NaN", 0}, {"Inf", 0}, {"", 0}, {".", 0}, {"1.2.3", 0},
		{"0x69a4", 0},
		{"99999999999999999999999999999999999", 0}, // too long
	}
	for _, tc := range tests {
		if got := ParseStartHeader(tc.raw, now); got != tc.want {
			t.Errorf("ParseStartHeader(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestFetchTLS(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, sampleText)
	}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are the point here
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, sampleText)
	}))
	defer plainSrv.Close()
	host := strings.TrimPrefix(tlsSrv.URL, "https://")

	// The test server's certificate is not trusted by the default client.
	_, err := Fetch(context.Background(), tlsSrv.URL, testOptions())
	wantError(t, err, Unreachable, "TLS certificate is signed by an unknown authority")

	// A client that trusts it (Options.Client) reads the body.
	o := testOptions()
	o.Client = tlsSrv.Client()
	r, err := Fetch(context.Background(), tlsSrv.URL, o)
	if err != nil || string(r.Body) != sampleText {
		t.Fatalf("trusted TLS fetch: %v", err)
	}

	// Plain HTTP to the TLS port: Go's server answers 400 and says why.
	_, err = Fetch(context.Background(), host, testOptions())
	e := wantError(t, err, HTTPStatus, "answered 400 bad request: Client sent an HTTP request to an HTTPS server")
	if !hasHint(e, "try https://"+host+"/metrics") {
		t.Errorf("hints %q", e.Hints)
	}

	// HTTPS to a plain port.
	plainHost := strings.TrimPrefix(plainSrv.URL, "http://")
	_, err = Fetch(context.Background(), "https://"+plainHost, testOptions())
	e = wantError(t, err, Unreachable, "the server did not answer TLS")
	if !hasHint(e, "try http://"+plainHost+"/metrics") {
		t.Errorf("hints %q", e.Hints)
	}
}
