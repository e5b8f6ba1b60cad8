package promapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/storetest"
)

// exposition is what the test target serves: one counter, one gauge.
const exposition = `# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{model_name="m",engine="0"} 42
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3
`

// filler is 200 more series, so that a query over all of them for a few
// scrapes passes the sample limit the test sets.
var filler = func() string {
	var b strings.Builder
	b.WriteString("# TYPE filler gauge\n")
	for i := range 200 {
		fmt.Fprintf(&b, "filler{i=\"%d\"} %d\n", i, i)
	}
	return b.String()
}()

func target(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(exposition + filler))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitSeries waits until the store answers q with at least one series.
func waitSeries(t *testing.T, s *storetest.Store, c *Client, q string) model.Vector {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s.Flush()
		v, err := c.Query(context.Background(), q, time.Now())
		if err == nil {
			if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
				return vec
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: no series within 20s", q)
	return nil
}

// One Prometheus for every check (each new one waits 5 s for its first
// scrape), with a sample limit that ordinary queries stay well under.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	addr := target(t)
	s := storetest.Prometheus(t, storetest.Config{Targets: []storetest.Target{{Addr: addr, Labels: map[string]string{"pod": "p0"}}},
		Flags: []string{"--query.max-samples=500"}})
	t.Run("api", func(t *testing.T) { checkPrometheusAPI(t, s, addr) })
	t.Run("sample limit", func(t *testing.T) { checkSampleLimit(t, s) })
	t.Run("path prefix", func(t *testing.T) { checkPathPrefix(t, s) })
}

func checkPrometheusAPI(t *testing.T, s *storetest.Store, addr string) {
	c := newClient(t, Options{URL: s.URL})
	b, err := c.Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind != Prometheus || !strings.HasPrefix(b.Version, "2.") || !b.Metadata || !b.Extrapolates {
		t.Errorf("backend = %+v, want Prometheus 2.x with metadata", b)
	}
	vec := waitSeries(t, s, c, `vllm:request_success_total`)
	if vec[0].Value != 42 || vec[0].Metric["pod"] != "p0" {
		t.Errorf("sample = %v", vec[0])
	}
	md := waitMetadata(t, c)
	if got := md["vllm:request_success_total"]; len(got) != 1 || got[0].Type != "counter" || !strings.Contains(got[0].Help, "successfully") {
		t.Errorf("metadata = %+v", got)
	}
	tm, err := c.TargetsMetadata(context.Background(), "vllm:num_requests_running")
	if err != nil || len(tm) != 1 || tm[0].Type != "gauge" || tm[0].Target["instance"] != model.LabelValue(addr) {
		t.Errorf("targets metadata = %+v, %v", tm, err)
	}
	series, err := c.Series(context.Background(), []string{`{__name__=~"vllm:.+"}`}, time.Now().Add(-time.Minute), time.Now())
	if err != nil || len(series) != 2 {
		t.Errorf("series = %v, %v", series, err)
	}
	checkMaxSeries(t, s.URL)
	names, err := c.LabelValues(context.Background(), "__name__", nil, time.Now().Add(-time.Minute), time.Now())
	if err != nil || !contains(names, "up") {
		t.Errorf("names = %v, %v", names, err)
	}
	// A query the store refuses: its own message comes back.
	_, err = c.Query(context.Background(), `rate(vllm:request_success_total)`, time.Now())
	var e *Error
	if !errors.As(err, &e) || e.Kind != Query || e.Status != 400 || !strings.Contains(e.Msg, "parse error") {
		t.Errorf("bad query: %#v", err)
	}
	if c.Requests() < 6 {
		t.Errorf("Requests() = %d, want every request counted", c.Requests())
	}
}

func waitMetadata(t *testing.T, c *Client) map[string][]Metadata {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		md, err := c.Metadata(context.Background())
		if err == nil && len(md["vllm:request_success_total"]) > 0 {
			return md
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no metadata within 20s")
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A query over Prometheus's sample limit is TooMuchData.
func checkSampleLimit(t *testing.T, s *storetest.Store) {
	c := newClient(t, Options{URL: s.URL})
	waitSeries(t, s, c, `filler`)
	time.Sleep(3 * time.Second) // a few samples per series: 200 × 3 > 500
	_, err := c.Query(context.Background(), `filler[1h]`, time.Now())
	var e *Error
	if !errors.As(err, &e) || e.Kind != TooMuchData {
		t.Fatalf("err = %#v, want TooMuchData", err)
	}
	if !strings.Contains(e.Error(), "too many samples") {
		t.Errorf("message %q does not carry the store's words", e.Error())
	}
}

func TestVictoriaMetrics(t *testing.T) {
	t.Parallel()
	addr := target(t)
	s := storetest.VictoriaMetrics(t, storetest.Config{Targets: []storetest.Target{{Addr: addr, Labels: map[string]string{"pod": "p0"}}}})
	c := newClient(t, Options{URL: s.URL})
	b, err := c.Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind != VictoriaMetrics || b.Metadata || b.Extrapolates {
		t.Errorf("backend = %+v, want VictoriaMetrics without metadata or extrapolation", b)
	}
	// Without latency_offset=0s the freshest 30 s would be hidden, and a
	// series scraped for a few seconds would not be there at all.
	vec := waitSeries(t, s, c, `vllm:request_success_total`)
	if vec[0].Value != 42 {
		t.Errorf("sample = %v", vec[0])
	}
	if _, err := c.Metadata(context.Background()); !errors.Is(err, ErrNoMetadata) {
		t.Errorf("metadata: %v, want ErrNoMetadata", err)
	}
	checkMaxSeries(t, s.URL)
}

// A real store sent limit= and more series than the bound: TooManySeries;
// within it, every series.
func checkMaxSeries(t *testing.T, url string) {
	t.Helper()
	match := []string{`{__name__=~"vllm:.+"}`}
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Minute)
	_, err := newClient(t, Options{URL: url, MaxSeries: 1}).Series(context.Background(), match, from, to)
	var e *Error
	if !errors.As(err, &e) || e.Kind != TooManySeries {
		t.Errorf("2 series past a bound of 1: %v", err)
	}
	if sets, err := newClient(t, Options{URL: url, MaxSeries: 2}).Series(context.Background(), match, from, to); err != nil || len(sets) != 2 {
		t.Errorf("2 series within a bound of 2: %v, %v", sets, err)
	}
}

// A store that is down is Unreachable, with the cause in a few words.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newClient(t, Options{URL: "http://" + addr})
	_, err = c.Detect(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Kind != Unreachable || e.Msg != "connection refused" {
		t.Fatalf("err = %#v", err)
	}
	if got := e.Error(); got != "cannot reach the store at http://"+addr+": connection refused" {
		t.Errorf("message %q", got)
	}
}

// recorder is a fake store that records what it was sent and answers
// from a table.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	form []url.Values
}

func (r *recorder) server(t *testing.T, handle func(w http.ResponseWriter, req *http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		req.ParseForm()
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.form = append(r.form, req.Form)
		r.mu.Unlock()
		handle(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const emptyVector = `{"status":"success","data":{"resultType":"vector","result":[]}}`

// Headers, basic auth from the URL, a path prefix, the User-Agent and
// Thanos' dedup parameters reach the store on every request; the password
// never appears in what the client prints.
func TestRequestShape(t *testing.T) {
	var r recorder
	srv := r.server(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/prometheus/api/v1/status/buildinfo":
			w.Write([]byte(`{"status":"success","data":{"version":"0.36.1"}}`))
		default:
			w.Write([]byte(emptyVector))
		}
	})
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("alice", "s3cret")
	u.Path = "/prometheus/"
	c := newClient(t, Options{URL: u.String(), Headers: http.Header{"X-Scope-Orgid": {"team"}}, UserAgent: "inferscope/test",
		ReplicaLabels: []string{"replica", "prometheus_replica"}})
	if strings.Contains(c.URL(), "s3cret") || strings.Contains(c.URL(), "alice") {
		t.Errorf("URL() = %q shows the credentials", c.URL())
	}
	b, err := c.Detect(context.Background())
	if err != nil || b.Kind != Thanos || b.Version != "0.36.1" {
		t.Fatalf("backend = %+v, %v", b, err)
	}
	if _, err := c.Query(context.Background(), `up`, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.reqs[len(r.reqs)-1]
	form := r.form[len(r.form)-1]
	if last.URL.Path != "/prometheus/api/v1/query" {
		t.Errorf("path %q, want the prefix kept", last.URL.Path)
	}
	if user, pw, ok := last.BasicAuth(); !ok || user != "alice" || pw != "s3cret" {
		t.Errorf("basic auth = %q %q %v", user, pw, ok)
	}
	if last.Header.Get("X-Scope-OrgID") != "team" || last.Header.Get("User-Agent") != "inferscope/test" {
		t.Errorf("headers = %v", last.Header)
	}
	if form.Get("query") != "up" || form.Get("time") != "1700000000" || form.Get("dedup") != "true" ||
		strings.Join(form["replicaLabels[]"], ",") != "replica,prometheus_replica" {
		t.Errorf("form = %v", form)
	}
}

// What each kind of refusal becomes.
func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		kind   Kind
		msg    string
	}{
		{"mimir tenant", 401, "no org id\n", NoTenant, "no org id"},
		{"unauthorized", 401, "Unauthorized", Unauthorized, "Unauthorized"},
		{"proxy 502", 502, "<html><body>Bad Gateway</body></html>", Status, "an HTML page"},
		{"prometheus 503 JSON", 503, `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`, Status, "TSDB not ready"},
		{"vm sample limit", 422, `{"status":"error","errorType":"422","error":"cannot select more than -search.maxSamplesPerQuery=1000 samples"}`, TooMuchData, "maxSamplesPerQuery"},
		{"vm series limit", 400, `{"status":"error","errorType":"422","error":"the number of matching timeseries exceeds 30000; either narrow down the search or increase -search.maxUniqueTimeseries"}`, TooMuchData, "maxUniqueTimeseries"},
		{"bad data", 400, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`, Query, "parse error"},
		{"html 200", 200, "<html>login</html>", BadAnswer, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			srv := r.server(t, func(w http.ResponseWriter, req *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			c := newClient(t, Options{URL: srv.URL})
			_, err := c.Query(context.Background(), "up", time.Now())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v", err)
			}
			if e.Kind != tc.kind || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("kind %d msg %q, want kind %d with %q (%s)", e.Kind, e.Msg, tc.kind, tc.msg, e)
			}
			if strings.ContainsAny(e.Error(), "\n\r") {
				t.Errorf("message spans lines: %q", e.Error())
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	var r recorder
	release := make(chan struct{})
	srv := r.server(t, func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	defer close(release)
	c := newClient(t, Options{URL: srv.URL, Timeout: 100 * time.Millisecond})
	_, err := c.Query(context.Background(), "up", time.Now())
	var e *Error
	if !errors.As(err, &e) || e.Kind != Timeout {
		t.Fatalf("err = %#v, want Timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Query(ctx, "up", time.Now())
	if !errors.As(err, &e) || e.Kind != Canceled {
		t.Fatalf("err = %#v, want Canceled", err)
	}
}

func TestParseBase(t *testing.T) {
	for _, tc := range []struct{ in, want, bad string }{
		{"prom:9090", "http://prom:9090", ""},
		{"http://prom:9090/", "http://prom:9090", ""},
		{"https://mimir.example/prometheus/api/v1", "https://mimir.example/prometheus", ""},
		{"http://prom:9090/api/v1/query", "http://prom:9090", ""},
		{"", "", "no store URL"},
		{"ftp://x", "", "scheme"},
		{"http://", "", "no host"},
		{"http://p:9090/?x=1", "", "query"},
	} {
		u, err := parseBase(tc.in)
		switch {
		case tc.bad != "":
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.bad)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case u.String() != tc.want:
			t.Errorf("%q: %q, want %q", tc.in, u, tc.want)
		}
	}
	if _, err := parseBase("http://bob:pw@%zz"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL error shows the password: %v", err)
	}
}

func TestParseBuildinfo(t *testing.T) {
	for _, tc := range []struct {
		body  string
		kind  BackendKind
		named bool
	}{
		{`{"status":"success","data":{"version":"2.42.0+ds","revision":"x"}}`, Prometheus, true},
		{`{"status":"success","data":{"version":"0.36.1"}}`, Thanos, true},
		{`{"status":"success","data":{"application":"Grafana Mimir","version":"2.14.0"}}`, Mimir, true},
		{`{"status":"success","data":{}}`, Unknown, false},
		{`{"status":"error"}`, Unknown, false},
		{`<html>`, Unknown, false},
	} {
		b, named := parseBuildinfo([]byte(tc.body))
		if b.Kind != tc.kind || named != tc.named {
			t.Errorf("%s: %+v %v, want %s %v", tc.body, b, named, tc.kind, tc.named)
		}
	}
}

func FuzzParseBuildinfo(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"version":"2.42.0"}}`))
	f.Add([]byte(`{"status":"success","data":{"application":"Grafana Mimir","version":"2.14.0"}}`))
	f.Add([]byte(`{"status":"success","data":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, _ := parseBuildinfo(body)
		if utf8.RuneCountInString(b.Version) > maxMsg {
			t.Errorf("version of %d bytes kept", len(b.Version))
		}
		_ = b.String()
	})
}

// The reverse proxy a path prefix usually means, in front of a real
// Prometheus: the client finds everything under the prefix.
func checkPathPrefix(t *testing.T, s *storetest.Store) {
	up, _ := url.Parse(s.URL)
	proxy := httputil.NewSingleHostReverseProxy(up)
	srv := httptest.NewServer(http.StripPrefix("/prom", proxy))
	t.Cleanup(srv.Close)
	c := newClient(t, Options{URL: srv.URL + "/prom"})
	b, err := c.Detect(context.Background())
	if err != nil || b.Kind != Prometheus {
		t.Fatalf("backend %+v, %v", b, err)
	}
	waitSeries(t, s, c, `vllm:num_requests_running`)
}
