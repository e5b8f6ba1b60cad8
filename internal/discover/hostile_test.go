package discover_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/discover/discovertest"
	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
)

// A hostile port costs a probe no more than its caps: an API answer that
// is a gzip bomb, never ends or nests without end is read to 4 MiB at
// most and named as what it is not; a redirect to another host does not
// carry the headers given.
func TestProbeHostile(t *testing.T) {
	noMetrics := func(path string, h http.Handler) int {
		mux := http.NewServeMux()
		mux.Handle("GET "+path, h)
		mux.HandleFunc("/", http.NotFound)
		return discovertest.Port(t, discovertest.Serve(t, mux))
	}
	other := &hostiletest.Recorder{Body: `{"version":"0.12.3"}`}
	ports := []discover.Port{
		{Number: noMetrics("/api/version", hostiletest.Gzipped(hostiletest.GzipBomb(1<<30)))},
		{Number: noMetrics("/v1/models", hostiletest.Stream(`{"object":"list","data":[`, `{"id":"m"},`, 1<<40, 0))},
		{Number: noMetrics("/v1/models", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"data":` + string(hostiletest.Nested(100000))))
		}))},
		{Number: noMetrics("/api/version", hostiletest.RedirectTo(hostiletest.OtherHost(t, other)))},
	}
	var res *discover.Result
	var err error
	alloc := hostiletest.Allocated(func() {
		res, err = discover.Probe(context.Background(), "127.0.0.1", discover.Options{
			Ports: ports, Timeout: 5 * time.Second, Headers: http.Header{"Authorization": {"Bearer secret"}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range res.Ports {
		if s.Kind != discover.Other {
			t.Errorf("port %d: %s (%s), want other", i, s.Kind, s.Why)
		}
	}
	if alloc > 64<<20 {
		t.Errorf("the probe allocated %d MiB", alloc>>20)
	}
	for _, h := range other.Requests() {
		if h.Get("Authorization") != "" {
			t.Error("the credentials followed a redirect to another host")
		}
	}
}
