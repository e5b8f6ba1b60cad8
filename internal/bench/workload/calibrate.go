package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Calibration says how the server counts a synthetic prompt: how many
// tokens a word of the vocabulary is, and how many the API adds to every
// prompt (a chat template, a BOS token).
type Calibration struct {
	Words    []string // the vocabulary; nil is DefaultWords
	PerWord  float64  // tokens a word; 0 is 1
	Overhead int      // tokens the API adds to a prompt
	// Method says where the figures come from: "tokenize" (aligned with
	// the server's /tokenize: each word one token), "usage" (fitted to
	// the prompt tokens the server reported for two probes), "estimate"
	// (neither: one token a word, nothing added).
	Method string
}

func (c Calibration) orDefault() Calibration {
	if len(c.Words) == 0 {
		c.Words = DefaultWords
	}
	if c.PerWord <= 0 || math.IsNaN(c.PerWord) {
		c.PerWord = 1
	}
	if c.Method == "" {
		c.Method = "estimate"
	}
	return c
}

// words is how many words make a prompt of tokens.
func (c Calibration) words(tokens int) int {
	return max(1, int(math.Round(float64(tokens-c.Overhead)/c.PerWord)))
}

// tokens is a prompt of words' length in tokens, as calibrated.
func (c Calibration) tokens(words int) int {
	return c.Overhead + int(math.Round(float64(words)*c.PerWord))
}

// DefaultWords are common English words, each one token (with its leading
// space) in the usual large vocabularies; Calibrate keeps those the
// server's tokenizer agrees on.
var DefaultWords = strings.Fields(`
the of and to in is was for on are with as be at by this had not but from or have an they which one you were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three
states himself few house use during without again place around however home small found thought went say part once general high upon school every don does got united left number course war until always away something fact though water less public put think almost hand enough far took head yet government system better set told nothing night end why called eyes find going look asked later knew point next city give group young let room president side social present given several order national possible rather second face per among form important often things looked early white case large become big need four within felt along children saw best church ever least power development light thing seemed family interest want members mind country area others done turned although open problem god sense began help full days brought paper
`)

// Tokenizer counts a text's tokens as the server does.
type Tokenizer interface {
	Count(ctx context.Context, text string) (int, error)
}

// ErrNoTokenizer is a server with no /tokenize that answers either form.
var ErrNoTokenizer = errors.New("the server has no /tokenize endpoint")

// ServerTokenizer is a server's POST /tokenize. Two forms are known:
// vLLM's and SGLang's take {"model", "prompt"} and answer {"count",
// "tokens", "max_model_len"} (vLLM's protocol TokenizeCompletionRequest,
// whose add_special_tokens defaults to true: a BOS is counted; SGLang's
// /tokenize is documented as compatible); llama.cpp's server takes
// {"content"} and answers {"tokens": [...]} (add_special defaults to
// false). Ollama has none.
type ServerTokenizer struct {
	Client *http.Client
	URL    string // the endpoint
	Model  string
	Form   string // "vllm" or "llama.cpp"
}

// FindTokenizer asks base's /tokenize in each form and returns the one
// that answers, or ErrNoTokenizer.
func FindTokenizer(ctx context.Context, client *http.Client, base *url.URL, model string) (*ServerTokenizer, error) {
	u := *base
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/tokenize"
	u.RawQuery, u.Fragment = "", ""
	var last error
	for _, form := range []string{"vllm", "llama.cpp"} {
		t := &ServerTokenizer{Client: client, URL: u.String(), Model: model, Form: form}
		n, err := t.Count(ctx, "the")
		if err == nil && n > 0 {
			return t, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		last = err
	}
	return nil, fmt.Errorf("%w (%v)", ErrNoTokenizer, last)
}

// Count asks the server for text's tokens.
func (t *ServerTokenizer) Count(ctx context.Context, text string) (int, error) {
	var body any = map[string]any{"content": text}
	if t.Form == "vllm" {
		body = map[string]any{"model": t.Model, "prompt": text}
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/tokenize answered %s", resp.Status)
	}
	var a struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("/tokenize answered what is not its JSON: %w", err)
	}
	switch {
	case a.Count != nil && *a.Count >= 0:
		return *a.Count, nil
	case a.Tokens != nil:
		return len(a.Tokens), nil
	}
	return 0, errors.New("/tokenize answered no count and no tokens")
}

// UsageFunc sends one request and returns the prompt tokens the server
// reported for it (a probe).
type UsageFunc func(ctx context.Context, r Request) (promptTokens int, err error)

// Calibrate works out how shape's server counts synthetic prompts: with
// tok (the server's /tokenize), the vocabulary's words that are one token
// each; with usage, the tokens the API adds to a prompt (two probes when
// there is no tokenizer, to fit the tokens a word too). Either may be
// nil; with neither, the estimate.
func Calibrate(ctx context.Context, shape Shape, tok Tokenizer, usage UsageFunc) (Calibration, error) {
	c := Calibration{Words: DefaultWords, PerWord: 1, Method: "estimate"}
	probe := func(words []string) (int, error) {
		text := strings.Join(words, " ")
		return usage(ctx, Request{Body: shape.Body([]Message{{Role: "user", Content: text}}, 1, false), PromptTokens: -1, OutputTokens: 1})
	}
	const large = 144
	switch {
	case tok != nil:
		single, err := singleTokenWords(ctx, tok, DefaultWords)
		if err != nil {
			return c, fmt.Errorf("calibrating with the server's /tokenize: %w", err)
		}
		c.Method = "tokenize"
		if len(single) >= large {
			c.Words = single
		} else {
			// Too few words are one token (a small vocabulary): the
			// words' mean, measured.
			n, err := tok.Count(ctx, "a "+strings.Join(c.Words[:large], " "))
			if err != nil {
				return c, err
			}
			a, err := tok.Count(ctx, "a")
			if err != nil {
				return c, err
			}
			c.PerWord = float64(n-a) / large
		}
		if usage != nil {
			p, err := probe(c.Words[:large])
			if err != nil {
				return c, fmt.Errorf("a probe request for the prompt's own tokens: %w", err)
			}
			c.Overhead = p - c.tokens(large)
		} else {
			n, err := tok.Count(ctx, strings.Join(c.Words[:large], " "))
			if err != nil {
				return c, err
			}
			c.Overhead = n - c.tokens(large) // a BOS; not a chat template
		}
	case usage != nil:
		// Prompts draw every word of the vocabulary alike, so the probes
		// hold the whole vocabulary, once and twice: what a word costs is
		// then the mean a prompt's words cost, whatever the tokenizer makes
		// of each (a byte-counting one, one that splits long words), and
		// the difference of the two leaves out what the API adds.
		once := len(c.Words)
		p1, err := probe(c.Words)
		if err != nil {
			return c, fmt.Errorf("a probe request to calibrate prompt lengths: %w", err)
		}
		p2, err := probe(append(slices.Clone(c.Words), c.Words...))
		if err != nil {
			return c, fmt.Errorf("a probe request to calibrate prompt lengths: %w", err)
		}
		if p2 <= p1 {
			return c, fmt.Errorf("the server reported %d prompt tokens for %d words and %d for %d: it cannot be calibrated from its usage", p1, once, p2, 2*once)
		}
		c.PerWord = float64(p2-p1) / float64(once)
		c.Overhead = p1 - int(math.Round(c.PerWord*float64(once)))
		c.Method = "usage"
	}
	return c, nil
}

// singleTokenWords keeps the words that are one token each after a space,
// asking about groups and splitting a group whose words are not.
func singleTokenWords(ctx context.Context, tok Tokenizer, words []string) ([]string, error) {
	base, err := tok.Count(ctx, "a")
	if err != nil {
		return nil, err
	}
	var keep []string
	var check func(group []string) error
	check = func(group []string) error {
		n, err := tok.Count(ctx, "a "+strings.Join(group, " "))
		if err != nil {
			return err
		}
		switch {
		case n-base == len(group):
			keep = append(keep, group...)
		case len(group) > 1:
			h := len(group) / 2
			if err := check(group[:h]); err != nil {
				return err
			}
			return check(group[h:])
		}
		return nil
	}
	seen := map[string]bool{}
	var uniq []string
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			uniq = append(uniq, w)
		}
	}
	for i := 0; i < len(uniq); i += 32 {
		if err := check(uniq[i:min(i+32, len(uniq))]); err != nil {
			return nil, err
		}
	}
	return keep, nil
}
