package stream

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// What a server reports of a generation is read like any other outside
// input: a count or time that cannot be true is kept as not valid (OK
// false), never clamped; the reader of the figures decides what an
// invalid one makes of the rest.
const (
	// MaxTokens is the most tokens one count of one request may report:
	// no model serves a context of more (the longest are 10 million), so
	// a larger count is garbage.
	MaxTokens = 10_000_000
	// MaxPhase is the longest a prefill or a decode may report: no
	// generation takes a day.
	MaxPhase = 24 * time.Hour
)

// Count is a token count as a server reported it; a pointer to one is nil
// when the key is missing or null (not said).
type Count struct {
	N  int
	OK bool // a whole number from 0 to MaxTokens
}

// UnmarshalJSON reads any JSON value and never fails, so that the chunk's
// other fields are read all the same.
func (c *Count) UnmarshalJSON(b []byte) error {
	f, ok := number(b)
	c.OK = ok && f >= 0 && f <= MaxTokens && f == math.Trunc(f)
	if c.OK {
		c.N = int(f)
	}
	return nil
}

// Phase is a duration as a server reported it, in milliseconds
// (llama.cpp) or nanoseconds (Ollama).
type Phase struct {
	D  time.Duration
	OK bool // from 0 to MaxPhase
}

func (p *Phase) read(b []byte, unit time.Duration) {
	f, ok := number(b)
	p.OK = ok && f >= 0 && f <= float64(MaxPhase/unit)
	if p.OK {
		p.D = time.Duration(f * float64(unit))
	}
}

// Millis is a phase written in milliseconds.
type Millis Phase

func (m *Millis) UnmarshalJSON(b []byte) error { (*Phase)(m).read(b, time.Millisecond); return nil }

// Nanos is a phase written in nanoseconds.
type Nanos Phase

func (n *Nanos) UnmarshalJSON(b []byte) error { (*Phase)(n).read(b, time.Nanosecond); return nil }

// number reads a JSON number (the decoder has checked the syntax: a string,
// a literal, an object or an array is not one).
func number(b []byte) (float64, bool) {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// Usage is an OpenAI usage object.
type Usage struct {
	PromptTokens     *Count `json:"prompt_tokens"`
	CompletionTokens *Count `json:"completion_tokens"`
	Details          *struct {
		CachedTokens *Count `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// Cached is the usage's cached prompt tokens, nil when not said.
func (u *Usage) Cached() *Count {
	if u == nil || u.Details == nil {
		return nil
	}
	return u.Details.CachedTokens
}

// Timings is llama.cpp's account of one request.
type Timings struct {
	CacheN      *Count  `json:"cache_n"`
	PromptN     *Count  `json:"prompt_n"`
	PromptMS    *Millis `json:"prompt_ms"`
	PredictedN  *Count  `json:"predicted_n"`
	PredictedMS *Millis `json:"predicted_ms"`
}

// OllamaFinal is the accounting on Ollama's last line (nanoseconds).
// PromptEvalCount counts cached and evaluated prompt tokens alike, and
// older versions leave it out on a cached prompt.
type OllamaFinal struct {
	LoadDuration       *Nanos `json:"load_duration"`
	PromptEvalCount    *Count `json:"prompt_eval_count"`
	PromptEvalDuration *Nanos `json:"prompt_eval_duration"`
	EvalCount          *Count `json:"eval_count"`
	EvalDuration       *Nanos `json:"eval_duration"`
}

// openaiChunk is what is read of an OpenAI response or stream chunk.
type openaiChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta   *openaiDelta `json:"delta"`
		Message *openaiDelta `json:"message"`
		Text    string       `json:"text"`
		Finish  *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage   *Usage   `json:"usage"`
	Timings *Timings `json:"timings"`
}

// openaiError is an error in a 200 answer: vLLM and SGLang write
// {"error": {...}} (vLLM's create_streaming_error_response, SGLang's
// alike), older vLLM {"object": "error", "message": ...}. It is read
// leniently (a chunk whose "object" is not a string is still a chunk),
// and only from a chunk whose bytes hold "error" at all, so that the
// chunks of a stream cost no more to read.
type openaiError struct {
	Error   errorValue `json:"error"`
	Object  lenient    `json:"object"`
	Message lenient    `json:"message"`
}

// openaiErr is what an error in a chunk or answer says, "" none.
func openaiErr(b []byte) string {
	if !bytes.Contains(b, []byte(`"error"`)) {
		return ""
	}
	var e openaiError
	if json.Unmarshal(b, &e) != nil {
		return ""
	}
	return e.message()
}

// tokens reports a chunk that carries generated tokens in a stream: a
// delta's content, reasoning or tool call, or a completion's text.
func (c *openaiChunk) tokens() bool {
	for _, ch := range c.Choices {
		if ch.Delta.tokens() || ch.Text != "" {
			return true
		}
	}
	return false
}

// answered reports a whole answer that carries generated tokens: a
// message, or a completion's text.
func (c *openaiChunk) answered() bool {
	for _, ch := range c.Choices {
		if ch.Message.tokens() || ch.Delta.tokens() || ch.Text != "" {
			return true
		}
	}
	return false
}

func (c *openaiChunk) finish() string {
	for _, ch := range c.Choices {
		if ch.Finish != nil && *ch.Finish != "" {
			return *ch.Finish
		}
	}
	return ""
}

func (e *openaiError) message() string {
	if e.Error.set {
		return e.Error.msg
	}
	if e.Object.s == "error" {
		if e.Message.s != "" {
			return e.Message.s
		}
		return "error"
	}
	return ""
}

// openaiDelta is the part of a delta (or a whole answer's message) that
// carries generated tokens.
type openaiDelta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

func (d *openaiDelta) tokens() bool {
	return d != nil && (d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" || calls(d.ToolCalls))
}

// calls reports a tool_calls value that holds a call.
func calls(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null" && string(raw) != "[]"
}

// ollamaLine is what is read of an Ollama response line.
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
	OllamaFinal
}

func (l *ollamaLine) tokens() bool {
	if l.Response != "" || l.Thinking != "" {
		return true
	}
	m := l.Message
	return m != nil && (m.Content != "" || m.Thinking != "" || calls(m.ToolCalls))
}

// lenient is a string that takes any JSON value: what is not a string is
// read as "".
type lenient struct{ s string }

func (l *lenient) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &l.s) != nil {
		l.s = ""
	}
	return nil
}

// errorValue is an "error" key's value: a string, or an object whose
// "message" says what; null is none. It never fails to decode.
type errorValue struct {
	set bool
	msg string
}

func (e *errorValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0, string(b) == "null", string(b) == "false", string(b) == `""`:
		return nil
	case b[0] == '"':
		e.set = json.Unmarshal(b, &e.msg) == nil
	case b[0] == '{':
		var o struct {
			Message lenient `json:"message"`
		}
		json.Unmarshal(b, &o)
		e.set, e.msg = true, o.Message.s
	default:
		e.set = true
	}
	if e.set && e.msg == "" {
		e.msg = "error"
	}
	return nil
}

// ValueAfter returns the first byte of the value of the first key in b
// (after the colon and any spaces), or 0 when the key is not there. A key
// inside a JSON string cannot match: its quotes would be escaped.
func ValueAfter(b []byte, key string) byte {
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
