package proxy

import (
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/stream"
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
	MaxTokens = stream.MaxTokens
)

// reported are the figures a generation's usage reports, all unknown when
// one is invalid.
const reported = exporter.UnknownPrompt | exporter.UnknownCached | exporter.UnknownGenerated |
	exporter.UnknownPrefill | exporter.UnknownDecode

// count is a token count as an upstream reported it (package stream reads
// it); a pointer to one is nil when the key is missing or null (not
// said).
type count = stream.Count

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
	c.ok = c.ok && n.OK
	return n.N
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
func (c *check) phase(g *exporter.Generation, p *stream.Phase, d *time.Duration, q exporter.Quantity) {
	if p == nil {
		g.Unknown |= q
		return
	}
	c.ok = c.ok && p.OK
	*d = p.D
}

// timingsInto fills a generation from llama.cpp's timings.
func timingsInto(t *stream.Timings, g *exporter.Generation, c *check) {
	cached := c.said(g, t.CacheN, exporter.UnknownCached)
	g.PromptTokens, g.CachedTokens, g.GeneratedTokens = c.count(t.PromptN)+cached, cached, c.count(t.PredictedN)
	c.prompt(g.PromptTokens, cached)
	c.phase(g, (*stream.Phase)(t.PromptMS), &g.Prefill, exporter.UnknownPrefill)
	c.phase(g, (*stream.Phase)(t.PredictedMS), &g.Decode, exporter.UnknownDecode)
}

// ollamaInto fills a generation from Ollama's last line. prompt_eval_count
// counts cached and evaluated tokens alike, and older versions leave it out
// on a cached prompt: then it is unknown.
func ollamaInto(o *stream.OllamaFinal, g *exporter.Generation, c *check) {
	g.Unknown |= exporter.UnknownCached
	g.PromptTokens = c.said(g, o.PromptEvalCount, exporter.UnknownPrompt)
	c.prompt(g.PromptTokens, 0)
	g.GeneratedTokens = c.said(g, o.EvalCount, exporter.UnknownGenerated)
	c.phase(g, (*stream.Phase)(o.PromptEvalDuration), &g.Prefill, exporter.UnknownPrefill)
	c.phase(g, (*stream.Phase)(o.EvalDuration), &g.Decode, exporter.UnknownDecode)
}

// usageInto fills a generation from an OpenAI usage object, which may be
// nil (none was sent).
func usageInto(u *stream.Usage, g *exporter.Generation, c *check) {
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
