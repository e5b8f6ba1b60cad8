package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/inferscope/inferscope/sim"
)

// The demo's API: OpenAI-compatible (/v1/chat/completions, /v1/completions,
// /v1/models) and Ollama-compatible (/api/chat, /api/generate, /api/tags)
// endpoints backed by the simulated engine. A request becomes a simulated
// one (its prompt's messages become segments, so a repeated system prompt
// or conversation hits the prefix cache), and its answer streams at the
// simulated pace: a chunk as the simulation produces tokens. The answer's
// words are filler; its counts and times are the simulator's own.

// DefaultModel is the model name the API reports when a request names none.
const DefaultModel = "inferscope-sim"

// maxAPIBody bounds a request body the API reads.
const maxAPIBody = 8 << 20

// apiHandler serves the API on a simulator.
type apiHandler struct {
	s    *sim.Sim
	span sim.Span // answer lengths when the request sets none
	now  func() time.Time
}

func newAPI(s *sim.Sim) *apiHandler {
	return &apiHandler{s: s, span: s.Config().Workload.OutputTokens, now: time.Now}
}

func (a *apiHandler) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { a.openai(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { a.openai(w, r, false) })
	mux.HandleFunc("GET /v1/models", a.models)
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) { a.ollama(w, r, true) })
	mux.HandleFunc("POST /api/generate", func(w http.ResponseWriter, r *http.Request) { a.ollama(w, r, false) })
	mux.HandleFunc("GET /api/tags", a.tags)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "inferscope demo: a simulated server's OpenAI- and Ollama-compatible API")
	})
}

// message is a chat message; content may be a string or a list of parts.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's text: the string, or its text parts joined.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// tokens estimates a text's tokens as about four bytes each, the usual
// figure for English with a BPE vocabulary.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

// segment is one message as a prompt segment: same role and text, same
// identity, so the prefix cache sees a repeated prefix. The template's
// few tokens per message are counted in.
func segment(role, text string) sim.Segment {
	h := fnv.New64a()
	io.WriteString(h, role)
	h.Write([]byte{0})
	io.WriteString(h, text)
	return sim.Segment{ID: h.Sum64(), Tokens: tokens(text) + 4}
}

// Why an answer ends, as both APIs say it: where the answer ended on its
// own, and where a limit cut it (the request's max_tokens or num_predict,
// or the context the prompt leaves).
const (
	finishStop   = "stop"
	finishLength = "length"
)

// answerLength is how many tokens to generate, and why the answer ends
// there: the request's limit ([finishLength]), else a length drawn from the
// scenario's span by the prompt (the same prompt gets the same length,
// [finishStop]), either cut to the context the prompt leaves
// ([finishLength]).
func (a *apiHandler) answerLength(limit int, segs []sim.Segment) (int, string) {
	n, why := limit, finishLength
	if n <= 0 {
		why = finishStop
		h := uint64(14695981039346656037)
		for _, s := range segs {
			h = (h ^ s.ID) * 1099511628211
		}
		lo, hi := math.Log(float64(a.span.Min)), math.Log(float64(a.span.Max)+1)
		n = int(math.Exp(lo + float64(h>>11)/float64(1<<53)*(hi-lo)))
		n = min(max(n, a.span.Min), a.span.Max)
	}
	prompt := 0
	for _, s := range segs {
		prompt += s.Tokens
	}
	if room := a.s.Config().MaxSeqLen - prompt; n > room {
		n, why = room, finishLength
	}
	return max(1, n), why
}

// apiError answers an error the way each API does.
func apiError(w http.ResponseWriter, status int, openai bool, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if openai {
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
		return
	}
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func readJSON(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAPIBody)).Decode(v); err != nil {
		return fmt.Errorf("the request body is not the JSON this endpoint takes: %v", err)
	}
	return nil
}

// submit gives the simulator a request, and says why its answer will end
// where it does: the one decision both APIs' answers report.
func (a *apiHandler) submit(segs []sim.Segment, limit int) (*sim.Job, string, error) {
	n, why := a.answerLength(limit, segs)
	j, err := a.s.Submit(segs, n)
	return j, why, err
}

// wait calls emit with each new run of tokens as the simulation produces
// them, until the answer is complete or the client goes away (which
// cancels the simulated request).
func wait(r *http.Request, j *sim.Job, emit func(from, to int) error) (sim.Progress, error) {
	sent := 0
	for {
		select {
		case <-r.Context().Done():
			j.Cancel()
			return sim.Progress{}, r.Context().Err()
		case <-j.Changed():
		}
		p := j.Progress()
		if p.Generated > sent {
			if err := emit(sent, p.Generated); err != nil {
				j.Cancel()
				return sim.Progress{}, err
			}
			sent = p.Generated
		}
		if p.Done || p.Cancelled {
			return p, nil
		}
	}
}

// words is the filler the answers are made of, one token a word.
var words = strings.Fields("the simulated engine streams these words at the pace its decode steps take , one token each , so that a client and a proxy see a real server's timing without a model .")

func filler(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}

func modelName(m string) string {
	if m == "" {
		return DefaultModel
	}
	return m
}

// openaiRequest is what the API reads of an OpenAI request.
type openaiRequest struct {
	Model         string          `json:"model"`
	Messages      []message       `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

func (a *apiHandler) openai(w http.ResponseWriter, r *http.Request, chat bool) {
	var req openaiRequest
	if err := readJSON(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, true, err.Error())
		return
	}
	var segs []sim.Segment
	if chat {
		for _, m := range req.Messages {
			segs = append(segs, segment(m.Role, m.text()))
		}
	} else {
		var p string
		if json.Unmarshal(req.Prompt, &p) != nil {
			var ps []string
			json.Unmarshal(req.Prompt, &ps)
			p = strings.Join(ps, "")
		}
		segs = append(segs, segment("", p))
	}
	if len(segs) == 0 {
		apiError(w, http.StatusBadRequest, true, "the request has no messages")
		return
	}
	ans := &openaiAnswer{chat: chat, model: modelName(req.Model), created: a.now().Unix(), limit: req.MaxCompletionTokens}
	if ans.limit <= 0 {
		ans.limit = req.MaxTokens
	}
	ans.id, ans.object = fmt.Sprintf("cmpl-%x", a.now().UnixNano()), "text_completion"
	if chat {
		ans.id, ans.object = "chat"+ans.id, "chat.completion"
	}
	j, finish, err := a.submit(segs, ans.limit)
	if err != nil {
		apiError(w, http.StatusBadRequest, true, err.Error())
		return
	}
	ans.finish = finish
	if req.Stream {
		ans.stream(w, r, j, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	} else {
		ans.whole(w, r, j)
	}
}

// openaiAnswer is one OpenAI answer being written.
type openaiAnswer struct {
	chat              bool
	id, object, model string
	created           int64
	limit             int    // max_tokens, 0 for none
	finish            string // why the answer ends (answerLength)
}

// choice is the answer's one choice: text, a delta, or a message.
func (o *openaiAnswer) choice(text string, finish any, delta bool) map[string]any {
	c := map[string]any{"index": 0, "finish_reason": finish}
	switch {
	case !o.chat:
		c["text"] = text
	case delta:
		c["delta"] = map[string]any{"content": text}
	default:
		c["message"] = map[string]any{"role": "assistant", "content": text}
	}
	return c
}

func (o *openaiAnswer) body(object string, choices []any) map[string]any {
	return map[string]any{"id": o.id, "object": object, "created": o.created, "model": o.model, "choices": choices}
}

// usage is the simulator's account as OpenAI's usage object.
func usage(p sim.Progress) map[string]any {
	g := p.Generation
	return map[string]any{"prompt_tokens": g.PromptTokens, "completion_tokens": g.GeneratedTokens,
		"total_tokens": g.PromptTokens + g.GeneratedTokens, "prompt_tokens_details": map[string]any{"cached_tokens": g.CachedTokens}}
}

// wholeText waits for the job to finish and returns its progress and the
// whole text it generated (an answer that is not streamed).
func wholeText(r *http.Request, j *sim.Job) (sim.Progress, string, error) {
	var text strings.Builder
	p, err := wait(r, j, func(from, to int) error {
		text.WriteString(filler(from, to))
		return nil
	})
	return p, text.String(), err
}

// whole answers once the generation is complete.
func (o *openaiAnswer) whole(w http.ResponseWriter, r *http.Request, j *sim.Job) {
	p, text, err := wholeText(r, j)
	if err != nil {
		return // the client went away
	}
	b := o.body(o.object, []any{o.choice(text, o.finish, false)})
	b["usage"] = usage(p)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(b)
}

// stream answers chunk by chunk as the simulation produces tokens.
func (o *openaiAnswer) stream(w http.ResponseWriter, r *http.Request, j *sim.Job, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) error {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	object := o.object
	if o.chat {
		object += ".chunk"
		// The role comes first, before any token, as vLLM and OpenAI send it.
		send(o.body(object, []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}))
	}
	p, err := wait(r, j, func(from, to int) error {
		return send(o.body(object, []any{o.choice(filler(from, to), nil, true)}))
	})
	if err != nil {
		return // the client went away
	}
	last := o.choice("", o.finish, true)
	if o.chat {
		last["delta"] = map[string]any{}
	}
	send(o.body(object, []any{last}))
	if withUsage {
		b := o.body(object, []any{})
		b["usage"] = usage(p)
		send(b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// ollamaRequest is what the API reads of an Ollama request.
type ollamaRequest struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Prompt   string    `json:"prompt"`
	System   string    `json:"system"`
	Stream   *bool     `json:"stream"`
	Options  struct {
		NumPredict int `json:"num_predict"`
	} `json:"options"`
}

func (a *apiHandler) ollama(w http.ResponseWriter, r *http.Request, chat bool) {
	ans := &ollamaAnswer{chat: chat, start: a.now(), now: a.now}
	var req ollamaRequest
	if err := readJSON(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, false, err.Error())
		return
	}
	segs := req.segments(chat)
	ans.model, ans.limit = modelName(req.Model), req.Options.NumPredict
	if len(segs) == 0 {
		// Ollama loads the model and answers done at once.
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"model": ans.model, "created_at": ans.start.UTC(), "response": "", "done": true, "done_reason": "load"})
		return
	}
	j, finish, err := a.submit(segs, ans.limit)
	if err != nil {
		apiError(w, http.StatusBadRequest, false, err.Error())
		return
	}
	ans.finish = finish
	if req.Stream == nil || *req.Stream {
		ans.stream(w, r, j)
	} else {
		ans.whole(w, r, j)
	}
}

// segments is the request's prompt as the simulator's segments.
func (req *ollamaRequest) segments(chat bool) []sim.Segment {
	var segs []sim.Segment
	if chat {
		for _, m := range req.Messages {
			segs = append(segs, segment(m.Role, m.text()))
		}
		return segs
	}
	if req.System != "" {
		segs = append(segs, segment("system", req.System))
	}
	if req.Prompt != "" {
		segs = append(segs, segment("user", req.Prompt))
	}
	return segs
}

// ollamaAnswer is one Ollama answer being written.
type ollamaAnswer struct {
	chat   bool
	model  string
	limit  int    // num_predict, 0 for none
	finish string // why the answer ends (answerLength)
	start  time.Time
	now    func() time.Time
}

func (o *ollamaAnswer) line(text string) *ollamaLine {
	l := &ollamaLine{Model: o.model, CreatedAt: o.now().UTC()}
	if o.chat {
		l.Message = &ollamaMessage{Role: "assistant", Content: text}
	} else {
		l.Response = &text
	}
	return l
}

// final is the last line, with the counts and durations in nanoseconds,
// as Ollama reports them: the simulator's prefill and decode (simulated
// time), the whole request as this server saw it. Queueing is in neither,
// as in Ollama, whose load_duration is the model's load.
func (o *ollamaAnswer) final(p sim.Progress, text string) *ollamaLine {
	g := p.Generation
	l := o.line(text)
	l.Done, l.DoneReason = true, o.finish
	l.ollamaCounts = &ollamaCounts{
		TotalDuration:      o.now().Sub(o.start).Nanoseconds(),
		PromptEvalCount:    g.PromptTokens,
		PromptEvalDuration: g.Prefill.Nanoseconds(),
		EvalCount:          g.GeneratedTokens,
		EvalDuration:       g.Decode.Nanoseconds(),
	}
	return l
}

// whole answers once the generation is complete ("stream": false).
func (o *ollamaAnswer) whole(w http.ResponseWriter, r *http.Request, j *sim.Job) {
	p, text, err := wholeText(r, j)
	if err != nil {
		return // the client went away
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(o.final(p, text))
}

// stream answers line by line as the simulation produces tokens.
func (o *ollamaAnswer) stream(w http.ResponseWriter, r *http.Request, j *sim.Job) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	p, err := wait(r, j, func(from, to int) error { return send(o.line(filler(from, to))) })
	if err != nil {
		return // the client went away
	}
	send(o.final(p, ""))
}

// ollamaLine is one line of an Ollama answer, its fields in Ollama's order.
type ollamaLine struct {
	Model      string         `json:"model"`
	CreatedAt  time.Time      `json:"created_at"`
	Message    *ollamaMessage `json:"message,omitempty"`
	Response   *string        `json:"response,omitempty"`
	DoneReason string         `json:"done_reason,omitempty"`
	Done       bool           `json:"done"`
	*ollamaCounts
}

type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type ollamaCounts struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

func (a *apiHandler) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": DefaultModel, "object": "model", "owned_by": "inferscope"}}})
}

func (a *apiHandler) tags(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"models": []any{map[string]any{"name": DefaultModel, "model": DefaultModel}}})
}

// apiTick is how often the simulation catches up with the wall clock when
// the API is served: often enough that tokens stream at the simulated pace
// rather than in bursts of the view's tick.
const apiTick = 5 * time.Millisecond

// serveAPI serves the API on addr until ctx ends; done is closed once it
// has stopped.
func serveAPI(ctx context.Context, addr string, s *sim.Sim) (url string, done <-chan struct{}, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, &ListenError{Addr: addr, InUse: addrInUse(err), Err: err}
	}
	mux := http.NewServeMux()
	newAPI(s).routes(mux)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		hs.Serve(ln) // returns http.ErrServerClosed on shutdown
	}()
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	}()
	return "http://" + strings.TrimSuffix(strings.TrimPrefix(metricsURL(ln.Addr()), "http://"), "/metrics"), stopped, nil
}

// Totals is the simulator's own account of the run so far: the truth a
// proxy's figures are checked against.
func (s *Server) Totals() sim.Totals { return s.sim.Totals() }
