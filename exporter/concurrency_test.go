package exporter

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/exposition"
)

// TestConcurrentRecordAndScrape records from 8 goroutines while scrapes and
// ladder changes run; run it with -race. Every scrape must parse, keep its
// histograms consistent and its counters from falling, and the final
// figures must equal the totals of what was fed in.
func TestConcurrentRecordAndScrape(t *testing.T) {
	const writers = 8
	eng := &fakeEngine{live: busyLive}
	m := New(Options{Engine: eng, MaxSeqLen: 4096, LiveTimeout: patient})
	var (
		wg, side          sync.WaitGroup
		stop, stopSide    atomic.Bool
		scrapes, flips    atomic.Int64
		recorded, drafted atomic.Int64
	)
	// The writers run until the scraper and the ladder flipper have both
	// had several turns, counting what they fed in.
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, d int64
			for i := 0; !stop.Load() || i < 1000; i++ {
				g := Generation{PromptTokens: 100, CachedTokens: 20, GeneratedTokens: 10,
					Queue: time.Millisecond, Prefill: 2 * time.Millisecond, Decode: 3 * time.Millisecond}
				if (w+i)%2 == 0 {
					g.Draft = &DraftTally{Accepted: 4, Rejected: 1}
					d++
				}
				m.RecordGeneration(g)
				n++
			}
			recorded.Add(n)
			drafted.Add(d)
		}()
	}
	side.Add(4)
	// Two scrapers through the handler at once, so prepared family sets are
	// taken, refreshed and given back concurrently (run with -race), in
	// text and OpenMetrics, while the ladder flips under them.
	for _, accept := range []string{"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0"} {
		go func() {
			defer side.Done()
			for !stopSide.Load() {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept", accept)
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, req)
				f, err := exposition.DetectFormat(rec.Header().Get("Content-Type"), rec.Body.Bytes())
				if err != nil {
					t.Error(err)
					return
				}
				fams, err := exposition.Parse(rec.Body.Bytes(), f)
				if err != nil {
					t.Errorf("%s: %v", accept, err)
					return
				}
				for name, h := range familiesOf(t, fams, "tabbyapi:").hists {
					checkHistogram(t, name, h)
				}
				scrapes.Add(1)
			}
		}()
	}
	go func() {
		defer side.Done()
		prev := map[string]float64{}
		for !stopSide.Load() {
			e := scrape(t, m)
			for name, h := range e.hists {
				checkHistogram(t, name, h)
			}
			for _, name := range []string{"requests_total", "prompt_tokens_total", "cached_tokens_total", "tokens_predicted_total",
				"prompt_seconds_total", "spec_decode_num_draft_tokens_total", "n_tokens_max"} {
				if e.scalars[name] < prev[name] {
					t.Errorf("%s fell from %v to %v", name, prev[name], e.scalars[name])
				}
				prev[name] = e.scalars[name]
			}
			scrapes.Add(1)
		}
	}()
	go func() {
		// A model reload racing the recorders: the ladder flips between two
		// lengths, each change restarting the token histograms.
		defer side.Done()
		for i := 0; !stopSide.Load(); i++ {
			m.ConfigureTokenBuckets(4096 << (i % 2))
			flips.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	for scrapes.Load() < 40 || flips.Load() < 5 {
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	stopSide.Store(true)
	side.Wait()

	n, d := float64(recorded.Load()), float64(drafted.Load())
	e := scrape(t, m)
	checkScalars(t, e.scalars, map[string]float64{
		"requests_total": n, "prompt_tokens_total": 80 * n, "cached_tokens_total": 20 * n, "prefix_cache_queries": 100 * n,
		"tokens_predicted_total": 10 * n, "prompt_seconds_total": 0.002 * n, "tokens_predicted_seconds_total": 0.003 * n,
		"n_tokens_max": 100, "tokens_predicted_max": 10,
		// Drafted ones proposed 5, had 4 accepted, and took 10 − 4 steps.
		"spec_decode_requests_total": d, "spec_decode_num_draft_tokens_total": 5 * d,
		"spec_decode_num_accepted_tokens_total": 4 * d, "spec_decode_num_decode_steps_total": 6 * d,
		"kv_cache_tokens": 250 * 256,
	})
	for _, name := range []string{"request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds",
		"time_to_first_token_seconds", "e2e_request_latency_seconds"} {
		if e.hists[name].Count != n {
			t.Errorf("%s count = %v, want %v", name, e.hists[name].Count, n)
		}
	}
	histWant{count: n, sum: 0.006 * n, le: map[float64]float64{0.3: n}}.check(t, "e2e_request_latency_seconds", e.hists["e2e_request_latency_seconds"])
	// A sum of millions of float ratios carries rounding error (about
	// n·2^-53 relative), unlike the nanosecond and token sums above.
	histWant{count: d, sum: 0.8 * d, le: map[float64]float64{0.7: 0, 0.8: d}, tol: 1e-9}.check(t, "spec_decode_acceptance_rate", e.hists["spec_decode_acceptance_rate"])
}
