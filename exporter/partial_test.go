package exporter

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
)

// labelled is one scrape read back series by series: for each family
// (unprefixed) and each model label value ("" when unlabelled), the value
// of a counter or gauge, or a histogram's count and sum.
type labelled struct {
	vals   map[string]map[string]float64
	counts map[string]map[string]float64
	sums   map[string]map[string]float64
	text   string
}

func scrapeLabelled(t *testing.T, m *Metrics) labelled {
	t.Helper()
	text := writeText(t, m)
	if want := expfmtText(t, m); !bytes.Equal(text, want) {
		t.Errorf("WriteText differs from expfmt:\n%s", golden.Diff(string(want), string(text)))
	}
	fams, err := exposition.Parse(text, exposition.Text)
	if err != nil {
		t.Fatalf("parsing our own exposition: %v\n%s", err, text)
	}
	l := labelled{vals: map[string]map[string]float64{}, counts: map[string]map[string]float64{}, sums: map[string]map[string]float64{}, text: string(text)}
	put := func(mp map[string]map[string]float64, name, model string, v float64) {
		if mp[name] == nil {
			mp[name] = map[string]float64{}
		}
		if _, dup := mp[name][model]; dup {
			t.Errorf("%s{model=%q} served twice", name, model)
		}
		mp[name][model] = v
	}
	for _, mf := range fams {
		name := strings.TrimPrefix(mf.GetName(), m.ns+":")
		for _, mt := range mf.GetMetric() {
			model := ""
			for _, lp := range mt.GetLabel() {
				if lp.GetName() != ModelLabel {
					t.Errorf("%s: unexpected label %s", name, lp.GetName())
				}
				model = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				put(l.vals, name, model, mt.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				put(l.vals, name, model, mt.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				put(l.counts, name, model, float64(mt.GetHistogram().GetSampleCount()))
				put(l.sums, name, model, mt.GetHistogram().GetSampleSum())
			}
		}
	}
	return l
}

// has reports whether the family serves a series for the model.
func (l labelled) has(name, model string) bool {
	if _, ok := l.vals[name][model]; ok {
		return true
	}
	_, ok := l.counts[name][model]
	return ok
}

// TestUnknownLeftOut: figures a source does not report are left out, never
// published as 0; what it does report is exact (values by hand).
func TestUnknownLeftOut(t *testing.T) {
	// An Ollama-like source: no queue, no cached split, no drafter; TTFT
	// and end-to-end measured by a proxy; prefill and decode reported.
	ollama := []Generation{
		{PromptTokens: 100, GeneratedTokens: 20, Prefill: ms(200), Decode: ms(1000), TTFT: ms(250), E2E: ms(1300),
			Unknown: UnknownQueue | UnknownCached | UnknownDraft},
		{PromptTokens: 40, GeneratedTokens: 5, Prefill: ms(100), Decode: ms(400), TTFT: ms(150), E2E: ms(600),
			Unknown: UnknownQueue | UnknownCached | UnknownDraft},
	}
	// An OpenAI-like stream: tokens with the cached part, no phases.
	openai := []Generation{
		{PromptTokens: 300, CachedTokens: 256, GeneratedTokens: 10, TTFT: ms(80), E2E: ms(500),
			Unknown: UnknownQueue | UnknownPrefill | UnknownDecode | UnknownDraft},
	}
	tests := []struct {
		name   string
		gens   []Generation
		want   map[string]float64 // scalars served, by hand
		absent []string           // families left out
		counts map[string]float64 // histogram counts
		sums   map[string]float64
	}{
		{"ollama", ollama,
			map[string]float64{"requests_total": 2, "prompt_tokens_all_total": 140, "tokens_predicted_total": 25,
				"prompt_seconds_total": 0.3, "tokens_predicted_seconds_total": 1.4, "predicted_tokens_seconds": 25 / 1.4,
				"n_tokens_max": 100, "tokens_predicted_max": 20},
			[]string{"prompt_tokens_total", "cached_tokens_total", "prefix_cache_queries", "prefix_cache_hits",
				"request_queue_time_seconds", "spec_decode_requests_total", "spec_decode_acceptance_rate", "spec_decode_num_draft_tokens_total"},
			map[string]float64{"time_to_first_token_seconds": 2, "e2e_request_latency_seconds": 2, "request_prefill_time_seconds": 2,
				"request_decode_time_seconds": 2, "request_prompt_tokens": 2, "request_generation_tokens": 2},
			map[string]float64{"time_to_first_token_seconds": 0.4, "e2e_request_latency_seconds": 1.9, "request_prompt_tokens": 140}},
		{"openai", openai,
			map[string]float64{"requests_total": 1, "prompt_tokens_total": 44, "cached_tokens_total": 256,
				"prefix_cache_queries": 300, "prefix_cache_hits": 256, "tokens_predicted_total": 10},
			[]string{"prompt_tokens_all_total", "prompt_seconds_total", "tokens_predicted_seconds_total", "predicted_tokens_seconds",
				"request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds"},
			map[string]float64{"time_to_first_token_seconds": 1, "e2e_request_latency_seconds": 1},
			map[string]float64{"time_to_first_token_seconds": 0.08, "e2e_request_latency_seconds": 0.5}},
		{"phases unknown and nothing measured", []Generation{{PromptTokens: 5, GeneratedTokens: 1, Unknown: UnknownQueue}},
			map[string]float64{"requests_total": 1, "prompt_seconds_total": 0, "tokens_predicted_total": 1},
			[]string{"time_to_first_token_seconds", "e2e_request_latency_seconds", "request_queue_time_seconds"},
			map[string]float64{"request_prefill_time_seconds": 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{})
			for _, g := range tt.gens {
				m.RecordGeneration(g)
			}
			l := scrapeLabelled(t, m)
			for name, want := range tt.want {
				if got, ok := l.vals[name][""]; !ok || !near(got, want) {
					t.Errorf("%s = %v (served %v), want %v", name, got, ok, want)
				}
			}
			for _, name := range tt.absent {
				if l.has(name, "") {
					t.Errorf("%s is served; the source does not report it", name)
				}
			}
			for name, want := range tt.counts {
				if got := l.counts[name][""]; got != want {
					t.Errorf("%s_count = %v, want %v", name, got, want)
				}
			}
			for name, want := range tt.sums {
				if got := l.sums[name][""]; !near(got, want) {
					t.Errorf("%s_sum = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestUnknownPopulations: a figure a generation did not report is left out
// of that generation's sums, never added as 0: each series covers the
// generations that reported its figures (requests_total and the
// histograms' counts say how many), and a series appears with the first of
// them.
func TestUnknownPopulations(t *testing.T) {
	m := New(Options{})
	m.RecordGeneration(Generation{PromptTokens: 100, CachedTokens: 60, GeneratedTokens: 3, E2E: ms(90), Unknown: UnknownQueue | UnknownPrefill | UnknownDecode | UnknownTTFT})
	l := scrapeLabelled(t, m)
	if got := l.vals["cached_tokens_total"][""]; got != 60 {
		t.Errorf("cached_tokens_total = %v, want 60", got)
	}
	for _, name := range []string{"prompt_tokens_all_total", "time_to_first_token_seconds", "prompt_seconds_total", "request_prefill_time_seconds"} {
		if l.has(name, "") {
			t.Errorf("%s served before any generation reported it:\n%s", name, l.text)
		}
	}
	// A non-streamed answer without the cached split and without tokens,
	// then a stream that reports prefill and decode (an Ollama-like one).
	m.RecordGeneration(Generation{PromptTokens: 50, E2E: ms(50), Unknown: UnknownQueue | UnknownPrefill | UnknownCached | UnknownTTFT | UnknownGenerated})
	m.RecordGeneration(Generation{PromptTokens: 10, GeneratedTokens: 4, Prefill: ms(20), Decode: ms(200), TTFT: ms(30), E2E: ms(240), Unknown: UnknownQueue | UnknownCached})
	l = scrapeLabelled(t, m)
	want := map[string]float64{
		"requests_total":                 3,
		"prompt_tokens_total":            40, // the one generation with the split
		"cached_tokens_total":            60,
		"prefix_cache_queries":           100,
		"prompt_tokens_all_total":        160, // every reported prompt
		"tokens_predicted_total":         7,   // 3 + 4; the second did not say
		"prompt_seconds_total":           0.02,
		"tokens_predicted_seconds_total": 0.2,
		"predicted_tokens_seconds":       4 / 0.2, // only the generation with both tokens and decode time
		"n_tokens_max":                   100,
	}
	for name, v := range want {
		if got, ok := l.vals[name][""]; !ok || !near(got, v) {
			t.Errorf("%s = %v (served %v), want %v", name, got, ok, v)
		}
	}
	for name, v := range map[string]float64{"time_to_first_token_seconds": 1, "e2e_request_latency_seconds": 3,
		"request_prefill_time_seconds": 1, "request_generation_tokens": 2, "request_prompt_tokens": 3} {
		if got := l.counts[name][""]; got != v {
			t.Errorf("%s_count = %v, want %v", name, got, v)
		}
	}
	if l.has("request_queue_time_seconds", "") {
		t.Errorf("the queue histogram is served: no generation reported a queue time")
	}
}

// TestUnknownEngine: the engine groups named in Options.Unknown are left
// out; the rest of the live state is served as read.
func TestUnknownEngine(t *testing.T) {
	m := New(Options{Engine: &fakeEngine{live: Live{ActiveJobs: 3, PendingJobs: 9}}, LiveTimeout: patient,
		Unknown: UnknownWaiting | UnknownKVCache | UnknownOffload | UnknownRecurrent | UnknownDraft})
	l := scrapeLabelled(t, m)
	if got := l.vals["requests_processing"][""]; got != 3 {
		t.Errorf("requests_processing = %v, want 3", got)
	}
	for name := range l.vals {
		for _, group := range []string{"requests_deferred", "kv_", "recurrent_", "spec_decode"} {
			if strings.HasPrefix(name, group) {
				t.Errorf("%s served; Options.Unknown names its group", name)
			}
		}
	}
	for _, name := range []string{"process_start_time_seconds", "live_state_age_seconds", "requests_total"} {
		if !l.has(name, "") {
			t.Errorf("%s not served", name)
		}
	}
}

// TestPerModel: one series per model, labelled, each with its own figures
// (by hand); the engine's series stay unlabelled; nothing before the first
// generation; label values escaped.
func TestPerModel(t *testing.T) {
	m := New(Options{PerModel: true, Engine: &fakeEngine{live: Live{ActiveJobs: 2}}, LiveTimeout: patient})
	l := scrapeLabelled(t, m)
	if l.has("requests_total", "") || len(l.counts) != 0 {
		t.Errorf("generation series served before any generation:\n%s", l.text)
	}
	odd := "a\"b\\c\nd"
	m.RecordGeneration(Generation{Model: "llama3", PromptTokens: 100, CachedTokens: 40, GeneratedTokens: 10, Queue: ms(10), Prefill: ms(20), Decode: ms(300)})
	m.RecordGeneration(Generation{Model: "llama3", PromptTokens: 50, CachedTokens: 0, GeneratedTokens: 5, Queue: ms(0), Prefill: ms(10), Decode: ms(100)})
	m.RecordGeneration(Generation{Model: "qwen", PromptTokens: 7, GeneratedTokens: 700, Unknown: UnknownCached | UnknownQueue, Prefill: ms(5), Decode: ms(9000), TTFT: ms(15)})
	m.RecordGeneration(Generation{Model: odd, PromptTokens: 1, GeneratedTokens: 1})
	l = scrapeLabelled(t, m)
	want := map[string]map[string]float64{
		"requests_total":          {"llama3": 2, "qwen": 1, odd: 1},
		"prompt_tokens_total":     {"llama3": 110, odd: 1},
		"cached_tokens_total":     {"llama3": 40, odd: 0},
		"prompt_tokens_all_total": {"qwen": 7},
		"tokens_predicted_total":  {"llama3": 15, "qwen": 700, odd: 1},
		"requests_processing":     {"": 2},
	}
	for name, byModel := range want {
		if len(l.vals[name]) != len(byModel) {
			t.Errorf("%s: series %v, want %v", name, l.vals[name], byModel)
		}
		for model, v := range byModel {
			if got, ok := l.vals[name][model]; !ok || got != v {
				t.Errorf("%s{model=%q} = %v (served %v), want %v", name, model, got, ok, v)
			}
		}
	}
	if got := l.counts["time_to_first_token_seconds"]; got["llama3"] != 2 || got["qwen"] != 1 || got[odd] != 1 {
		t.Errorf("TTFT counts %v, want llama3 2, qwen 1, %q 1", got, odd)
	}
	if got := l.sums["time_to_first_token_seconds"]["llama3"]; !near(got, 0.04) {
		t.Errorf("TTFT sum for llama3 = %v, want 0.01+0.02+0.01 = 0.04", got)
	}
	if l.has("request_queue_time_seconds", "qwen") || !l.has("request_queue_time_seconds", "llama3") {
		t.Errorf("queue histogram served for qwen (queue unknown) or not for llama3")
	}
	if !strings.Contains(l.text, `tabbyapi:requests_total{model="a\"b\\c\nd"} 1`) {
		t.Errorf("label not escaped as the text format requires:\n%s", l.text)
	}
	compareWithRegistry(t, m)
}

// TestMaxModels: model label values are bounded; later models share
// OtherModel, and names that read the same once valid share a series.
func TestMaxModels(t *testing.T) {
	m := New(Options{PerModel: true, MaxModels: 2})
	for i := range 5 {
		m.RecordGeneration(Generation{Model: fmt.Sprintf("m%d", i), PromptTokens: 1, GeneratedTokens: 1})
	}
	m.RecordGeneration(Generation{Model: "m0", PromptTokens: 1, GeneratedTokens: 1})
	l := scrapeLabelled(t, m)
	want := map[string]float64{"m0": 2, "m1": 1, OtherModel: 3}
	if got := l.vals["requests_total"]; len(got) != len(want) || got["m0"] != 2 || got["m1"] != 1 || got[OtherModel] != 3 {
		t.Errorf("requests_total by model %v, want %v", got, want)
	}

	m = New(Options{PerModel: true})
	m.RecordGeneration(Generation{Model: "x\xffy", PromptTokens: 1})
	m.RecordGeneration(Generation{Model: "x\xfey", PromptTokens: 1})
	m.RecordGeneration(Generation{Model: strings.Repeat("é", 150), PromptTokens: 1})
	l = scrapeLabelled(t, m)
	if got := l.vals["requests_total"]["x\uFFFDy"]; got != 2 {
		t.Errorf("two names invalid in the same place: requests_total %v, want one series of 2", l.vals["requests_total"])
	}
	for model := range l.vals["requests_total"] {
		if len(model) > maxLabelBytes {
			t.Errorf("label value of %d bytes, above %d", len(model), maxLabelBytes)
		}
	}
}

// TestPerModelConfigureTokenBuckets: a ladder change restarts every model's
// token histograms, and a model added later starts on the new ladder.
func TestPerModelConfigureTokenBuckets(t *testing.T) {
	m := New(Options{PerModel: true, MaxSeqLen: 1000})
	m.RecordGeneration(Generation{Model: "a", PromptTokens: 10})
	m.ConfigureTokenBuckets(4096)
	m.RecordGeneration(Generation{Model: "b", PromptTokens: 10})
	l := scrapeLabelled(t, m)
	if got := l.counts["request_prompt_tokens"]; got["a"] != 0 || got["b"] != 1 {
		t.Errorf("request_prompt_tokens counts %v, want a 0 (restarted), b 1", got)
	}
	if !strings.Contains(l.text, `tabbyapi:request_prompt_tokens_bucket{model="a",le="4096"} 0`) ||
		!strings.Contains(l.text, `tabbyapi:request_prompt_tokens_bucket{model="b",le="4096"} 1`) {
		t.Errorf("the token histograms are not on the new ladder:\n%s", l.text)
	}
	compareWithRegistry(t, m)
}

// TestPerModelRecordAllocations: recording for a model already seen does
// not allocate.
func TestPerModelRecordAllocations(t *testing.T) {
	m := New(Options{PerModel: true})
	g := benchGen
	g.Model = "llama3"
	m.RecordGeneration(g)
	if n := testing.AllocsPerRun(100, func() { m.RecordGeneration(g) }); n != 0 {
		t.Errorf("RecordGeneration for a known model allocates %v times", n)
	}
}

// TestPerModelPedantic: a pedantic registry accepts the labelled set.
func TestPerModelPedantic(t *testing.T) {
	m := New(Options{PerModel: true})
	m.RecordGeneration(Generation{Model: "a", PromptTokens: 3})
	m.RecordGeneration(Generation{Model: "b", Unknown: UnknownCached, PromptTokens: 3})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range fams {
		names = append(names, mf.GetName())
	}
	if !slices.Contains(names, "tabbyapi:prompt_tokens_all_total") || !slices.Contains(names, "tabbyapi:prompt_tokens_total") {
		t.Errorf("families %v lack one of the prompt totals", names)
	}
}

// BenchmarkWriteTextPerModel is one scrape of four models' series.
func BenchmarkWriteTextPerModel(b *testing.B) {
	m := New(Options{PerModel: true, MaxSeqLen: 262144, Engine: &fakeEngine{live: busyLive}, LiveTimeout: patient})
	for i := range 1000 {
		g := benchGen
		g.Model = fmt.Sprintf("model-%d", i%4)
		m.RecordGeneration(g)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordGenerationPerModel is the cost per finished request with
// a model label.
func BenchmarkRecordGenerationPerModel(b *testing.B) {
	m := New(Options{PerModel: true, MaxSeqLen: 262144})
	g := benchGen
	g.Model = "llama3"
	b.ReportAllocs()
	for b.Loop() {
		m.RecordGeneration(g)
	}
}

// FuzzPartial feeds generations with any unknown figures and model names:
// WriteText stays byte for byte expfmt's, so does the handler's
// OpenMetrics, the registry path agrees, and
// requests_total counts every generation of each model.
func FuzzPartial(f *testing.F) {
	f.Add(uint32(0), "m", 100, 10, 5, int64(0), int64(0))
	f.Add(uint32(UnknownCached|UnknownQueue), "llama3:8b", 30, 0, 7, int64(ms(40)), int64(ms(400)))
	f.Add(uint32(0xffffffff), "a\"\\\n\xff", -1, -1, -1, int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, unknown uint32, model string, p, c, g int, ttft, e2e int64) {
		for _, perModel := range []bool{false, true} {
			m := New(Options{PerModel: perModel, Unknown: Quantity(unknown >> 16)})
			gen := Generation{Model: model, PromptTokens: p, CachedTokens: c, GeneratedTokens: g,
				TTFT: time.Duration(ttft), E2E: time.Duration(e2e), Unknown: Quantity(unknown)}
			m.RecordGeneration(gen)
			gen.Model += "2"
			m.RecordGeneration(gen)
			l := scrapeLabelled(t, m)
			var n float64
			for _, v := range l.vals["requests_total"] {
				n += v
			}
			if n != 2 {
				t.Errorf("requests_total over every model = %v, want 2", n)
			}
			compareWithRegistry(t, m)
			checkOpenMetrics(t, m)
		}
	})
}
