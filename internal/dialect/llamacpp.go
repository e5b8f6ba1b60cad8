package dialect

import (
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
	dto "github.com/prometheus/client_model/go"
)

// llamaCpp reads llama-server's series (started with --metrics). They carry
// no labels except the draft position, so there is no model to choose.
//
// Traps handled:
//   - prompt_tokens_total already excludes prompt tokens reused from the
//     slot cache, as tabbyAPI's does; prompt_tokens_cached_total (newest)
//     counts those, and the two add up to every prompt token looked up.
//   - n_tokens_max (old n_past_max) is the longest prompt + generation, not
//     the largest prompt: it goes to Extra as largest_sequence_tokens.
//   - prompt_tokens_seconds and predicted_tokens_seconds cover the time since
//     the previous scrape and reset on each one: Extra *_gauge, never a
//     lifetime rate (that comes from the token and seconds counters).
//   - kv_cache_usage_ratio and kv_cache_tokens were removed; older servers
//     still publish them.
//   - The Process-Start-Time-Unix header is a monotonic clock reading, not
//     an epoch, so there is no uptime.
var llamaCpp = dialect{
	name:  "llamacpp",
	match: func(n string) bool { return strings.HasPrefix(n, "llamacpp:") },
	read:  readLlamaCpp,
}

func readLlamaCpp(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	p := newMapper(fams, nil, s)

	prompt, okPrompt := p.sum(counterNames("llamacpp:prompt_tokens")...)
	if okPrompt {
		s.Scalars["prompt_tokens_total"] = prompt
	}
	cached, okCached := p.sum(counterNames("llamacpp:prompt_tokens_cached")...)
	if okCached {
		s.Scalars["cached_tokens_total"] = cached
		if okPrompt {
			// tabbyAPI's definition: every prompt token is looked up, the
			// cached ones hit.
			s.Scalars["prefix_cache_queries"] = prompt + cached
			s.Scalars["prefix_cache_hits"] = cached
		}
	}
	p.scalar("prompt_seconds_total", counterNames("llamacpp:prompt_seconds")...)
	p.scalar("tokens_predicted_total", counterNames("llamacpp:tokens_predicted")...)
	p.scalar("tokens_predicted_seconds_total", counterNames("llamacpp:tokens_predicted_seconds")...)
	p.scalar("requests_processing", "llamacpp:requests_processing")
	p.scalar("requests_deferred", "llamacpp:requests_deferred")
	haveKV := p.scalar("kv_cache_usage_ratio", "llamacpp:kv_cache_usage_ratio")
	p.scalar("kv_cache_tokens", "llamacpp:kv_cache_tokens")
	p.scalar("spec_decode_num_draft_tokens_total", counterNames("llamacpp:spec_decode_num_draft_tokens")...)
	p.scalar("spec_decode_num_accepted_tokens_total", counterNames("llamacpp:spec_decode_num_accepted_tokens")...)

	p.extraSum("n_decode_total", counterNames("llamacpp:n_decode")...)
	// A counter in older servers, a gauge in newer ones; an average either way.
	p.extraSum("n_busy_slots_per_decode", "llamacpp:n_busy_slots_per_decode", "llamacpp:n_busy_slots_per_decode_total")
	p.extraSum("largest_sequence_tokens", "llamacpp:n_tokens_max", "llamacpp:n_tokens_max_total", "llamacpp:n_past_max", "llamacpp:n_past_max_total")
	p.extraSum("prompt_tokens_seconds_gauge", "llamacpp:prompt_tokens_seconds")
	p.extraSum("predicted_tokens_seconds_gauge", "llamacpp:predicted_tokens_seconds")
	p.extraSum("spec_decode_num_drafts_total", counterNames("llamacpp:spec_decode_num_drafts")...)
	p.extraByLabel("spec_decode_accepted_per_pos:", "position", counterNames("llamacpp:spec_decode_num_accepted_tokens_per_pos")...)

	if !haveKV {
		p.missing("KV-cache usage: llama.cpp no longer publishes it")
	}
	if !okCached {
		p.missing("prompt cache reuse: this llama.cpp publishes no cached-token count")
	}
	p.missing("time to first token: llama.cpp does not publish latency histograms")
	p.missing("end-to-end latency: llama.cpp does not publish latency histograms")
	p.missing("prompt and generation sizes: llama.cpp publishes no per-request histograms")
	p.missing("requests finished: llama.cpp does not count requests")
	p.missing("largest prompt: llama.cpp tracks only the largest sequence (prompt + generation)")
	p.missing("uptime: llama.cpp's start header is not a wall-clock time")
	return nil
}
