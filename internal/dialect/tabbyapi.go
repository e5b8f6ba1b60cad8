package dialect

import (
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
	dto "github.com/prometheus/client_model/go"
)

// tabbyAPI is the canonical dialect: its names (without the prefix) are the
// snapshot's names, so reading it is a prefix strip. Its series carry no
// labels.
var tabbyAPI = dialect{
	name:       "tabbyapi",
	match:      func(n string) bool { return strings.HasPrefix(n, "tabbyapi:") },
	read:       readTabbyAPI,
	recognises: tabbyRecognises,
	// The header carries the process start in Unix seconds.
	startHeaderIsTime: true,
	advice: snapshot.Advice{
		SlowScrape: "tabbyAPI renders /metrics on the event loop that drives generation",
		QueueFix:   "raise model.max_batch_size in config.yml while the KV cache has room",
		KVFix:      "raise model.cache_size, or quantise the cache with model.cache_mode (Q8, Q6 or Q4 on exllamav2; k,v bits such as 8,8 on exllamav3)",
	},
}

// tabbyKnown are the names tabbyAPI publishes (without the prefix, counters
// with their exposed _total where they have one): a tabbyapi: series that
// is none of them is not a quantity the report knows.
var tabbyKnown = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`
		prompt_tokens_total cached_tokens_total prefix_cache_queries prefix_cache_hits
		prompt_seconds_total tokens_predicted_total tokens_predicted_seconds_total
		n_tokens_max tokens_predicted_max requests_total requests_processing requests_deferred
		process_start_time_seconds predicted_tokens_seconds prompt_tokens_seconds
		kv_cache_usage_ratio kv_cache_tokens kv_cache_max_tokens
		spec_decode_num_draft_tokens_total spec_decode_num_accepted_tokens_total
		spec_decode_num_decode_steps_total spec_decode_requests_total
		spec_decode_draft_acceptance_rate spec_decode_mean_accepted_length
		spec_decode_tokens_per_step spec_decode_acceptance_rate
		kv_offload_bytes kv_offload_max_bytes kv_offload_tokens kv_offload_max_tokens kv_offload_usage_ratio
		kv_offload_stores_total kv_offload_deduped_stores_total kv_offload_evictions_total
		kv_offload_read_bytes_total kv_offload_written_bytes_total kv_offload_restored_tokens_total
		kv_offload_cold_allocs_total
		recurrent_cache_bytes recurrent_cache_max_bytes recurrent_cache_usage_ratio
		recurrent_cache_evictions_total recurrent_cache_live_kv_evictions_total
		recurrent_cache_pruned_total recurrent_cache_stranded_evictions_total
		recurrent_capped_tokens_total recurrent_checkpoint_bytes recurrent_checkpoints
		recurrent_stranded_by_kv_total
		request_queue_time_seconds request_prefill_time_seconds request_decode_time_seconds
		time_to_first_token_seconds e2e_request_latency_seconds
		request_prompt_tokens request_generation_tokens`) {
		tabbyKnown[n] = true
	}
}

// tabbyRecognises reports whether the strip found any name tabbyAPI
// publishes.
func tabbyRecognises(s *snapshot.Snapshot) bool {
	for k := range s.Histograms {
		if tabbyKnown[k] {
			return true
		}
	}
	for k := range s.Scalars {
		if tabbyKnown[k] && k != "process_start_time_seconds" {
			return true
		}
	}
	return false
}

func readTabbyAPI(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
	if o.Model != "" {
		return &ModelError{Model: o.Model}
	}
	p := newMapper(fams, nil, s)
	for _, mf := range fams {
		name, ok := strings.CutPrefix(mf.GetName(), "tabbyapi:")
		if !ok {
			// The unprefixed standard series, when a process collector adds it.
			if mf.GetName() == "process_start_time_seconds" {
				if v, ok := Sum(mf, nil); ok {
					if _, have := s.Scalars["process_start_time_seconds"]; !have {
						s.Scalars["process_start_time_seconds"] = v
					}
				}
			}
			continue
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			if h := Hist(mf, nil); h != nil {
				s.Histograms[name] = h
			}
			continue
		}
		if tabbyFractions[name] && !p.ratioOK(mf, nil, 1, "fraction") {
			continue
		}
		if v, ok := Sum(mf, nil); ok {
			s.Scalars[name] = v
		}
	}
	return nil
}

// tabbyFractions are tabbyAPI's gauges that hold a fraction 0..1.
var tabbyFractions = map[string]bool{
	"kv_cache_usage_ratio": true, "kv_offload_usage_ratio": true, "recurrent_cache_usage_ratio": true,
	"spec_decode_draft_acceptance_rate": true,
}
