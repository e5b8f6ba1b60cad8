package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
)

// A store answering 307 to another host received the bearer token, the
// tenant and the basic-auth credentials, and the report was built from the
// other host's data. Now the redirect is refused before that host is
// contacted, and the error names both hosts.
func TestRedirectKeepsCredentials(t *testing.T) {
	other := &hostiletest.Recorder{Body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up"},"value":[1,"1"]}]}}`}
	otherURL := hostiletest.OtherHost(t, other)
	store := httptest.NewServer(hostiletest.RedirectTo(otherURL))
	defer store.Close()
	u, _ := url.Parse(store.URL)
	u.User = url.UserPassword("alice", "s3cret")
	c := newClient(t, Options{URL: u.String(), Headers: http.Header{"Authorization": {"Bearer tok"}, "X-Scope-Orgid": {"team"}}})
	for name, call := range map[string]func() error{
		"detect": func() error { _, err := c.Detect(context.Background()); return err },
		"query":  func() error { _, err := c.Query(context.Background(), "up", time.Now()); return err },
		"series": func() error {
			_, err := c.Series(context.Background(), []string{"up"}, time.Now(), time.Now())
			return err
		},
		"labels": func() error {
			_, err := c.LabelValues(context.Background(), "job", nil, time.Now(), time.Now())
			return err
		},
	} {
		err := call()
		var e *Error
		if !errors.As(err, &e) || e.Kind != Redirect {
			t.Errorf("%s: err = %v, want Redirect", name, err)
			continue
		}
		if msg := e.Error(); !strings.Contains(msg, store.URL+"/api/v1/") || !strings.Contains(msg, "redirected to another host, "+otherURL+"/api/v1/") ||
			strings.Contains(msg, "s3cret") {
			t.Errorf("%s: message %q does not name both hosts (or shows the password)", name, msg)
		}
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the other host was sent %d requests", n)
	}

	// Without credentials the store may send its clients elsewhere; the
	// other host gets nothing of the first one's.
	plain := newClient(t, Options{URL: store.URL})
	if _, err := plain.Query(context.Background(), "up", time.Now()); err != nil {
		t.Fatalf("credential-free redirect: %v", err)
	}
	if h := other.Requests()[0]; h.Get("Authorization") != "" || h.Get("X-Scope-OrgID") != "" {
		t.Errorf("the other host got %v", h)
	}
}

// What a hostile store answers, each against a 1 MiB cap: the reader says
// which cap and which endpoint, and allocates a few times the cap (before
// the cap: 1.04 GB of RSS for the 500 MB answer, 4.2 GB in 5 s for the
// bomb).
func TestHostileStore(t *testing.T) {
	const limit = 1 << 20
	bomb := hostiletest.GzipBomb(1 << 30)
	const seriesHead = `{"status":"success","data":[`
	const oneSeries = `{"__name__":"vllm:num_requests_running","namespace":"llm","pod":"vllm-0"},`
	for _, tc := range []struct {
		name    string
		handler http.Handler
		call    func(*Client) error
		kind    Kind
		say     []string
	}{
		{"a 500 MB buildinfo", hostiletest.Stream(`{"status":"success","data":{"version":"`, "9", 500_000_000, 0),
			func(c *Client) error { _, err := c.Detect(context.Background()); return err },
			TooLarge, []string{"/api/v1/status/buildinfo is larger than the 1.0 MiB cap"}},
		{"an endless /series, slowly", hostiletest.Stream(seriesHead, oneSeries, 1<<40, time.Millisecond),
			func(c *Client) error {
				_, err := c.Series(context.Background(), []string{"up"}, time.Now(), time.Now())
				return err
			},
			TooLarge, []string{"/api/v1/series is larger than the 1.0 MiB cap"}},
		{"a gzip bomb", hostiletest.Gzipped(bomb),
			func(c *Client) error { _, err := c.Query(context.Background(), "up", time.Now()); return err },
			TooLarge, []string{"/api/v1/query decompresses to more than the 1.0 MiB cap"}},
		{"3,000,000 nested arrays", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(hostiletest.Nested(3_000_000)) }),
			func(c *Client) error { _, err := c.Query(context.Background(), "up", time.Now()); return err },
			BadAnswer, []string{"nested deeper than 10000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			max := int64(limit)
			if tc.kind == BadAnswer {
				max = 8 << 20 // the nesting fits: the reader meets it
			}
			c := newClient(t, Options{URL: srv.URL, MaxBytes: max, Timeout: time.Minute})
			var err error
			alloc := hostiletest.Allocated(func() { err = tc.call(c) })
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.kind {
				t.Fatalf("err = %v, want kind %d", err, tc.kind)
			}
			for _, s := range tc.say {
				if !strings.Contains(e.Error(), s) {
					t.Errorf("message %q does not say %q", e.Error(), s)
				}
			}
			if alloc > uint64(8*max) {
				t.Errorf("%d bytes allocated against a cap of %d", alloc, max)
			}
			t.Logf("%s: %d kB allocated", tc.name, alloc>>10)
		})
	}
}

// A /series answer past MaxSeries is refused as it is read; the store is
// asked for one more than the bound, which stores that know limit= honour.
func TestMaxSeries(t *testing.T) {
	var r recorder
	srv := r.server(t, func(w http.ResponseWriter, req *http.Request) {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":[`)
		for i := range 1000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"__name__":"up","pod":"p%d"}`, i)
		}
		b.WriteString(`]}`)
		w.Write([]byte(b.String()))
	})
	c := newClient(t, Options{URL: srv.URL, MaxSeries: 10})
	seen := 0
	err := c.EachSeries(context.Background(), []string{"up"}, time.Now(), time.Now(), func(model.Metric) error {
		seen++
		return nil
	})
	var e *Error
	if !errors.As(err, &e) || e.Kind != TooManySeries || e.Limit != 10 || seen != 10 {
		t.Fatalf("err = %v after %d series, want TooManySeries after 10", err, seen)
	}
	if !strings.Contains(e.Error(), srv.URL+"/api/v1/series lists more than 10 series") {
		t.Errorf("message %q", e.Error())
	}
	if got := r.form[0].Get("limit"); got != "11" {
		t.Errorf("limit = %q, want 11", got)
	}
	if _, err := newClient(t, Options{URL: srv.URL}).Series(context.Background(), []string{"up"}, time.Now(), time.Now()); err != nil {
		t.Errorf("without a bound: %v", err)
	}
}

// A store's message and the user's URL, however long, are one short line.
func TestErrorsClipped(t *testing.T) {
	long := strings.Repeat("ä", 12000) + "\x1b[31m\nred"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, long)
	}))
	defer srv.Close()
	c := newClient(t, Options{URL: srv.URL + "/" + strings.Repeat("p", 12000)})
	_, err := c.Query(context.Background(), "up", time.Now())
	msg := err.Error()
	if n := utf8.RuneCountInString(msg); n > 600 || strings.ContainsAny(msg, "\x1b\n") || !utf8.ValidString(msg) {
		t.Errorf("message of %d runes: %q", n, msg)
	}
}
