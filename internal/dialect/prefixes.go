package dialect

import "slices"

// namePrefixes are the family-name prefixes each dialect reads: what a
// store is searched for to find every server of every dialect (the fleet
// view's discovery). TestNamePrefixes keeps it in step with each
// dialect's match.
var namePrefixes = map[string][]string{
	"tabbyapi":  {"tabbyapi:"},
	"vllm":      {"vllm:", rayVLLMColon, rayVLLMUnder},
	"aphrodite": {aphroditePrefix},
	"llamacpp":  {"llamacpp:"},
	"sglang":    {"sglang:", "sglang_"},
	"tgi":       {"tgi_"},
	// trtllm-serve 1.1 and 1.2 publish five families without a prefix:
	// each is listed by its name and the underscore after it.
	"trtllm":   {trtllmPrefix, "request_success_", "e2e_request_latency_seconds_", "time_to_first_token_seconds_", "time_per_output_token_seconds_", "request_queue_time_seconds_"},
	"dynamo":   {dynamoPrefix},
	"lmdeploy": {"lmdeploy:"},
}

// NamePrefixes lists the family-name prefixes of every dialect, in the
// order of [Names]: a series whose name starts with none of them is read
// by no dialect (process_start_time_seconds aside, which every dialect
// takes from a server's own process collector).
func NamePrefixes() []string {
	var out []string
	for _, d := range all {
		out = append(out, namePrefixes[d.name]...)
	}
	return out
}

// Owner names the dialect that reads a family, "" when none does.
func Owner(family string) string {
	for _, d := range all {
		if d.match(family) {
			return d.name
		}
	}
	return ""
}

// ServedModels lists the models a dialect's series name by their model
// labels' values (sorted, as a reader that knows only the labels finds
// them, like the fleet's discovery), as the dialect lists them:
// trtllm-serve's placeholder model_name "undefined" names no model, and
// names of Dynamo's frontend that differ only in case (its request
// families and model_* gauges spell the model two ways) are one, the first
// in order.
func ServedModels(dialect string, values []string) []string {
	switch dialect {
	case "trtllm":
		return slices.DeleteFunc(slices.Clone(values), func(m string) bool { return m == trtllmUndefined })
	case "dynamo":
		return foldModels(values)
	}
	return values
}
