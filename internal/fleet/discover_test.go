package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/storetest"
)

// vllmSeries are the names discovery lists for one pod (buckets left
// out), 45 as a current vLLM serving one model on one engine.
var vllmSeries = func() []string {
	var out []string
	for i := range 45 {
		out = append(out, fmt.Sprintf("vllm:family_%02d", i))
	}
	return out
}()

// nsOf spreads pods over three namespaces, half in the first, three
// tenths in the second.
func nsOf(pod int) int { return []int{0, 0, 0, 0, 0, 1, 1, 1, 2, 2}[pod%10] }

// bigStore is a store whose discovery lists pods × perPod series (45
// families, for as many models as it takes), the pods spread over
// namespaces (nsOf), and which knows nothing else. With honourLimit it stops at
// the limit= it is sent, as Prometheus 2.50 and VictoriaMetrics do; else
// it sends every series, as older stores do.
func bigStore(t *testing.T, pods, perPod int, honourLimit bool) (*httptest.Server, *int) {
	t.Helper()
	limitSent := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		switch r.URL.Path {
		case "/api/v1/series":
			limit, _ := strconv.Atoi(r.Form.Get("limit"))
			*limitSent = limit
			if !honourLimit {
				limit = 0
			}
			// Written without allocating: what the test measures is the
			// reader's memory.
			buf := append(make([]byte, 0, 64<<10), `{"status":"success","data":[`...)
			n := 0
			for pod := 0; pod < pods && (limit == 0 || n < limit); pod++ {
				for k := 0; k < perPod && (limit == 0 || n < limit); k++ {
					if n > 0 {
						buf = append(buf, ',')
					}
					buf = append(append(append(buf, `{"__name__":"`...), vllmSeries[k%45]...), `","job":"vllm","instance":"10.0.`...)
					buf = append(strconv.AppendInt(append(strconv.AppendInt(buf, int64(pod/256), 10), '.'), int64(pod%256), 10), `:8000","namespace":"ns-`...)
					buf = append(strconv.AppendInt(buf, int64(nsOf(pod)), 10), `","pod":"vllm-`...)
					buf = append(strconv.AppendInt(buf, int64(pod), 10), `","model_name":"m`...)
					buf = append(strconv.AppendInt(buf, int64(k/45), 10), `","engine":"0"}`...)
					n++
					if len(buf) > 60<<10 {
						if _, err := w.Write(buf); err != nil {
							return
						}
						buf = buf[:0]
					}
				}
			}
			w.Write(append(buf, `]}`...))
		case "/api/v1/query":
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		default:
			w.Write([]byte(`{"status":"success","data":{}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, limitSent
}

func bigClient(t *testing.T, srv *httptest.Server, maxInstances int, maxBytes int64) *promapi.Client {
	t.Helper()
	c, err := promapi.New(promapi.Options{URL: srv.URL, MaxSeries: MaxSeries(maxInstances), MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A fleet past --max-instances, or a discovery past its series, is refused
// with the count, the bound and where to narrow; what discovery holds
// meanwhile grows with the instances allowed, not with the series listed
// (before the bound: 30k series took 285 MB, 100k 884 MB, 1M past 8 GB).
// The store here answers series only: discover.go's listing, as a rebuild
// sends it (a pushdown's census: TestCensus; what it reads whole:
// TestWholeBounded).
func TestDiscoveryBounds(t *testing.T) {
	end := time.Date(2026, 11, 2, 1, 15, 0, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		pods, perPod int
		honour       bool
		maxInstances int
		maxBytes     int64
		what         string
		msg          string
		alloc        uint64 // at most, in bytes
	}{
		{name: "2,000 instances past 500", pods: 2000, perPod: 45, honour: true, maxInstances: 500, what: "instances",
			msg: "the store holds 2000 inference-server instances, more than the 500 read whole at once", alloc: 56 << 20},
		{name: "1M series, the store stops at limit=", pods: 2, perPod: 500_000, honour: true, maxInstances: 10, what: "series",
			msg: "the store lists more than 2000 inference-server series: discovery reads at most 200 for each of the 10 instances allowed", alloc: 4 << 20},
		{name: "300k series of 300 instances, all sent", pods: 300, perPod: 1000, maxInstances: 1000, what: "series",
			msg: "the store lists more than 200000 inference-server series", alloc: 200 << 20},
		{name: "300k series of 6,666 instances, all sent", pods: 6666, perPod: 45, maxInstances: 1000, what: "instances",
			msg: "the store holds more than 4445 inference-server instances, more than the 1000 read whole at once", alloc: 200 << 20},
		{name: "1M series, all sent", pods: 1000, perPod: 1000, maxInstances: 1000, maxBytes: 32 << 20,
			msg: "/api/v1/series is larger than the 32.0 MiB cap", alloc: 80 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, limitSent := bigStore(t, tc.pods, tc.perPod, tc.honour)
			c := bigClient(t, srv, tc.maxInstances, tc.maxBytes)
			var err error
			alloc := hostiletest.Allocated(func() {
				_, err = Run(context.Background(), c, Options{From: end.Add(-DefaultWindow), To: end, MaxInstances: tc.maxInstances, Read: Rebuild})
			})
			t.Logf("%d kB allocated", alloc>>10)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %q", err, tc.msg)
			}
			var le *LimitError
			if tc.what != "" && (!errors.As(err, &le) || le.What != tc.what) {
				t.Errorf("err = %#v, want a LimitError on %s", err, tc.what)
			}
			if *limitSent != MaxSeries(tc.maxInstances)+1 {
				t.Errorf("limit=%d sent, want %d", *limitSent, MaxSeries(tc.maxInstances)+1)
			}
			if alloc > tc.alloc {
				t.Errorf("%d MB allocated, want at most %d MB", alloc>>20, tc.alloc>>20)
			}
		})
	}
}

// The error of a fleet past --max-instances names the namespaces holding
// the most instances, as selectors that narrow it, within the user's own.
func TestLimitErrorNarrowers(t *testing.T) {
	srv, _ := bigStore(t, 70, 45, true)
	c := bigClient(t, srv, 20, 0)
	end := time.Date(2026, 11, 2, 1, 15, 0, 0, time.UTC)
	sel := Selector{{Name: "job", Op: "=", Value: "vllm"}}
	_, err := Run(context.Background(), c, Options{From: end.Add(-DefaultWindow), To: end, MaxInstances: 20, Selector: sel, Read: Rebuild})
	var le *LimitError
	if !errors.As(err, &le) || le.Found != 70 || le.AtLeast {
		t.Fatalf("err = %v", err)
	}
	// Of 70 pods, 35 are in ns-0, 21 in ns-1, 14 in ns-2 (nsOf).
	want := []string{`{job="vllm",namespace="ns-0"} 35`, `{job="vllm",namespace="ns-1"} 21`, `{job="vllm",namespace="ns-2"} 14`}
	var got []string
	for _, n := range le.Largest {
		got = append(got, fmt.Sprintf("%s %d", n.Selector.braces(), n.Instances))
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("narrowers %q, want %q", got, want)
	}
	if !strings.Contains(le.Error(), `within {job="vllm"}`) {
		t.Errorf("message %q does not name the selector", le.Error())
	}
}

// A pushdown sums every instance, and reads whole at most --max-instances:
// the recorded fleet's three instances the sums cannot give (restarted,
// born, gone), with two allowed, are one clear refusal, before any is
// read whole.
func TestWholeBounded(t *testing.T) {
	api := recordedAPI(t, "range")
	_, err := Run(context.Background(), api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s, MaxInstances: 2})
	var le *LimitError
	if !errors.As(err, &le) || le.What != "whole" || le.Found != 3 || le.Limit != 2 {
		t.Fatalf("err = %v, want a LimitError on the three read whole", err)
	}
	if want := "3 inference-server instances are to be read whole"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q, want %q", err, want)
	}
	if f, err := Run(context.Background(), api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s, MaxInstances: 3}); err != nil || len(f.Instances) != 5 {
		t.Errorf("three allowed: %v", err)
	}
}

// A store whose label values list a million values of instance for a
// fleet of a few (a label the store's index holds values of that no
// series in the window carries, or a store that lies): the values count
// against --max-instances before any request is made for them, and the
// report is one refusal naming the label and where it was walked. Before,
// each value was an instance to discover whole: 3,182 requests and
// 1.05 GB to report three instances.
func TestWalkBounded(t *testing.T) {
	// Not parallel: what it measures (the process's allocations and heap)
	// would count the tests running beside it.
	s := storetest.Prometheus(t, storetest.Config{Backfill: writeFixture(t, t.TempDir())})
	real, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	forward := httputil.NewSingleHostReverseProxy(real)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/api/v1/label/instance/values" {
			forward.ServeHTTP(w, r)
			return
		}
		buf := append(make([]byte, 0, 64<<10), `{"status":"success","data":[`...)
		for i := range 1_000_000 {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(strconv.AppendInt(append(buf, `"10.`...), int64(i), 10), `:8000"`...)
			if len(buf) > 60<<10 {
				w.Write(buf)
				buf = buf[:0]
			}
		}
		w.Write(append(buf, `]}`...))
	}))
	t.Cleanup(srv.Close)
	c, err := promapi.New(promapi.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Detect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel         Selector
		alloc, heap uint64 // at most, MB
	}{
		{nil, 700, 420}, // three jobs: three answers of a million values
		{Selector{{Name: "job", Op: "=", Value: "vllm"}}, 260, 200}, // one: 19 MB
	} {
		var runErr error
		var peak atomic.Uint64
		runtime.GC()
		done := make(chan struct{})
		go func() { // the heap's largest, sampled
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		requests.Store(0)
		alloc := hostiletest.Allocated(func() {
			_, runErr = Run(context.Background(), c, Options{From: fixTo.Add(-DefaultWindow), To: fixTo, Selector: tc.sel})
		})
		close(done)
		t.Logf("%v: %d requests, %d MB allocated, the heap at most %d MB: %v", tc.sel, requests.Load(), alloc>>20, peak.Load()>>20, runErr)
		var le *LimitError
		if !errors.As(runErr, &le) || le.What != "values" || le.Label != "instance" || le.Limit != DefaultMaxInstances || le.Found < 999_000 {
			t.Fatalf("err = %#v, want a LimitError on the values of instance", runErr)
		}
		if !strings.Contains(runErr.Error(), "values of instance within {job=") {
			t.Errorf("%q names no selector to narrow by", runErr)
		}
		if n := requests.Load(); n > 20 {
			t.Errorf("%d requests, want the report's few", n)
		}
		// Under the race detector more escapes to the heap (three jobs:
		// 775 MB, 583 without it): its total allocations are allowed
		// half as much again; the heap's bound (1.05 GB at its peak
		// before the walk was bounded) and the requests' count hold
		// either way.
		allocBound := tc.alloc
		if raceEnabled {
			allocBound += tc.alloc / 2
		}
		if alloc>>20 > allocBound || peak.Load()>>20 > tc.heap {
			t.Errorf("%d MB allocated, the heap at most %d MB; want at most %d and %d", alloc>>20, peak.Load()>>20, allocBound, tc.heap)
		}
	}
}

// A store that refuses past its own limit is reported as it refused, in
// its words (not cut off by the filters it repeats first), not as
// inferscope's bound: VictoriaMetrics lists at most -search.maxSeries
// series (30,000 unless told; here 10). The command line's hint names the
// flag (TestFleetStoreErrors).
func TestStoreLimitReported(t *testing.T) {
	t.Parallel()
	s := storetest.VictoriaMetrics(t, storetest.Config{Backfill: writeFixture(t, t.TempDir()), Flags: []string{"-search.maxSeries=10"}})
	_, err := Run(context.Background(), client(t, s), Options{From: fixTo.Add(-DefaultWindow), To: fixTo})
	var pe *promapi.Error
	var le *LimitError
	if !errors.As(err, &pe) || pe.Kind != promapi.TooMuchData || pe.Endpoint != "/api/v1/series" || errors.As(err, &le) ||
		!strings.Contains(err.Error(), "matching timeseries exceeds 10; either narrow down the search or increase -search.max*") {
		t.Errorf("err = %v, want the store's refusal in its words", err)
	}
}
