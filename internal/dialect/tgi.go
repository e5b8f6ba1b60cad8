package dialect

import (
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// tgi reads Hugging Face text-generation-inference's router series. Its
// counters carry no _total suffix (both spellings are accepted) and no
// series names a model.
//
// The names have not changed since v0.3 (docs/servers.md). What maps:
// finished requests (tgi_request_success; failures go to Extra by err),
// running batch size and queue size, generated tokens (the sum of the
// per-request generated-tokens histogram), and the request histograms for
// end-to-end latency, queue time, input length, generated tokens and each
// request's mean time per token (tgi_request_mean_time_per_token_duration:
// its inference time, prefill included, over its generated tokens). What
// does not: TGI times whole prefill and decode batches, not requests, and
// publishes no first-token latency, per-step token latency, KV usage or
// cache counters.
var tgi = dialect{
	name:  "tgi",
	title: "TGI",
	match: func(n string) bool { return strings.HasPrefix(n, "tgi_") },
	read:  readTGI,
	advice: snapshot.Advice{
		QueueFix:  "TGI batches requests while --max-batch-total-tokens allows: raise it (or --cuda-memory-fraction, from which it is sized when unset) if the GPU has room; past that, add replicas",
		FailedWhy: "the err label of tgi_request_failure says why (validation is the client's; generation and overloaded are the server's)",
	},
}

func readTGI(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	p := newMapper(fams, nil, s)

	p.scalar(snapshot.RequestsTotal, "tgi_request_success", "tgi_request_success_total")
	p.extraByLabel(snapshot.ExtraFailedReason, "err", "tgi_request_failure", "tgi_request_failure_total")
	p.scalar(snapshot.RequestsProcessing, "tgi_batch_current_size")
	p.scalar(snapshot.RequestsDeferred, "tgi_queue_size")

	p.hist(snapshot.E2ERequestLatencySeconds, "tgi_request_duration")
	p.hist(snapshot.RequestQueueTimeSeconds, "tgi_request_queue_duration")
	p.hist(snapshot.RequestPromptTokens, "tgi_request_input_length")
	if h := p.hist(snapshot.RequestGenerationTokens, "tgi_request_generated_tokens"); h != nil && !h.NoSum {
		s.Scalars[snapshot.TokensPredictedTotal] = h.Sum
	}
	p.hist(snapshot.RequestTimePerOutputTokenSeconds, "tgi_request_mean_time_per_token_duration")

	p.missing("time to first token: TGI does not publish it")
	p.missing("prefill and decode time: TGI times whole batches, not requests")
	p.missing("prompt tokens computed: TGI publishes request input lengths only, with no cache split")
	p.missing("KV-cache usage: TGI does not publish it")
	p.missing("prefix cache: TGI publishes no cache counters")
	p.missing("inter-token latency: TGI publishes only each request's mean time per token, prefill included")
	p.missing("largest prompt and generation: TGI publishes no peak series")
	p.processStart("uptime: TGI publishes no process start time")
	return nil
}
