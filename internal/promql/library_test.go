package promql_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/promql"
)

func parse(t *testing.T, body string) []*dto.MetricFamily {
	t.Helper()
	fams, err := exposition.Parse([]byte(body), exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func fromFile(t *testing.T, path string) []*dto.MetricFamily {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(body))
}

func figure(t *testing.T, l *promql.Library, id string) string {
	t.Helper()
	f, ok := l.Figure(id)
	if !ok {
		t.Fatalf("%s: no figure %s", l.Dialect(), id)
	}
	return f.Expr
}

// The traps of hand-written rules, each against an expression written by
// hand from the series a scrape carries.
func TestExpressionsFromScrapedNames(t *testing.T) {
	tests := []struct {
		name, fixture, dialect, id, want string
		body                             string // an exposition instead of a fixture
	}{
		// A counter published without _total is stored with it when
		// Prometheus scrapes OpenMetrics: both spellings, or a rule that
		// never fires.
		{"bare counter", "", "tabbyapi", "prefix_cache/hit_rate",
			`sum by (job, instance) (increase({__name__=~"tabbyapi:prefix_cache_hits|tabbyapi:prefix_cache_hits_total"}[5m])) / sum by (job, instance) (increase({__name__=~"tabbyapi:prefix_cache_queries|tabbyapi:prefix_cache_queries_total"}[5m]))`, ""},
		// vLLM's counters carry _total: exactly that name.
		{"total counter", "../../testdata/dialects/vllm-new.prom", "vllm", "requests/preemptions",
			`sum by (job, instance) (rate(vllm:num_preemptions_total[5m]))`, ""},
		// A fraction per engine is averaged, never summed across engines.
		{"kv usage averaged", "../../testdata/dialects/vllm-new.prom", "vllm", "live/kv_cache",
			`avg by (job, instance) (vllm:kv_cache_usage_perc)`, ""},
		{"kv usage old name", "../../testdata/dialects/vllm-0.8.prom", "vllm", "live/kv_cache",
			`avg by (job, instance) (vllm:gpu_cache_usage_perc)`, ""},
		{"itl old name", "../../testdata/dialects/vllm-0.10.prom", "vllm", "latency/itl_p99",
			`histogram_quantile(0.99, sum by (le, job, instance) (rate(vllm:time_per_output_token_seconds_bucket[5m])))`, ""},
		{"itl new name", "../../testdata/dialects/vllm-new.prom", "vllm", "latency/itl_p99",
			`histogram_quantile(0.99, sum by (le, job, instance) (rate(vllm:inter_token_latency_seconds_bucket[5m])))`, ""},
		// Computed prompt tokens exclude cache hits.
		{"computed by source", "../../testdata/dialects/vllm-new.prom", "vllm", "throughput/prefill_work",
			`sum by (job, instance) (rate(vllm:prompt_tokens_by_source_total{source="local_compute"}[5m]))`, ""},
		{"computed by difference", "", "vllm", "throughput/prefill_work",
			`(sum by (job, instance) (rate(vllm:prompt_tokens_total[5m])) - sum by (job, instance) (rate(vllm:prompt_tokens_cached_total[5m])))`,
			"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 10\n# TYPE vllm:prompt_tokens_cached_total counter\nvllm:prompt_tokens_cached_total 4\n"},
		// Where the cached share is unknown, only the lump sum, said so.
		{"prompt tokens, cache hits included", "../../testdata/dialects/vllm-0.10.prom", "vllm", "throughput/prompt_tokens",
			`sum by (job, instance) (rate(vllm:prompt_tokens_total[5m]))`, ""},
		// And what can be given of the computed part: lookups less hits.
		{"computed estimate", "../../testdata/dialects/vllm-0.10.prom", "vllm", "throughput/prefill_work_estimate",
			`clamp_min(sum by (job, instance) (rate(vllm:prefix_cache_queries_total[5m])) - sum by (job, instance) (rate(vllm:prefix_cache_hits_total[5m])), 0)`, ""},
		// SGLang's GPU time: forward modes added within a scheduler, the
		// schedulers averaged (a utilization, not a sum of them).
		{"sglang engine busy", "../../testdata/dialects/sglang-new.prom", "sglang", "phases/engine_busy",
			`avg by (job, instance) (sum without (category) (max without (tp_rank, pp_rank, moe_ep_rank, attn_tp_rank, pid) (rate(sglang:gpu_execution_seconds_total[5m]))))`, ""},
		// Summed request time is requests in flight, not a busy share.
		{"mean in flight", "../../testdata/dialects/vllm-new.prom", "vllm", "phases/mean_in_flight",
			`sum by (job, instance) (rate(vllm:request_prefill_time_seconds_sum[5m])) + sum by (job, instance) (rate(vllm:request_decode_time_seconds_sum[5m]))`, ""},
		// Queue time is a latency: sum over count, both aggregated first.
		{"queue mean", "../../testdata/dialects/vllm-new.prom", "vllm", "latency/queue_mean",
			`sum by (job, instance) (rate(vllm:request_queue_time_seconds_sum[5m])) / sum by (job, instance) (rate(vllm:request_queue_time_seconds_count[5m]))`, ""},
		// Ray Serve's copies under their own prefix.
		{"ray prefix", "../../testdata/dialects/ray-vllm.prom", "vllm", "live/running",
			`sum by (job, instance) (ray_vllm_num_requests_running)`, ""},
		// SGLang: replicated ranks reduced to one before summing, and the
		// priorities' own series (priority scheduling) left out.
		{"sglang ranks", "../../testdata/dialects/sglang-new.prom", "sglang", "live/waiting",
			`sum by (job, instance) (max without (tp_rank, pp_rank, moe_ep_rank, attn_tp_rank, pid) (sglang:num_queue_reqs{priority=""}))`, ""},
		// TGI's counters have no _total: both spellings.
		{"tgi bare", "../../testdata/dialects/tgi.prom", "tgi", "throughput/requests",
			`sum by (job, instance) (rate({__name__=~"tgi_request_success|tgi_request_success_total"}[5m]))`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l *promql.Library
			var err error
			switch {
			case tt.body != "":
				l, err = promql.New(parse(t, tt.body), tt.dialect, promql.Options{})
			case tt.fixture == "":
				l, err = promql.Newest(tt.dialect, promql.Options{})
			default:
				l, err = promql.New(fromFile(t, tt.fixture), tt.dialect, promql.Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := figure(t, l, tt.id); got != tt.want {
				t.Errorf("%s\n got %s\nwant %s", tt.id, got, tt.want)
			}
		})
	}
}

// vLLM 0.8 counted prefix-cache lookups in blocks: no token hit rate is
// written from them, as the report gives none.
func TestBlockCountersMakeNoHitRate(t *testing.T) {
	l, err := promql.New(fromFile(t, "../../testdata/dialects/vllm-0.8.prom"), "vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := l.Figure("prefix_cache/hit_rate"); ok {
		t.Errorf("a hit rate from block counters: %s", f.Expr)
	}
}

// The selector and the labels reach every series, in every expression.
func TestSelectorAndBy(t *testing.T) {
	sel, err := promql.ParseSelector(`{namespace="llm", pod=~"vllm-.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	l, err := promql.Newest("vllm", promql.Options{Selector: sel, By: []string{"namespace", "pod"}, Window: "10m"})
	if err != nil {
		t.Fatal(err)
	}
	if got := figure(t, l, "requests/preemptions"); got != `sum by (namespace, pod) (rate(vllm:num_preemptions_total{namespace="llm", pod=~"vllm-.*"}[10m]))` {
		t.Errorf("got %s", got)
	}
	for _, f := range l.Figures() {
		if strings.Count(f.Expr, `namespace="llm"`) != strings.Count(f.Expr, "vllm:") {
			t.Errorf("%s: a series without the selector: %s", f.ID, f.Expr)
		}
		if !strings.Contains(f.Expr, "by (namespace, pod)") && !strings.Contains(f.Expr, "by (le, namespace, pod)") {
			t.Errorf("%s: not aggregated to the labels: %s", f.ID, f.Expr)
		}
		if !strings.HasSuffix(f.Op, "10m") && f.Op != "sum" && f.Op != "ratio" {
			t.Errorf("%s: operation %s does not name the window", f.ID, f.Op)
		}
	}
	for _, c := range l.Conditions() {
		if c.ID != "target_down" && strings.Count(c.Expr, `namespace="llm"`) != strings.Count(c.Expr, "vllm:") {
			t.Errorf("%s: a series without the selector: %s", c.ID, c.Expr)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []promql.Options{
		{By: []string{"le"}},
		{By: []string{"pod", "pod"}},
		{By: []string{"bad-label"}},
		{Window: "five minutes"},
		{Window: "0s"},
	} {
		if _, err := promql.Newest("vllm", o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := promql.Newest("nginx", promql.Options{}); !errors.Is(err, promql.ErrUnknownDialect) {
		t.Errorf("unknown dialect: %v", err)
	}
}

// Without a scrape the newest names stand in: each dialect's newest
// exposition is one the dialect reads, and the library finds in it every
// quantity the dialect does (the fixture test holds the two together).
func TestNewestExpositions(t *testing.T) {
	if !slices.Equal(promql.Dialects(), dialect.Names()) {
		t.Fatalf("dialects %v, internal/dialect has %v", promql.Dialects(), dialect.Names())
	}
	for _, d := range promql.Dialects() {
		body, err := promql.NewestExposition(d)
		if err != nil {
			t.Fatal(err)
		}
		fams := parse(t, string(body))
		s, err := dialect.Map(fams, dialect.Options{Dialect: d})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(s.Invalid) > 0 {
			t.Errorf("%s: invalid series %v", d, s.Invalid)
		}
		l, err := promql.Newest(d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Figures()) < 10 || len(l.Conditions()) < 2 {
			t.Errorf("%s: %d figures, %d conditions", d, len(l.Figures()), len(l.Conditions()))
		}
		fromScrape, err := promql.New(fams, d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fromScrape.Series(), l.Series()) {
			t.Errorf("%s: Newest reads %v, New on the same exposition %v", d, l.Series(), fromScrape.Series())
		}
	}
}

// Every note a band makes is either a condition here or listed, with a
// reason, as one no window decides.
func TestEveryNoteAccounted(t *testing.T) {
	if err := promql.CheckNotes(); err != nil {
		t.Error(err)
	}
}
