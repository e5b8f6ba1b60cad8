package promql

import "github.com/inferscope/inferscope/internal/snapshot"

// --- NVIDIA Dynamo's frontend ------------------------------------------------

// dynamoFamily is one of the frontend's families.
func dynamoFamily(base string) string { return "dynamo_frontend_" + base }

// readDynamo reads the frontend's names as the dialect does: successes as
// finished requests (absent beside failures, none yet), cancellations as
// aborted requests, every other error a failure, requests in flight and
// awaiting their first token as the frontend's own gauges.
func readDynamo(sc scrape) sources {
	out := sources{}
	if n, f := sc.first(counterNames(dynamoFamily("requests"))...); f != nil {
		all, _ := sc.counter(n)
		success := all
		success.match = []Matcher{{"status", Equal, "success"}}
		out[snapshot.RequestsTotal] = source{kind: snapshot.Counter, terms: []term{{ref: success, zeroWith: &all}}}
		if f.has("status", "error") {
			failed := all
			failed.match = []Matcher{{"status", NotEqual, "success"}, {"error_type", NotEqual, "cancelled"}}
			out[failedTotal] = one(snapshot.Counter, failed)
		}
		if f.has("error_type", "cancelled") {
			cancelled := all
			cancelled.match = []Matcher{{"error_type", Equal, "cancelled"}}
			out[snapshot.ExtraAbortedRequests] = one(snapshot.Counter, cancelled)
		}
	}
	r, ok := sc.counter(counterNames(dynamoFamily("output_tokens"))...)
	out.set(snapshot.TokensPredictedTotal, snapshot.Counter, r, ok)
	r, ok = sc.gauge(dynamoFamily("inflight_requests"))
	out.set(snapshot.ExtraRequestsInFlight, snapshot.Gauge, r, ok)
	r, ok = sc.gauge(dynamoFamily("queued_requests"))
	out.set(snapshot.ExtraRequestsAwaitingFirstToken, snapshot.Gauge, r, ok)
	for canon, base := range map[string]string{
		snapshot.TimeToFirstTokenSeconds:  "time_to_first_token_seconds",
		snapshot.InterTokenLatencySeconds: "inter_token_latency_seconds",
		snapshot.E2ERequestLatencySeconds: "request_duration_seconds",
		snapshot.RequestPromptTokens:      "input_sequence_tokens",
		snapshot.RequestGenerationTokens:  "output_sequence_tokens",
	} {
		r, ok := sc.hist(dynamoFamily(base))
		out.set(canon, snapshot.Histogram, r, ok)
	}
	return out
}
