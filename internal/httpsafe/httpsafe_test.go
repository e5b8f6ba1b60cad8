package httpsafe_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func get(t *testing.T, c *http.Client, u string) ([]byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Credentials go to the origin only: a redirect to another host is refused
// while there are any, before that host is contacted, with both hosts
// named; without any it is followed, and the other host gets nothing of
// the origin's.
func TestRedirects(t *testing.T) {
	other := &hostiletest.Recorder{Body: "other"}
	otherURL := hostiletest.OtherHost(t, other)
	var origin *httptest.Server
	seen := &hostiletest.Recorder{Body: "same"}
	origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			hostiletest.RedirectTo(otherURL).ServeHTTP(w, r)
		case "/here":
			http.Redirect(w, r, "/real", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			seen.ServeHTTP(w, r)
		}
	}))
	defer origin.Close()
	secret := http.Header{"Authorization": {"Bearer tok"}, "X-Scope-Orgid": {"team"}}
	withUser := mustURL(t, origin.URL)
	withUser.User = url.UserPassword("alice", "s3cret")

	for _, tc := range []struct {
		name    string
		o       httpsafe.Options
		path    string
		body    string
		errHas  []string
		tooMany bool
	}{
		{name: "headers, another host", o: httpsafe.Options{Origin: mustURL(t, origin.URL), Headers: secret}, path: "/away",
			errHas: []string{origin.URL + "/away redirected to another host, " + otherURL + "/away"}},
		{name: "basic auth, another host", o: httpsafe.Options{Origin: withUser}, path: "/away",
			errHas: []string{"redirected to another host, " + otherURL}},
		{name: "headers, same host", o: httpsafe.Options{Origin: mustURL(t, origin.URL), Headers: secret}, path: "/here", body: "same"},
		{name: "nothing secret, another host", o: httpsafe.Options{Origin: mustURL(t, origin.URL)}, path: "/away", body: "other"},
		{name: "a loop", o: httpsafe.Options{Origin: mustURL(t, origin.URL)}, path: "/loop", tooMany: true,
			errHas: []string{"redirected more than 5 times"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(other.Requests())
			tc.o.MaxBytes = 1 << 20
			body, err := get(t, httpsafe.NewClient(tc.o), origin.URL+tc.path)
			if tc.errHas == nil {
				if err != nil || string(body) != tc.body {
					t.Fatalf("got %q, %v; want %q", body, err, tc.body)
				}
				return
			}
			var re *httpsafe.RedirectError
			if !errors.As(err, &re) || re.TooMany != tc.tooMany {
				t.Fatalf("err = %v, want a RedirectError", err)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(re.Error(), s) {
					t.Errorf("message %q does not say %q", re.Error(), s)
				}
			}
			if strings.Contains(re.Error(), "s3cret") {
				t.Errorf("message %q shows the password", re.Error())
			}
			if n := len(other.Requests()) - before; n != 0 && !tc.tooMany {
				t.Errorf("the other host was sent %d requests", n)
			}
		})
	}
	// The same-host redirect carried the headers; the other host, reached
	// only without any, saw none.
	for _, h := range seen.Requests() {
		if h.Get("Authorization") != "Bearer tok" || h.Get("X-Scope-OrgID") != "team" {
			t.Errorf("the origin got %v", h)
		}
	}
	for _, h := range other.Requests() {
		if h.Get("Authorization") != "" || h.Get("X-Scope-OrgID") != "" {
			t.Errorf("the other host got %v", h)
		}
	}
}

// Headers and basic auth are added to requests for the origin, and only
// to them: a client asked to fetch from another host sends neither (a
// caller's mistake, or a link in an answer).
func TestHeadersStayWithTheOrigin(t *testing.T) {
	here := &hostiletest.Recorder{}
	there := &hostiletest.Recorder{}
	hereURL := hostiletest.OtherHost(t, here)
	thereSrv := httptest.NewServer(there)
	defer thereSrv.Close()
	origin := mustURL(t, hereURL)
	origin.User = url.UserPassword("alice", "s3cret")
	c := httpsafe.NewClient(httpsafe.Options{Origin: origin, MaxBytes: 1 << 10,
		Headers: http.Header{"X-Api-Key": {"k"}, "Host": {"metrics.example"}}})
	for _, u := range []string{hereURL + "/metrics", thereSrv.URL + "/metrics"} {
		if _, err := get(t, c, u); err != nil {
			t.Fatal(err)
		}
	}
	h := here.Requests()[0]
	if h.Get("X-Api-Key") != "k" || !strings.HasPrefix(h.Get("Authorization"), "Basic ") {
		t.Errorf("the origin got %v", h)
	}
	h = there.Requests()[0]
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("another host got %v", h)
	}
}

// Every answer is capped: announced, streamed, or gzip that decompresses
// past the cap; the error names the endpoint and the cap, and a body of
// exactly the cap passes.
func TestCaps(t *testing.T) {
	const limit = 64 << 10
	bomb := hostiletest.GzipBomb(64 << 20)
	exact := bytes.Repeat([]byte("x"), limit)
	var zexact bytes.Buffer
	zw := gzip.NewWriter(&zexact)
	zw.Write(exact)
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/announced":
			w.Header().Set("Content-Length", "100000000")
			w.Write(exact)
		case "/streamed":
			hostiletest.Stream("", "0123456789", 100<<20, 0).ServeHTTP(w, r)
		case "/bomb":
			hostiletest.Gzipped(bomb).ServeHTTP(w, r)
		case "/exact":
			w.Write(exact)
		case "/exact.gz":
			hostiletest.Gzipped(zexact.Bytes()).ServeHTTP(w, r)
		case "/corrupt.gz":
			hostiletest.Gzipped([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage")).ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path         string
		gzip         bool
		want         int
		decompressed bool
		corrupt      bool
	}{
		{path: "/announced"},
		{path: "/streamed"},
		{path: "/bomb", gzip: true, decompressed: true},
		{path: "/exact", want: limit},
		{path: "/exact.gz", gzip: true, want: limit},
		{path: "/exact.gz", want: zexact.Len()}, // without Gzip the body is the wire's
		{path: "/corrupt.gz", gzip: true, corrupt: true},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			c := httpsafe.NewClient(httpsafe.Options{Origin: mustURL(t, srv.URL), MaxBytes: limit, Gzip: tc.gzip})
			body, err := get(t, c, srv.URL+tc.path)
			var te *httpsafe.TooLargeError
			var ge *httpsafe.GzipError
			switch {
			case tc.corrupt:
				if !errors.As(err, &ge) || !strings.Contains(err.Error(), srv.URL+"/corrupt.gz holds gzip data that is corrupt") {
					t.Errorf("err = %v, want corrupt gzip", err)
				}
			case tc.want > 0:
				if err != nil || len(body) != tc.want {
					t.Errorf("%d bytes, %v; want %d", len(body), err, tc.want)
				}
			case !errors.As(err, &te) || te.Decompressed != tc.decompressed || !errors.Is(err, httpsafe.ErrTooLarge):
				t.Errorf("err = %v, want a TooLargeError (decompressed %v)", err, tc.decompressed)
			case !strings.Contains(err.Error(), "the answer from "+srv.URL+tc.path) || !strings.Contains(err.Error(), "64.0 KiB cap"):
				t.Errorf("message %q does not name the endpoint and the cap", err)
			}
		})
	}
}

// A 500 MB answer and a gzip bomb of 1 GiB are stopped at the cap, and the
// reader's memory stays near the cap.
func TestHostileAnswersBoundMemory(t *testing.T) {
	const limit = 1 << 20
	bomb := hostiletest.GzipBomb(1 << 30)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bomb" {
			hostiletest.Gzipped(bomb).ServeHTTP(w, r)
			return
		}
		hostiletest.Stream("", "0123456789abcdef", 500_000_000, 0).ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := httpsafe.NewClient(httpsafe.Options{Origin: mustURL(t, srv.URL), MaxBytes: limit, Gzip: true})
	for _, path := range []string{"/huge", "/bomb"} {
		var err error
		alloc := hostiletest.Allocated(func() { _, err = get(t, c, srv.URL+path) })
		if !errors.Is(err, httpsafe.ErrTooLarge) {
			t.Errorf("%s: err = %v", path, err)
		}
		if alloc > 8*limit {
			t.Errorf("%s: %d bytes allocated with a cap of %d", path, alloc, limit)
		}
		t.Logf("%s: %d kB allocated", path, alloc>>10)
	}
}

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://h:5000/metrics", "http://h:5000/other", true},
		{"http://h:5000/metrics", "http://H:5000/metrics", true},
		{"http://h/metrics", "http://h:80/metrics", true},
		{"http://h/metrics", "https://h/metrics", true},      // upgrade 80 → 443
		{"http://h:8443/m", "https://h:8443/m", true},        // upgrade, same port
		{"https://h/metrics", "http://h/metrics", false},     // downgrade
		{"http://h:5000/metrics", "http://h:5001/m", false},  // another service
		{"http://h:5000/metrics", "http://h2:5000/m", false}, // another host
		{"http://h.example.com/", "http://evil.h.example.com/", false},
		{"http://[::1]:5000/", "http://[::1]:5000/x", true},
		{"http://127.0.0.1:9090/", "http://127.0.0.2:9090/", false},
	} {
		if got := httpsafe.SameHost(mustURL(t, tc.a), mustURL(t, tc.b)); got != tc.want {
			t.Errorf("SameHost(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// Redact hides the password and the query, and keeps a hostile URL to one
// short line.
func TestRedact(t *testing.T) {
	u := mustURL(t, "http://bob:pw@host:1/p?token=x")
	if got := httpsafe.Redact(u); got != "http://bob:xxxxx@host:1/p" {
		t.Errorf("Redact = %q", got)
	}
	long := mustURL(t, "http://host/"+strings.Repeat("a", 5000))
	if got := httpsafe.Redact(long); len([]rune(got)) > 200 {
		t.Errorf("Redact kept %d runes", len([]rune(got)))
	}
}

func TestTransportHasNoTimersOfItsOwn(t *testing.T) {
	tr := httpsafe.Transport()
	if tr.TLSHandshakeTimeout != 0 || !tr.DisableCompression || tr.MaxResponseHeaderBytes != httpsafe.MaxHeaderBytes {
		t.Errorf("transport: handshake timeout %v, compression disabled %v, header bytes %d", tr.TLSHandshakeTimeout, tr.DisableCompression, tr.MaxResponseHeaderBytes)
	}
	if httpsafe.NewTransport() == tr {
		t.Error("NewTransport returned the shared transport")
	}
}

// ReadAll reads to the cap and no further, whatever the size hint says,
// and allocates at most twice the cap doing it (a power of two).
func TestReadAll(t *testing.T) {
	const max = 1 << 20
	body := bytes.Repeat([]byte("x"), max)
	for _, tc := range []struct {
		name string
		n    int
		hint int64
		over bool
	}{
		{"empty", 0, 0, false},
		{"exactly the cap", max, 0, false},
		{"exactly the cap, announced", max, max, false},
		{"a byte over", max + 1, 0, true},
		{"a byte over, announced short", max + 1, 10, true},
		{"small, announced long", 10, 1 << 40, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := io.MultiReader(bytes.NewReader(body), strings.NewReader("y"))
			var b []byte
			var err error
			alloc := hostiletest.Allocated(func() { b, err = httpsafe.ReadAll(io.LimitReader(r, int64(tc.n)), max, tc.hint) })
			switch {
			case tc.over && !errors.Is(err, httpsafe.ErrTooLarge):
				t.Errorf("err = %v, want ErrTooLarge", err)
			case !tc.over && (err != nil || len(b) != tc.n):
				t.Errorf("%d bytes, %v; want %d", len(b), err, tc.n)
			}
			if alloc > 2*max+64<<10 {
				t.Errorf("%d bytes allocated for a cap of %d", alloc, max)
			}
		})
	}
	// Another error returns what came before it.
	b, err := httpsafe.ReadAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(io.ErrUnexpectedEOF)), max, 0)
	if string(b) != "abc" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%q, %v", b, err)
	}
}

// ReadAllInto reads into the room of the buffer it is handed (the last
// answer's) without allocating where it fits, grows it where it does not,
// and keeps the cap whatever the buffer's size.
func TestReadAllInto(t *testing.T) {
	const max = 1 << 16
	for _, tc := range []struct {
		name      string
		room, n   int
		over      bool
		allocates bool
	}{
		{"fits the room", 4 << 10, 1000, false, false},
		{"fills the room", 4 << 10, 4<<10 - 1, false, false},
		{"outgrows the room", 1 << 10, 10 << 10, false, true},
		{"a room past the cap, a body over it", 4 * max, max + 1, true, false},
		{"no room", 0, 100, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.Repeat([]byte("#"), tc.room)
			body := bytes.Repeat([]byte("x"), tc.n)
			var b []byte
			var err error
			alloc := hostiletest.Allocated(func() { b, err = httpsafe.ReadAllInto(buf, bytes.NewReader(body), max, 0) })
			switch {
			case tc.over:
				if !errors.Is(err, httpsafe.ErrTooLarge) {
					t.Errorf("err = %v, want ErrTooLarge", err)
				}
				return
			case err != nil || !bytes.Equal(b, body):
				t.Fatalf("%d bytes (%v), want the body's %d", len(b), err, tc.n)
			}
			if grew := alloc >= 1<<10; grew != tc.allocates {
				t.Errorf("%d bytes allocated reading %d into a room of %d", alloc, tc.n, tc.room)
			}
		})
	}
}
