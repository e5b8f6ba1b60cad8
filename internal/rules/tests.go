package rules

import (
	"fmt"
	"math"
	"strings"
	"text/template"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// example is a server's state, held for ten minutes, under which
// an alert must fire (or must not): gauges at a value, counters rising by
// so much a minute, histograms gaining so many observations a minute.
type example struct {
	gauges   map[string]float64
	perMin   map[string]float64
	observed map[string]histogram.Histogram // added every minute
	// value is what the alert's expression returns where it fires, worked
	// out by hand from the above over the default 5-minute window.
	value float64
}

// Example series run for testMinutes, sampled every minute; the alerts
// are looked at at the end, when the hold time (5 minutes at most) and
// each window in it (5 minutes) lie inside.
const testMinutes = 10

// queueObserved is a minute of 10 requests that each waited mean seconds.
func queueObserved(mean float64) map[string]histogram.Histogram {
	return map[string]histogram.Histogram{snapshot.RequestQueueTimeSeconds: {
		Buckets: []histogram.Bucket{{UpperBound: 1, Count: 0}, {UpperBound: 10, Count: 0}, {UpperBound: 60, Count: 10}, {UpperBound: math.Inf(1), Count: 10}},
		Count:   10, Sum: 10 * mean,
	}}
}

// offloadOn and recurrentOn are caches configured and half full: the
// report looks at a cache's counters only where it has a size.
var (
	offloadOn = map[string]float64{snapshot.KVOffloadTokens: 128, snapshot.KVOffloadMaxTokens: 256,
		snapshot.KVOffloadBytes: 2048, snapshot.KVOffloadMaxBytes: 4096}
	recurrentOn = map[string]float64{snapshot.RecurrentCacheBytes: 500, snapshot.RecurrentCacheMaxBytes: 1000}
)

// examples are, by condition, a state that fires the alert and one that
// must not.
var examples = map[string][2]example{
	"kv_cache_over_capacity": {
		{gauges: map[string]float64{snapshot.KVCacheTokens: 1100, snapshot.KVCacheMaxTokens: 1000}, value: 1.1},
		{gauges: map[string]float64{snapshot.KVCacheTokens: 500, snapshot.KVCacheMaxTokens: 1000}},
	},
	"kv_cache_pressure": {
		{gauges: map[string]float64{snapshot.KVCacheTokens: 950, snapshot.KVCacheMaxTokens: 1000, snapshot.KVCacheUsageRatio: 0.95}, value: 0.95},
		{gauges: map[string]float64{snapshot.KVCacheTokens: 500, snapshot.KVCacheMaxTokens: 1000, snapshot.KVCacheUsageRatio: 0.5}},
	},
	"queue_pressure": {
		{gauges: map[string]float64{snapshot.RequestsDeferred: 20, snapshot.RequestsProcessing: 4}, value: 20},
		{gauges: map[string]float64{snapshot.RequestsDeferred: 3, snapshot.RequestsProcessing: 4}},
	},
	"kv_offload_over_capacity": {
		{gauges: map[string]float64{snapshot.KVOffloadTokens: 320, snapshot.KVOffloadMaxTokens: 256, snapshot.KVOffloadBytes: 5120, snapshot.KVOffloadMaxBytes: 4096}, value: 1.25},
		{gauges: map[string]float64{snapshot.KVOffloadTokens: 128, snapshot.KVOffloadMaxTokens: 256, snapshot.KVOffloadBytes: 2048, snapshot.KVOffloadMaxBytes: 4096}},
	},
	"kv_offload_cold_allocs": {
		{gauges: offloadOn, perMin: map[string]float64{snapshot.KVOffloadColdAllocsTotal: 1}, value: 5},
		{gauges: offloadOn, perMin: map[string]float64{snapshot.KVOffloadColdAllocsTotal: 0}},
	},
	"kv_offload_thrashing": {
		{gauges: offloadOn, perMin: map[string]float64{snapshot.KVOffloadReadBytesTotal: 100, snapshot.KVOffloadWrittenBytesTotal: 1000, snapshot.KVOffloadEvictionsTotal: 10}, value: 0.1},
		{gauges: offloadOn, perMin: map[string]float64{snapshot.KVOffloadReadBytesTotal: 1000, snapshot.KVOffloadWrittenBytesTotal: 1000, snapshot.KVOffloadEvictionsTotal: 10}},
	},
	"recurrent_over_budget": {
		{gauges: map[string]float64{snapshot.RecurrentCacheBytes: 1200, snapshot.RecurrentCacheMaxBytes: 1000}, value: 1.2},
		{gauges: map[string]float64{snapshot.RecurrentCacheBytes: 800, snapshot.RecurrentCacheMaxBytes: 1000}},
	},
	"recurrent_live_kv_evictions": {
		{gauges: recurrentOn, perMin: map[string]float64{snapshot.RecurrentCacheLiveKVEvictionsTotal: 2, snapshot.RecurrentCacheEvictionsTotal: 3}, value: 10},
		{gauges: recurrentOn, perMin: map[string]float64{snapshot.RecurrentCacheLiveKVEvictionsTotal: 0, snapshot.RecurrentCacheEvictionsTotal: 3}},
	},
	"recurrent_raise_budget": {
		{gauges: recurrentOn,
			perMin: map[string]float64{snapshot.RecurrentCappedTokensTotal: 100, snapshot.PrefixCacheHits: 900, snapshot.PrefixCacheQueries: 2000,
				snapshot.RecurrentCacheLiveKVEvictionsTotal: 1, snapshot.RecurrentCacheEvictionsTotal: 1}, value: 0.1},
		{gauges: recurrentOn,
			perMin: map[string]float64{snapshot.RecurrentCappedTokensTotal: 10, snapshot.PrefixCacheHits: 990, snapshot.PrefixCacheQueries: 2000,
				snapshot.RecurrentCacheLiveKVEvictionsTotal: 1, snapshot.RecurrentCacheEvictionsTotal: 1}},
	},
	"preemptions": {
		{perMin: map[string]float64{snapshot.ExtraPreemptions: 3}, value: 15},
		{perMin: map[string]float64{snapshot.ExtraPreemptions: 0}},
	},
	"retracted_work": {
		// 60 of 1,000 prompt tokens a minute: 6%, over the 5% the note
		// warns from; 20 (2%) under it.
		{perMin: map[string]float64{snapshot.PromptTokensTotal: 1000, snapshot.ExtraRetractedPromptTokens: 50, snapshot.ExtraRetractedGeneratedTokens: 10}, value: 0.06},
		{perMin: map[string]float64{snapshot.PromptTokensTotal: 1000, snapshot.ExtraRetractedPromptTokens: 15, snapshot.ExtraRetractedGeneratedTokens: 5}},
	},
	"requests_errored": {
		{perMin: map[string]float64{snapshot.RequestsTotal: 60, snapshot.ExtraFinishedReason + "error": 1}, value: 5},
		{perMin: map[string]float64{snapshot.RequestsTotal: 60, snapshot.ExtraFinishedReason + "error": 0}},
	},
	"draft_acceptance_low": {
		{perMin: map[string]float64{snapshot.SpecDecodeNumAcceptedTokensTotal: 40, snapshot.SpecDecodeNumDraftTokensTotal: 100}, value: 0.4},
		{perMin: map[string]float64{snapshot.SpecDecodeNumAcceptedTokensTotal: 80, snapshot.SpecDecodeNumDraftTokensTotal: 100}},
	},
	"requests_refused": {
		// 6 refused a minute: 30 in the 5-minute window.
		{perMin: map[string]float64{snapshot.ExtraAdmissionRejections: 6}, value: 30},
		{perMin: map[string]float64{snapshot.ExtraAdmissionRejections: 0}},
	},
	"admission_stalled": {
		{gauges: map[string]float64{snapshot.RequestsDeferred: 5, snapshot.RequestsProcessing: 0}, value: 5},
		{gauges: map[string]float64{snapshot.RequestsDeferred: 5, snapshot.RequestsProcessing: 2}},
	},
	"queue_time_high": {
		{observed: queueObserved(45), value: 45},
		{observed: queueObserved(1)},
	},
	"requests_aborted": {
		{perMin: map[string]float64{snapshot.RequestsTotal: 100, snapshot.ExtraFinishedReason + "abort": 10}, value: 0.1},
		{perMin: map[string]float64{snapshot.RequestsTotal: 100, snapshot.ExtraFinishedReason + "abort": 1}},
	},
	"requests_failed": {
		{perMin: map[string]float64{snapshot.RequestsTotal: 90, snapshot.ExtraFailedReason + "*": 10}, value: 0.1},
		{perMin: map[string]float64{snapshot.RequestsTotal: 99, snapshot.ExtraFailedReason + "*": 1}},
	},
	// target_down is written by downExample.
}

// at is the example's values after minute k.
func (e example) at(k int) promql.Values {
	v := promql.Values{Scalars: map[string]float64{}, Hists: map[string]histogram.Histogram{}}
	for n, x := range e.gauges {
		v.Scalars[n] = x
	}
	for n, x := range e.perMin {
		v.Scalars[n] = x * float64(k)
	}
	for n, h := range e.observed {
		c := histogram.Histogram{Count: h.Count * float64(k), Sum: h.Sum * float64(k)}
		for _, b := range h.Buckets {
			c.Buckets = append(c.Buckets, histogram.Bucket{UpperBound: b.UpperBound, Count: b.Count * float64(k)})
		}
		v.Hists[n] = c
	}
	return v
}

// ExampleTarget labels the example series as a scrape config would.
var ExampleTarget = map[string]string{"instance": "example:8000", "job": "inference"}

// Tests writes promtool unit tests for the set's alerts, over series
// written with the names the library reads: for each alert, a state that
// must fire it (with its labels and rendered annotations) and one that
// must not. ruleFile is the rule file the tests load (a plain rule file).
func (s *Set) Tests(l *promql.Library, ruleFile string) (promtool.File, error) {
	if l.Window() != promql.DefaultWindow {
		return promtool.File{}, fmt.Errorf("the tests are written for the default window %s, not %s", promql.DefaultWindow, l.Window())
	}
	labels, err := l.ExampleLabels(ExampleTarget)
	if err != nil {
		return promtool.File{}, fmt.Errorf("writing series for the tests: %w", err)
	}
	file := promtool.File{RuleFiles: []string{ruleFile}, EvaluationInterval: "1m"}
	for _, a := range s.Alerts {
		for i, what := range []string{"fires", "stays silent"} {
			inputs, value, err := a.series(l, labels, i == 0)
			if err != nil {
				return promtool.File{}, fmt.Errorf("%s: %w", a.Alert, err)
			}
			test := promtool.AlertTest{EvalTime: promtool.Duration(testMinutes * 60), Alertname: a.Alert, ExpAlerts: []promtool.Alert{}}
			if i == 0 {
				want, err := a.expected(l, labels, value)
				if err != nil {
					return promtool.File{}, fmt.Errorf("%s: %w", a.Alert, err)
				}
				test.ExpAlerts = append(test.ExpAlerts, want)
			}
			file.Tests = append(file.Tests, promtool.Group{
				Name:        a.Alert + " " + what,
				Interval:    "1m",
				InputSeries: inputs,
				AlertTests:  []promtool.AlertTest{test},
			})
		}
	}
	return file, nil
}

// series writes the example state for an alert, firing or not, and the
// alert's value in it.
func (a Alert) series(l *promql.Library, labels map[string]string, fires bool) ([]promtool.Input, float64, error) {
	if a.Condition.ID == "target_down" {
		return downExample(l, labels, fires)
	}
	pair, ok := examples[a.Condition.ID]
	if !ok {
		return nil, 0, fmt.Errorf("no example state for %s", a.Condition.ID)
	}
	e := pair[1]
	if fires {
		e = pair[0]
	}
	var rec promtool.Recorder
	for k := 0; k <= testMinutes; k++ {
		fams, err := l.Families(e.at(k), labels)
		if err != nil {
			return nil, 0, err
		}
		rec.Add(promtool.Points(fams, nil))
	}
	return rec.Inputs(), e.value, nil
}

// downExample is a target that published the server's series once and
// has been down since (or up throughout).
func downExample(l *promql.Library, labels map[string]string, fires bool) ([]promtool.Input, float64, error) {
	once := promql.Values{Scalars: map[string]float64{
		snapshot.RequestsProcessing: 1, snapshot.RequestsDeferred: 0, snapshot.KVCacheUsageRatio: 0.5, snapshot.RequestsTotal: 1,
	}}
	fams, err := l.Families(once, labels)
	if err != nil {
		return nil, 0, err
	}
	up := promtool.Labels{"__name__": "up", "instance": labels["instance"], "job": labels["job"]}
	var rec promtool.Recorder
	for k := 0; k <= testMinutes; k++ {
		var pts []promtool.Point
		if k == 0 || !fires {
			pts = promtool.Points(fams, nil)
		}
		v := 1.0
		if fires && k > 0 {
			v = 0
		}
		rec.Add(append(pts, promtool.Point{Labels: up, Value: v}))
	}
	return rec.Inputs(), 0, nil
}

// expected is the alert as it must fire: the labels its expression keeps,
// its own, and its annotations rendered with value.
func (a Alert) expected(l *promql.Library, labels map[string]string, value float64) (promtool.Alert, error) {
	kept := map[string]string{}
	if a.Condition.ID == "target_down" {
		kept["instance"], kept["job"] = labels["instance"], labels["job"]
	} else {
		for _, b := range l.By() {
			kept[b] = labels[b]
		}
	}
	for k, v := range a.Labels {
		kept[k] = v
	}
	ann := map[string]string{}
	for k, text := range a.Annotations {
		s, err := Expand(text, kept, value)
		if err != nil {
			return promtool.Alert{}, err
		}
		ann[k] = s
	}
	return promtool.Alert{Labels: kept, Annotations: ann}, nil
}

// Expand renders an annotation as Prometheus does: its $labels and
// $value, printf, and humanizePercentage, the one function of its own the
// annotations use.
func Expand(text string, labels map[string]string, value float64) (string, error) {
	tmpl, err := template.New("").Option("missingkey=zero").Funcs(template.FuncMap{
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
	}).Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		return "", fmt.Errorf("annotation %q: %w", text, err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, struct {
		Labels map[string]string
		Value  float64
	}{labels, value}); err != nil {
		return "", fmt.Errorf("annotation %q: %w", text, err)
	}
	return b.String(), nil
}
