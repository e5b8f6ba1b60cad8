package fleet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The range fixture: a small fleet written as OpenMetrics with timestamps,
// for promtool to backfill into Prometheus and for VictoriaMetrics to
// import. Every counter is rate × (t − start) of its process, so each
// figure over a window follows from the rates below by hand; the tests'
// expected values are that arithmetic, never the code's output.
//
// Samples every 15 s from T0+20m to T0+95m; the window the tests read is
// T0+30m to T0+90m (3600 s).
//
//   - llm/vllm-a: vLLM, model llama, two data-parallel engines, steady.
//   - llm/vllm-b: vLLM, model llama, one engine, restarted at T0+60m−7.5s
//     (its counters fall to zero, its start time changes).
//   - llm/vllm-c: vLLM, model mistral, born at T0+45m−10s (first sample
//     T0+45m).
//   - llm/vllm-d: vLLM, model llama, gone after its sample at T0+75m.
//   - llm/sglang-a: SGLang, model qwen, steady.
//   - llm/vllm-router: the production-stack router's copies of two engine
//     gauges, with a server label: to be skipped.
var (
	fixT0    = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fixFrom  = fixT0.Add(30 * time.Minute)
	fixTo    = fixT0.Add(90 * time.Minute)
	fixStep  = 15 * time.Second
	fixFirst = fixT0.Add(20 * time.Minute)
	fixLast  = fixT0.Add(95 * time.Minute)
	// fixVirtual is when the steady processes started: a day before T0.
	fixVirtual = fixT0.Add(-24 * time.Hour)
	fixRestart = fixT0.Add(60*time.Minute - 7500*time.Millisecond)
	fixBorn    = fixT0.Add(45*time.Minute - 10*time.Second)
	fixGone    = fixT0.Add(75 * time.Minute)
)

// engineRates are one engine's rates per second: every counter's, and the
// TTFT histogram's cumulative counts at 0.1, 0.5, 1 and +Inf and its sum.
type engineRates struct {
	requests, generation, prompt, cached, queries, hits float64
	ttft                                                [4]float64
	ttftSum, prefill, decode                            float64
	kv, waiting                                         float64
}

// fixPod is one pod of the fixture.
type fixPod struct {
	pod, job, instance, model, dialect string
	engines                            []engineRates
	// segments are the processes' lives: [start, end) of sampling, and
	// the process start the counters count from.
	segments []fixSegment
	kvSpike  float64 // engine 0's KV use at the T0+60m sample, when set
	// bare: scraped outside Kubernetes (no namespace or pod label).
	bare bool
}

type fixSegment struct {
	from, to, start time.Time
}

var fixEngineA0 = engineRates{requests: 2, generation: 200, prompt: 1000, cached: 400, queries: 1000, hits: 400,
	ttft: [4]float64{1, 1.5, 1.9, 2}, ttftSum: 0.7, prefill: 0.2, decode: 1.8, kv: 0.5, waiting: 2}
var fixEngineA1 = engineRates{requests: 1, generation: 100, prompt: 500, cached: 100, queries: 500, hits: 100,
	ttft: [4]float64{0.2, 0.8, 1, 1}, ttftSum: 0.34, prefill: 0.1, decode: 0.9, kv: 0.3, waiting: 0}
var fixEngineB = engineRates{requests: 1, generation: 100, prompt: 300, cached: 100, queries: 300, hits: 100,
	ttft: [4]float64{1, 1, 1, 1}, ttftSum: 0.05, prefill: 0.1, decode: 0.9, kv: 0.2, waiting: 0}
var fixEngineC = engineRates{requests: 0.5, generation: 50, prompt: 200, cached: 0, queries: 200, hits: 0,
	ttft: [4]float64{0, 0.5, 0.5, 0.5}, ttftSum: 0.15, prefill: 0.05, decode: 0.45, kv: 0.1, waiting: 0}
var fixEngineD = engineRates{requests: 1, generation: 100, prompt: 300, cached: 0, queries: 300, hits: 0,
	ttft: [4]float64{0.5, 1, 1, 1}, ttftSum: 0.2, prefill: 0.1, decode: 0.9, kv: 0.2, waiting: 0}
var fixSGLang = engineRates{requests: 2, generation: 150, prompt: 800, cached: 200,
	ttft: [4]float64{1, 2, 2, 2}, ttftSum: 0.5, kv: 0.7, waiting: 1}

func fixPods() []fixPod {
	steady := []fixSegment{{fixFirst, fixLast.Add(time.Second), fixVirtual}}
	return []fixPod{
		{pod: "vllm-a", job: "vllm", instance: "10.0.0.1:8000", model: "llama", dialect: "vllm",
			engines: []engineRates{fixEngineA0, fixEngineA1}, segments: steady, kvSpike: 0.9},
		{pod: "vllm-b", job: "vllm", instance: "10.0.0.2:8000", model: "llama", dialect: "vllm",
			engines: []engineRates{fixEngineB}, segments: []fixSegment{
				{fixFirst, fixRestart, fixVirtual}, {fixRestart, fixLast.Add(time.Second), fixRestart}}},
		{pod: "vllm-c", job: "vllm", instance: "10.0.0.3:8000", model: "mistral", dialect: "vllm",
			engines: []engineRates{fixEngineC}, segments: []fixSegment{{fixBorn, fixLast.Add(time.Second), fixBorn}}},
		{pod: "vllm-d", job: "vllm", instance: "10.0.0.4:8000", model: "llama", dialect: "vllm",
			engines: []engineRates{fixEngineD}, segments: []fixSegment{{fixFirst, fixGone.Add(time.Second), fixVirtual}}},
		{pod: "sglang-a", job: "sglang", instance: "10.0.0.5:30000", model: "qwen", dialect: "sglang",
			engines: []engineRates{fixSGLang}, segments: steady},
	}
}

// omWriter collects a fixture's families: OpenMetrics wants each
// family's samples together, each series' in time order.
type omWriter struct {
	types  map[string]string
	series map[string]map[string][]string // family → series labels → lines
	order  []string
}

func newOM() *omWriter {
	return &omWriter{types: map[string]string{}, series: map[string]map[string][]string{}}
}

func (w *omWriter) add(family, typ, sample, labels string, v float64, at time.Time) {
	if _, ok := w.types[family]; !ok {
		w.types[family] = typ
		w.series[family] = map[string][]string{}
		w.order = append(w.order, family)
	}
	key := sample + labels
	w.series[family][key] = append(w.series[family][key],
		fmt.Sprintf("%s%s %s %s", sample, labels, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', -1, 64)))
}

func (w *omWriter) bytes() []byte {
	var b strings.Builder
	for _, f := range w.order {
		fmt.Fprintf(&b, "# TYPE %s %s\n", f, w.types[f])
		keys := make([]string, 0, len(w.series[f]))
		for k := range w.series[f] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, l := range w.series[f][k] {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

func labelStr(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, fmt.Sprintf("%s=%q", pairs[i], pairs[i+1]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// writeFixture writes the range fixture to dir and returns its path.
func writeFixture(t testing.TB, dir string) string {
	t.Helper()
	return writeFixtureOf(t, dir, fixPods())
}

// writeFixtureOf writes the range fixture of pods to dir, and what also
// adds.
func writeFixtureOf(t testing.TB, dir string, pods []fixPod, also ...func(*omWriter)) string {
	t.Helper()
	w := newOM()
	for at := fixFirst; !at.After(fixLast); at = at.Add(fixStep) {
		for _, p := range pods {
			for _, seg := range p.segments {
				if at.Before(seg.from) || !at.Before(seg.to) {
					continue
				}
				el := at.Sub(seg.start).Seconds()
				target := []string{"job", p.job, "instance", p.instance, "namespace", "llm", "pod", p.pod}
				if p.bare {
					target = target[:4]
				}
				w.add("process_start_time_seconds", "gauge", "process_start_time_seconds", labelStr(target...),
					float64(seg.start.Unix())+float64(seg.start.Nanosecond())/1e9, at)
				for e, r := range p.engines {
					if p.dialect == "vllm" {
						writeVLLM(w, target, p, e, r, el, at)
					} else {
						writeSGLang(w, target, p, r, el, at)
					}
				}
			}
		}
		// The router's copies, with a server label.
		router := []string{"job", "router", "instance", "10.0.0.9:8080", "namespace", "llm", "pod", "vllm-router", "server", "http://10.0.0.1:8000"}
		w.add("vllm:num_requests_running", "gauge", "vllm:num_requests_running", labelStr(router...), 3, at)
		w.add("vllm:num_requests_waiting", "gauge", "vllm:num_requests_waiting", labelStr(router...), 2, at)
	}
	for _, add := range also {
		add(w)
	}
	path := filepath.Join(dir, "fleet.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var ttftBounds = []string{"0.1", "0.5", "1", "+Inf"}

func writeVLLM(w *omWriter, target []string, p fixPod, e int, r engineRates, el float64, at time.Time) {
	lab := append(append([]string(nil), target...), "engine", strconv.Itoa(e), "model_name", p.model)
	ls := labelStr(lab...)
	counter := func(base string, rate float64, extra ...string) {
		w.add("vllm:"+base, "counter", "vllm:"+base+"_total", labelStr(append(append([]string(nil), lab...), extra...)...), rate*el, at)
	}
	counter("request_success", r.requests, "finished_reason", "stop")
	counter("generation_tokens", r.generation)
	counter("prompt_tokens", r.prompt)
	counter("prompt_tokens_cached", r.cached)
	counter("prefix_cache_queries", r.queries)
	counter("prefix_cache_hits", r.hits)
	hist := func(base string, bounds []string, cum []float64, sum float64) {
		for i, le := range bounds {
			w.add("vllm:"+base, "histogram", "vllm:"+base+"_bucket", labelStr(append(append([]string(nil), lab...), "le", le)...), cum[i]*el, at)
		}
		w.add("vllm:"+base, "histogram", "vllm:"+base+"_sum", ls, sum*el, at)
		w.add("vllm:"+base, "histogram", "vllm:"+base+"_count", ls, cum[len(cum)-1]*el, at)
	}
	hist("time_to_first_token_seconds", ttftBounds, r.ttft[:], r.ttftSum)
	hist("request_prefill_time_seconds", []string{"+Inf"}, []float64{r.requests}, r.prefill)
	hist("request_decode_time_seconds", []string{"+Inf"}, []float64{r.requests}, r.decode)
	kv := r.kv
	if e == 0 && p.kvSpike > 0 && at.Equal(fixT0.Add(60*time.Minute)) {
		kv = p.kvSpike
	}
	w.add("vllm:kv_cache_usage_perc", "gauge", "vllm:kv_cache_usage_perc", ls, kv, at)
	w.add("vllm:num_requests_waiting", "gauge", "vllm:num_requests_waiting", ls, r.waiting, at)
	w.add("vllm:num_requests_running", "gauge", "vllm:num_requests_running", ls, 4, at)
	info := labelStr(append(append([]string(nil), target...), "engine", strconv.Itoa(e), "block_size", "16",
		"num_gpu_blocks", "1000", "enable_prefix_caching", "True")...)
	w.add("vllm:cache_config_info", "gauge", "vllm:cache_config_info", info, 1, at)
}

func writeSGLang(w *omWriter, target []string, p fixPod, r engineRates, el float64, at time.Time) {
	lab := append(append([]string(nil), target...), "model_name", p.model)
	ls := labelStr(lab...)
	counter := func(base string, rate float64) {
		w.add("sglang:"+base, "counter", "sglang:"+base+"_total", ls, rate*el, at)
	}
	counter("num_requests", r.requests)
	counter("generation_tokens", r.generation)
	counter("prompt_tokens", r.prompt)
	counter("cached_tokens", r.cached)
	for i, le := range ttftBounds {
		w.add("sglang:time_to_first_token_seconds", "histogram", "sglang:time_to_first_token_seconds_bucket",
			labelStr(append(append([]string(nil), lab...), "le", le)...), r.ttft[i]*el, at)
	}
	w.add("sglang:time_to_first_token_seconds", "histogram", "sglang:time_to_first_token_seconds_sum", ls, r.ttftSum*el, at)
	w.add("sglang:time_to_first_token_seconds", "histogram", "sglang:time_to_first_token_seconds_count", ls, r.ttft[3]*el, at)
	w.add("sglang:token_usage", "gauge", "sglang:token_usage", ls, r.kv, at)
	w.add("sglang:num_queue_reqs", "gauge", "sglang:num_queue_reqs", ls, r.waiting, at)
	w.add("sglang:max_total_num_tokens", "gauge", "sglang:max_total_num_tokens", ls, 100000, at)
}

// approx compares figures that went through float arithmetic.
func approx(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}
