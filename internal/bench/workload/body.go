package workload

import (
	"bytes"
	"encoding/json"

	"github.com/inferscope/inferscope/internal/stream"
)

// Message is a chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// FixedOutput reports whether api can be asked for an exact output
// length: vLLM, SGLang and llama.cpp's server take "ignore_eos" on their
// OpenAI routes, vLLM and SGLang "min_tokens" too (a server that knows
// neither ignores them, and its early stops show in the finish reasons);
// Ollama has neither (num_predict is a maximum), so a fixed length there
// is only a limit.
func FixedOutput(api stream.API) bool { return api.OpenAI() }

// Body is a request body for s's API: the messages (a chat API) or their
// contents joined by blank lines (a prompt API), streamed, with usage
// asked for on OpenAI's APIs, at most output tokens (0: the server's
// default), exactly output where fixed and the API can say so.
func (s Shape) Body(msgs []Message, output int, fixed bool) []byte {
	b := map[string]any{"stream": true}
	if s.Model != "" {
		b["model"] = s.Model
	}
	if s.API.Chat() {
		b["messages"] = msgs
	} else {
		b["prompt"] = join(msgs)
	}
	if s.API.OpenAI() {
		b["stream_options"] = map[string]any{"include_usage": true}
		if output > 0 {
			b["max_tokens"] = output
			if fixed {
				b["ignore_eos"] = true
				b["min_tokens"] = output
			}
		}
	} else if output > 0 {
		b["options"] = map[string]any{"num_predict": output}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(b) // maps of strings and numbers: cannot fail
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func join(msgs []Message) string {
	if len(msgs) == 1 {
		return msgs[0].Content
	}
	var b bytes.Buffer
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Content)
	}
	return b.String()
}
