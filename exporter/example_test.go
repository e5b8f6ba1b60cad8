package exporter_test

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferscope/inferscope/exporter"
)

// engine is a server's view of its own state, read at scrape time.
type engine struct{}

func (engine) Live() exporter.Live {
	return exporter.Live{
		ActiveJobs: 1, PageSize: 256,
		KVPages: 512, KVReferencedPages: 128, // a quarter of the KV cache in use
	}
}

// Record one finished generation and serve /metrics.
func Example() {
	m := exporter.New(exporter.Options{Engine: engine{}, MaxSeqLen: 32768})

	// A request whose 1200-token prompt was 1000 tokens in the prefix cache,
	// generating 300 tokens with a drafter that had 240 of its 320 guesses
	// accepted.
	m.RecordGeneration(exporter.Generation{
		PromptTokens: 1200, CachedTokens: 1000, GeneratedTokens: 300,
		Queue: 20 * time.Millisecond, Prefill: 150 * time.Millisecond, Decode: 6 * time.Second,
		Draft: &exporter.DraftTally{Accepted: 240, Rejected: 80},
	})

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	show := []string{
		"tabbyapi:prompt_tokens_total ",
		"tabbyapi:cached_tokens_total ",
		"tabbyapi:predicted_tokens_seconds ",
		"tabbyapi:spec_decode_tokens_per_step ",
		"tabbyapi:kv_cache_usage_ratio ",
		`tabbyapi:request_prompt_tokens_bucket{le="2000"} `,
		`tabbyapi:time_to_first_token_seconds_bucket{le="0.25"} `,
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, prefix := range show {
			if strings.HasPrefix(sc.Text(), prefix) {
				fmt.Println(sc.Text())
			}
		}
	}
	// Output:
	// tabbyapi:cached_tokens_total 1000
	// tabbyapi:kv_cache_usage_ratio 0.25
	// tabbyapi:predicted_tokens_seconds 50
	// tabbyapi:prompt_tokens_total 200
	// tabbyapi:request_prompt_tokens_bucket{le="2000"} 1
	// tabbyapi:spec_decode_tokens_per_step 5
	// tabbyapi:time_to_first_token_seconds_bucket{le="0.25"} 1
}

// A server that already has a registry registers the metric set on it,
// beside its own metrics, and keeps serving that registry. The set is
// gathered with the same rules as through Handler: one reading per scrape,
// and a scrape never waits on the engine beyond LiveTimeout.
func ExampleMetrics_Collect() {
	reg := prometheus.NewRegistry()
	logins := prometheus.NewCounter(prometheus.CounterOpts{Name: "myserver_logins_total", Help: "Logins accepted."})
	reg.MustRegister(logins)

	m := exporter.New(exporter.Options{Engine: engine{}, MaxSeqLen: 32768})
	reg.MustRegister(m)

	logins.Inc()
	m.RecordGeneration(exporter.Generation{
		PromptTokens: 1200, CachedTokens: 1000, GeneratedTokens: 300,
		Queue: 20 * time.Millisecond, Prefill: 150 * time.Millisecond, Decode: 6 * time.Second,
	})

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	show := []string{
		"myserver_logins_total ",
		"tabbyapi:prompt_tokens_total ",
		"tabbyapi:requests_total ",
		"tabbyapi:kv_cache_usage_ratio ",
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, prefix := range show {
			if strings.HasPrefix(sc.Text(), prefix) {
				fmt.Println(sc.Text())
			}
		}
	}
	// Output:
	// myserver_logins_total 1
	// tabbyapi:kv_cache_usage_ratio 0.25
	// tabbyapi:prompt_tokens_total 200
	// tabbyapi:requests_total 1
}

// A proxy in front of a server that publishes nothing records what each
// answer said, per model, and leaves out what it did not: Ollama reports
// prefill and decode times but neither queue time nor the cached part of
// the prompt.
func Example_partialSource() {
	m := exporter.New(exporter.Options{
		PerModel: true,
		Unknown:  exporter.UnknownWaiting | exporter.UnknownKVCache | exporter.UnknownOffload | exporter.UnknownRecurrent | exporter.UnknownDraft,
	})
	m.RecordGeneration(exporter.Generation{
		Model:        "llama3.2",
		PromptTokens: 26, GeneratedTokens: 282,
		Prefill: 342546 * time.Microsecond, Decode: 4535599 * time.Microsecond,
		TTFT: 360 * time.Millisecond, E2E: 4900 * time.Millisecond, // measured by the proxy
		Unknown: exporter.UnknownQueue | exporter.UnknownCached,
	})
	var b strings.Builder
	m.WriteText(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		for _, name := range []string{"prompt_tokens", "cached_tokens_total", "tokens_predicted_total", "prompt_seconds_total", "request_queue_time_seconds_count", "time_to_first_token_seconds_sum", "kv_cache"} {
			if strings.HasPrefix(line, "tabbyapi:"+name) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// tabbyapi:prompt_seconds_total{model="llama3.2"} 0.342546
	// tabbyapi:prompt_tokens_all_total{model="llama3.2"} 26
	// tabbyapi:time_to_first_token_seconds_sum{model="llama3.2"} 0.36
	// tabbyapi:tokens_predicted_total{model="llama3.2"} 282
}

// Prometheus asks for OpenMetrics first and for gzip, and gets both, with
// the content type and escaping scheme promhttp would answer. Counters
// carry their created time in OpenMetrics (the _created lines, not shown
// here: they hold the time New ran).
func ExampleMetrics_Handler() {
	m := exporter.New(exporter.Options{Engine: engine{}, MaxSeqLen: 32768})
	m.RecordGeneration(exporter.Generation{
		PromptTokens: 1200, CachedTokens: 1000, GeneratedTokens: 300,
		Queue: 20 * time.Millisecond, Prefill: 150 * time.Millisecond, Decode: 6 * time.Second,
	})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Prometheus 3's default scrape protocols.
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"+
		"application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,"+
		"text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println("Content-Type:", resp.Header.Get("Content-Type"))
	fmt.Println("Content-Encoding:", resp.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		fmt.Println(err)
		return
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, ":requests ") || strings.HasPrefix(line, "tabbyapi:requests_total") || strings.HasPrefix(line, "tabbyapi:kv_cache_usage_ratio ") ||
			strings.HasPrefix(line, `tabbyapi:request_prompt_tokens_bucket{le="2000.0"}`) || line == "# EOF" {
			fmt.Println(line)
		}
	}
	// Output:
	// Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8
	// Content-Encoding: gzip
	// tabbyapi:kv_cache_usage_ratio 0.25
	// tabbyapi:request_prompt_tokens_bucket{le="2000.0"} 1
	// # HELP tabbyapi:requests Number of finished generation requests.
	// # TYPE tabbyapi:requests counter
	// tabbyapi:requests_total 1.0
	// # EOF
}
