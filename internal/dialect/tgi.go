package dialect

import (
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// tgi reads Hugging Face text-generation-inference's router series. Its
// counters carry no _total suffix (both spellings are accepted) and no
// series names a model.
//
// The request names have not changed since v0.3 (docs/servers.md). What
// maps: finished requests (tgi_request_success; failures go to Extra by
// err), running batch size and queue size, generated tokens (the sum of
// the per-request generated-tokens histogram), and the request histograms
// for end-to-end latency, queue time, input length, generated tokens and
// each request's mean time per token (tgi_request_mean_time_per_token_duration:
// its inference time, prefill included, over its generated tokens).
//
// Read against the router's code at v3.3.7 (huggingface/text-generation-inference
// @dfb3fbe, backends/v3/src/backend.rs, lib.rs, queue.rs; router/src/server.rs):
//   - One batching task (batching_task, spawned once by BackendV3::new)
//     awaits every prefill and decode call in turn, so batch calls never
//     overlap: the sum of tgi_batch_inference_duration over both methods
//     is the engine's busy time, its share of the wall clock a
//     utilization. That histogram times each call whole, from before the
//     RPC to the shards until the generations are sent and the batch
//     filtered (tgi_batch_forward_duration is the slowest shard's model
//     forward alone, a part of it). A call that fails is not timed. Where
//     the model supports chunking, a prefill call also advances the running
//     batch by a token (the batches are concatenated), so prefill time is
//     not prefill work alone.
//   - tgi_batch_current_max_tokens is the running batch's max_tokens: for
//     paged models the KV blocks allocated to its requests × block size,
//     each request's blocks covering its prompt and max_new_tokens (shared
//     prefix blocks once per request), so a reservation, never KV in use;
//     0 between batches. tgi_batch_max_total_tokens, its budget, is set
//     in connect_backend before server.rs installs the metrics recorder,
//     so a stock router never publishes it (the Datadog fixture of 3.x
//     has none); it is read where a build publishes it.
//   - tgi_request_count is counted at each generation route's entry,
//     failures included; /v1/chat/completions and /v1/completions count
//     once at the route and again in the generate call they make, and
//     /chat_tokenize counts too: not a count of requests received.
//   - tgi_request_skipped_tokens is recorded for every generation of every
//     step (n − 1 of the n tokens a request got in it: the speculated
//     tokens the model accepted), a summary on a stock router: its sum is
//     the speculated tokens, its count the request-steps.
//
// TGI publishes no first-token latency, per-step token latency, KV usage
// or cache counters.
var tgi = dialect{
	name:  "tgi",
	title: "TGI",
	match: func(n string) bool { return strings.HasPrefix(n, "tgi_") },
	read:  readTGI,
	advice: snapshot.Advice{
		QueueFix:   "TGI batches requests while --max-batch-total-tokens allows: raise it (or --cuda-memory-fraction, from which it is sized when unset) if the GPU has room; past that, add replicas",
		EngineBusy: "time in batch prefill and decode calls",
		FailedWhy:  "the err label of tgi_request_failure says why (validation is the client's; generation and overloaded are the server's)",
	},
}

func readTGI(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	p := newMapper(fams, nil, s)

	p.scalar(snapshot.RequestsTotal, "tgi_request_success", "tgi_request_success_total")
	p.extraByLabel(snapshot.ExtraFailedReason, "err", "tgi_request_failure", "tgi_request_failure_total")
	p.extraSum(snapshot.ExtraRequestCount, "tgi_request_count", "tgi_request_count_total")
	p.scalar(snapshot.RequestsProcessing, "tgi_batch_current_size")
	p.scalar(snapshot.RequestsDeferred, "tgi_queue_size")
	p.extraSum(snapshot.ExtraTokenBudgetReserved, "tgi_batch_current_max_tokens")
	p.extraSum(snapshot.ExtraTokenBudgetMax, "tgi_batch_max_total_tokens")

	p.hist(snapshot.E2ERequestLatencySeconds, "tgi_request_duration")
	p.hist(snapshot.RequestQueueTimeSeconds, "tgi_request_queue_duration")
	p.hist(snapshot.RequestPromptTokens, "tgi_request_input_length")
	if h := p.hist(snapshot.RequestGenerationTokens, "tgi_request_generated_tokens"); h != nil && !h.NoSum {
		s.Scalars[snapshot.TokensPredictedTotal] = h.Sum
	}
	p.hist(snapshot.RequestTimePerOutputTokenSeconds, "tgi_request_mean_time_per_token_duration")
	tgiBatchTime(p)
	if mf := p.fam("tgi_request_skipped_tokens"); mf != nil {
		if sum, count, ok := sumCount(mf, nil); ok {
			p.extra(snapshot.ExtraSpeculatedTokens, sum)
			p.extra(snapshot.ExtraSpeculationSteps, count)
		}
	}

	if _, ok := s.Extra[snapshot.ExtraTokenBudgetReserved]; ok {
		if _, ok := s.Extra[snapshot.ExtraTokenBudgetMax]; !ok {
			p.missing("token budget: TGI sets tgi_batch_max_total_tokens before its metrics recorder exists, so it is never published; the tokens the batch reserved are shown without it")
		}
	}
	p.missing("time to first token: TGI does not publish it")
	p.missing("prefill and decode time per request: TGI times whole batches (its engine time), not requests")
	p.missing("prompt tokens computed: TGI publishes request input lengths only, with no cache split")
	p.missing("KV-cache usage: TGI does not publish it (tgi_batch_current_max_tokens is a reservation)")
	p.missing("prefix cache: TGI publishes no cache counters")
	p.missing("inter-token latency: TGI publishes only each request's mean time per token, prefill included")
	p.missing("largest prompt and generation: TGI publishes no peak series")
	p.processStart("uptime: TGI publishes no process start time")
	return nil
}

// tgiBatchTime reads the engine's busy time from the batch calls'
// durations: every method's calls added (they never overlap), and each
// method's on its own.
func tgiBatchTime(p *mapper) {
	mf := p.fam("tgi_batch_inference_duration")
	if mf == nil {
		return
	}
	if h := Hist(mf, nil); h != nil && !h.NoSum {
		p.s.Scalars[snapshot.EngineBusySecondsTotal] = h.Sum
	}
	for method, canon := range map[string]string{"prefill": snapshot.EnginePrefillSecondsTotal, "decode": snapshot.EngineDecodeSecondsTotal} {
		if h := Hist(mf, withLabel("method", method)); h != nil && !h.NoSum {
			p.s.Scalars[canon] = h.Sum
		}
	}
}

// sumCount adds the _sum and _count of a family's histogram or summary
// series; ok is false when none has both.
func sumCount(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (sum, count float64, ok bool) {
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		var s, c float64
		switch {
		case m.Histogram != nil && m.Histogram.SampleSum != nil && (m.Histogram.SampleCount != nil || m.Histogram.SampleCountFloat != nil):
			s, c = m.Histogram.GetSampleSum(), float64(m.Histogram.GetSampleCount())+m.Histogram.GetSampleCountFloat()
		case m.Summary != nil && m.Summary.SampleSum != nil && m.Summary.SampleCount != nil:
			s, c = m.Summary.GetSampleSum(), float64(m.Summary.GetSampleCount())
		default:
			continue
		}
		if math.IsNaN(s) {
			continue
		}
		sum, count, ok = sum+s, count+c, true
	}
	return sum, count, ok
}
