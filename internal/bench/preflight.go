package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/stream"
)

// What the bench asks a server before it sends any load, so that input
// that cannot work is refused with one clear line while nothing has been
// sent: is it there, does it serve the model, does it stream, does it say
// how many tokens it generated.

// maxPreflightBody bounds an answer the preflight reads.
const maxPreflightBody = 4 << 20

// PreflightError is a server that cannot be loaded as asked. Hints say
// what to try.
type PreflightError struct {
	Msg   string
	Hints []string
	Err   error
}

func (e *PreflightError) Error() string { return e.Msg }
func (e *PreflightError) Unwrap() error { return e.Err }

// Model is one model a server lists, with its context length where the
// list says it (vLLM's and SGLang's max_model_len, llama.cpp's
// meta.n_ctx); 0 not said.
type Model struct {
	ID      string
	Context int
}

// Root is the server's base without the API's path: where /metrics and
// the model list hang.
func Root(base *url.URL) *url.URL {
	u := *base
	path := strings.TrimSuffix(u.Path, "/")
	for _, api := range stream.APIs() {
		path = strings.TrimSuffix(path, api.Path())
	}
	u.Path = strings.TrimSuffix(path, "/v1")
	u.RawQuery, u.Fragment = "", ""
	return &u
}

// Models lists the models the server serves: OpenAI's GET /v1/models, or
// Ollama's GET /api/tags. A server that answers neither (404) lists
// nothing, which is no error; one that cannot be reached is.
func Models(ctx context.Context, c *http.Client, base *url.URL, api load.API) ([]Model, error) {
	u := Root(base)
	if api.OpenAI() {
		u.Path += "/v1/models"
	} else {
		u.Path += "/api/tags"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, unreachable(base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPreflightBody))
	if err != nil {
		return nil, unreachable(base, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return nil, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &PreflightError{Msg: fmt.Sprintf("%s refused the bench: %s", redact(base), resp.Status),
			Hints: []string{"give its credentials: --header 'Authorization: Bearer TOKEN' (or INFERSCOPE_BEARER_TOKEN)"}}
	case resp.StatusCode != http.StatusOK:
		return nil, nil // a list it will not give is not the bench's business
	}
	return parseModels(body), nil
}

// parseModels reads a model list: OpenAI's {"data": [{"id"}]} with vLLM's
// max_model_len or llama.cpp's meta.n_ctx, or Ollama's {"models":
// [{"name"}]}. What is not such a list lists nothing; a context that is
// not a positive count is not said.
func parseModels(body []byte) []Model {
	var list struct {
		Data []struct {
			ID          string          `json:"id"`
			MaxModelLen json.RawMessage `json:"max_model_len"`
			Meta        *struct {
				NCtx json.RawMessage `json:"n_ctx"`
			} `json:"meta"`
		} `json:"data"`
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	var out []Model
	for _, m := range list.Data {
		mod := Model{ID: m.ID, Context: contextOf(m.MaxModelLen)}
		if mod.Context == 0 && m.Meta != nil {
			mod.Context = contextOf(m.Meta.NCtx)
		}
		out = append(out, mod)
	}
	for _, m := range list.Models {
		if len(list.Data) > 0 {
			break // llama.cpp lists its model both ways
		}
		id := m.Name
		if id == "" {
			id = m.Model
		}
		out = append(out, Model{ID: id})
	}
	return out
}

// contextOf reads a context length: a whole number of tokens, at most
// stream.MaxTokens; 0 for anything else.
func contextOf(raw json.RawMessage) int {
	var c stream.Count
	if len(raw) == 0 || c.UnmarshalJSON(raw) != nil || !c.OK {
		return 0
	}
	return c.N
}

// ChooseModel picks the model to load: the one asked, which the server
// must list (where it lists any); or, none asked, the only one it lists.
func ChooseModel(asked string, models []Model) (Model, error) {
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	if asked != "" {
		for _, m := range models {
			if m.ID == asked || strings.TrimSuffix(m.ID, ":latest") == asked {
				return m, nil
			}
		}
		if len(models) == 0 {
			return Model{ID: asked}, nil // the server lists none: it will say
		}
		return Model{}, &PreflightError{Msg: fmt.Sprintf("the server does not serve the model %q", asked),
			Hints: []string{"it serves: " + strings.Join(ids, ", ")}}
	}
	switch len(models) {
	case 0:
		return Model{}, nil
	case 1:
		return models[0], nil
	}
	return Model{}, &PreflightError{Msg: "the server serves several models: say which with --model",
		Hints: []string{"it serves: " + strings.Join(ids, ", ")}}
}

// Probe is what one request told of how the server answers.
type Probe struct {
	// Streamed says the answer came as a stream of events; Usage that it
	// said how many tokens it generated (OpenAI's usage, llama.cpp's
	// timings, Ollama's counts).
	Streamed, Usage bool
	// PromptTokens is the prompt's length by the answer; -1 not said.
	PromptTokens int
}

// ProbeServer sends body (a request of the run, made short: two tokens at
// most) to t through the generator's own path (load.Probe: its client, its
// reader): the server's refusal, an answer that is not streamed, or one
// with no token count are errors, before any load is sent.
func ProbeServer(ctx context.Context, t load.Target, body []byte) (Probe, error) {
	short, err := shorten(body, t.API)
	if err != nil {
		return Probe{}, err
	}
	rec, err := load.Probe(ctx, t, workload.Request{Body: short, PromptTokens: -1, OutputTokens: 2})
	if err != nil {
		return Probe{}, &PreflightError{Msg: fmt.Sprintf("cannot ask %s: %v", redact(t.Base), err), Err: err}
	}
	p := Probe{Streamed: rec.Streamed, Usage: rec.TokenSource == "usage", PromptTokens: rec.PromptTokens}
	u := load.Endpoint(t)
	switch {
	case rec.Error == load.ErrConnect:
		return p, &PreflightError{Msg: fmt.Sprintf("cannot reach %s: %s", redact(t.Base), rec.ErrorDetail),
			Hints: []string{"check that the server is up and TARGET's host and port"}}
	case rec.Error == load.ErrHTTP:
		return p, refused(u, t.API, rec.Status, rec.ErrorDetail)
	case rec.Error != "":
		return p, &PreflightError{Msg: fmt.Sprintf("the server answered the first request with an error (%s): %s", rec.Error, clip(rec.ErrorDetail)),
			Hints: []string{"the server's log says why; check --model and the lengths asked"}}
	case !p.Streamed:
		return p, &PreflightError{Msg: fmt.Sprintf("%s answered a streamed request all at once: the bench times tokens as they stream", redact(u)),
			Hints: []string{"check that the server supports \"stream\": true on this endpoint; --endpoint chooses another"}}
	case !p.Usage:
		return p, &PreflightError{Msg: "the server's answer did not say how many tokens it generated (no usage)",
			Hints: []string{"newer servers send it with stream_options.include_usage; --tokens-from-events counts streamed events instead (exact only where each carries one token)"}}
	}
	return p, nil
}

// shorten asks for two tokens at most and drops what holds an answer to a
// length (min_tokens above the limit would be refused).
func shorten(body []byte, api load.API) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("the first request's body is not JSON: %w", err)
	}
	if api.OpenAI() {
		m["max_tokens"] = 2
		if _, ok := m["max_completion_tokens"]; ok {
			m["max_completion_tokens"] = 2
		}
		delete(m, "min_tokens")
	} else {
		opts, _ := m["options"].(map[string]any)
		if opts == nil {
			opts = map[string]any{}
		}
		opts["num_predict"] = 2
		m["options"] = opts
	}
	return json.Marshal(m)
}

// refused is the server's refusal of the first request, in its words
// (detail: the status and the server's message).
func refused(u *url.URL, api load.API, status int, detail string) error {
	e := &PreflightError{Msg: fmt.Sprintf("%s refused the first request: %s", redact(u), clip(detail))}
	switch status {
	case http.StatusNotFound:
		e.Hints = append(e.Hints, fmt.Sprintf("is this the %s API? --endpoint chooses another, or give its path in TARGET", api))
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Hints = append(e.Hints, "give its credentials: --header 'Authorization: Bearer TOKEN' (or INFERSCOPE_BEARER_TOKEN)")
	default:
		e.Hints = append(e.Hints, "the server's message says why; check --model and the lengths asked")
	}
	return e
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func redact(u *url.URL) string { return u.Redacted() }

// unreachable is a server the bench could not reach.
func unreachable(base *url.URL, err error) error {
	var pe *PreflightError
	if errors.As(err, &pe) {
		return err
	}
	return &PreflightError{Msg: fmt.Sprintf("cannot reach %s: %v", redact(base), errors.Unwrap(err)), Err: err,
		Hints: []string{"check that the server is up and TARGET's host and port"}}
}
