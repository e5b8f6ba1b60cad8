package fleet

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/proxy"
	"github.com/inferscope/inferscope/internal/storetest"
)

// provenance: inferscope proxy (internal/proxy) in front of a stub
// OpenAI server, scraped every second by Debian's Prometheus 2.42 (job
// proxy); recorded by go test ./internal/fleet -run TestBornMeansBorn
// -record into testdata/recorded/proxy-born.json.gz.
//
// Born means born: a proxy scraped since before the window publishes its
// series at its first request, inside the window. Its target was up all
// along (its up series before the window), so it is not new: state up,
// read from the store's sums, its counters counted from zero at the
// window's start and its rates over the whole window (before, new, and
// over the time since its first series: several times higher).
func TestBornMeansBorn(t *testing.T) {
	api, from, to, sent := proxyBornAPI(t)
	push, whole := both(t, api, Options{From: from, To: to, Range: true})
	for _, f := range []*Fleet{push, whole} {
		if len(f.Instances) != 1 {
			t.Fatalf("%d instances", len(f.Instances))
		}
		in := f.Instances[0]
		w := to.Sub(from).Seconds()
		if in.State != Up || in.Figures.Seconds > w || in.Figures.Seconds < w-2 {
			t.Errorf("%s: %s over %.1f s, want up over the window's %.0f s (less its last scrape)", f.Read, in.State, in.Figures.Seconds, w)
		}
		if v := in.Figures.value("requests"); v == nil || !approx(*v*in.Figures.Seconds, float64(sent)) {
			t.Errorf("%s: %v requests/s over %v s, want the %d sent", f.Read, deref(v), in.Figures.Seconds, sent)
		}
		for _, n := range f.Notes {
			if n.ID == NoteNew {
				t.Errorf("%s: %s", f.Read, n.Text)
			}
		}
	}
	if p := pushed(push); len(p) != 1 {
		t.Errorf("read whole in a pushdown: %s", push.Instances[0].Why)
	}
}

// proxyBornAPI is a replay of the proxy's store, the window read, and
// how many requests were sent in it; under -record, a live proxy scraped
// by a real Prometheus.
func proxyBornAPI(t *testing.T) (promapi.API, time.Time, time.Time, int) {
	t.Helper()
	if !*record {
		p := newReplayer(t, recordedPath("proxy-born"))
		return p, time.UnixMilli(p.rec.From).UTC(), time.UnixMilli(p.rec.At).UTC(), p.rec.Sent
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"stub","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)
	}))
	t.Cleanup(upstream.Close)
	u, _ := url.Parse(upstream.URL)
	p, err := proxy.New(proxy.Options{Upstream: u})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.MetricsHandler())
	mux.Handle("/", p)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s := storetest.Prometheus(t, storetest.Config{ScrapeInterval: time.Second,
		Targets: []storetest.Target{{Addr: strings.TrimPrefix(srv.URL, "http://"), Job: "proxy"}}})
	s.WaitFor(t, `count(up{job="proxy"})`, 20*time.Second, func(b []byte) bool { return strings.Contains(string(b), `"1"`) })
	time.Sleep(3 * time.Second) // scraped, no series of its own yet
	from := time.Now().UTC().Truncate(time.Second)
	time.Sleep(3 * time.Second)
	const sent = 20
	for range sent {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"stub","messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	to := time.Now().UTC().Truncate(time.Second)
	r := recordingOf(t, "proxy-born", client(t, s), to)
	r.rec.From, r.rec.Sent = from.UnixMilli(), sent
	return r, from, to, sent
}
