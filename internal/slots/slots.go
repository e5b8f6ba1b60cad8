// Package slots reads llama.cpp's /slots beside its /metrics: what each
// slot (one per -np) is doing, which the metrics only sum. The answer is
// fetched through internal/httpsafe with the scrape's headers and cap, and
// only the figures the breakdown shows are kept: the prompt and generated
// text a debug server adds are never read into memory beyond the cap, nor
// kept.
package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// MaxSlots is the most slots an answer may list: more is no llama.cpp
// server's (each slot holds a context), and the answer is refused.
const MaxSlots = 4096

// Options say how /slots is asked for: as the scrape asks for /metrics.
type Options struct {
	// Headers are sent with the request, to the server's own host only.
	Headers http.Header
	// MaxBytes caps the answer, on the wire and after decompression.
	MaxBytes int64
	// Timeout bounds the request; the context's deadline bounds it too.
	Timeout time.Duration
	// Transport carries the request; nil is httpsafe's shared one.
	Transport http.RoundTripper
	// UserAgent is sent as the User-Agent header.
	UserAgent string
	// Now reads the clock (time.Now when nil).
	Now func() time.Time
	// Query is sent with the request: a llama.cpp router's model.
	Query url.Values
}

// URL is the /slots endpoint of the server whose /metrics is at metrics:
// the same scheme, host and path prefix (an --api-prefix), its query and
// user info dropped.
func URL(metrics *url.URL) *url.URL {
	u := *metrics
	u.User, u.RawQuery, u.Fragment, u.RawPath = nil, "", "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/metrics") + "/slots"
	return &u
}

// Read asks the llama.cpp server whose /metrics is at metrics for its
// slots. It never fails: what went wrong is in the result's Status and
// Why (a server started with --no-slots answers 501, a build without the
// endpoint 404).
func Read(ctx context.Context, metrics *url.URL, o Options) *snapshot.Slots {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	body, status, err := get(ctx, metrics, o)
	out := &snapshot.Slots{At: o.Now()}
	switch {
	case err != nil:
		out.Status, out.Why = snapshot.SlotsFailed, termsafe.Line(err.Error(), 200)
	case status == http.StatusNotImplemented:
		out.Status, out.Why = snapshot.SlotsDisabled, "HTTP 501"+serverSays(body)
	case status == http.StatusNotFound:
		out.Status, out.Why = snapshot.SlotsAbsent, "HTTP 404: this server has no /slots"
	case status != http.StatusOK:
		out.Status, out.Why = snapshot.SlotsFailed, fmt.Sprintf("HTTP %d%s", status, serverSays(body))
	default:
		slots, err := Parse(body)
		if err != nil {
			out.Status, out.Why = snapshot.SlotsFailed, termsafe.Line(err.Error(), 200)
			break
		}
		out.Status, out.Slots = snapshot.SlotsRead, slots
	}
	return out
}

// get fetches /slots within the cap.
func get(ctx context.Context, metrics *url.URL, o Options) (body []byte, status int, err error) {
	c := httpsafe.NewClient(httpsafe.Options{Origin: metrics, Headers: o.Headers, MaxBytes: o.MaxBytes, Gzip: true, Transport: o.Transport})
	u := URL(metrics)
	u.RawQuery = o.Query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, fmt.Errorf("slots: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if o.UserAgent != "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("slots: %w", err)
	}
	defer resp.Body.Close()
	body, err = httpsafe.ReadAll(resp.Body, o.MaxBytes, resp.ContentLength)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("slots: reading the answer: %w", err)
	}
	return body, resp.StatusCode, nil
}

// serverSays quotes a llama.cpp error answer's message ({"error":
// {"message": …}}), or nothing.
func serverSays(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return ""
	}
	return ": " + termsafe.Line(e.Error.Message, 160)
}

// slot is one entry of the answer, as b10309 writes it; pointers tell a
// field left out from 0.
type slot struct {
	ID           *int   `json:"id"`
	NCtx         int    `json:"n_ctx"`
	IsProcessing bool   `json:"is_processing"`
	IDTask       *int   `json:"id_task"`
	NPrompt      int    `json:"n_prompt_tokens"`
	NProcessed   int    `json:"n_prompt_tokens_processed"`
	NCache       int    `json:"n_prompt_tokens_cache"`
	NextToken    []next `json:"next_token"`
}

type next struct {
	NRemain  int `json:"n_remain"`
	NDecoded int `json:"n_decoded"`
}

// ErrNotSlots is an answer that is not a list of slots.
var ErrNotSlots = errors.New("slots: the answer is not a list of slots")

// Parse reads a /slots answer: a JSON array of slots, each with its id.
// Fields a slot leaves out are 0 (a slot that never ran has no task);
// negative counts, more than MaxSlots slots, or one id twice are refused.
func Parse(body []byte) ([]snapshot.Slot, error) {
	var raw []slot
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSlots, err)
	}
	if len(raw) > MaxSlots {
		return nil, fmt.Errorf("%w: %d slots, more than %d", ErrNotSlots, len(raw), MaxSlots)
	}
	out := make([]snapshot.Slot, 0, len(raw))
	seen := map[int]bool{}
	for i, r := range raw {
		if r.ID == nil {
			return nil, fmt.Errorf("%w: entry %d has no id", ErrNotSlots, i)
		}
		if seen[*r.ID] {
			return nil, fmt.Errorf("%w: slot %d listed twice", ErrNotSlots, *r.ID)
		}
		seen[*r.ID] = true
		s := snapshot.Slot{ID: *r.ID, Ctx: r.NCtx, Processing: r.IsProcessing, HasTask: r.IDTask != nil,
			ContextTokens: r.NPrompt, PromptComputed: r.NProcessed, PromptCached: r.NCache}
		if r.IDTask != nil {
			s.Task = *r.IDTask
		}
		if len(r.NextToken) > 0 {
			s.Decoded, s.Remaining = r.NextToken[0].NDecoded, r.NextToken[0].NRemain
		}
		if s.Remaining < 0 {
			s.Remaining = -1 // no limit (n_predict -1)
		}
		if s.Ctx < 0 || s.ContextTokens < 0 || s.PromptComputed < 0 || s.PromptCached < 0 || s.Decoded < 0 {
			return nil, fmt.Errorf("%w: slot %d has a negative count", ErrNotSlots, s.ID)
		}
		out = append(out, s)
	}
	return out, nil
}
