package dialect

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// dynamo reads NVIDIA Dynamo's OpenAI frontend (dynamo_frontend_*, names in
// lib/runtime/src/metrics/prometheus_names.rs, written by
// lib/llm/src/http/service/metrics.rs): what a router in front of engines
// sees of its requests. Its workers' /metrics are not this dialect's: they
// re-export vllm:, sglang: and trtllm_ series, which those dialects read
// (Dynamo's injected labels, dynamo_namespace, dynamo_component, model and
// the like, only make each worker one more engine), beside Dynamo's own
// dynamo_component_* runtime families, which no dialect reads.
//
// Traps handled:
//   - The model label is "model", and its case differs within one scrape:
//     the request families carry the name as requested (lower case in
//     Dynamo's own examples, qwen/qwen3-0.6b), the model_* gauges the
//     card's (Qwen/Qwen3-0.6B). The two are one model, listed by the first
//     spelling in order (the card's, where a worker has registered), and
//     --model matches either.
//   - inflight_requests counts requests from the HTTP handler's entry to
//     the response's end, wherever they are; queued_requests those of them
//     with no token yet, prefill included. Neither is an engine's running
//     batch or queue: they are the Extra requests_in_flight and
//     requests_awaiting_first_token, and the live state says the workers
//     have the rest.
//   - requests_total counts every request at its end by status (success,
//     error) and, in newer versions, error_type (validation, overload,
//     cancelled, …): success is finished requests, cancelled (the client
//     went away or timed out) aborted requests, the rest failures by
//     error_type (by status where the version has no error_type).
//   - time_to_first_token_seconds and request_duration_seconds run from
//     the frontend's own receipt: routing and the network are in them.
//     inter_token_latency_seconds is observed per token.
//   - cached_tokens is observed only for requests whose engine reported
//     its cache hits, so its sum is no total to split prompt tokens by;
//     kv_hit_rate is the router's prediction, not a hit. Neither is read.
//   - model_total_kv_blocks and model_kv_cache_block_size describe one
//     worker serving the model, not the fleet behind the frontend: no
//     capacity is read from them.
var dynamo = dialect{
	name:  "dynamo",
	title: "Dynamo",
	match: isDynamoFrontend,
	read:  readDynamo,
	advice: snapshot.Advice{
		// The error_type values of lib/llm/src/http/service/metrics.rs.
		FailedWhy: "the error_type label of dynamo_frontend_requests_total says why (validation and not_found are the client's; overload, unavailable, response_timeout and internal are the workers')",
	},
}

// dynamoPrefix is the frontend's prefix (DYN_METRICS_PREFIX can change it,
// for NVIDIA NIM's old name; that spelling is not read).
const dynamoPrefix = "dynamo_frontend_"

func isDynamoFrontend(name string) bool { return strings.HasPrefix(name, dynamoPrefix) }

// dynamoModelLabel is the label the frontend names a model by.
var dynamoModelLabel = []string{"model"}

func readDynamo(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	s.Models = ServedModels("dynamo", servedModels(fams, isDynamoFrontend, dynamoModelLabel))
	keep, err := dynamoModelFilter(s.Models, o.Model)
	if err != nil {
		return err
	}
	for _, m := range s.Models {
		if keep != nil && (strings.EqualFold(m, o.Model) || cleanModel(m) == o.Model) {
			s.Model = m
		}
	}
	p := newMapper(fams, keep, s)

	dynamoRequests(p)
	p.extraSum(snapshot.ExtraRequestsInFlight, dynamoPrefix+"inflight_requests")
	p.extraSum(snapshot.ExtraRequestsAwaitingFirstToken, dynamoPrefix+"queued_requests")
	p.scalar(snapshot.TokensPredictedTotal, counterNames(dynamoPrefix+"output_tokens")...)

	p.hist(snapshot.TimeToFirstTokenSeconds, dynamoPrefix+"time_to_first_token_seconds")
	p.hist(snapshot.InterTokenLatencySeconds, dynamoPrefix+"inter_token_latency_seconds")
	p.hist(snapshot.E2ERequestLatencySeconds, dynamoPrefix+"request_duration_seconds")
	p.hist(snapshot.RequestPromptTokens, dynamoPrefix+"input_sequence_tokens")
	p.hist(snapshot.RequestGenerationTokens, dynamoPrefix+"output_sequence_tokens")

	p.missing("requests running and waiting: the frontend counts requests in flight and those awaiting their first token; each worker's /metrics has its batch and queue")
	p.missing("KV-cache usage: the frontend publishes none for the fleet; each worker's /metrics has its own")
	p.missing("prompt tokens computed and prefix-cache hit rate: the frontend's cached_tokens covers only requests whose engine reported cache hits")
	p.missing("queue, prefill and decode time: the frontend times whole requests; each worker's /metrics has the phases")
	p.missing("largest prompt and generation: Dynamo publishes no peak series")
	p.processStart("uptime: the frontend publishes no process_start_time_seconds")
	return nil
}

// dynamoRequests reads requests_total: success as finished requests,
// cancelled as aborted, every other error a failure under its error_type
// (or its status where the version has no error_type).
func dynamoRequests(p *mapper) {
	mf := p.fam(counterNames(dynamoPrefix + "requests")...)
	if mf == nil {
		return
	}
	if v, ok := Sum(mf, both(p.keep, withLabel("status", "success"))); ok {
		p.s.Scalars[snapshot.RequestsTotal] = v
	} else if _, any := Sum(mf, p.keep); any {
		// Only failures so far: none finished.
		p.s.Scalars[snapshot.RequestsTotal] = 0
	}
	failed := map[string]float64{}
	aborted, anyAborted := 0.0, false
	for _, m := range mf.GetMetric() {
		if p.keep != nil && !p.keep(m) {
			continue
		}
		status, _ := labelValue(m, "status")
		if status == "success" {
			continue
		}
		reason, _ := labelValue(m, "error_type")
		v, ok := scalarValue(m)
		switch {
		case !ok:
		case reason == "cancelled":
			aborted, anyAborted = aborted+v, true
		case reason == "":
			failed[status] += v
		default:
			failed[reason] += v
		}
	}
	if anyAborted {
		p.extra(snapshot.ExtraAbortedRequests, aborted)
	}
	for r, v := range failed {
		p.extra(snapshot.ExtraFailedReason+r, v)
	}
}

// foldModels keeps one spelling of each model whose names differ only in
// case, the first in order.
func foldModels(models []string) []string {
	var out []string
	for _, m := range models {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// dynamoModelFilter keeps the series of the model asked for, in either
// case, and those that name none.
func dynamoModelFilter(models []string, model string) (func(*dto.Metric) bool, error) {
	if model == "" {
		return nil, nil
	}
	n := 0
	for _, m := range models {
		if strings.EqualFold(m, model) || cleanModel(m) == model {
			n++
		}
	}
	if n != 1 {
		shown := make([]string, len(models))
		for i, m := range models {
			shown[i] = cleanModel(m)
		}
		return nil, &ModelError{Model: model, Models: shown, Ambiguous: n}
	}
	return func(m *dto.Metric) bool {
		v, ok := modelOf(m, dynamoModelLabel)
		return !ok || strings.EqualFold(v, model) || cleanModel(v) == model
	}, nil
}
