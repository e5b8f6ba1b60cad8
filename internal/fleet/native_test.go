package fleet

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/storetest"
)

// vllmTarget serves a small vLLM metric set from client_golang: its TTFT
// a native histogram only (no classic buckets), its prefix-cache counters
// under the HELP text given (vLLM 0.8 said blocks; later versions,
// tokens).
func vllmTarget(t *testing.T, prefixHelp string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	labels := []string{"model_name"}
	counter := func(name, help string, v float64) {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		c.WithLabelValues("m").Add(v)
		reg.MustRegister(c)
	}
	counter("vllm:request_success_total", "Count of successfully processed requests.", 100)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", 20000)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", 50000)
	counter("vllm:gpu_prefix_cache_queries_total", prefixHelp+" queries", 40000)
	counter("vllm:gpu_prefix_cache_hits_total", prefixHelp+" hits", 10000)
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.",
		Buckets: []float64{}, NativeHistogramBucketFactor: 1.1}, labels)
	for _, o := range []struct {
		v float64
		n int
	}{{0.1, 60}, {0.5, 30}, {2, 10}} {
		for range o.n {
			h.WithLabelValues("m").Observe(o.v)
		}
	}
	reg.MustRegister(h)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A Prometheus that stores native histograms (2.42's native-histograms
// feature, scraping protobuf) keeps TTFT as one series per model with a
// histogram value; and two targets that declared one family's HELP
// differently are read each with its own (targets/metadata).
func TestNativeHistogramsAndTargetMetadata(t *testing.T) {
	t.Parallel()
	blocks := vllmTarget(t, "GPU prefix cache, in terms of number of queried blocks:")
	tokens := vllmTarget(t, "GPU prefix cache, in terms of number of queried tokens:")
	s := storetest.Prometheus(t, storetest.Config{Flags: []string{"--enable-feature=native-histograms"}, Targets: []storetest.Target{
		{Addr: blocks, Job: "vllm", Labels: map[string]string{"namespace": "llm", "pod": "old"}},
		{Addr: tokens, Job: "vllm", Labels: map[string]string{"namespace": "llm", "pod": "new"}},
	}})
	s.WaitFor(t, `count(vllm:time_to_first_token_seconds)`, 20*time.Second, func(b []byte) bool { return strings.Contains(string(b), `"2"`) })
	c := client(t, s)
	// Metadata arrives with the scrapes; wait until both targets' is in.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		md, err := c.Metadata(context.Background())
		if err == nil && len(md["vllm:gpu_prefix_cache_queries_total"])+len(md["vllm:gpu_prefix_cache_queries"]) >= 2 {
			break
		}
	}
	now := time.Now()
	push, whole := both(t, c, Options{From: now.Add(-DefaultWindow), To: now, By: k8s})
	for _, f := range []*Fleet{push, whole} {
		checkNative(t, f)
	}
}

func checkNative(t *testing.T, f *Fleet) {
	t.Helper()
	got := byInstance(f)
	for _, id := range []string{"llm/old", "llm/new"} {
		in := got[id]
		if in == nil {
			t.Fatalf("no %s among %v", id, keys(got))
		}
		h := in.snap.Hist(snapshot.TimeToFirstTokenSeconds)
		if h == nil || h.Count != 100 || math.Abs(h.Sum-(60*0.1+30*0.5+10*2)) > 1e-9 {
			t.Fatalf("%s: TTFT %+v, want 100 observations summing to 41 s", id, h)
		}
		// Half the observations were 0.1 s: the median lies in the native
		// bucket holding 0.1, (2^-3.375, 2^-3.25].
		if p50 := h.Quantile(0.5); p50 <= math.Pow(2, -3.375) || p50 > math.Pow(2, -3.25) {
			t.Errorf("%s: TTFT p50 %v, want within the bucket holding 0.1 s", id, p50)
		}
		if in.native == 0 {
			t.Errorf("%s: native histogram not counted", id)
		}
	}
	checkNotes(t, f, NoteNative)
	// vLLM 0.8's block counts are no token hit rate; the later version's
	// are.
	if _, ok := got["llm/old"].snap.Scalar(snapshot.PrefixCacheQueries); ok {
		t.Errorf("old: block lookups read as token queries")
	}
	if v, ok := got["llm/new"].snap.Scalar(snapshot.PrefixCacheQueries); !ok || v != 40000 {
		t.Errorf("new: prefix cache queries %v %v, want 40000", v, ok)
	}
}
