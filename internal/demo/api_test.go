package demo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// startAPI runs the demo with its API and the scenario's own workload off.
func startAPI(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := Start(ctx, Options{Scenario: "chat", Speed: MaxSpeed, Seed: 1, API: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPIAnswers: each endpoint answers in its API's shape with the
// simulator's own counts: the tokens asked for, the prompt as the
// simulator took it, and only the API's requests in its totals.
func TestAPIAnswers(t *testing.T) {
	srv := startAPI(t)
	base := srv.APIURL()
	checkChat(t, base)
	checkGenerate(t, base)

	code, body := call(t, "POST", base+"/api/chat", `{"model":"m","options":{"num_predict":4},"messages":[{"role":"user","content":"hi"}]}`)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if last := lines[len(lines)-1]; code != 200 || len(lines) < 2 || !strings.Contains(last, `"done":true`) || !strings.Contains(last, `"eval_count":4`) {
		t.Errorf("chat stream: %d %s", code, body)
	}
	code, body = call(t, "POST", base+"/v1/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":2,"prompt":"x"}`)
	if code != 200 || !strings.Contains(body, `"choices":[]`) || !strings.Contains(body, `"completion_tokens":2`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("completions stream: %d %s", code, body)
	}

	if tot := srv.Totals(); tot.Requests != 4 || tot.GeneratedTokens != 5+3+4+2 {
		t.Errorf("the simulator's totals %+v: want the API's 4 requests and 14 tokens only", tot)
	}
}

// checkChat: a non-streamed chat completion of 5 tokens.
func checkChat(t *testing.T, base string) {
	t.Helper()
	code, body := call(t, "POST", base+"/v1/chat/completions", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"0123456789abcdef"}]}`)
	var chat struct {
		Model   string
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &chat); err != nil || code != 200 || len(chat.Choices) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	// 16 bytes are 4 tokens, and 4 more for the message's template.
	if chat.Model != "m" || chat.Usage.PromptTokens != 8 || chat.Usage.CompletionTokens != 5 || chat.Choices[0].FinishReason != "length" ||
		len(strings.Fields(chat.Choices[0].Message.Content)) != 5 {
		t.Errorf("chat answer %+v", chat)
	}
}

// checkGenerate: a non-streamed Ollama generation of 3 tokens.
func checkGenerate(t *testing.T, base string) {
	t.Helper()
	code, body := call(t, "POST", base+"/api/generate", `{"model":"m","stream":false,"prompt":"hello","options":{"num_predict":3}}`)
	var gen struct {
		Done            bool
		EvalCount       int   `json:"eval_count"`
		PromptEvalCount int   `json:"prompt_eval_count"`
		EvalDuration    int64 `json:"eval_duration"`
	}
	if err := json.Unmarshal([]byte(body), &gen); err != nil || code != 200 || !gen.Done || gen.EvalCount != 3 || gen.PromptEvalCount != 6 || gen.EvalDuration <= 0 {
		t.Errorf("generate: %d %s", code, body)
	}
}

// TestAPIRefuses: what the simulator cannot serve is an error in the API's
// shape, never a hang.
func TestAPIRefuses(t *testing.T) {
	base := startAPI(t).APIURL()
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"m","messages":[]}`, `"error":{`},
		{"/v1/chat/completions", `not json`, `"error":{`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 200000) + `"}]}`, "context"},
		{"/api/chat", `{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":99999999}}`, ""},
	} {
		code, body := call(t, "POST", base+c.path, c.body)
		if c.want == "" {
			if code != 200 {
				t.Errorf("%s: %d %s; an answer longer than the context is cut to it", c.path, code, body)
			}
			continue
		}
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%s %.40s: %d %s", c.path, c.body, code, body)
		}
	}
	if code, body := call(t, "GET", base+"/api/tags", ""); code != 200 || !strings.Contains(body, DefaultModel) {
		t.Errorf("tags: %d %s", code, body)
	}
}

// TestAPIFinishReason: an answer a limit cut (the request's, or the
// context the prompt leaves) ends with "length" in both APIs, streamed or
// not; one that ended where the scenario drew it, with "stop"; and the
// tokens the answer counts are the simulator's.
func TestAPIFinishReason(t *testing.T) {
	srv := startAPI(t)
	base := srv.APIURL()
	// A completion prompt is its text's tokens (4 bytes each) and 4 more;
	// this one leaves room for 10 tokens, fewer than any drawn answer.
	room := 10
	full := strings.Repeat("x", 4*(srv.sim.Config().MaxSeqLen-4-room))
	for _, c := range []struct {
		name, path, body string
		reason           string
		tokens           int // 0: not checked
	}{
		{"openai, cut by the context", "/v1/completions", `{"prompt":"` + full + `"}`, "length", room},
		{"openai, cut by the context before max_tokens", "/v1/completions", `{"max_tokens":1000,"prompt":"` + full + `"}`, "length", room},
		{"openai stream, cut by the context", "/v1/completions", `{"stream":true,"prompt":"` + full + `"}`, "length", 0},
		{"openai, max_tokens", "/v1/chat/completions", `{"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, "length", 3},
		{"openai, ended on its own", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "stop", 0},
		{"ollama, cut by the context", "/api/generate", `{"stream":false,"prompt":"` + full + `"}`, "length", room},
		{"ollama stream, cut by the context", "/api/generate", `{"prompt":"` + full + `"}`, "length", room},
		{"ollama, num_predict", "/api/generate", `{"stream":false,"prompt":"hi","options":{"num_predict":3}}`, "length", 3},
		{"ollama, ended on its own", "/api/chat", `{"stream":false,"messages":[{"role":"user","content":"hi"}]}`, "stop", 0},
	} {
		code, body := call(t, "POST", base+c.path, c.body)
		reason, tokens := finishOf(body)
		if code != 200 || reason != c.reason || c.tokens != 0 && tokens != c.tokens {
			t.Errorf("%s: %d, ends %q after %d tokens, want %q after %d: %.300s", c.name, code, reason, tokens, c.reason, c.tokens, body)
		}
	}
}

// finishOf is the reason an answer (a JSON object, or the last of an SSE
// stream's or an NDJSON stream's) gives for ending, and the tokens it
// counts.
func finishOf(body string) (string, int) {
	reason, tokens := "", 0
	for _, line := range strings.Split(body, "\n") {
		var last struct {
			DoneReason string `json:"done_reason"`
			EvalCount  int    `json:"eval_count"`
			Choices    []struct {
				FinishReason *string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		line = strings.TrimPrefix(line, "data: ")
		if json.Unmarshal([]byte(line), &last) != nil {
			continue
		}
		for _, c := range last.Choices {
			if c.FinishReason != nil {
				reason = *c.FinishReason
			}
		}
		if last.DoneReason != "" {
			reason, tokens = last.DoneReason, last.EvalCount
		}
		tokens = max(tokens, last.Usage.CompletionTokens)
	}
	return reason, tokens
}
