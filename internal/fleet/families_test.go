package fleet

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

func pt(name string, v float64, labels ...string) point {
	m := model.Metric{model.MetricNameLabel: model.LabelValue(name), "job": "vllm", "instance": "10.0.0.7:8000"}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return point{metric: m, value: v}
}

// metaOf answers from a table, as the store's /api/v1/metadata would.
func metaOf(table map[string][2]string) metaFunc {
	return func(name string) (string, string) {
		m := table[name]
		return m[0], m[1]
	}
}

func famByName(fams []*dto.MetricFamily, name string) *dto.MetricFamily {
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// What a Prometheus that scraped OpenMetrics keeps: counters' metadata
// without _total, a counter without _total typed unknown, _created series
// of their own, histograms as three series. The rebuilt families are what
// a text scrape of the server would have given.
func TestRebuildOpenMetricsScrape(t *testing.T) {
	meta := metaOf(map[string][2]string{
		"tabbyapi:requests":                    {"counter", "Number of finished generation requests."},
		"tabbyapi:prefix_cache_hits":           {"unknown", "Prefix cache hits, in terms of number of cached tokens."},
		"tabbyapi:time_to_first_token_seconds": {"histogram", "Histogram of time to first token in seconds."},
		"tabbyapi:requests_processing":         {"gauge", "Number of requests processing."},
	})
	pts := []point{
		pt("tabbyapi:requests_total", 120),
		pt("tabbyapi:requests_created", 1.7e9),
		pt("tabbyapi:prefix_cache_hits", 9000),
		pt("tabbyapi:requests_processing", 3),
		pt("tabbyapi:time_to_first_token_seconds_bucket", 10, "le", "0.5"),
		pt("tabbyapi:time_to_first_token_seconds_bucket", 100, "le", "+Inf"),
		pt("tabbyapi:time_to_first_token_seconds_bucket", 60, "le", "1"),
		pt("tabbyapi:time_to_first_token_seconds_sum", 80.5),
		pt("tabbyapi:time_to_first_token_seconds_count", 100),
		pt("tabbyapi:time_to_first_token_seconds_created", 1.7e9),
	}
	rb := rebuild(pts, meta)
	if len(rb.fams) != 4 {
		var names []string
		for _, f := range rb.fams {
			names = append(names, f.GetName())
		}
		t.Fatalf("families %v, want 4 (no _created)", names)
	}
	req := famByName(rb.fams, "tabbyapi:requests_total")
	if req.GetType() != dto.MetricType_COUNTER || req.GetMetric()[0].GetCounter().GetValue() != 120 ||
		req.GetHelp() != "Number of finished generation requests." {
		t.Errorf("requests_total = %v", req)
	}
	if f := famByName(rb.fams, "tabbyapi:prefix_cache_hits"); f.GetType() != dto.MetricType_UNTYPED || f.GetMetric()[0].GetUntyped().GetValue() != 9000 {
		t.Errorf("prefix_cache_hits = %v", f)
	}
	if f := famByName(rb.fams, "tabbyapi:requests_processing"); f.GetType() != dto.MetricType_GAUGE {
		t.Errorf("requests_processing = %v", f)
	}
	h := famByName(rb.fams, "tabbyapi:time_to_first_token_seconds")
	if h.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("ttft = %v", h)
	}
	hm := h.GetMetric()[0].GetHistogram()
	if histCount(hm) != 100 || hm.GetSampleSum() != 80.5 || len(hm.GetBucket()) != 3 ||
		hm.GetBucket()[0].GetUpperBound() != 0.5 || cum(hm.GetBucket()[0]) != 10 ||
		cum(hm.GetBucket()[1]) != 60 {
		t.Errorf("ttft histogram = %v", hm)
	}
	// The labels the store added stay on every series.
	for _, lp := range req.GetMetric()[0].GetLabel() {
		if lp.GetName() == "instance" && lp.GetValue() != "10.0.0.7:8000" {
			t.Errorf("instance label %q", lp.GetValue())
		}
	}
}

// Without metadata (VictoriaMetrics) the names decide: _total is a
// counter, _bucket with _count a histogram, the rest untyped.
func TestRebuildWithoutMetadata(t *testing.T) {
	none := metaOf(nil)
	pts := []point{
		pt("vllm:request_success_total", 5, "model_name", "m", "engine", "0", "finished_reason", "stop"),
		pt("vllm:request_success_total", 7, "model_name", "m", "engine", "1", "finished_reason", "stop"),
		pt("vllm:e2e_request_latency_seconds_bucket", 3, "model_name", "m", "engine", "0", "le", "1.0"),
		pt("vllm:e2e_request_latency_seconds_bucket", 5, "model_name", "m", "engine", "0", "le", "+Inf"),
		pt("vllm:e2e_request_latency_seconds_count", 5, "model_name", "m", "engine", "0"),
		pt("vllm:e2e_request_latency_seconds_sum", 4.5, "model_name", "m", "engine", "0"),
		pt("vllm:kv_cache_usage_perc", 0.25, "model_name", "m", "engine", "0"),
		// A _bucket series without its histogram's other parts is a
		// series of its own.
		pt("vllm:odd_bucket", 1, "le", "2"),
	}
	rb := rebuild(pts, none)
	want := map[string]dto.MetricType{
		"vllm:request_success_total":       dto.MetricType_COUNTER,
		"vllm:e2e_request_latency_seconds": dto.MetricType_HISTOGRAM,
		"vllm:kv_cache_usage_perc":         dto.MetricType_UNTYPED,
		"vllm:odd_bucket":                  dto.MetricType_UNTYPED,
	}
	for name, typ := range want {
		f := famByName(rb.fams, name)
		if f == nil || f.GetType() != typ {
			t.Errorf("%s = %v, want %v", name, f, typ)
		}
	}
	if n := len(famByName(rb.fams, "vllm:request_success_total").GetMetric()); n != 2 {
		t.Errorf("%d engine series, want 2", n)
	}
}

// A native histogram, and one stored with custom buckets (NHCB), is
// written as the classic histogram it stands for.
func TestRebuildNative(t *testing.T) {
	h := &model.SampleHistogram{Count: 10, Sum: 7.5, Buckets: model.HistogramBuckets{
		{Boundaries: 0, Lower: 0, Upper: 0.25, Count: 2},
		{Boundaries: 0, Lower: 0.25, Upper: 1, Count: 5},
		{Boundaries: 0, Lower: 1, Upper: 4, Count: 3},
	}}
	p := pt("sglang:time_to_first_token_seconds", 0, "model_name", "m")
	p.hist = h
	rb := rebuild([]point{p}, metaOf(nil))
	if rb.native != 1 {
		t.Errorf("native = %d", rb.native)
	}
	f := famByName(rb.fams, "sglang:time_to_first_token_seconds")
	if f.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%v", f)
	}
	hm := f.GetMetric()[0].GetHistogram()
	// Cumulative: 0 by 0 (the first bucket's lower bound), 2 by 0.25, 7
	// by 1, 10 by 4, and +Inf.
	want := []struct{ le, n float64 }{{0, 0}, {0.25, 2}, {1, 7}, {4, 10}, {math.Inf(1), 10}}
	if len(hm.GetBucket()) != len(want) {
		t.Fatalf("buckets %v", hm.GetBucket())
	}
	for i, w := range want {
		b := hm.GetBucket()[i]
		if b.GetUpperBound() != w.le || cum(b) != w.n {
			t.Errorf("bucket %d = %v, want le %v count %v", i, b, w.le, w.n)
		}
	}
	if histCount(hm) != 10 || hm.GetSampleSum() != 7.5 {
		t.Errorf("count %v sum %v", histCount(hm), hm.GetSampleSum())
	}
	// Only buckets holding observations are listed: a gap keeps its lower
	// bound, so that nothing is spread into it.
	p.hist = &model.SampleHistogram{Count: 5, Sum: 9, Buckets: model.HistogramBuckets{
		{Boundaries: 0, Lower: 0.5, Upper: 1, Count: 2}, {Boundaries: 0, Lower: 2, Upper: 4, Count: 3}}}
	rb = rebuild([]point{p}, metaOf(nil))
	var got []float64
	for _, b := range rb.fams[0].GetMetric()[0].GetHistogram().GetBucket() {
		got = append(got, b.GetUpperBound(), cum(b))
	}
	if fmt.Sprint(got) != fmt.Sprint([]float64{0.5, 0, 1, 2, 2, 2, 4, 5, math.Inf(1), 5}) {
		t.Errorf("gapped buckets: %v", got)
	}
	// Where the store keeps the classic buckets too, those are read.
	both := []point{p, pt("sglang:time_to_first_token_seconds_bucket", 10, "model_name", "m", "le", "+Inf"),
		pt("sglang:time_to_first_token_seconds_count", 10, "model_name", "m")}
	rb = rebuild(both, metaOf(nil))
	if rb.native != 0 {
		t.Errorf("classic and native: native %d", rb.native)
	}
}

// histCount and cum read a histogram's counts as dialect.Hist does: the
// integer and float fields added.
func histCount(h *dto.Histogram) float64 {
	return float64(h.GetSampleCount()) + h.GetSampleCountFloat()
}
func cum(b *dto.Bucket) float64 { return float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat() }

// Label values come back exactly, whatever they hold.
func TestRebuildLabelValues(t *testing.T) {
	for _, v := range []string{`a"b`, `back\slash`, "new\nline", "ünïcode ✓", "", `\n`} {
		rb := rebuild([]point{pt("tgi_queue_size", 1, "tag", v)}, metaOf(nil))
		got := ""
		for _, lp := range rb.fams[0].GetMetric()[0].GetLabel() {
			if lp.GetName() == "tag" {
				got = lp.GetValue()
			}
		}
		if got != v {
			t.Errorf("label %q came back %q", v, got)
		}
	}
}

// Whatever label values and values the store holds, the rebuilt
// exposition parses, and gives each back.
func FuzzRebuild(f *testing.F) {
	f.Add("vllm:num_requests_running", "m", 3.0)
	f.Add("tabbyapi:requests_total", "a\"b\\c\nd", 1e300)
	f.Add("sglang:token_usage", "", math.Copysign(0, -1))
	f.Fuzz(func(t *testing.T, name, value string, v float64) {
		if !utf8.ValidString(value) || len(value) > 4096 || !model.LegacyValidation.IsValidMetricName(name) ||
			strings.HasSuffix(name, "_created") || strings.HasSuffix(name, "_bucket") {
			return
		}
		rb := rebuild([]point{pt(name, v, "model_name", value)}, metaOf(nil))
		if len(rb.fams) != 1 || len(rb.fams[0].GetMetric()) != 1 {
			t.Fatalf("families %v", rb.fams)
		}
		m := rb.fams[0].GetMetric()[0]
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "model_name" && lp.GetValue() != value {
				t.Errorf("label %q came back %q", value, lp.GetValue())
			}
		}
		got := m.GetUntyped().GetValue()
		if m.Counter != nil {
			got = m.GetCounter().GetValue()
		}
		if got != v && !(got != got && v != v) {
			t.Errorf("value %v came back %v", v, got)
		}
	})
}
