package workload

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/stream"
)

func TestBody(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be <terse>."}, {Role: "user", Content: "Why?"}}
	for _, c := range []struct {
		api    stream.API
		output int
		fixed  bool
		want   string
	}{
		{stream.ChatCompletions, 8, true, `{"ignore_eos":true,"max_tokens":8,"messages":[{"role":"system","content":"Be <terse>."},{"role":"user","content":"Why?"}],"min_tokens":8,"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{stream.ChatCompletions, 0, true, `{"messages":[{"role":"system","content":"Be <terse>."},{"role":"user","content":"Why?"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{stream.Completions, 3, false, `{"max_tokens":3,"model":"m","prompt":"Be <terse>.\n\nWhy?","stream":true,"stream_options":{"include_usage":true}}`},
		{stream.OllamaChat, 5, true, `{"messages":[{"role":"system","content":"Be <terse>."},{"role":"user","content":"Why?"}],"model":"m","options":{"num_predict":5},"stream":true}`},
		{stream.OllamaGenerate, 0, false, `{"model":"m","prompt":"Be <terse>.\n\nWhy?","stream":true}`},
	} {
		if got := string(Shape{API: c.api, Model: "m"}.Body(msgs, c.output, c.fixed)); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.api, got, c.want)
		}
	}
}

func TestParseDist(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Dist
		err  bool
	}{
		{"512", Dist{Kind: Fixed, Mean: 512, Min: 512, Max: 512}, false},
		{" 0 ", Dist{Kind: Fixed}, false},
		{"256..1024", Dist{Kind: Uniform, Mean: 640, Min: 256, Max: 1024}, false},
		{"512~128", Dist{Kind: Normal, Mean: 512, StdDev: 128, Min: 128, Max: 896}, false},
		{"100~50", Dist{Kind: Normal, Mean: 100, StdDev: 50, Min: 1, Max: 250}, false},
		{"512~128:64..1024", Dist{Kind: Normal, Mean: 512, StdDev: 128, Min: 64, Max: 1024}, false},
		{"-1", Dist{}, true},
		{"10..5", Dist{}, true},
		{"x", Dist{}, true},
		{"512~-1", Dist{}, true},
		{"512~NaN", Dist{}, true},
		{"512~1:600..700", Dist{}, true},
		{"1..", Dist{}, true},
	} {
		got, err := ParseDist(c.in)
		if (err != nil) != c.err || !c.err && got != c.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// promptOf is the text of a synthetic request's one message.
func promptOf(t *testing.T, r Request) string {
	t.Helper()
	var b struct {
		Messages []Message `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil || len(b.Messages) != 1 {
		t.Fatalf("%s: %v", r.Body, err)
	}
	return b.Messages[0].Content
}

func TestSyntheticLengths(t *testing.T) {
	s := &Synthetic{Shape: Shape{API: stream.ChatCompletions, Model: "m"}, Seed: 7,
		Prompt: Dist{Kind: Uniform, Min: 20, Max: 40}, Output: Dist{Kind: Fixed, Mean: 16}, FixedOutput: true,
		Calibration: Calibration{Overhead: 5, Method: "tokenize"}}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i := range 400 {
		r := s.Next(i)
		words := len(strings.Fields(promptOf(t, r)))
		// One token a word, and 5 the API adds: the words are the
		// tokens drawn less 5.
		if r.PromptTokens != words+5 || r.PromptTokens < 20 || r.PromptTokens > 40 {
			t.Fatalf("request %d: %d words, PromptTokens %d", i, words, r.PromptTokens)
		}
		seen[r.PromptTokens] = true
		if r.OutputTokens != 16 || !r.Fixed {
			t.Fatalf("request %d: output %d fixed %v", i, r.OutputTokens, r.Fixed)
		}
	}
	if len(seen) != 21 {
		t.Errorf("%d distinct lengths of 21 in 400 draws from 20..40", len(seen))
	}
}

// TestSyntheticSeeded: the same seed gives the same requests, in any
// order; another seed other ones.
func TestSyntheticSeeded(t *testing.T) {
	mk := func(seed uint64) *Synthetic {
		return &Synthetic{Shape: Shape{API: stream.OllamaGenerate, Model: "m"}, Seed: seed, Prompt: Dist{Kind: Normal, Mean: 50, StdDev: 10, Min: 20, Max: 80}, Output: Dist{Kind: Uniform, Min: 1, Max: 9}}
	}
	a, b, c := mk(1), mk(1), mk(2)
	for _, i := range []int{5, 0, 3, 1000000} {
		if string(a.Next(i).Body) != string(b.Next(i).Body) {
			t.Errorf("request %d differs under the same seed", i)
		}
		if string(a.Next(i).Body) == string(c.Next(i).Body) {
			t.Errorf("request %d is the same under another seed", i)
		}
	}
	if string(a.Next(1).Body) == string(a.Next(2).Body) {
		t.Error("two requests are the same")
	}
}

// TestSyntheticPrefix: the share of requests given asks the prefix, all
// of them the same words; UniqueFirst puts each request's own words first.
func TestSyntheticPrefix(t *testing.T) {
	s := &Synthetic{Shape: Shape{API: stream.ChatCompletions}, Seed: 3, Prompt: Dist{Kind: Fixed, Mean: 100}, Prefix: 60, PrefixShare: 0.3}
	const n = 2000
	// The prefix is the start most requests share.
	count := map[string]int{}
	for i := range n {
		w := strings.Fields(promptOf(t, s.Next(i)))
		count[strings.Join(w[:60], " ")]++
	}
	best := 0
	for _, c := range count {
		best = max(best, c)
	}
	// Binomial(2000, 0.3): mean 600, sd 20.5; 5 sd either side.
	if best < 600-103 || best > 600+103 {
		t.Errorf("%d of %d requests share the prefix, want about 600", best, n)
	}
	s.UniqueFirst = true
	firsts := map[string]bool{}
	for i := range n {
		w := strings.Fields(promptOf(t, s.Next(i)))
		firsts[strings.Join(w[:3], " ")] = true
	}
	if len(firsts) != n {
		t.Errorf("%d distinct starts of %d requests with UniqueFirst", len(firsts), n)
	}
	if err := (&Synthetic{Prompt: Dist{Kind: Fixed, Mean: 50}, Prefix: 50, PrefixShare: 1}).Check(); err == nil {
		t.Error("a prefix as long as the prompt was taken")
	}
}

func TestReadDataset(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Item
		err      string
	}{
		{"jsonl", "{\"prompt\":\"a\"}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"b\"}],\"output_tokens\":5}\r\n{\"prompt\":\"c\",\"max_tokens\":7}\n{\"prompt\":\"\"}\n",
			[]Item{{Messages: []Message{{"user", "a"}}}, {Messages: []Message{{"user", "b"}}, Output: 5}, {Messages: []Message{{"user", "c"}}, Output: 7}}, ""},
		{"sharegpt array", `[{"id":"x","conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"hello there"}]},{"conversations":[{"from":"gpt","value":"only"}]}]`,
			[]Item{{Messages: []Message{{"user", "hi"}}, Output: 3}}, ""},
		{"sharegpt lines with a system turn", `{"conversations":[{"from":"system","value":"s"},{"from":"human","value":"q"}]}`,
			[]Item{{Messages: []Message{{"system", "s"}, {"user", "q"}}}}, ""},
		{"a line that is not JSON", "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\nnot json\n", nil, "d:3: not a JSON object"},
		{"a line with neither", "{\"prompt\":\"a\"}\n{\"text\":\"b\"}\n", nil, `d:2: no "prompt", "messages" or "conversations"`},
		{"a negative output", `{"prompt":"a","output_tokens":-2}`, nil, "d:1: an output length of -2"},
		{"a message without a role", `{"messages":[{"content":"a"}]}`, nil, `d:1: a message without a "role"`},
		{"a turn from nobody", `[{"conversations":[{"from":"bot","value":"a"}]}]`, nil, `d: entry 1: a turn from "bot"`},
		{"empty", "  \n", nil, "d: the dataset is empty"},
		{"no prompts", `{"prompt":""}`, nil, "d: no entry has a prompt"},
		{"a broken array", `[{"conversations":`, nil, "d: not a JSON array of conversations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadDataset("d", strings.NewReader(c.in))
			if c.err != "" {
				var de *DatasetError
				if err == nil || !strings.HasPrefix(err.Error(), c.err) || !errors.As(err, &de) {
					t.Fatalf("error %v, want %q…", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			if string(g) != string(w) {
				t.Errorf("got %s\nwant %s", g, w)
			}
		})
	}
}

// TestDatasetOrder: every item once a pass, in an order the seed fixes.
func TestDatasetOrder(t *testing.T) {
	var items []Item
	for i := range 50 {
		items = append(items, Item{Messages: []Message{{"user", strings.Repeat("x", i+1)}}})
	}
	a := &Dataset{Shape: Shape{API: stream.Completions}, Items: items, Seed: 9, Output: 4}
	b := &Dataset{Shape: Shape{API: stream.Completions}, Items: items, Seed: 9, Output: 4}
	for pass := range 3 {
		seen := map[string]bool{}
		for k := range 50 {
			i := pass*50 + k
			ra, rb := a.Next(i), b.Next(i)
			if string(ra.Body) != string(rb.Body) || ra.OutputTokens != 4 || ra.PromptTokens != -1 {
				t.Fatalf("request %d: %s vs %s", i, ra.Body, rb.Body)
			}
			seen[string(ra.Body)] = true
		}
		if len(seen) != 50 {
			t.Errorf("pass %d sent %d distinct items of 50", pass, len(seen))
		}
	}
	if string(a.Next(0).Body) == string(a.Next(50).Body) && string(a.Next(1).Body) == string(a.Next(51).Body) {
		t.Error("two passes in the same order")
	}
}

// counter is a tokenizer that counts a word as one token, but for the
// words it is told are two, and a BOS.
type counter struct{ two map[string]bool }

func (c counter) Count(_ context.Context, text string) (int, error) {
	n := 1
	for _, w := range strings.Fields(text) {
		n++
		if c.two[w] {
			n++
		}
	}
	return n, nil
}

func TestCalibrate(t *testing.T) {
	shape := Shape{API: stream.ChatCompletions, Model: "m"}
	// The server's usage: the tokenizer's count and 6 for the template.
	tok := counter{two: map[string]bool{"government": true, "development": true, "the": true}}
	usage := func(_ context.Context, r Request) (int, error) {
		var b struct{ Messages []Message }
		json.Unmarshal(r.Body, &b)
		n, _ := tok.Count(context.Background(), b.Messages[0].Content)
		return n - 1 + 6, nil
	}
	c, err := Calibrate(context.Background(), shape, tok, usage)
	if err != nil {
		t.Fatal(err)
	}
	if c.Method != "tokenize" || c.PerWord != 1 || c.Overhead != 6 || len(c.Words) != len(DefaultWords)-3 {
		t.Errorf("with /tokenize and usage: %s, %v a word, %d added, %d words", c.Method, c.PerWord, c.Overhead, len(c.Words))
	}
	for _, w := range c.Words {
		if tok.two[w] {
			t.Errorf("kept %q, two tokens", w)
		}
	}
	// Every synthetic prompt is then as long as asked.
	s := &Synthetic{Shape: shape, Seed: 1, Prompt: Dist{Kind: Uniform, Min: 30, Max: 300}, Calibration: c}
	for i := range 50 {
		r := s.Next(i)
		if got, _ := usage(context.Background(), r); got != r.PromptTokens {
			t.Fatalf("request %d: asked %d tokens, the server counts %d", i, r.PromptTokens, got)
		}
	}

	c, err = Calibrate(context.Background(), shape, nil, usage)
	if err != nil {
		t.Fatal(err)
	}
	// Three of the vocabulary's words are two tokens: a word is
	// (len+3)/len tokens, and 6 are added; a prompt of random words is then
	// as long as asked, on average (the words drawn vary it).
	want := float64(len(DefaultWords)+3) / float64(len(DefaultWords))
	if c.Method != "usage" || math.Abs(c.PerWord-want) > 1e-9 || c.Overhead != 6 {
		t.Errorf("from usage: %+v, want %v a word and 6 added", c, want)
	}
	// A tokenizer that counts bytes, as the demo's does: prompts of random
	// words come out as long as asked, within what the draws vary.
	bytesUsage := func(_ context.Context, r Request) (int, error) {
		var b struct{ Messages []Message }
		json.Unmarshal(r.Body, &b)
		return (len(b.Messages[0].Content)+3)/4 + 9, nil
	}
	c, err = Calibrate(context.Background(), shape, nil, bytesUsage)
	if err != nil {
		t.Fatal(err)
	}
	s = &Synthetic{Shape: shape, Seed: 1, Prompt: Dist{Kind: Fixed, Mean: 512, Min: 512, Max: 512}, Calibration: c}
	sum := 0
	for i := range 200 {
		got, _ := bytesUsage(context.Background(), s.Next(i))
		sum += got
	}
	if mean := float64(sum) / 200; math.Abs(mean-512) > 512*0.02 {
		t.Errorf("prompts of 512 tokens by a byte-counting server: %v on average (calibration %+v)", mean, c)
	}
	c, err = Calibrate(context.Background(), shape, nil, nil)
	if err != nil || c.Method != "estimate" {
		t.Errorf("with neither: %+v %v", c, err)
	}
	if _, err := Calibrate(context.Background(), shape, nil, func(context.Context, Request) (int, error) { return 7, nil }); err == nil {
		t.Error("a server reporting the same prompt tokens for any prompt was calibrated")
	}
}

// TestFindTokenizer: each server's /tokenize form, and none.
func TestFindTokenizer(t *testing.T) {
	vllm := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Model, Prompt string }
		if r.URL.Path != "/tokenize" || json.NewDecoder(r.Body).Decode(&b) != nil || b.Prompt == "" {
			http.Error(w, `{"error":{"message":"bad"}}`, 400)
			return
		}
		n := len(strings.Fields(b.Prompt)) + 1
		json.NewEncoder(w).Encode(map[string]any{"count": n, "max_model_len": 1024, "tokens": make([]int, n)})
	})
	llama := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Content *string }
		if r.URL.Path != "/tokenize" || json.NewDecoder(r.Body).Decode(&b) != nil || b.Content == nil {
			http.Error(w, `{"error":{"code":500,"message":"\"content\" must be provided"}}`, 500)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, len(strings.Fields(*b.Content)))})
	})
	none := http.NotFoundHandler()
	for _, c := range []struct {
		name string
		h    http.Handler
		base string
		form string
		n    int
	}{{"vllm", vllm, "/v1", "vllm", 4}, {"llama.cpp", llama, "", "llama.cpp", 3}, {"ollama", none, "", "", 0}} {
		srv := httptest.NewServer(c.h)
		u, _ := url.Parse(srv.URL + c.base)
		tok, err := FindTokenizer(context.Background(), srv.Client(), u, "m")
		switch {
		case c.form == "":
			if !errors.Is(err, ErrNoTokenizer) {
				t.Errorf("%s: %v, want ErrNoTokenizer", c.name, err)
			}
		case err != nil || tok.Form != c.form:
			t.Errorf("%s: %+v %v", c.name, tok, err)
		default:
			if n, err := tok.Count(context.Background(), "one two three"); n != c.n || err != nil {
				t.Errorf("%s: counted %d, %v; want %d", c.name, n, err, c.n)
			}
		}
		srv.Close()
	}
}
