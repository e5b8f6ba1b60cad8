package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// api is a measured endpoint.
type api int

const (
	apiChat           api = iota // OpenAI /v1/chat/completions
	apiCompletions               // OpenAI /v1/completions
	apiOllamaChat                // Ollama /api/chat
	apiOllamaGenerate            // Ollama /api/generate
	numAPIs

	apiNone api = -1 // not measured: passed through
)

var apis = [numAPIs]struct {
	name   string
	openai bool
}{
	apiChat:           {"chat_completions", true},
	apiCompletions:    {"completions", true},
	apiOllamaChat:     {"ollama_chat", false},
	apiOllamaGenerate: {"ollama_generate", false},
}

// classify names the endpoint a request is for: a POST whose path ends as
// one of the measured APIs' (a gateway may put a prefix before /v1).
func classify(r *http.Request) api {
	if r.Method != http.MethodPost {
		return apiNone
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return apiChat
	case strings.HasSuffix(p, "/completions"):
		return apiCompletions
	case strings.HasSuffix(p, "/api/chat"):
		return apiOllamaChat
	case strings.HasSuffix(p, "/api/generate"):
		return apiOllamaGenerate
	}
	return apiNone
}

// exchange is one measured request: what the proxy saw of it, as it
// happened. Only the goroutine serving the request touches it.
type exchange struct {
	p     *Proxy
	api   api
	start time.Time // the request reached the proxy

	reqModel string // from the request, when inspected
	injected bool   // stream_options.include_usage was added upstream

	status      int
	unreachable bool
	copyFailed  bool // writing to the client failed: it went away
	readErr     bool // the upstream broke off
	eof         bool
	stream, sse bool

	firstByte, firstToken, last time.Time

	// Parsing state: a partial line, or a whole non-streamed body.
	buf      []byte
	overflow bool // a line or body beyond its bound, or encoded: figures lost
	complete bool // the stream's end was seen ([DONE], done:true), or a whole body read
	// noGeneration: the answer was Ollama's to a model load or unload.
	noGeneration bool
	finish       bool // a finish_reason was seen (a stream without [DONE] ends with one)

	model string
	usage *usage
	tim   *timings
	ol    *ollamaFinal
}

// inspect reads the request body up to its bound, to find the model and,
// with inject, to ask for usage on a stream that did not. The body is
// forwarded whole either way: what was read is put back in front of the
// rest. A body read whole is handed to the transport from memory, so the
// server never has the transport reading its body while it discards what
// is left of it (which net/http answers with a panic).
func (x *exchange) inspect(r *http.Request, max int, inject bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	if err != nil || len(head) > max {
		// Too large (or broken): forwarded as it is, uninspected.
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		return
	}
	r.Body.Close()
	body := head
	x.reqModel = requestModel(head)
	if inject && apis[x.api].openai {
		if out, ok := injectUsage(head, &x.reqModel); ok {
			body = out
			x.injected = true
		}
	}
	r.ContentLength = int64(len(body))
	r.Header.Del("Content-Length") // the transport writes it from ContentLength
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
}

// requestModel is the model a request names: the first "model" key's
// string (APIs put it at the top; the answer's own model, which the proxy
// prefers, says it anyway).
func requestModel(body []byte) string {
	i := bytes.Index(body, []byte(`"model"`))
	if i < 0 || valueAfter(body[i:], `"model"`) != '"' {
		return ""
	}
	rest := body[i+len(`"model"`):]
	rest = rest[bytes.IndexByte(rest, '"'):]
	var m string
	if json.NewDecoder(bytes.NewReader(rest)).Decode(&m) != nil {
		return ""
	}
	return m
}

type readCloser struct {
	io.Reader
	io.Closer
}

// injectUsage returns the request with stream_options.include_usage set,
// when it streams and did not ask for usage; ok is false otherwise (the
// request is then sent unchanged). It also reports the request's model.
func injectUsage(body []byte, model *string) (out []byte, ok bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, false
	}
	if m, have := req["model"]; have {
		json.Unmarshal(m, model)
	}
	var stream bool
	if json.Unmarshal(req["stream"], &stream) != nil || !stream {
		return nil, false
	}
	opts := map[string]json.RawMessage{}
	if raw, have := req["stream_options"]; have && string(raw) != "null" {
		if json.Unmarshal(raw, &opts) != nil {
			return nil, false // not an object: leave it to the upstream to refuse
		}
		var asked bool
		if json.Unmarshal(opts["include_usage"], &asked) == nil && asked {
			return nil, false
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	raw, err := marshal(opts)
	if err != nil {
		return nil, false
	}
	req["stream_options"] = raw
	out, err = marshal(req)
	if err != nil {
		return nil, false
	}
	return out, true
}

// marshal encodes without escaping <, > and &: the client's strings go
// upstream as it wrote them.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// outcome says how the request ended.
func (x *exchange) outcome() outcome {
	switch {
	case x.unreachable || x.status != 0 && x.status != http.StatusOK:
		return failed
	case x.copyFailed || x.readErr || x.status == 0:
		return aborted
	case !x.stream && x.eof:
		return finished
	case x.complete || x.eof && (x.finish || x.overflow):
		return finished
	}
	return aborted
}

// generation is what the request tells of its generation.
func (x *exchange) generation(now time.Time) exporter.Generation {
	g := exporter.Generation{Model: x.model, Unknown: exporter.UnknownQueue}
	if g.Model == "" {
		g.Model = x.reqModel
	}
	end := x.last
	if end.IsZero() {
		end = now
	}
	g.E2E = positive(end.Sub(x.start))
	if x.stream && !x.firstToken.IsZero() {
		g.TTFT = positive(x.firstToken.Sub(x.start))
	} else {
		g.Unknown |= exporter.UnknownTTFT
	}
	switch {
	case x.tim != nil && x.tim.PromptN != nil && x.tim.PredictedN != nil:
		x.tim.into(&g) // llama.cpp's own account: exact, with the cached part
	case x.ol != nil:
		x.ol.into(&g)
	default:
		g.Unknown |= exporter.UnknownPrefill | exporter.UnknownDecode
		x.usage.into(&g)
	}
	return g
}

// into fills a generation from llama.cpp's timings.
func (t *timings) into(g *exporter.Generation) {
	cached := 0
	if t.CacheN != nil {
		cached = *t.CacheN
	} else {
		g.Unknown |= exporter.UnknownCached
	}
	g.PromptTokens, g.CachedTokens, g.GeneratedTokens = *t.PromptN+cached, cached, *t.PredictedN
	g.Prefill, g.Decode = millis(t.PromptMS), millis(t.PredictedMS)
	if t.PromptMS == nil {
		g.Unknown |= exporter.UnknownPrefill
	}
	if t.PredictedMS == nil {
		g.Unknown |= exporter.UnknownDecode
	}
}

// into fills a generation from Ollama's last line. prompt_eval_count
// counts cached and evaluated tokens alike, and older versions leave it out
// on a cached prompt: then it is unknown.
func (o *ollamaFinal) into(g *exporter.Generation) {
	g.Unknown |= exporter.UnknownCached
	if o.PromptEvalCount != nil {
		g.PromptTokens = *o.PromptEvalCount
	} else {
		g.Unknown |= exporter.UnknownPrompt
	}
	if o.EvalCount != nil {
		g.GeneratedTokens = *o.EvalCount
	} else {
		g.Unknown |= exporter.UnknownGenerated
	}
	if o.PromptEvalDuration != nil {
		g.Prefill = time.Duration(*o.PromptEvalDuration)
	} else {
		g.Unknown |= exporter.UnknownPrefill
	}
	if o.EvalDuration != nil {
		g.Decode = time.Duration(*o.EvalDuration)
	} else {
		g.Unknown |= exporter.UnknownDecode
	}
}

// into fills a generation from an OpenAI usage object, which may be nil
// (none was sent).
func (u *usage) into(g *exporter.Generation) {
	if u == nil || u.PromptTokens == nil {
		g.Unknown |= exporter.UnknownPrompt | exporter.UnknownCached
	} else {
		g.PromptTokens = *u.PromptTokens
		if u.Details != nil && u.Details.CachedTokens != nil {
			g.CachedTokens = *u.Details.CachedTokens
		} else {
			g.Unknown |= exporter.UnknownCached
		}
	}
	if u == nil || u.CompletionTokens == nil {
		g.Unknown |= exporter.UnknownGenerated
	} else {
		g.GeneratedTokens = *u.CompletionTokens
	}
}

func positive(d time.Duration) time.Duration { return max(d, 1) }

func millis(ms *float64) time.Duration {
	if ms == nil || !(*ms > 0) || *ms > 1e12 {
		return 0
	}
	return time.Duration(*ms * float64(time.Millisecond))
}

// usage is an OpenAI usage object.
type usage struct {
	PromptTokens     *int `json:"prompt_tokens"`
	CompletionTokens *int `json:"completion_tokens"`
	Details          *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// timings is llama.cpp's account of one request.
type timings struct {
	CacheN      *int     `json:"cache_n"`
	PromptN     *int     `json:"prompt_n"`
	PromptMS    *float64 `json:"prompt_ms"`
	PredictedN  *int     `json:"predicted_n"`
	PredictedMS *float64 `json:"predicted_ms"`
}

// openaiChunk is what the proxy reads of an OpenAI response or stream
// chunk.
type openaiChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta   *openaiDelta `json:"delta"`
		Message *openaiDelta `json:"message"`
		Text    string       `json:"text"`
		Finish  *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usage   `json:"usage"`
	Timings *timings `json:"timings"`
}

// tokens reports a chunk that carries generated tokens.
func (c *openaiChunk) tokens() bool {
	for _, ch := range c.Choices {
		if ch.Delta.tokens() || ch.Text != "" {
			return true
		}
	}
	return false
}

// openaiDelta is the part of a delta that carries generated tokens.
type openaiDelta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

func (d *openaiDelta) tokens() bool {
	return d != nil && (d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" ||
		len(d.ToolCalls) > 0 && string(d.ToolCalls) != "null" && string(d.ToolCalls) != "[]")
}

// ollamaLine is what the proxy reads of an Ollama response line.
type ollamaLine struct {
	Model   string `json:"model"`
	Done    bool   `json:"done"`
	Message *struct {
		Content   string          `json:"content"`
		Thinking  string          `json:"thinking"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	} `json:"message"`
	Response   string `json:"response"`
	Thinking   string `json:"thinking"`
	Error      string `json:"error"`
	DoneReason string `json:"done_reason"`
	ollamaFinal
}

// ollamaFinal is the accounting on Ollama's last line (nanoseconds).
type ollamaFinal struct {
	PromptEvalCount    *int   `json:"prompt_eval_count"`
	PromptEvalDuration *int64 `json:"prompt_eval_duration"`
	EvalCount          *int   `json:"eval_count"`
	EvalDuration       *int64 `json:"eval_duration"`
}

func (l *ollamaLine) tokens() bool {
	if l.Response != "" || l.Thinking != "" {
		return true
	}
	m := l.Message
	return m != nil && (m.Content != "" || m.Thinking != "" || len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]")
}

// feed reads bytes of the response as they pass, at time t.
func (x *exchange) feed(b []byte, t time.Time) {
	x.last = t
	if x.overflow {
		return
	}
	if !x.stream {
		if len(x.buf)+len(b) > x.p.o.MaxResponse {
			x.overflow, x.buf = true, nil
			return
		}
		x.buf = append(x.buf, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(x.buf)+len(b) > maxLine {
				x.overflow, x.buf = true, nil
				return
			}
			x.buf = append(x.buf, b...)
			return
		}
		line := b[:i]
		if len(x.buf) > 0 {
			if len(x.buf)+i > maxLine {
				x.overflow, x.buf = true, nil
				return
			}
			x.buf = append(x.buf, line...)
			line = x.buf
		}
		x.line(line, t)
		x.buf = x.buf[:0]
		b = b[i+1:]
	}
}

// end is the upstream's end of body.
func (x *exchange) end(t time.Time) {
	x.eof, x.last = true, t
	if x.overflow {
		return
	}
	if !x.stream {
		x.whole(x.buf)
		x.buf = nil
		return
	}
	if len(x.buf) > 0 {
		x.line(x.buf, t) // a last line without its newline
		x.buf = x.buf[:0]
	}
}

// whole parses a non-streamed answer.
func (x *exchange) whole(b []byte) {
	if apis[x.api].openai {
		var c openaiChunk
		if json.Unmarshal(b, &c) == nil {
			x.openai(&c)
			x.complete = true
		}
		return
	}
	var l ollamaLine
	if json.Unmarshal(b, &l) == nil && l.Done {
		x.ollama(&l)
	}
}

// line parses one streamed line.
func (x *exchange) line(b []byte, t time.Time) {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if x.sse {
		x.sseLine(b, t)
	} else {
		x.ndjsonLine(b, t)
	}
}

// sseLine parses one line of an OpenAI event stream.
func (x *exchange) sseLine(b []byte, t time.Time) {
	data, ok := bytes.CutPrefix(b, []byte("data:"))
	if !ok {
		return // an event name, an id, a comment (": keep-alive"), a blank line
	}
	data = bytes.TrimLeft(data, " ")
	if bytes.Equal(data, []byte("[DONE]")) {
		x.complete = true
		return
	}
	// After the first token only a chunk carrying usage, timings or a
	// finish reason says more: the rest are not decoded.
	if !x.firstToken.IsZero() && x.model != "" && valueAfter(data, `"usage"`) != '{' &&
		valueAfter(data, `"timings"`) != '{' && valueAfter(data, `"finish_reason"`) != '"' {
		return
	}
	var c openaiChunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	if x.firstToken.IsZero() && c.tokens() {
		x.firstToken = t
	}
	x.openai(&c)
}

// ndjsonLine parses one line of an Ollama stream.
func (x *exchange) ndjsonLine(b []byte, t time.Time) {
	if !x.firstToken.IsZero() && x.model != "" && valueAfter(b, `"done"`) != 't' && valueAfter(b, `"error"`) == 0 {
		return
	}
	var l ollamaLine
	if json.Unmarshal(b, &l) != nil {
		return
	}
	if x.firstToken.IsZero() && l.tokens() {
		x.firstToken = t
	}
	if l.Error != "" {
		x.readErr = true // the upstream failed mid-stream
		return
	}
	if x.model == "" {
		x.model = l.Model
	}
	if l.Done {
		x.ollama(&l)
	}
}

// openai takes what a chunk or response says: the model, the last usage
// and timings, a finish.
func (x *exchange) openai(c *openaiChunk) {
	if x.model == "" {
		x.model = c.Model
	}
	if c.Usage != nil {
		x.usage = c.Usage
	}
	if c.Timings != nil {
		x.tim = c.Timings
	}
	for _, ch := range c.Choices {
		if ch.Finish != nil && *ch.Finish != "" {
			x.finish = true
		}
	}
}

func (x *exchange) ollama(l *ollamaLine) {
	if x.model == "" {
		x.model = l.Model
	}
	// A request without a prompt loads or unloads the model: no generation.
	x.noGeneration = l.DoneReason == "load" || l.DoneReason == "unload"
	f := l.ollamaFinal
	x.ol = &f
	x.complete = true
}

// valueAfter returns the first byte of the value of the first key in b
// (after the colon and any spaces), or 0 when the key is not there. A key
// inside a JSON string cannot match: its quotes would be escaped.
func valueAfter(b []byte, key string) byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	rest := b[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t') {
		j++
	}
	if j == len(rest) || rest[j] != ':' {
		return 0
	}
	j++
	for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t') {
		j++
	}
	if j == len(rest) {
		return 0
	}
	return rest[j]
}

// meter passes the upstream's body through unchanged, reading a copy.
type meter struct {
	x    *exchange
	body io.ReadCloser
}

func (m *meter) Read(b []byte) (int, error) {
	n, err := m.body.Read(b)
	now := m.x.p.now()
	if n > 0 {
		m.x.feed(b[:n], now)
	}
	switch {
	case err == io.EOF:
		m.x.end(now)
	case err != nil:
		m.x.readErr = true
	}
	return n, err
}

func (m *meter) Close() error { return m.body.Close() }

// filter passes an injected stream's events through, less the usage-only
// chunk the injection caused. An event goes out when it is whole (its
// blank line has arrived), so the client sees no partial events either.
type filter struct {
	meter *meter
	in    []byte // the event being received
	out   []byte // whole events to hand out, from off on
	off   int
	err   error
	tmp   [32 << 10]byte
}

func (f *filter) Read(b []byte) (int, error) {
	for f.off == len(f.out) {
		f.out, f.off = f.out[:0], 0
		if f.err != nil {
			if len(f.in) > 0 { // the stream's tail without its blank line
				f.out, f.in = append(f.out, f.in...), f.in[:0]
				break
			}
			return 0, f.err
		}
		n, err := f.meter.Read(f.tmp[:])
		f.in = append(f.in, f.tmp[:n]...)
		f.err = err
		f.cut()
	}
	n := copy(b, f.out[f.off:])
	f.off += n
	return n, nil
}

// cut moves the whole events received to out, dropping injected usage.
func (f *filter) cut() {
	for {
		i, sep := bytes.Index(f.in, []byte("\n\n")), 2
		if j := bytes.Index(f.in, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
			i, sep = j, 4
		}
		if i < 0 {
			return
		}
		ev := f.in[:i+sep]
		if !usageOnly(ev) {
			f.out = append(f.out, ev...)
		}
		f.in = f.in[:copy(f.in, f.in[i+sep:])]
	}
}

// usageOnly reports an event whose chunk has no choices and a usage: the
// chunk include_usage adds.
func usageOnly(ev []byte) bool {
	if valueAfter(ev, `"usage"`) != '{' {
		return false
	}
	for _, line := range bytes.Split(ev, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r")), []byte("data:"))
		if !ok {
			continue
		}
		var c struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   json.RawMessage   `json:"usage"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &c) == nil && len(c.Choices) == 0 && len(c.Usage) > 0 && string(c.Usage) != "null" {
			return true
		}
	}
	return false
}

func (f *filter) Close() error { return f.meter.Close() }

func (o outcome) String() string { return outcomeNames[o] }
