package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/stream"
	"github.com/inferscope/inferscope/internal/termsafe"
)

const (
	// maxWhole bounds an answer that is not streamed, read whole.
	maxWhole = 16 << 20
	// maxDetail bounds the part of an error answer read for its message.
	maxDetail = 4 << 10
	// detailRunes is how much of an error a Record keeps.
	detailRunes = 200
)

// readBuffers lend each request the buffer it reads its answer through:
// an event is a few hundred bytes, a read a few events.
var readBuffers = sync.Pool{New: func() any { return new([16 << 10]byte) }}

// ticket is one request to send: which, in which part, when it was due,
// and how long it waited for a slot.
type ticket struct {
	i         int
	warm      bool
	scheduled time.Duration // -1 in a closed loop: it is the send
	slotWait  time.Duration
}

// answer is the bench's handler of one answer's events: it times every
// content event and keeps what the answer reported.
type answer struct {
	first, last time.Time
	content     int
	lostFirst   bool // a line over the bound came before the first content: TTFT unknown
	itlMax      time.Duration
	itlSum      time.Duration
	gaps        []int64 // µs, for the pooled histogram

	usage   *stream.Usage
	tim     *stream.Timings
	final   *stream.OllamaFinal
	finish  string
	done    bool // [DONE], Ollama's done, or a whole answer read
	errMsg  string
	decoded bool
	live    func() // a content event arrived (the progress count)
}

func (a *answer) Event(e *stream.Event) bool {
	switch e.Kind {
	case stream.Done:
		a.done = true
	case stream.Skipped:
		if a.content == 0 {
			a.lostFirst = true
		}
	case stream.Data:
		a.decoded = true
		if e.Error != "" && a.errMsg == "" {
			a.errMsg = e.Error
		}
		if e.Content {
			if a.content == 0 {
				a.first = e.T
			} else {
				gap := e.T.Sub(a.last)
				a.itlSum += gap
				a.itlMax = max(a.itlMax, gap)
				a.gaps = append(a.gaps, gap.Microseconds())
			}
			a.last = e.T
			a.content++
			if a.live != nil {
				a.live()
			}
		}
		if e.Usage != nil {
			a.usage = e.Usage
		}
		if e.Timings != nil {
			a.tim = e.Timings
		}
		if e.Finish != "" {
			a.finish = e.Finish
		}
		if e.Final != nil {
			a.final, a.done = e.Final, true
		}
		if e.Whole {
			a.done = true
		}
	}
	return false // every content event is timed
}

var answers = sync.Pool{New: func() any { return new(answer) }}

// send sends one request and reads its answer to the end.
func (r *runner) send(tk ticket, w workload.Request) (Record, *answer) {
	rec := Record{Index: tk.i, Warmup: tk.warm, Scheduled: tk.scheduled, SlotWait: tk.slotWait, Sent: -1,
		TTFB: -1, TTFT: -1, E2E: -1, Done: -1, PromptTokens: -1, OutputTokens: -1, CachedTokens: -1,
		RequestedPrompt: w.PromptTokens, RequestedOutput: w.OutputTokens}
	ctx := r.reqCtx
	if r.p.Target.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.p.Target.Timeout)
		defer cancel()
	}
	var firstByte time.Time
	conns := 0
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { conns++ },
		GotFirstResponseByte: func() { firstByte = time.Now() },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(w.Body))
	if err != nil {
		rec.Error, rec.ErrorDetail = ErrConnect, clip(err.Error())
		return rec, nil
	}
	req.Header.Set("Content-Type", "application/json")
	// A reused connection the server had closed (llama.cpp's server
	// closes one after every stream, whatever its Keep-Alive says) fails
	// before the server took the request: the transport may then send it
	// again on a new connection, which a key marks as allowed (an empty
	// key is not sent). Resent says it happened.
	req.Header["X-Idempotency-Key"] = nil
	sent := time.Now()
	rec.Sent = sent.Sub(r.t0)
	if tk.scheduled < 0 {
		rec.Scheduled = rec.Sent
	}
	r.sent(tk)
	resp, err := r.client.Do(req)
	rec.Resent = conns > 1
	if err != nil {
		rec.Done = time.Since(sent)
		rec.Error, rec.ErrorDetail = r.failure(ctx, err), clip(err.Error())
		return rec, nil
	}
	defer resp.Body.Close()
	if firstByte.IsZero() {
		firstByte = time.Now()
	}
	rec.TTFB = firstByte.Sub(sent)
	rec.Status = resp.StatusCode
	a := answers.Get().(*answer)
	*a = answer{gaps: a.gaps[:0], live: r.event}
	var rd stream.Reader
	framing := stream.FramingOf(resp.Header.Get("Content-Type"))
	rd.Reset(a, r.p.Target.API, framing, maxWhole)
	if resp.StatusCode != http.StatusOK {
		// The error's own message where it is JSON; else its first line.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDetail))
		rd.Reset(a, r.p.Target.API, stream.Whole, maxDetail)
		rd.Feed(b, time.Now())
		rd.End(time.Now())
		rec.Done = time.Since(sent)
		rec.Error, rec.ErrorDetail = ErrHTTP, clip(resp.Status)
		switch {
		case a.errMsg != "":
			rec.ErrorDetail = clip(resp.Status + ": " + a.errMsg)
		case len(bytes.TrimSpace(b)) > 0:
			rec.ErrorDetail = clip(resp.Status + ": " + string(b))
		}
		return rec, a
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		io.Copy(io.Discard, resp.Body)
		rec.Done = time.Since(sent)
		rec.Error, rec.ErrorDetail = ErrStream, clip("the answer came compressed ("+enc+"), which was not asked for: not read")
		return rec, a
	}
	rec.Streamed = framing != stream.Whole
	buf := readBuffers.Get().(*[16 << 10]byte)
	defer readBuffers.Put(buf)
	var readErr error
	for {
		n, err := resp.Body.Read(buf[:])
		now := time.Now()
		if n > 0 {
			rd.Feed(buf[:n], now)
		}
		if err == io.EOF {
			rd.End(now)
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	end := time.Now()
	rec.Done = end.Sub(sent)
	r.fill(&rec, a, sent)
	switch {
	case readErr != nil:
		rec.Error, rec.ErrorDetail = r.failure(ctx, readErr), clip(readErr.Error())
		if rec.Error == ErrConnect {
			rec.Error = ErrCut // the answer had begun
		}
	case a.errMsg != "":
		rec.Error, rec.ErrorDetail = ErrStream, clip(a.errMsg)
	case !a.done && !(a.finish != "" && rec.Streamed):
		// A stream ends with [DONE] or Ollama's done; one that ends
		// with a finish reason and no [DONE] is taken as whole (some
		// servers send none).
		rec.Error, rec.ErrorDetail = ErrCut, "the answer ended before its end"
		if !a.decoded && !rec.Streamed {
			rec.Error, rec.ErrorDetail = ErrStream, "the answer is not the JSON of its API"
		}
	}
	return rec, a
}

// failure says why a request got no (whole) answer: its own timeout, the
// run's cancellation (the drain over), or the connection.
func (r *runner) failure(ctx context.Context, err error) ErrorKind {
	switch {
	case r.reqCtx.Err() != nil:
		return ErrCanceled
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	}
	return ErrConnect
}

// fill takes the answer's times, tokens and the server's own split.
func (r *runner) fill(rec *Record, a *answer, sent time.Time) {
	rec.ContentEvents, rec.ITLMax, rec.ITLSum, rec.Finish = a.content, a.itlMax, a.itlSum, a.finish
	if a.content > 0 {
		if !a.lostFirst {
			rec.TTFT = a.first.Sub(sent)
		}
		rec.E2E = a.last.Sub(sent)
	}
	valid := true
	n := func(c *stream.Count) int {
		switch {
		case c == nil:
			return -1
		case !c.OK:
			valid = false
			return -1
		}
		return c.N
	}
	switch {
	case a.usage != nil && a.usage.CompletionTokens != nil:
		rec.OutputTokens, rec.PromptTokens, rec.CachedTokens = n(a.usage.CompletionTokens), n(a.usage.PromptTokens), n(a.usage.Cached())
	case a.final != nil && a.final.EvalCount != nil:
		rec.OutputTokens, rec.PromptTokens = n(a.final.EvalCount), n(a.final.PromptEvalCount)
	case a.tim != nil && a.tim.PredictedN != nil:
		rec.OutputTokens, rec.CachedTokens = n(a.tim.PredictedN), n(a.tim.CacheN)
		if p := n(a.tim.PromptN); p >= 0 {
			rec.PromptTokens = p + max(rec.CachedTokens, 0)
		}
	}
	if rec.CachedTokens > 0 && rec.PromptTokens >= 0 && rec.CachedTokens > rec.PromptTokens {
		valid = false
	}
	switch {
	case !valid:
		rec.PromptTokens, rec.OutputTokens, rec.CachedTokens = -1, a.content, -1
		rec.TokenSource = "events"
		rec.Error, rec.ErrorDetail = ErrInvalidUsage, "the server reported token counts that cannot be true"
	case rec.OutputTokens >= 0:
		rec.TokenSource = "usage"
	default:
		rec.OutputTokens, rec.TokenSource = a.content, "events"
	}
	rec.Split = split(a)
}

// split is the server's own account of the request's phases.
func split(a *answer) *Split {
	n := func(c *stream.Count) int {
		if c == nil || !c.OK {
			return -1
		}
		return c.N
	}
	d := func(p *stream.Phase) time.Duration {
		if p == nil || !p.OK {
			return -1
		}
		return p.D
	}
	switch {
	case a.final != nil:
		f := a.final
		return &Split{Source: "ollama", Load: d((*stream.Phase)(f.LoadDuration)), Prefill: d((*stream.Phase)(f.PromptEvalDuration)),
			Decode: d((*stream.Phase)(f.EvalDuration)), PromptTokens: n(f.PromptEvalCount), CachedTokens: -1, GeneratedTokens: n(f.EvalCount)}
	case a.tim != nil:
		t := a.tim
		s := &Split{Source: "llama.cpp", Load: -1, Prefill: d((*stream.Phase)(t.PromptMS)), Decode: d((*stream.Phase)(t.PredictedMS)),
			PromptTokens: -1, CachedTokens: n(t.CacheN), GeneratedTokens: n(t.PredictedN)}
		if p := n(t.PromptN); p >= 0 {
			s.PromptTokens = p + max(s.CachedTokens, 0)
		}
		return s
	}
	return nil
}

// clip makes a server's words one clean line.
func clip(s string) string { return termsafe.Line(s, detailRunes) }
