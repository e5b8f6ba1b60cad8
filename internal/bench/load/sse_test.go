package load

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// fixedSource sends the same body every time.
type fixedSource struct{ body string }

func (s fixedSource) Next(i int) workload.Request {
	return workload.Request{Body: []byte(s.body), PromptTokens: 7, OutputTokens: 3}
}

// sseServer streams a role chunk, tokens content chunks gap apart, a
// finish chunk, a usage chunk and [DONE]; it counts what it served.
type sseServer struct {
	tokens   int
	gap      time.Duration
	requests atomic.Int64
	sent     atomic.Int64 // tokens
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.requests.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
	f.Flush()
	for i := range s.tokens {
		if s.gap > 0 {
			time.Sleep(s.gap)
		}
		fmt.Fprintf(w, `data: {"model":"m","choices":[{"index":0,"delta":{"content":"t%d"}}]}`+"\n\n", i)
		f.Flush()
		s.sent.Add(1)
	}
	fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n")
	fmt.Fprintf(w, `data: {"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`+"\n\n", s.tokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSmoke(t *testing.T) {
	s := &sseServer{tokens: 5, gap: time.Millisecond}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var recs []Record
	sum, err := Run(t.Context(), Plan{Target: Target{Base: mustURL(t, srv.URL), API: ChatCompletions}, Concurrency: 4, Requests: 20,
		Source: fixedSource{`{"model":"m","stream":true}`}}, func(r Record) { recs = append(recs, r) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", sum)
	for _, r := range recs[:2] {
		t.Logf("%+v", r)
	}
	if len(recs) != 20 || s.requests.Load() != 20 || sum.Completed != 20 {
		t.Errorf("records %d, server %d, completed %d", len(recs), s.requests.Load(), sum.Completed)
	}
	_ = strconv.Itoa
}
