package proxy

import (
	"math"
	"strconv"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// What an upstream reports of a generation is read like any other outside
// input: a figure that cannot be true makes every reported figure of that
// generation unknown (a source that sends one impossible count is not
// believed on the others), and is counted; it is never clamped into a
// plausible value.
const (
	// MaxTokens is the most tokens one count of one request may report:
	// no model serves a context of more (the longest are 10 million), so
	// a larger count is garbage.
	MaxTokens = 10_000_000
	// maxPhase is the longest a prefill or a decode may report: no
	// generation takes a day.
	maxPhase = 24 * time.Hour
)

// reported are the figures a generation's usage reports, all unknown when
// one is invalid.
const reported = exporter.UnknownPrompt | exporter.UnknownCached | exporter.UnknownGenerated |
	exporter.UnknownPrefill | exporter.UnknownDecode

// count is a token count as an upstream reported it; a pointer to one is
// nil when the key is missing or null (not said).
type count struct {
	n  int
	ok bool // a whole number from 0 to MaxTokens
}

// UnmarshalJSON reads any JSON value and never fails, so that the
// chunk's other fields are read all the same.
func (c *count) UnmarshalJSON(b []byte) error {
	f, ok := number(b)
	c.ok = ok && f >= 0 && f <= MaxTokens && f == math.Trunc(f)
	if c.ok {
		c.n = int(f)
	}
	return nil
}

// phase is a duration as an upstream reported it, in milliseconds
// (llama.cpp) or nanoseconds (Ollama).
type phase struct {
	d  time.Duration
	ok bool // from 0 to maxPhase
}

func (p *phase) read(b []byte, unit time.Duration) {
	f, ok := number(b)
	p.ok = ok && f >= 0 && f <= float64(maxPhase/unit)
	if p.ok {
		p.d = time.Duration(f * float64(unit))
	}
}

// ms is a phase in milliseconds.
type ms phase

func (m *ms) UnmarshalJSON(b []byte) error { (*phase)(m).read(b, time.Millisecond); return nil }

// ns is a phase in nanoseconds.
type ns phase

func (n *ns) UnmarshalJSON(b []byte) error { (*phase)(n).read(b, time.Nanosecond); return nil }

// number reads a JSON number (the decoder has checked the syntax: a string,
// a literal, an object or an array is not one).
func number(b []byte) (float64, bool) {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// usage is an OpenAI usage object.
type usage struct {
	PromptTokens     *count `json:"prompt_tokens"`
	CompletionTokens *count `json:"completion_tokens"`
	Details          *struct {
		CachedTokens *count `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// timings is llama.cpp's account of one request.
type timings struct {
	CacheN      *count `json:"cache_n"`
	PromptN     *count `json:"prompt_n"`
	PromptMS    *ms    `json:"prompt_ms"`
	PredictedN  *count `json:"predicted_n"`
	PredictedMS *ms    `json:"predicted_ms"`
}

// ollamaFinal is the accounting on Ollama's last line (nanoseconds).
type ollamaFinal struct {
	PromptEvalCount    *count `json:"prompt_eval_count"`
	PromptEvalDuration *ns    `json:"prompt_eval_duration"`
	EvalCount          *count `json:"eval_count"`
	EvalDuration       *ns    `json:"eval_duration"`
}

// check says whether figures that were reported are valid: each one, and
// the prompt within the model's context (0: not reported). A prompt is
// what the model held before generating, so it fits the context; the
// generated tokens are not held to it, since llama.cpp's context shift
// lets a generation run past it.
type check struct {
	context int
	ok      bool
}

func (c *check) count(n *count) int {
	if n == nil {
		return 0
	}
	c.ok = c.ok && n.ok
	return n.n
}

// said is a count that is unknown (q) when not reported.
func (c *check) said(g *exporter.Generation, n *count, q exporter.Quantity) int {
	if n == nil {
		g.Unknown |= q
	}
	return c.count(n)
}

func (c *check) prompt(prompt, cached int) {
	c.ok = c.ok && cached <= prompt && prompt <= MaxTokens && (c.context <= 0 || prompt <= c.context)
}

// phase fills one phase's time d, unknown (q) when not reported.
func (c *check) phase(g *exporter.Generation, p *phase, d *time.Duration, q exporter.Quantity) {
	if p == nil {
		g.Unknown |= q
		return
	}
	c.ok = c.ok && p.ok
	*d = p.d
}

// into fills a generation from llama.cpp's timings.
func (t *timings) into(g *exporter.Generation, c *check) {
	cached := c.said(g, t.CacheN, exporter.UnknownCached)
	g.PromptTokens, g.CachedTokens, g.GeneratedTokens = c.count(t.PromptN)+cached, cached, c.count(t.PredictedN)
	c.prompt(g.PromptTokens, cached)
	c.phase(g, (*phase)(t.PromptMS), &g.Prefill, exporter.UnknownPrefill)
	c.phase(g, (*phase)(t.PredictedMS), &g.Decode, exporter.UnknownDecode)
}

// into fills a generation from Ollama's last line. prompt_eval_count
// counts cached and evaluated tokens alike, and older versions leave it out
// on a cached prompt: then it is unknown.
func (o *ollamaFinal) into(g *exporter.Generation, c *check) {
	g.Unknown |= exporter.UnknownCached
	g.PromptTokens = c.said(g, o.PromptEvalCount, exporter.UnknownPrompt)
	c.prompt(g.PromptTokens, 0)
	g.GeneratedTokens = c.said(g, o.EvalCount, exporter.UnknownGenerated)
	c.phase(g, (*phase)(o.PromptEvalDuration), &g.Prefill, exporter.UnknownPrefill)
	c.phase(g, (*phase)(o.EvalDuration), &g.Decode, exporter.UnknownDecode)
}

// into fills a generation from an OpenAI usage object, which may be nil
// (none was sent).
func (u *usage) into(g *exporter.Generation, c *check) {
	if u == nil || u.PromptTokens == nil {
		g.Unknown |= exporter.UnknownPrompt | exporter.UnknownCached
	} else {
		g.PromptTokens = c.count(u.PromptTokens)
		if u.Details != nil && u.Details.CachedTokens != nil {
			g.CachedTokens = c.count(u.Details.CachedTokens)
		} else {
			g.Unknown |= exporter.UnknownCached
		}
		c.prompt(g.PromptTokens, g.CachedTokens)
	}
	if u == nil || u.CompletionTokens == nil {
		g.Unknown |= exporter.UnknownGenerated
	} else {
		g.GeneratedTokens = c.count(u.CompletionTokens)
	}
}
