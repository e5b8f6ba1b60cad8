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

// listsModels reports a request for the OpenAI model list (GET
// .../models), whose answer may say each model's context length.
func listsModels(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models")
}

// asksStream reports a request body that asks for a streamed answer:
// OpenAI's "stream": true; Ollama streams unless "stream": false.
func asksStream(a api, body []byte) bool {
	switch {
	case a == apiNone:
		return false
	case apis[a].openai:
		return valueAfter(body, `"stream"`) == 't'
	}
	return valueAfter(body, `"stream"`) != 'f'
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
	unreachable bool // the upstream could not be reached, or sent no answer in time
	bodyLate    bool // the client's body did not arrive in time
	copyFailed  bool // writing to the client failed: it went away
	readErr     bool // the upstream broke off
	eof         bool
	stream, sse bool

	firstByte, firstToken, last time.Time

	// Parsing state: a partial line, or a whole non-streamed body.
	buf      []byte
	encoded  bool // the upstream compressed the answer: not read
	tooLong  bool // a non-streamed answer beyond its bound: not read
	skipping bool // inside a streamed line beyond its bound, until its end
	// oversized: a line or answer beyond its bound passed unread;
	// ttftLost: before the first token seen, so a token may have been
	// in it.
	oversized, ttftLost bool
	complete            bool // the stream's end was seen ([DONE], done:true), or a whole body read
	// noGeneration: the answer was Ollama's to a model load or unload.
	noGeneration bool
	finish       bool // a finish_reason was seen (a stream without [DONE] ends with one)

	model string
	usage *usage
	tim   *timings
	ol    *ollamaFinal
}

// inspect reads a request body read whole, to find the model and, with
// inject, to ask for usage on a stream that did not; it returns the body
// to send.
func (x *exchange) inspect(body []byte, inject bool) []byte {
	x.reqModel = requestModel(body)
	if inject && apis[x.api].openai {
		if out, ok := injectUsage(body, &x.reqModel); ok {
			x.injected = true
			return out
		}
	}
	return body
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
	case x.bodyLate:
		return aborted // the client did not send its request
	case x.unreachable || x.status != 0 && x.status != http.StatusOK:
		return failed
	case x.copyFailed || x.readErr || x.status == 0:
		return aborted
	case !x.stream && x.eof:
		return finished
	case x.complete || x.eof && (x.finish || x.encoded || x.oversized):
		// An unread part may have held the stream's end.
		return finished
	}
	return aborted
}

// modelName is the model the answer names, or else the request.
func (x *exchange) modelName() string {
	if x.model != "" {
		return x.model
	}
	return x.reqModel
}

// generation is what the request tells of its generation, given the
// model's context length (0: not reported); valid is false when what the
// upstream reported could not be true, and then every reported figure is
// unknown.
func (x *exchange) generation(now time.Time, context int) (g exporter.Generation, valid bool) {
	g = exporter.Generation{Model: x.modelName(), Unknown: exporter.UnknownQueue}
	end := x.last
	if end.IsZero() {
		end = now
	}
	g.E2E = positive(end.Sub(x.start))
	if x.stream && !x.firstToken.IsZero() && !x.ttftLost {
		g.TTFT = positive(x.firstToken.Sub(x.start))
	} else {
		g.Unknown |= exporter.UnknownTTFT
	}
	c := check{context: context, ok: true}
	switch {
	case x.tim != nil && x.tim.PromptN != nil && x.tim.PredictedN != nil:
		x.tim.into(&g, &c) // llama.cpp's own account: exact, with the cached part
	case x.ol != nil:
		x.ol.into(&g, &c)
	default:
		g.Unknown |= exporter.UnknownPrefill | exporter.UnknownDecode
		x.usage.into(&g, &c)
	}
	if !c.ok {
		g.Unknown |= reported
		g.PromptTokens, g.CachedTokens, g.GeneratedTokens, g.Prefill, g.Decode = 0, 0, 0, 0, 0
	}
	return g, c.ok
}

func positive(d time.Duration) time.Duration { return max(d, 1) }

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
	switch {
	case x.encoded || x.tooLong:
		return
	case !x.stream:
		if len(x.buf)+len(b) > x.p.o.MaxResponse {
			x.tooLong, x.oversized, x.buf = true, true, nil
			return
		}
		x.buf = append(x.buf, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		switch {
		case x.skipping && i < 0:
			return
		case x.skipping:
			x.skipping = false // the long line ends here
		case i < 0 && len(x.buf)+len(b) > maxLine, i >= 0 && len(x.buf)+i > maxLine:
			x.skip()
			continue
		case i < 0:
			x.buf = append(x.buf, b...)
			return
		default:
			line := b[:i]
			if len(x.buf) > 0 {
				line = append(x.buf, line...)
				x.buf = line
			}
			x.line(line, t)
			x.buf = x.buf[:0]
		}
		b = b[i+1:]
	}
}

// skip passes the rest of a line beyond the bound unread. What it said
// is lost: a first token in it would make the time to first token later
// than it was.
func (x *exchange) skip() {
	x.skipping, x.oversized, x.buf = true, true, x.buf[:0]
	if x.firstToken.IsZero() {
		x.ttftLost = true
	}
}

// end is the upstream's end of body.
func (x *exchange) end(t time.Time) {
	x.eof, x.last = true, t
	switch {
	case x.encoded || x.tooLong:
	case !x.stream:
		x.whole(x.buf)
		x.buf = nil
	case len(x.buf) > 0 && !x.skipping:
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
