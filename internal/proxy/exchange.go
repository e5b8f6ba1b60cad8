package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/stream"
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
	stream stream.API // the reader's name for it
}{
	apiChat:           {"chat_completions", true, stream.ChatCompletions},
	apiCompletions:    {"completions", true, stream.Completions},
	apiOllamaChat:     {"ollama_chat", false, stream.OllamaChat},
	apiOllamaGenerate: {"ollama_generate", false, stream.OllamaGenerate},
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
		return stream.ValueAfter(body, `"stream"`) == 't'
	}
	return stream.ValueAfter(body, `"stream"`) != 'f'
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

	// The answer is read by package stream's reader, which calls the
	// exchange (its handler) with each event; reading: rd is set up.
	rd      stream.Reader
	reading bool
	encoded bool // the upstream compressed the answer: not read
	// oversized: a line or answer beyond its bound passed unread;
	// ttftLost: before the first token seen, so a token may have been
	// in it.
	oversized, ttftLost bool
	complete            bool // the stream's end was seen ([DONE], done:true), or a whole body read
	// noGeneration: the answer was Ollama's to a model load or unload.
	noGeneration bool
	finish       bool // a finish_reason was seen (a stream without [DONE] ends with one)

	model string
	usage *stream.Usage
	tim   *stream.Timings
	ol    *stream.OllamaFinal
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
	if i < 0 || stream.ValueAfter(body[i:], `"model"`) != '"' {
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
		timingsInto(x.tim, &g, &c) // llama.cpp's own account: exact, with the cached part
	case x.ol != nil:
		ollamaInto(x.ol, &g, &c)
	default:
		g.Unknown |= exporter.UnknownPrefill | exporter.UnknownDecode
		usageInto(x.usage, &g, &c)
	}
	if !c.ok {
		g.Unknown |= reported
		g.PromptTokens, g.CachedTokens, g.GeneratedTokens, g.Prefill, g.Decode = 0, 0, 0, 0, 0
	}
	return g, c.ok
}

func positive(d time.Duration) time.Duration { return max(d, 1) }

// feed reads bytes of the response as they pass, at time t.
func (x *exchange) feed(b []byte, t time.Time) {
	x.last = t
	if !x.encoded {
		x.reader().Feed(b, t)
	}
}

// end is the upstream's end of body.
func (x *exchange) end(t time.Time) {
	x.eof, x.last = true, t
	if !x.encoded {
		x.reader().End(t)
	}
}

// reader is the answer's reader, set up at the first read: a stream's
// lines decoded as its framing says, a whole body within MaxResponse.
func (x *exchange) reader() *stream.Reader {
	if !x.reading {
		f := stream.Whole
		switch {
		case x.stream && x.sse:
			f = stream.SSE
		case x.stream:
			f = stream.NDJSON
		}
		x.rd.Reset(x, apis[x.api].stream, f, x.p.o.MaxResponse)
		x.reading = true
	}
	return &x.rd
}

// Event takes what the reader read. Once the first token and the model
// are known, only what may say more is decoded: usage, timings, a finish,
// the end.
func (x *exchange) Event(e *stream.Event) (settled bool) {
	switch e.Kind {
	case stream.Done:
		x.complete = true
	case stream.Skipped:
		// What it said is lost: a first token in a streamed line would
		// make the time to first token later than it was.
		x.oversized = true
		if !e.Whole && x.firstToken.IsZero() {
			x.ttftLost = true
		}
	case stream.Data:
		x.take(e)
	}
	return !x.firstToken.IsZero() && x.model != ""
}

// take takes a decoded chunk, line or answer.
func (x *exchange) take(e *stream.Event) {
	switch {
	case e.Whole && apis[x.api].openai:
		x.openai(e)
		x.complete = true
	case e.Whole:
		if e.Final != nil {
			x.ollama(e)
		}
	case x.sse:
		if x.firstToken.IsZero() && e.Content {
			x.firstToken = e.T
		}
		x.openai(e)
	default:
		if x.firstToken.IsZero() && e.Content {
			x.firstToken = e.T
		}
		if e.Error != "" {
			x.readErr = true // the upstream failed mid-stream
			return
		}
		if x.model == "" {
			x.model = e.Model
		}
		if e.Final != nil {
			x.ollama(e)
		}
	}
}

// openai takes what a chunk or response says: the model, the last usage
// and timings, a finish.
func (x *exchange) openai(e *stream.Event) {
	if x.model == "" {
		x.model = e.Model
	}
	if e.Usage != nil {
		x.usage = e.Usage
	}
	if e.Timings != nil {
		x.tim = e.Timings
	}
	if e.Finish != "" {
		x.finish = true
	}
}

// ollama takes Ollama's last line.
func (x *exchange) ollama(e *stream.Event) {
	if x.model == "" {
		x.model = e.Model
	}
	// A request without a prompt loads or unloads the model: no generation.
	x.noGeneration = e.Finish == "load" || e.Finish == "unload"
	x.ol = e.Final
	x.complete = true
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
