package exporter

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/storetest"
)

// scrapeLog serves a handler and keeps the first scrape: the headers the
// scraper sent and the response as it went out.
type scrapeLog struct {
	h    http.Handler
	mu   sync.Mutex
	req  http.Header
	resp *httptest.ResponseRecorder
}

func (l *scrapeLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, r)
	l.mu.Lock()
	if l.req == nil {
		l.req, l.resp = r.Header.Clone(), rec
	}
	l.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// TestRealStoresScrape: a real Prometheus (Debian's 2.42) and
// VictoriaMetrics (Debian's 1.79.5) scrape the handler as they do by default. Each is
// answered in the format it asks for first, gzip-compressed, with what the
// general path answers the same headers, and reads back the figures the
// bench state holds.
func TestRealStoresScrape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		start    func(testing.TB, storetest.Config) *storetest.Store
		accept   string // what it sends
		wantType string
	}{
		{"prometheus", storetest.Prometheus, acceptOf("Prometheus 2.42"), "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"},
		{"victoriametrics", storetest.VictoriaMetrics, acceptOf("VictoriaMetrics"), "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := busyMetrics(t)
			log := &scrapeLog{h: m.Handler()}
			srv := httptest.NewServer(log)
			defer srv.Close()
			s := c.start(t, storetest.Config{Targets: []storetest.Target{{Addr: srv.Listener.Addr().String()}}})
			for q, want := range map[string]string{
				`up`:                            `"1"`,
				`tabbyapi:requests_total`:       `"1000"`,
				`tabbyapi:kv_cache_usage_ratio`: `"0.25"`,
				`tabbyapi:e2e_request_latency_seconds_count`:  `"1000"`,
				`tabbyapi:spec_decode_num_draft_tokens_total`: `"420000"`,
			} {
				s.WaitFor(t, q, 30*time.Second, func(b []byte) bool { return bytes.Contains(b, []byte(want)) })
			}

			log.mu.Lock()
			req, resp := log.req, log.resp
			log.mu.Unlock()
			accept := req.Get("Accept")
			t.Logf("%s sent Accept %q, Accept-Encoding %q; got %s, %s, %d bytes", c.name, accept, req.Values("Accept-Encoding"),
				resp.Header().Get("Content-Type"), resp.Header().Get("Content-Encoding"), resp.Body.Len())
			if accept != c.accept {
				t.Errorf("Accept %q, want %q", accept, c.accept)
			}
			if got := resp.Header().Get("Content-Type"); got != c.wantType {
				t.Errorf("Content-Type %q, want %q", got, c.wantType)
			}
			if got := resp.Header().Get("Content-Encoding"); got != "gzip" {
				t.Errorf("Content-Encoding %q, want gzip", got)
			}
			// What went out, once decompressed, is what the general path
			// answers the same headers (nothing moves between scrapes).
			got := served{status: resp.Code, header: resp.Header(), body: gunzip(t, resp.Body.Bytes())}
			want := serve(t, m.general, "/metrics", accept, req.Values("Accept-Encoding")...)
			if d := sameAnswer(got, want); d != "" {
				t.Error(d)
			}
			if !strings.Contains(string(got.body), "tabbyapi:requests_total 1000") {
				t.Errorf("the body lacks the request count:\n%s", got.body)
			}
		})
	}
}
