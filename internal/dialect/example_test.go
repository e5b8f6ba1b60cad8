package dialect_test

import (
	"fmt"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
)

// A vLLM scrape speaks the canonical language once mapped: its prompt
// counter includes cached tokens, so the computed ones come from the
// by-source split, and two engines add up.
func ExampleMap() {
	body := []byte(`# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m",engine="0"} 1000.0
vllm:prompt_tokens_total{model_name="m",engine="1"} 600.0
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_compute"} 400.0
vllm:prompt_tokens_by_source_total{model_name="m",engine="0",source="local_cache_hit"} 600.0
vllm:prompt_tokens_by_source_total{model_name="m",engine="1",source="local_compute"} 600.0
vllm:prompt_tokens_by_source_total{model_name="m",engine="1",source="local_cache_hit"} 0.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m",engine="0"} 0.5
vllm:kv_cache_usage_perc{model_name="m",engine="1"} 0.25
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m",engine="0"} 2.0
vllm:num_preemptions_total{model_name="m",engine="1"} 1.0
`)
	format, err := exposition.DetectFormat("text/plain; version=0.0.4", body)
	if err != nil {
		panic(err)
	}
	fams, err := exposition.Parse(body, format)
	if err != nil {
		panic(err)
	}
	s, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Dialect, s.Models)
	fmt.Println("computed:", s.Scalars["prompt_tokens_total"], "cached:", s.Scalars["cached_tokens_total"])
	fmt.Println("KV usage:", s.Scalars["kv_cache_usage_ratio"])
	fmt.Println("preemptions:", s.Extra["num_preemptions_total"])
	// Output:
	// vllm [m]
	// computed: 1000 cached: 600
	// KV usage: 0.375
	// preemptions: 3
}
