package stream

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// got is what a handler kept of one event.
type got struct {
	Kind    Kind
	At      int // the feed's index
	Whole   bool
	Content bool
	Model   string
	Usage   [3]int // prompt, completion, cached; -1 not said; all -2: no usage
	Timings bool
	Finish  string
	Final   bool
	Error   string
}

// recorder keeps every event; settle says when it settles (never, for
// nil).
type recorder struct {
	events []got
	settle func(r *recorder) bool
}

func (r *recorder) Event(e *Event) bool {
	g := got{Kind: e.Kind, At: int(e.T.Unix()), Whole: e.Whole, Content: e.Content, Model: e.Model,
		Timings: e.Timings != nil, Finish: e.Finish, Final: e.Final != nil, Error: e.Error, Usage: [3]int{-2, -2, -2}}
	if u := e.Usage; u != nil {
		g.Usage = [3]int{said(u.PromptTokens), said(u.CompletionTokens), said(u.Cached())}
	}
	r.events = append(r.events, g)
	return r.settle != nil && r.settle(r)
}

func said(c *Count) int {
	if c == nil {
		return -1
	}
	if !c.OK {
		return -3
	}
	return c.N
}

// read feeds pieces, piece i at time i (seconds), and ends.
func read(api API, f Framing, pieces []string, settle func(*recorder) bool) []got {
	rec := &recorder{settle: settle}
	var r Reader
	r.Reset(rec, api, f, 1<<16)
	for i, p := range pieces {
		r.Feed([]byte(p), time.Unix(int64(i), 0))
	}
	r.End(time.Unix(int64(len(pieces)), 0))
	return rec.events
}

var noUsage = [3]int{-2, -2, -2}

func TestReaderEdges(t *testing.T) {
	role := `data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n"
	tok := func(s string) string {
		return `data: {"model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n"
	}
	long := `data: {"model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", MaxLine) + `"}}]}` + "\n\n"
	tests := []struct {
		name   string
		api    API
		f      Framing
		pieces []string
		want   []got
	}{
		{"role-only first chunk carries no content", ChatCompletions, SSE, []string{role, tok("Hi")},
			[]got{{Kind: Data, At: 0, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Content: true, Model: "m", Usage: noUsage}}},
		{"keep-alive comments, event names and ids are not events", ChatCompletions, SSE,
			[]string{": keep-alive\n\n", "event: message\nid: 7\nretry: 10\n" + tok("x"), ":\n\n"},
			[]got{{Kind: Data, At: 1, Content: true, Model: "m", Usage: noUsage}}},
		{"usage-only final chunk, then [DONE]", ChatCompletions, SSE,
			[]string{tok("x"), `data: {"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2}}}` + "\n\ndata: [DONE]\n\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Model: "m", Usage: [3]int{5, 1, 2}}, {Kind: Done, At: 1}}},
		{"usage on the finish chunk", ChatCompletions, SSE,
			[]string{`data: {"model":"m","choices":[{"index":0,"delta":{"content":"y"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}` + "\n\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Finish: "length", Usage: [3]int{3, 9, -1}}}},
		{"a cut stream: no [DONE], the last line without its newline read at the end", ChatCompletions, SSE,
			[]string{tok("a"), `data: {"model":"m","choices":[{"delta":{"content":"b"}}]}`},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 2, Content: true, Model: "m", Usage: noUsage}}},
		{"a cut stream mid-line: the piece is malformed", ChatCompletions, SSE,
			[]string{tok("a"), `data: {"model":"m","choi`},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Malformed, At: 2}}},
		{"an error object mid-stream (vLLM, SGLang)", ChatCompletions, SSE,
			[]string{tok("a"), `data: {"error":{"message":"engine dead","type":"InternalServerError","code":500}}` + "\n\ndata: [DONE]\n\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Error: "engine dead", Usage: noUsage}, {Kind: Done, At: 1}}},
		{"older vLLM's error object", Completions, SSE,
			[]string{`data: {"object":"error","message":"too long","type":"BadRequestError","code":400}` + "\n\n"},
			[]got{{Kind: Data, At: 0, Error: "too long", Usage: noUsage}}},
		{"an error that is a string", ChatCompletions, SSE,
			[]string{`data: {"error":"overloaded"}` + "\n\n"},
			[]got{{Kind: Data, At: 0, Error: "overloaded", Usage: noUsage}}},
		{"error: null is none", ChatCompletions, SSE,
			[]string{`data: {"model":"m","error":null,"choices":[{"delta":{"content":"z"}}]}` + "\n\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}}},
		{"Ollama's error line", OllamaChat, NDJSON,
			[]string{`{"model":"m","message":{"role":"assistant","content":"a"},"done":false}` + "\n", `{"error":"model runner has unexpectedly stopped"}` + "\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Error: "model runner has unexpectedly stopped", Usage: noUsage}}},
		{"CRLF line ends", ChatCompletions, SSE,
			[]string{": ping\r\n\r\n" + strings.ReplaceAll(tok("c"), "\n", "\r\n") + "data: [DONE]\r\n\r\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Done, At: 0}}},
		{"CRLF in NDJSON", OllamaGenerate, NDJSON,
			[]string{`{"model":"m","response":"a","done":false}` + "\r\n" + `{"model":"m","response":"","done":true,"done_reason":"stop","eval_count":1}` + "\r\n"},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 0, Model: "m", Finish: "stop", Final: true, Usage: noUsage}}},
		{"a line longer than the bound is skipped, the next read", ChatCompletions, SSE,
			[]string{long[:MaxLine/2], long[MaxLine/2:], tok("after")},
			[]got{{Kind: Skipped, At: 1}, {Kind: Data, At: 2, Content: true, Model: "m", Usage: noUsage}}},
		{"a line longer than the bound in one read", ChatCompletions, SSE,
			[]string{long + tok("after")},
			[]got{{Kind: Skipped, At: 0}, {Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}}},
		{"a line of exactly the bound is read", OllamaGenerate, NDJSON,
			[]string{`{"response":"` + strings.Repeat("b", MaxLine-len(`{"response":""}`)) + `"}` + "\n"},
			[]got{{Kind: Data, At: 0, Content: true, Usage: noUsage}}},
		{"multi-token chunks are one event each", ChatCompletions, SSE,
			[]string{tok("one two three"), tok(" four five")},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Content: true, Model: "m", Usage: noUsage}}},
		{"several events in one read, one event across reads", ChatCompletions, SSE,
			[]string{tok("a") + tok("b")[:20], tok("b")[20:]},
			[]got{{Kind: Data, At: 0, Content: true, Model: "m", Usage: noUsage}, {Kind: Data, At: 1, Content: true, Model: "m", Usage: noUsage}}},
		{"reasoning and tool calls are content; an empty tool_calls is not", ChatCompletions, SSE,
			[]string{`data: {"choices":[{"delta":{"reasoning_content":"hm"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"reasoning":"hm"}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":[]}}]}` + "\n\n" +
				`data: {"choices":[{"delta":{"tool_calls":null,"content":null}}]}` + "\n\n"},
			[]got{{Kind: Data, Content: true, Usage: noUsage}, {Kind: Data, Content: true, Usage: noUsage}, {Kind: Data, Content: true, Usage: noUsage},
				{Kind: Data, Usage: noUsage}, {Kind: Data, Usage: noUsage}}},
		{"a completion's text is content", Completions, SSE,
			[]string{`data: {"model":"m","choices":[{"text":"Blue","finish_reason":null}]}` + "\n\n"},
			[]got{{Kind: Data, Content: true, Model: "m", Usage: noUsage}}},
		{"Ollama thinking, response and the last line", OllamaGenerate, NDJSON,
			[]string{`{"model":"q","response":"","thinking":"Hmm","done":false}` + "\n" + `{"model":"q","response":"","done":false}` + "\n",
				`{"model":"q","response":"","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}`},
			[]got{{Kind: Data, Content: true, Model: "q", Usage: noUsage}, {Kind: Data, Model: "q", Usage: noUsage},
				{Kind: Data, At: 2, Model: "q", Finish: "length", Final: true, Usage: noUsage}}},
		{"Ollama chat tool calls are content", OllamaChat, NDJSON,
			[]string{`{"model":"q","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f"}}]},"done":false}` + "\n"},
			[]got{{Kind: Data, Content: true, Model: "q", Usage: noUsage}}},
		{"blank lines and malformed lines", OllamaChat, NDJSON,
			[]string{"\n  \n{not json}\n"},
			[]got{{Kind: Malformed}}},
		{"a data line with no data is not malformed", ChatCompletions, SSE,
			[]string{"data:\n\ndata: \n\n"}, nil},
		{"a whole chat answer", ChatCompletions, Whole,
			[]string{`{"model":"m","choices":[{"message":{"role":"assistant","content":"Blue."},"finish_reason":"stop"}],`, `"usage":{"prompt_tokens":4,"completion_tokens":2}}`},
			[]got{{Kind: Data, At: 2, Whole: true, Content: true, Model: "m", Finish: "stop", Usage: [3]int{4, 2, -1}}}},
		{"a whole Ollama answer", OllamaGenerate, Whole,
			[]string{`{"model":"m","response":"Blue.","done":true,"done_reason":"stop","eval_count":2}`},
			[]got{{Kind: Data, At: 1, Whole: true, Content: true, Model: "m", Finish: "stop", Final: true, Usage: noUsage}}},
		{"a whole answer that is an error", ChatCompletions, Whole,
			[]string{`{"error":{"message":"no such model","type":"NotFoundError","code":404}}`},
			[]got{{Kind: Data, At: 1, Whole: true, Error: "no such model", Usage: noUsage}}},
		{"a whole answer that is not JSON", OllamaChat, Whole,
			[]string{`<html>`},
			[]got{{Kind: Malformed, At: 1, Whole: true}}},
		{"a whole answer over the bound", ChatCompletions, Whole,
			[]string{strings.Repeat(" ", 1<<16), "{}"},
			[]got{{Kind: Skipped, At: 1, Whole: true}}},
		{"invalid counts are kept as invalid", ChatCompletions, SSE,
			[]string{`data: {"choices":[],"usage":{"prompt_tokens":-1,"completion_tokens":2.5,"prompt_tokens_details":{"cached_tokens":"3"}}}` + "\n\n"},
			[]got{{Kind: Data, Usage: [3]int{-3, -3, -3}}}},
		{"llama.cpp's timings", ChatCompletions, SSE,
			[]string{`data: {"choices":[{"finish_reason":"stop","delta":{}}],"timings":{"cache_n":1,"prompt_n":2,"prompt_ms":3.5,"predicted_n":4,"predicted_ms":5}}` + "\n\n"},
			[]got{{Kind: Data, Finish: "stop", Timings: true, Usage: noUsage}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.want {
				if tt.want[i].Usage == [3]int{} {
					tt.want[i].Usage = noUsage
				}
			}
			gotEvents := read(tt.api, tt.f, tt.pieces, nil)
			if !equal(gotEvents, tt.want) {
				t.Errorf("events\n got %+v\nwant %+v", gotEvents, tt.want)
			}
		})
	}
}

func equal(a, b []got) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSettled: once the handler settles, a streamed line is decoded only
// where it may end or account for the answer: usage, timings, a finish
// (SSE); done or an error (NDJSON).
func TestSettled(t *testing.T) {
	settleAtFirst := func(r *recorder) bool { return len(r.events) > 0 }
	sse := []string{
		`data: {"model":"m","choices":[{"delta":{"content":"a"}}]}` + "\n\n",
		`data: {"model":"m","choices":[{"delta":{"content":"b"}}]}` + "\n\n",
		`data: {"model":"m","choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		`data: {"model":"m","choices":[],"timings":{"prompt_n":1}}` + "\n\n",
		`data: {"model":"m","choices":[],"usage":{"prompt_tokens":1}}` + "\n\n",
		"data: [DONE]\n\n",
	}
	var at []int
	for _, g := range read(ChatCompletions, SSE, sse, settleAtFirst) {
		at = append(at, g.At)
	}
	if want := []int{0, 2, 3, 4, 5}; !equalInts(at, want) {
		t.Errorf("SSE events at %v, want %v (the second content chunk passed by)", at, want)
	}
	nd := []string{
		`{"model":"m","response":"a","done":false}` + "\n",
		`{"model":"m","response":"b","done":false}` + "\n",
		`{"error":"x"}` + "\n",
		`{"model":"m","response":"","done":true}` + "\n",
	}
	at = nil
	for _, g := range read(OllamaGenerate, NDJSON, nd, settleAtFirst) {
		at = append(at, g.At)
	}
	if want := []int{0, 2, 3}; !equalInts(at, want) {
		t.Errorf("NDJSON events at %v, want %v", at, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fixture is a recorded answer: its body, as the server framed it.
type fixture struct {
	body    []byte
	framing Framing
}

// loadFixture reads a file of testdata/proxy or testdata/bench: a first
// "# provenance:" line, then the body (.sse, .ndjson, .json) or the
// response as it came on the wire (.http, chunked or not).
func loadFixture(tb testing.TB, path string) fixture {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", path))
	if err != nil {
		tb.Fatal(err)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(first, []byte("# provenance: ")) {
		tb.Fatalf("%s: the first line must say where the answer comes from", path)
	}
	switch filepath.Ext(path) {
	case ".sse":
		return fixture{rest, SSE}
	case ".ndjson":
		return fixture{rest, NDJSON}
	case ".json":
		return fixture{rest, Whole}
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rest)), nil)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return fixture{body.Bytes(), FramingOf(resp.Header.Get("Content-Type"))}
}

// summary is what a whole answer said, as the bench keeps it.
type summary struct {
	content, data int
	model         string
	usage         [3]int
	finish        string
	done, final   bool
	timings       bool
	errors        int
}

func summarize(events []got) summary {
	s := summary{usage: noUsage}
	for _, e := range events {
		switch e.Kind {
		case Done:
			s.done = true
		case Data:
			s.data++
			if e.Content {
				s.content++
			}
			if s.model == "" {
				s.model = e.Model
			}
			if e.Usage != noUsage {
				s.usage = e.Usage
			}
			if e.Finish != "" {
				s.finish = e.Finish
			}
			s.final = s.final || e.Final
			s.timings = s.timings || e.Timings
			if e.Error != "" {
				s.errors++
			}
		}
	}
	return s
}

// TestFixtures reads every recorded answer, and reads it the same cut into
// the pieces it came in or at every byte. The expected figures are counted
// by hand from the files.
func TestFixtures(t *testing.T) {
	for _, c := range []struct {
		path string
		api  API
		want summary
	}{
		{"proxy/llamacpp_b10309_chat.http", ChatCompletions, summary{content: 1, data: 1, model: "/tmp/peers/tiny-llama.gguf", usage: [3]int{24, 4, 23}, finish: "length", timings: true}},
		// A role chunk (content null), 4 content chunks, a finish chunk
		// with timings (no usage: it was not asked for), [DONE].
		{"proxy/llamacpp_b10309_chat_stream.http", ChatCompletions, summary{content: 4, data: 6, model: "/tmp/peers/tiny-llama.gguf", usage: noUsage, finish: "length", done: true, timings: true}},
		// Recorded for the bench: the same with usage asked for, which
		// llama.cpp sends on a chunk of its own with the timings.
		{"bench/llamacpp_b10309_chat_stream_usage.http", ChatCompletions, summary{content: 4, data: 7, model: "/tmp/peers/tiny-llama.gguf", usage: [3]int{38, 4, 0}, finish: "length", done: true, timings: true}},
		// llm-d's simulator: a role chunk without content, 4 content
		// chunks, a finish chunk, a usage-only chunk.
		{"bench/llmd_sim_chat_stream_usage.http", ChatCompletions, summary{content: 4, data: 7, model: "tiny", usage: [3]int{10, 4, 0}, finish: "length", done: true}},
		{"proxy/llamacpp_chat_stream.sse", ChatCompletions, summary{content: 2, data: 4, model: "qwen2.5-7b", usage: [3]int{1210, 2, -1}, finish: "stop", done: true, timings: true}},
		{"proxy/ollama_chat_stream.ndjson", OllamaChat, summary{content: 3, data: 4, model: "llama3.2", usage: noUsage, finish: "stop", final: true}},
		{"proxy/ollama_generate.json", OllamaGenerate, summary{content: 1, data: 1, model: "llama3.2", usage: noUsage, finish: "stop", final: true}},
		{"proxy/ollama_generate_cached.ndjson", OllamaGenerate, summary{content: 2, data: 3, model: "qwen3", usage: noUsage, finish: "stop", final: true}},
		{"proxy/openai_chat.json", ChatCompletions, summary{content: 1, data: 1, model: "gpt-4o-mini", usage: [3]int{1900, 3, 1792}, finish: "stop"}},
		{"proxy/openai_completions_stream_nousage.sse", Completions, summary{content: 2, data: 2, model: "mistral-7b", usage: noUsage, finish: "stop", done: true}},
		// The role chunk (content ""), two tool-call deltas, the usage chunk.
		{"proxy/vllm_chat_stream_usage.sse", ChatCompletions, summary{content: 2, data: 4, model: "meta-llama/Llama-3.1-8B-Instruct", usage: [3]int{2048, 12, 1536}, finish: "tool_calls", done: true}},
	} {
		t.Run(c.path, func(t *testing.T) {
			f := loadFixture(t, c.path)
			whole := summarize(read(c.api, f.framing, []string{string(f.body)}, nil))
			if whole != c.want {
				t.Errorf("read\n got %+v\nwant %+v", whole, c.want)
			}
			var bytewise []string
			for i := range f.body {
				bytewise = append(bytewise, string(f.body[i:i+1]))
			}
			if got := summarize(read(c.api, f.framing, bytewise, nil)); got != c.want {
				t.Errorf("read a byte at a time\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestFramingOf(t *testing.T) {
	for ct, want := range map[string]Framing{
		"text/event-stream":                   SSE,
		"text/event-stream; charset=utf-8":    SSE,
		"application/x-ndjson":                NDJSON,
		"application/json; charset=utf-8":     Whole,
		"":                                    Whole,
		"text/plain":                          Whole,
		"application/x-ndjson; charset=utf-8": NDJSON,
	} {
		if got := FramingOf(ct); got != want {
			t.Errorf("FramingOf(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	for path, want := range map[string]API{
		"/v1/chat/completions":        ChatCompletions,
		"/openai/v1/chat/completions": ChatCompletions,
		"/v1/completions":             Completions,
		"/api/chat":                   OllamaChat,
		"/ollama/api/generate":        OllamaGenerate,
	} {
		if got, ok := Classify(path); !ok || got != want {
			t.Errorf("Classify(%q) = %v %v, want %v", path, got, ok, want)
		}
		if got, _ := Classify(want.Path()); got != want {
			t.Errorf("%v's path %q is classified %v", want, want.Path(), got)
		}
	}
	if _, ok := Classify("/v1/models"); ok {
		t.Error("/v1/models is not a generation")
	}
}
