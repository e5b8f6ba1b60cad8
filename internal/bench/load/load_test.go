package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// fixedSource sends the same body every time.
type fixedSource struct{ body string }

func (s fixedSource) Next(int) workload.Request {
	return workload.Request{Body: []byte(s.body), PromptTokens: 7, OutputTokens: 3}
}

// sseServer streams a role chunk, then its tokens content chunks gap
// apart (a chunk of chunkTokens tokens each), a finish chunk, a usage
// chunk and [DONE]; it counts what it served.
type sseServer struct {
	tokens, chunkTokens int
	gap                 time.Duration
	requests, sent      atomic.Int64 // requests, tokens
	inflight, peak      atomic.Int64
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.requests.Add(1)
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
	f.Flush()
	per := max(s.chunkTokens, 1)
	for i := 0; i < s.tokens; i += per {
		if s.gap > 0 {
			time.Sleep(s.gap)
		}
		k := min(per, s.tokens-i)
		fmt.Fprintf(w, `data: {"model":"m","choices":[{"index":0,"delta":{"content":"%s"}}]}`+"\n\n", strings.Repeat(" t", k))
		f.Flush()
		s.sent.Add(int64(k))
	}
	fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n")
	fmt.Fprintf(w, `data: {"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`+"\n\n", s.tokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// collect runs p and keeps every record.
func collect(t testing.TB, ctx context.Context, p Plan) (Summary, []Record) {
	t.Helper()
	var mu sync.Mutex
	var recs []Record
	s, err := Run(ctx, p, func(r Record) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, recs
}

// TestCounts: whatever the loop, the generator's records and summary
// count exactly the requests and tokens the server served.
func TestCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		plan Plan
		warm int // records of the warm-up expected
	}{
		{"closed loop", Plan{Concurrency: 4, Requests: 40}, 0},
		{"closed loop with a warm-up by count", Plan{Concurrency: 3, Requests: 20, Warmup: Warmup{Requests: 7}}, 7},
		{"Poisson", Plan{Rate: 400, Requests: 60, Seed: 3}, 0},
		{"gamma with a cap", Plan{Rate: 2000, Arrival: Gamma, Burstiness: 0.5, Concurrency: 2, Requests: 30, Seed: 4}, 0},
		{"constant by duration", Plan{Rate: 100, Arrival: Constant, Duration: 300 * time.Millisecond}, 0},
		{"closed loop by duration after a timed warm-up", Plan{Concurrency: 2, Duration: 200 * time.Millisecond, Warmup: Warmup{Duration: 100 * time.Millisecond}}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &sseServer{tokens: 5, chunkTokens: 2, gap: time.Millisecond}
			srv := httptest.NewServer(s)
			defer srv.Close()
			p := c.plan
			p.Target = Target{Base: mustURL(t, srv.URL), API: ChatCompletions}
			p.Source = fixedSource{`{"model":"m","stream":true}`}
			sum, recs := collect(t, t.Context(), p)
			warm, tokens, events := 0, 0, 0
			for _, r := range recs {
				if r.Warmup {
					warm++
				}
				if r.Error != "" || r.Status != 200 || r.TokenSource != "usage" || !r.Streamed {
					t.Fatalf("record %+v", r)
				}
				tokens += r.OutputTokens
				events += r.ContentEvents
			}
			if got := int(s.requests.Load()); got != len(recs) || got != sum.Sent+sum.Warmup {
				t.Errorf("the server saw %d requests; %d records, summary %d sent + %d warm-up", got, len(recs), sum.Sent, sum.Warmup)
			}
			if int(s.sent.Load()) != tokens {
				t.Errorf("the server sent %d tokens, the records count %d", s.sent.Load(), tokens)
			}
			if events != 3*len(recs) { // 5 tokens in chunks of 2: 3 events
				t.Errorf("%d content events for %d requests, want 3 each", events, len(recs))
			}
			if c.warm >= 0 && warm != c.warm {
				t.Errorf("%d warm-up records, want %d", warm, c.warm)
			}
			if c.warm < 0 && warm == 0 {
				t.Error("no warm-up records in a timed warm-up")
			}
			if p.Requests > 0 && sum.Sent != p.Requests {
				t.Errorf("sent %d measured requests, want %d", sum.Sent, p.Requests)
			}
			if sum.Completed != sum.Sent || sum.Errors != 0 || sum.Scheduled != sum.Sent+sum.Dropped || sum.Partial {
				t.Errorf("summary %+v", sum)
			}
			if got := sum.ITL.TotalCount(); got != int64(2*sum.Sent) {
				t.Errorf("the pooled ITL holds %d gaps, want 2 for each of %d measured requests", got, sum.Sent)
			}
			if p.Concurrency > 0 && s.peak.Load() > int64(p.Concurrency) {
				t.Errorf("%d requests in flight at once, over the concurrency of %d", s.peak.Load(), p.Concurrency)
			}
			if p.Rate > 0 && sum.Lateness.Count != sum.Sent {
				t.Errorf("lateness of %d requests, want %d", sum.Lateness.Count, sum.Sent)
			}
			if sum.MeasuredFrom < 0 || sum.MeasuredTo < sum.MeasuredFrom || sum.SendEnd < sum.MeasuredFrom {
				t.Errorf("window %v..%v, sending ended %v", sum.MeasuredFrom, sum.MeasuredTo, sum.SendEnd)
			}
			if p.Duration > 0 && (sum.SendEnd < sum.MeasuredFrom+p.Duration || sum.SendEnd > sum.MeasuredFrom+p.Duration+50*time.Millisecond) {
				t.Errorf("sending ended at %v, the measured part began at %v and lasts %v", sum.SendEnd, sum.MeasuredFrom, p.Duration)
			}
		})
	}
}

// TestSlotWait: a rate far over what a cap of one lets through: every
// arrival waits for the slot, and the wait is recorded, not counted as
// the pacer's lateness.
func TestSlotWait(t *testing.T) {
	s := &sseServer{tokens: 1, gap: 5 * time.Millisecond}
	srv := httptest.NewServer(s)
	defer srv.Close()
	sum, recs := collect(t, t.Context(), Plan{Target: Target{Base: mustURL(t, srv.URL), API: ChatCompletions}, Rate: 1000, Arrival: Constant,
		Concurrency: 1, Requests: 20, Source: fixedSource{`{}`}})
	waited := 0
	for _, r := range recs {
		if r.SlotWait > 0 {
			waited++
		}
		if r.Sent-r.Scheduled < r.SlotWait {
			t.Errorf("request %d waited %v for a slot but was sent %v after its time", r.Index, r.SlotWait, r.Sent-r.Scheduled)
		}
	}
	if waited < 15 || s.peak.Load() != 1 {
		t.Errorf("%d of 20 requests waited for the one slot; %d in flight at most", waited, s.peak.Load())
	}
	if sum.SlotWait.Count != 20 || sum.SlotWait.Max < 50*time.Millisecond {
		t.Errorf("slot waits %+v: 20 arrivals 1 ms apart through a slot held 5 ms each wait up to ~80 ms", sum.SlotWait)
	}
	if sum.Lateness.P50 > 5*time.Millisecond {
		t.Errorf("the pacer's own lateness %+v counts the slot waits", sum.Lateness)
	}
}

// TestTimes: a stream whose events come at known times: TTFT is the first
// content event's (not the role chunk's), the gaps are the server's, E2E
// the last content event's.
func TestTimes(t *testing.T) {
	s := &sseServer{tokens: 4, gap: 40 * time.Millisecond}
	srv := httptest.NewServer(s)
	defer srv.Close()
	sum, recs := collect(t, t.Context(), Plan{Target: Target{Base: mustURL(t, srv.URL), API: ChatCompletions}, Concurrency: 2, Requests: 4, Source: fixedSource{`{}`}})
	for _, r := range recs {
		if r.TTFB < 0 || r.TTFB >= r.TTFT || r.TTFT < 40*time.Millisecond || r.E2E < r.TTFT+3*40*time.Millisecond || r.Done < r.E2E {
			t.Errorf("times: TTFB %v TTFT %v E2E %v done %v", r.TTFB, r.TTFT, r.E2E, r.Done)
		}
		if r.ContentEvents != 4 || r.ITLSum != r.E2E-r.TTFT || r.ITLMax < 40*time.Millisecond || r.ITLMax > r.ITLSum {
			t.Errorf("gaps: %d events, ITL sum %v max %v, E2E-TTFT %v", r.ContentEvents, r.ITLSum, r.ITLMax, r.E2E-r.TTFT)
		}
	}
	// One gap can read shorter than the server's 40 ms where the event
	// before it reached the client late; the gaps' mean cannot (each
	// request's three add up to at least 120 ms), to the histogram's
	// precision of three significant digits.
	if sum.ITL.TotalCount() != 12 || sum.ITL.Mean() < 40_000*0.999 {
		t.Errorf("ITL histogram: %d gaps, mean %.0f µs", sum.ITL.TotalCount(), sum.ITL.Mean())
	}
}

// answerWith serves a fixed body with a content type and status.
func answerWith(status int, ct, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func TestOutcomes(t *testing.T) {
	const sse = "text/event-stream"
	tok := `data: {"model":"m","choices":[{"delta":{"content":"a"}}]}` + "\n\n"
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	for _, c := range []struct {
		name    string
		api     API
		h       http.Handler
		url     string
		timeout time.Duration
		want    ErrorKind
		check   func(t *testing.T, r Record)
	}{
		{name: "an HTTP error names the server's message", h: answerWith(404, "application/json", `{"error":{"message":"The model 'x' does not exist.","type":"NotFoundError","code":404}}`),
			want: ErrHTTP, check: func(t *testing.T, r Record) {
				if r.Status != 404 || !strings.Contains(r.ErrorDetail, "The model 'x' does not exist.") {
					t.Errorf("%d %q", r.Status, r.ErrorDetail)
				}
			}},
		{name: "an HTTP error that is not JSON", h: answerWith(503, "text/html", "<h1>busy</h1>\n<p>later</p>"), want: ErrHTTP,
			check: func(t *testing.T, r Record) {
				if r.ErrorDetail != "503 Service Unavailable: <h1>busy</h1> <p>later</p>" {
					t.Errorf("%q", r.ErrorDetail)
				}
			}},
		{name: "a stream cut by the server", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sse)
			io.WriteString(w, tok)
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}), want: ErrCut},
		{name: "a stream that ends without [DONE] or a finish", h: answerWith(200, sse, tok+tok), want: ErrCut, check: func(t *testing.T, r Record) {
			if r.ContentEvents != 2 || r.TTFT < 0 {
				t.Errorf("%+v", r)
			}
		}},
		{name: "a stream that ends with a finish and no [DONE]", h: answerWith(200, sse, tok+`data: {"choices":[{"delta":{},"finish_reason":"stop"}]}`+"\n\n"), want: "",
			check: func(t *testing.T, r Record) {
				if r.Finish != "stop" || r.TokenSource != "events" || r.OutputTokens != 1 {
					t.Errorf("%+v", r)
				}
			}},
		{name: "an error object mid-stream", h: answerWith(200, sse, tok+`data: {"error":{"message":"engine died","code":500}}`+"\n\ndata: [DONE]\n\n"), want: ErrStream,
			check: func(t *testing.T, r Record) {
				if r.ErrorDetail != "engine died" {
					t.Errorf("%q", r.ErrorDetail)
				}
			}},
		{name: "usage that cannot be true", h: answerWith(200, sse, tok+`data: {"choices":[],"usage":{"prompt_tokens":-3,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n"), want: ErrInvalidUsage},
		{name: "cached over the prompt", h: answerWith(200, sse, tok+`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}`+"\n\ndata: [DONE]\n\n"), want: ErrInvalidUsage},
		{name: "a timeout", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sse)
			io.WriteString(w, tok)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}), timeout: 100 * time.Millisecond, want: ErrTimeout, check: func(t *testing.T, r Record) {
			if r.TTFT < 0 || r.Done < 100*time.Millisecond {
				t.Errorf("%+v", r)
			}
		}},
		{name: "no server", url: closedURL, want: ErrConnect, check: func(t *testing.T, r Record) {
			if r.Status != 0 || r.TTFB != -1 {
				t.Errorf("%+v", r)
			}
		}},
		{name: "a whole answer to a stream asked for", h: answerWith(200, "application/json", `{"model":"m","choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`),
			want: "", check: func(t *testing.T, r Record) {
				if r.Streamed || r.OutputTokens != 1 || r.PromptTokens != 4 || r.TokenSource != "usage" {
					t.Errorf("%+v", r)
				}
			}},
		{name: "a compressed answer", h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", sse)
			io.WriteString(w, "\x1f\x8b")
		}), want: ErrStream},
		{name: "llama.cpp's timings are the split", h: answerWith(200, sse, tok+`data: {"choices":[{"delta":{},"finish_reason":"length"}],"timings":{"cache_n":3,"prompt_n":5,"prompt_ms":12.5,"predicted_n":1,"predicted_ms":4}}`+"\n\ndata: [DONE]\n\n"),
			want: "", check: func(t *testing.T, r Record) {
				s := r.Split
				if s == nil || s.Source != "llama.cpp" || s.PromptTokens != 8 || s.CachedTokens != 3 || s.Prefill != 12500*time.Microsecond || s.Decode != 4*time.Millisecond || s.Load != -1 ||
					r.OutputTokens != 1 || r.PromptTokens != 8 || r.CachedTokens != 3 || r.TokenSource != "usage" {
					t.Errorf("%+v %+v", r, s)
				}
			}},
		{name: "Ollama's last line is the split", api: OllamaChat, h: answerWith(200, "application/x-ndjson",
			`{"model":"m","message":{"role":"assistant","content":"a"},"done":false}`+"\n"+
				`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","load_duration":1000000,"prompt_eval_count":9,"prompt_eval_duration":2000000,"eval_count":1,"eval_duration":3000000}`+"\n"),
			want: "", check: func(t *testing.T, r Record) {
				s := r.Split
				if s == nil || s.Source != "ollama" || s.Load != time.Millisecond || s.Prefill != 2*time.Millisecond || s.Decode != 3*time.Millisecond || s.PromptTokens != 9 || s.CachedTokens != -1 ||
					r.Finish != "length" || r.OutputTokens != 1 || r.PromptTokens != 9 || r.CachedTokens != -1 {
					t.Errorf("%+v %+v", r, s)
				}
			}},
		{name: "Ollama's error line", api: OllamaGenerate, h: answerWith(200, "application/x-ndjson", `{"model":"m","response":"a","done":false}`+"\n"+`{"error":"out of memory"}`+"\n"), want: ErrStream},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := c.url
			if c.h != nil {
				srv := httptest.NewServer(c.h)
				defer srv.Close()
				u = srv.URL
			}
			_, recs := collect(t, t.Context(), Plan{Target: Target{Base: mustURL(t, u), API: c.api, Timeout: c.timeout}, Concurrency: 1, Requests: 1, Source: fixedSource{`{}`}})
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			r := recs[0]
			if r.Error != c.want {
				t.Errorf("error %q (%s), want %q", r.Error, r.ErrorDetail, c.want)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestInterrupt: a cancellation stops sending; requests in flight get the
// drain to finish, and are canceled past it; the summary is partial.
func TestInterrupt(t *testing.T) {
	for _, c := range []struct {
		name  string
		drain time.Duration
		want  ErrorKind
	}{{"no drain", 0, ErrCanceled}, {"a drain long enough", 2 * time.Second, ""}} {
		t.Run(c.name, func(t *testing.T) {
			s := &sseServer{tokens: 10, gap: 20 * time.Millisecond}
			srv := httptest.NewServer(s)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			sum, recs := collect(t, ctx, Plan{Target: Target{Base: mustURL(t, srv.URL), API: ChatCompletions}, Concurrency: 3, Requests: 1000, Drain: c.drain, Source: fixedSource{`{}`}})
			if !sum.Partial || len(recs) != 3 || sum.Sent != 3 {
				t.Fatalf("partial %v, %d records, sent %d", sum.Partial, len(recs), sum.Sent)
			}
			for _, r := range recs {
				if r.Error != c.want {
					t.Errorf("%q (%s), want %q", r.Error, r.ErrorDetail, c.want)
				}
			}
		})
	}
}

// TestPlanRefused: a plan that cannot run is refused before anything is
// sent.
func TestPlanRefused(t *testing.T) {
	base := mustURL(t, "http://127.0.0.1:1")
	good := Plan{Target: Target{Base: base}, Concurrency: 1, Requests: 1, Source: fixedSource{}}
	for _, c := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"a rate of 0 and no concurrency", func(p *Plan) { p.Concurrency = 0 }, "closed loop needs a concurrency"},
		{"a negative rate", func(p *Plan) { p.Rate = -1 }, "rate of -1"},
		{"a negative duration", func(p *Plan) { p.Duration = -time.Second }, "cannot be negative"},
		{"neither requests nor duration", func(p *Plan) { p.Requests = 0 }, "how many requests"},
		{"no source", func(p *Plan) { p.Source = nil }, "no source"},
		{"a target without a host", func(p *Plan) { p.Target.Base = mustURL(t, "file:///x") }, "http:// or https://"},
		{"a negative warm-up", func(p *Plan) { p.Warmup.Requests = -1 }, "cannot be negative"},
	} {
		p := good
		c.edit(&p)
		if _, err := Run(t.Context(), p, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want …%s…", c.name, err, c.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct {
		base string
		api  API
		want string
	}{
		{"http://h:8000", ChatCompletions, "http://h:8000/v1/chat/completions"},
		{"http://h:8000/", Completions, "http://h:8000/v1/completions"},
		{"http://h/v1", ChatCompletions, "http://h/v1/chat/completions"},
		{"http://h/openai/v1/", Completions, "http://h/openai/v1/completions"},
		{"http://h/gw/v1/chat/completions", ChatCompletions, "http://h/gw/v1/chat/completions"},
		{"http://h:11434", OllamaChat, "http://h:11434/api/chat"},
		{"http://h:11434/api/generate?x=1", OllamaGenerate, "http://h:11434/api/generate"},
	} {
		if got := Endpoint(Target{Base: mustURL(t, c.base), API: c.api}).String(); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.base, c.api, got, c.want)
		}
	}
}

// TestProbe: one request, its record.
func TestProbe(t *testing.T) {
	s := &sseServer{tokens: 3}
	srv := httptest.NewServer(s)
	defer srv.Close()
	r, err := Probe(t.Context(), Target{Base: mustURL(t, srv.URL)}, workload.Request{Body: []byte(`{}`)})
	if err != nil || r.Error != "" || r.OutputTokens != 3 || r.PromptTokens != 7 || s.requests.Load() != 1 {
		t.Errorf("%+v %v", r, err)
	}
}
