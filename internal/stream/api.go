package stream

import (
	"fmt"
	"strings"
)

// API is an endpoint whose answers a [Reader] reads: OpenAI's two
// (server-sent events of chunks, or one JSON body) and Ollama's two
// (NDJSON lines, or one JSON body).
type API int

const (
	ChatCompletions API = iota // OpenAI /v1/chat/completions
	Completions                // OpenAI /v1/completions
	OllamaChat                 // Ollama /api/chat
	OllamaGenerate             // Ollama /api/generate
	numAPIs
)

var apiNames = [numAPIs]struct{ name, path string }{
	ChatCompletions: {"chat_completions", "/v1/chat/completions"},
	Completions:     {"completions", "/v1/completions"},
	OllamaChat:      {"ollama_chat", "/api/chat"},
	OllamaGenerate:  {"ollama_generate", "/api/generate"},
}

// String is the API's name as the proxy's endpoint label writes it.
func (a API) String() string {
	if a < 0 || a >= numAPIs {
		return fmt.Sprintf("API(%d)", int(a))
	}
	return apiNames[a].name
}

// OpenAI reports an OpenAI-compatible API (chunks of choices, usage);
// the others are Ollama's (lines ending with done: true).
func (a API) OpenAI() bool { return a == ChatCompletions || a == Completions }

// Chat reports an API that takes messages rather than a prompt.
func (a API) Chat() bool { return a == ChatCompletions || a == OllamaChat }

// Path is the API's path on a server with no prefix.
func (a API) Path() string {
	if a < 0 || a >= numAPIs {
		return ""
	}
	return apiNames[a].path
}

// Classify names the API a path is for, as the proxy tells them: by how
// the path ends (a gateway may put a prefix before /v1).
func Classify(path string) (API, bool) {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return ChatCompletions, true
	case strings.HasSuffix(path, "/completions"):
		return Completions, true
	case strings.HasSuffix(path, "/api/chat"):
		return OllamaChat, true
	case strings.HasSuffix(path, "/api/generate"):
		return OllamaGenerate, true
	}
	return 0, false
}

// APIs lists every API, in order.
func APIs() []API { return []API{ChatCompletions, Completions, OllamaChat, OllamaGenerate} }
