package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// fakeServer is a server's counters and gauges as a fake generator moves
// them: what its /metrics would say, read into a snapshot.
type fakeServer struct {
	mu                 sync.Mutex
	requests, tokens   float64
	running, waiting   float64
	kv                 float64
	prefill, decode    float64 // seconds, summed
	queue              histogram.Histogram
	prefillHist        histogram.Histogram
	extraRequests      float64 // counted by the server with the next request, never sent by the generator
	preemptions        float64
	noRequestsCounter  bool
	scrapes            int
	failScrapesBetween [2]int // scrapes in [a, b) fail
}

func newFakeServer() *fakeServer {
	bounds := []float64{0.001, 0.01, 0.1, 1, math.Inf(1)}
	h := func() histogram.Histogram {
		var out histogram.Histogram
		for _, b := range bounds {
			out.Buckets = append(out.Buckets, histogram.Bucket{UpperBound: b})
		}
		return out
	}
	return &fakeServer{queue: h(), prefillHist: h()}
}

func observe(h *histogram.Histogram, v float64) {
	for i := range h.Buckets {
		if v <= h.Buckets[i].UpperBound {
			h.Buckets[i].Count++
		}
	}
	h.Count++
	h.Sum += v
}

// finish counts a request the way a server does as it ends.
func (f *fakeServer) finish(tokens int, queue, prefill, decode float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests += 1 + f.extraRequests
	f.extraRequests = 0
	f.tokens += float64(tokens)
	f.prefill += prefill
	f.decode += decode
	observe(&f.queue, queue)
	observe(&f.prefillHist, prefill)
}

func (f *fakeServer) gauges(running, waiting, kv float64) {
	f.mu.Lock()
	f.running, f.waiting, f.kv = running, waiting, kv
	f.mu.Unlock()
}

func (f *fakeServer) scrape(context.Context) (*snapshot.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scrapes++
	if f.scrapes > f.failScrapesBetween[0] && f.scrapes <= f.failScrapesBetween[1] {
		return nil, context.DeadlineExceeded
	}
	s := &snapshot.Snapshot{Dialect: "tabbyapi", Source: "fake", ScrapedAt: time.Now(), TimeSource: "scrape",
		Scalars: map[string]float64{
			snapshot.TokensPredictedTotal:        f.tokens,
			snapshot.RequestsProcessing:          f.running,
			snapshot.RequestsDeferred:            f.waiting,
			snapshot.KVCacheUsageRatio:           f.kv,
			snapshot.PromptSecondsTotal:          f.prefill,
			snapshot.TokensPredictedSecondsTotal: f.decode,
		},
		Extra:      map[string]float64{snapshot.ExtraPreemptions: f.preemptions},
		Histograms: map[string]*histogram.Histogram{},
	}
	if !f.noRequestsCounter {
		s.Scalars[snapshot.RequestsTotal] = f.requests
	}
	q, p := f.queue, f.prefillHist
	q.Buckets, p.Buckets = slices.Clone(q.Buckets), slices.Clone(p.Buckets)
	s.Histograms[snapshot.RequestQueueTimeSeconds] = &q
	s.Histograms[snapshot.RequestPrefillTimeSeconds] = &p
	return s, nil
}

// fakeGen is a closed loop of requests whose figures are given one by
// one: it sends them n at a time, each taking its E2E in real time, and
// the fake server counts each as it ends.
type fakeGen struct {
	srv        *fakeServer
	records    []load.Record // Sent, Scheduled and Index are set here
	inFlight   int
	warmup     int
	queue      float64 // each request's queue time as the server counts it
	prefill    float64
	noServer   bool // the server does not count them
	stopAfter  int  // cancel the run's context after this many (0: never)
	cancel     context.CancelFunc
	tokensSent int // extra tokens the server generates beyond the usage
}

func (g *fakeGen) run(ctx context.Context, p load.Plan, rec func(load.Record), prog func(load.Progress)) (load.Summary, error) {
	start := time.Now()
	sum := load.Summary{Start: start}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(p.Concurrency, 1))
	done, sent := 0, 0
	warm := g.warmup > 0
	prog(load.Progress{Warmup: warm})
	for i, r := range g.records {
		if ctx.Err() != nil {
			sum.Partial = true
			break
		}
		sem <- struct{}{}
		mu.Lock()
		g.inFlight++
		g.srv.mu.Lock()
		g.srv.running = float64(g.inFlight)
		g.srv.mu.Unlock()
		if warm && i >= g.warmup {
			warm = false
			sum.MeasuredFrom = time.Since(start)
		}
		sent++
		prog(load.Progress{Sent: sent, InFlight: g.inFlight, Done: done, Warmup: warm, Elapsed: time.Since(start)})
		mu.Unlock()
		r.Index = i
		r.Warmup = i < g.warmup
		r.Sent = time.Since(start)
		r.Scheduled = r.Sent
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(max(r.Done, r.E2E))
			mu.Lock()
			defer mu.Unlock()
			if !g.noServer && r.Error == "" {
				g.srv.finish(r.OutputTokens+g.tokensSent, g.queue, g.prefill, (r.E2E - r.TTFT).Seconds())
			}
			g.inFlight--
			g.srv.mu.Lock()
			g.srv.running = float64(g.inFlight)
			g.srv.mu.Unlock()
			done++
			rec(r)
			if !r.Warmup {
				sum.Completed++
			}
			if g.stopAfter > 0 && done == g.stopAfter {
				g.cancel()
			}
			<-sem
		}()
	}
	sum.SendEnd = time.Since(start)
	wg.Wait()
	sum.MeasuredTo = time.Since(start)
	sum.Sent = sent
	return sum, nil
}

// request is a completed request's record with times in milliseconds.
func request(ttfb, ttft, e2e float64, tokens int) load.Record {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return load.Record{TTFB: ms(ttfb), TTFT: ms(ttft), E2E: ms(e2e), Done: ms(e2e), ContentEvents: tokens,
		PromptTokens: 100, OutputTokens: tokens, CachedTokens: 0, TokenSource: "usage", RequestedPrompt: 100, RequestedOutput: tokens,
		Status: 200, Finish: "length"}
}

func build(s *snapshot.Snapshot, now time.Time) *report.Report {
	return analysis.Analyze(s, analysis.Options{Now: now, WithRates: true})
}

func config(g *fakeGen, srv *fakeServer, concurrency int) Config {
	return Config{
		Plan:     load.Plan{Concurrency: concurrency, Requests: len(g.records) - g.warmup},
		Generate: g.run,
		Scrape:   srv.scrape,
		Metrics:  "http://fake/metrics",
		Build:    build,
		Interval: 5 * time.Millisecond,
		Describe: Describe{Target: "http://fake", API: "chat_completions", Model: "m"},
	}
}

// Forty requests whose TTFTs are 1…40 ms: the percentiles by hand, and
// the generator and the server agreeing exactly.
func TestRunClientFigures(t *testing.T) {
	srv := newFakeServer()
	g := &fakeGen{srv: srv, queue: 0.002, prefill: 0.003}
	for i := 1; i <= 40; i++ {
		g.records = append(g.records, request(0.5, float64(i), float64(i)+20, 11))
	}
	srv.gauges(4, 0, 0.3)
	rep, err := Run(context.Background(), config(g, srv, 4))
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Client
	if c.Sent != 40 || c.Completed != 40 || c.Failed != 0 {
		t.Fatalf("sent %d completed %d failed %d", c.Sent, c.Completed, c.Failed)
	}
	ms := func(v float64) report.Number { return report.Number(v / 1000) }
	// Nearest rank: p50 is the 20th of 40, p90 the 36th, p95 the 38th, p99 the 40th.
	want := Dist{Count: 40, Mean: ms(20.5), Min: ms(1), P50: ms(20), P90: ms(36), P95: ms(38), P99: ms(40), Max: ms(40)}
	if !closeDist(c.TTFT, want) {
		t.Errorf("TTFT %+v, want %+v", c.TTFT, want)
	}
	// TPOT = (E2E − TTFT)/(11 − 1) = 20 ms / 10 for every request.
	if c.TPOT.Count != 40 || !near(float64(c.TPOT.P50), 0.002) || !near(float64(c.TPOT.Max), 0.002) {
		t.Errorf("TPOT %+v", c.TPOT)
	}
	if c.OutputTokens != 440 || c.TokenSource != "usage" {
		t.Errorf("tokens %d from %s", c.OutputTokens, c.TokenSource)
	}
	sc := rep.SelfCheck
	if !sc.Comparable || sc.Requests.Agree == nil || !*sc.Requests.Agree || sc.Tokens.Agree == nil || !*sc.Tokens.Agree {
		t.Errorf("self-check %+v", sc)
	}
	if sc.Requests.Colour != report.Good || sc.Tokens.Colour != report.Good {
		t.Errorf("self-check colours %s %s", sc.Requests.Colour, sc.Tokens.Colour)
	}
	// The server's split: queue 2 ms + prefill 3 ms of a mean TTFT of 20.5 ms.
	if s := rep.TTFTSplit; s == nil || !near(float64(s.Outside), 0.0205-0.005) {
		t.Errorf("split %+v", rep.TTFTSplit)
	}
	if rep.Server == nil || rep.Server.Rates == nil {
		t.Fatalf("no server window: %+v", rep.Window)
	}
	if got := *rep.Server.Rates["since"]["requests"] * float64(rep.Window.Seconds); math.Abs(got-40) > 1e-6 {
		t.Errorf("server window counted %v requests, want 40", got)
	}
	if rep.Verdict != analysis.VerdictDecodeBound {
		t.Errorf("verdict %q (notes %v)", rep.Verdict, rep.Notes)
	}
	// 1…40 ms span a factor of 40: ten log bins a decade, from 1 ms to
	// the first edge above 40 ms, the counts by hand.
	if h := c.TTFTHistogram; h == nil || h.Scale != "log" || len(h.Edges) != 18 || h.Edges[0] != 0.001 || h.Edges[17] != 0.05 ||
		!slices.Equal(h.Counts, report.List[int]{1, 0, 0, 1, 1, 0, 1, 2, 1, 2, 3, 3, 4, 5, 7, 8, 1}) {
		t.Errorf("TTFT histogram %+v", c.TTFTHistogram)
	}
	// A sample at each of the window's scrapes, in time order, with the
	// server's gauges as the fake published them.
	if len(rep.Samples) != rep.Window.Scrapes || len(rep.Samples) < 3 {
		t.Fatalf("%d samples of %d scrapes", len(rep.Samples), rep.Window.Scrapes)
	}
	for i, s := range rep.Samples {
		if s.KVUsage != 0.3 || s.Waiting != 0 || s.Running < 0 || s.Running > 4 || s.InFlight < 0 || s.InFlight > 4 ||
			i > 0 && s.Seconds < rep.Samples[i-1].Seconds {
			t.Errorf("sample %d: %+v", i, s)
		}
	}
	if last := rep.Samples[len(rep.Samples)-1]; !(last.Seconds >= rep.SentUntil) || !(rep.SentUntil > 0) {
		t.Errorf("the last sample at %v s, sending stopped at %v s", last.Seconds, rep.SentUntil)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

func closeDist(a, b Dist) bool {
	return a.Count == b.Count && near(float64(a.Mean), float64(b.Mean)) && near(float64(a.Min), float64(b.Min)) &&
		near(float64(a.P50), float64(b.P50)) && near(float64(a.P90), float64(b.P90)) && near(float64(a.P95), float64(b.P95)) &&
		near(float64(a.P99), float64(b.P99)) && near(float64(a.Max), float64(b.Max))
}

// A generator bug, or another client, cannot pass: one request or token
// the two sides count differently is a bad note.
func TestRunSelfCheckDisagrees(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*fakeServer, *fakeGen)
		want  []string
	}{
		{"another client", func(s *fakeServer, _ *fakeGen) { s.extraRequests = 1 }, []string{"bench_requests_disagree"}},
		{"tokens unread", func(_ *fakeServer, g *fakeGen) { g.tokensSent = 1 }, []string{"bench_tokens_disagree"}},
	}
	for _, tt := range tests {
		srv := newFakeServer()
		g := &fakeGen{srv: srv}
		for range 10 {
			g.records = append(g.records, request(1, 2, 5, 4))
		}
		tt.setup(srv, g)
		rep, err := Run(context.Background(), config(g, srv, 2))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range rep.Notes {
			if strings.Contains(n.ID, "disagree") {
				got = append(got, n.ID)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v (%+v)", tt.name, got, tt.want, rep.SelfCheck)
		}
	}
}

// The warm-up's requests are in the self-check (the whole run) but in no
// client figure, and the window starts after them.
func TestRunWarmup(t *testing.T) {
	srv := newFakeServer()
	g := &fakeGen{srv: srv, warmup: 6}
	for i := range 16 {
		g.records = append(g.records, request(1, 2+float64(i), 20, 4))
	}
	cfg := config(g, srv, 2)
	cfg.Plan.Warmup.Requests = 6
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Client.Sent != 10 || rep.Client.TTFT.Min != report.Number(0.008) {
		t.Errorf("measured %d, TTFT min %v: want 10 from 8 ms", rep.Client.Sent, rep.Client.TTFT.Min)
	}
	if rep.SelfCheck.Requests.Client != 16 || rep.SelfCheck.Requests.Server != 16 {
		t.Errorf("self-check %+v", rep.SelfCheck.Requests)
	}
}

// Ctrl-C: the run stops sending, reports what completed, marked partial,
// and the self-check is judged only where nothing was cut.
func TestRunInterrupted(t *testing.T) {
	srv := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &fakeGen{srv: srv, stopAfter: 3, cancel: cancel}
	for range 20 {
		g.records = append(g.records, request(1, 2, 10, 4))
	}
	rep, err := Run(ctx, config(g, srv, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Partial || rep.Client.Completed >= 20 || rep.Server == nil {
		t.Errorf("partial %v, completed %d, server %v", rep.Partial, rep.Client.Completed, rep.Server != nil)
	}
	if !slices.ContainsFunc(rep.Notes, func(n report.Note) bool { return n.ID == "bench_partial" }) {
		t.Errorf("notes %v", rep.Notes)
	}
}

// A server with no /metrics: the bench's own metric set, read back
// through the tabbyAPI dialect, counts exactly what was received, and no
// self-check is claimed.
func TestRunOwnMetrics(t *testing.T) {
	srv := newFakeServer()
	g := &fakeGen{srv: srv, noServer: true}
	for i := range 12 {
		r := request(1, 3, 30, 7)
		r.Split = &load.Split{Source: "ollama", Load: 0, Prefill: 2 * time.Millisecond, Decode: 25 * time.Millisecond,
			PromptTokens: 100, CachedTokens: -1, GeneratedTokens: 7}
		if i%2 == 0 {
			r.Split.Load = -1
		}
		g.records = append(g.records, r)
	}
	cfg := config(g, srv, 3)
	cfg.Scrape = nil
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics != "bench" || rep.Server == nil || rep.Server.SourceKind != "bench" {
		t.Fatalf("metrics %q, server %+v", rep.Metrics, rep.Server)
	}
	if got := rep.Server.Scalars["requests_total"]; got != 12 {
		t.Errorf("own requests_total %v, want 12", got)
	}
	if got := rep.Server.Scalars["tokens_predicted_total"]; got != 84 {
		t.Errorf("own tokens_predicted_total %v, want 84", got)
	}
	if rep.SelfCheck.Comparable || rep.SelfCheck.Why == "" {
		t.Errorf("self-check %+v", rep.SelfCheck)
	}
	s := rep.Client.Split
	if s == nil || s.Requests != 12 || !near(float64(s.Prefill), 0.002) || !near(float64(s.Decode), 0.025) || !near(float64(s.Load), 0) ||
		!near(float64(s.Beyond), 0.001) {
		t.Errorf("split %+v", s)
	}
	// Prefill 2 ms of 27: decode-bound by the answers' own account.
	if rep.Verdict != analysis.VerdictDecodeBound {
		t.Errorf("verdict %q", rep.Verdict)
	}
}

// The metrics cannot be read before the run: an error, and no load sent.
func TestRunNoMetrics(t *testing.T) {
	srv := newFakeServer()
	srv.failScrapesBetween = [2]int{0, 1}
	g := &fakeGen{srv: srv}
	g.records = append(g.records, request(1, 2, 5, 4))
	_, err := Run(context.Background(), config(g, srv, 1))
	if err == nil || !strings.Contains(err.Error(), "before the run") {
		t.Fatalf("err %v", err)
	}
	if srv.requests != 0 {
		t.Errorf("%v requests sent", srv.requests)
	}
}

// The warm-up ends once the server's gauges settle: the bench closes the
// generator's channel.
func TestRunSettles(t *testing.T) {
	srv := newFakeServer()
	srv.gauges(2, 0, 0.4)
	var ended time.Duration
	gen := func(ctx context.Context, p load.Plan, rec func(load.Record), prog func(load.Progress)) (load.Summary, error) {
		start := time.Now()
		prog(load.Progress{Warmup: true})
		select {
		case <-p.Warmup.Until:
			ended = time.Since(start)
		case <-time.After(5 * time.Second):
			t.Error("the warm-up never ended")
		}
		prog(load.Progress{Warmup: false})
		r := request(1, 2, 3, 2)
		rec(r)
		srv.finish(2, 0, 0, 0)
		return load.Summary{Start: start, MeasuredFrom: ended, MeasuredTo: time.Since(start), Completed: 1}, nil
	}
	cfg := Config{Plan: load.Plan{Concurrency: 1, Requests: 1}, Generate: gen, Scrape: srv.scrape, Build: build,
		Interval: 5 * time.Millisecond, Settle: 10 * time.Second}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Window.Settled != "settled" || ended < 5*cfg.Interval {
		t.Errorf("settled %q after %v", rep.Window.Settled, ended)
	}
}
