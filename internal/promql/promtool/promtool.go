// Package promtool is the unit-test file format of `promtool test rules`:
// input series written from scrapes, expression and alert tests, and the
// means to run promtool and vmalert over generated files where they are
// installed.
//
// The format is Prometheus' (docs: "Unit testing for rules"): a file names
// rule files and holds test groups, each with input series given as a
// value per interval ("0 120 240 _ 360", _ for a missing sample),
// expressions with the samples they must return at a time, and alerts
// with the labels and annotations they must fire with.
package promtool

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// File is one promtool test file.
type File struct {
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval string   `yaml:"evaluation_interval,omitempty"`
	Tests              []Group  `yaml:"tests"`
}

// Group is one test group: series and what must hold over them.
type Group struct {
	Name        string      `yaml:"name,omitempty"`
	Interval    string      `yaml:"interval"`
	InputSeries []Input     `yaml:"input_series"`
	AlertTests  []AlertTest `yaml:"alert_rule_test,omitempty"`
	ExprTests   []ExprTest  `yaml:"promql_expr_test,omitempty"`
}

// Input is one input series.
type Input struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// AlertTest says which alerts of a name fire at a time.
type AlertTest struct {
	EvalTime  string  `yaml:"eval_time"`
	Alertname string  `yaml:"alertname"`
	ExpAlerts []Alert `yaml:"exp_alerts"`
}

// Alert is one firing alert: its labels (the rule's and the series') and
// its annotations as rendered.
type Alert struct {
	Labels      map[string]string `yaml:"exp_labels,omitempty"`
	Annotations map[string]string `yaml:"exp_annotations,omitempty"`
}

// ExprTest says what an expression returns at a time.
type ExprTest struct {
	Expr     string   `yaml:"expr"`
	EvalTime string   `yaml:"eval_time"`
	Samples  []Sample `yaml:"exp_samples"`
}

// Sample is one returned sample: its labels as a selector ({a="b"}) and
// its value.
type Sample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// Labels is a series' labels, name first under __name__.
type Labels map[string]string

// Selector writes labels as a series selector: name{a="b", c="d"}, the
// label names sorted.
func (ls Labels) Selector() string {
	names := make([]string, 0, len(ls))
	for k := range ls {
		if k != "__name__" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(ls["__name__"])
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + strconv.Quote(ls[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// Point is one series' value in one scrape.
type Point struct {
	Labels Labels
	Value  float64
	// Counter says the value only rises (a counter, a histogram's bucket,
	// sum or count).
	Counter bool
}

// Points flattens families into series values as a store would keep them:
// a histogram as its _bucket (by le), _sum and _count series. Summaries
// are left out. The labels extra are added to every series (a scrape
// target's instance and job).
func Points(fams []*dto.MetricFamily, extra Labels) []Point {
	var out []Point
	for _, mf := range fams {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			base := Labels{}
			for k, v := range extra {
				base[k] = v
			}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			with := func(n string, more ...string) Labels {
				ls := Labels{"__name__": n}
				for k, v := range base {
					ls[k] = v
				}
				for i := 0; i+1 < len(more); i += 2 {
					ls[more[i]] = more[i+1]
				}
				return ls
			}
			switch {
			case m.Counter != nil:
				out = append(out, Point{with(name), m.GetCounter().GetValue(), true})
			case m.Gauge != nil:
				out = append(out, Point{with(name), m.GetGauge().GetValue(), false})
			case m.Untyped != nil:
				out = append(out, Point{with(name), m.GetUntyped().GetValue(), strings.HasSuffix(name, "_total")})
			case m.Histogram != nil:
				h := m.GetHistogram()
				top := false
				for _, b := range h.GetBucket() {
					le := LE(b.GetUpperBound())
					top = top || le == "+Inf"
					out = append(out, Point{with(name+"_bucket", "le", le), float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat(), true})
				}
				count := float64(h.GetSampleCount()) + h.GetSampleCountFloat()
				if !top {
					out = append(out, Point{with(name+"_bucket", "le", "+Inf"), count, true})
				}
				out = append(out, Point{with(name + "_count"), count, true},
					Point{with(name + "_sum"), h.GetSampleSum(), true})
			case m.Summary != nil:
				// A summary's quantiles are readings; its count and sum
				// only rise (TGI's skipped tokens).
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					out = append(out, Point{with(name, "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)), q.GetValue(), false})
				}
				out = append(out, Point{with(name + "_count"), float64(sm.GetSampleCount()), true},
					Point{with(name + "_sum"), sm.GetSampleSum(), true})
			}
		}
	}
	return out
}

// LE writes a bucket bound as a le label.
func LE(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Recorder collects scrapes taken at a fixed interval into input series.
type Recorder struct {
	n      int             // scrapes so far
	series map[string]*rec // by selector
	order  []string        // selectors in first-seen order
}

type rec struct {
	values []string
}

// Add records one scrape's points as the next sample of each series; a
// series absent from it gets a missing sample there.
func (r *Recorder) Add(points []Point) {
	if r.series == nil {
		r.series = map[string]*rec{}
	}
	for _, p := range points {
		key := p.Labels.Selector()
		s, ok := r.series[key]
		if !ok {
			s = &rec{values: slices.Repeat([]string{"_"}, r.n)}
			r.series[key] = s
			r.order = append(r.order, key)
		}
		if len(s.values) > r.n {
			continue // a duplicate series in one scrape: the first stands
		}
		s.values = append(s.values, Value(p.Value))
	}
	r.n++
	for _, s := range r.series {
		for len(s.values) < r.n {
			s.values = append(s.values, "_")
		}
	}
}

// Len is how many scrapes were added.
func (r *Recorder) Len() int { return r.n }

// Inputs returns the recorded series, sorted by selector.
func (r *Recorder) Inputs() []Input {
	keys := slices.Clone(r.order)
	sort.Strings(keys)
	out := make([]Input, 0, len(keys))
	for _, k := range keys {
		out = append(out, Input{Series: k, Values: strings.Join(r.series[k].values, " ")})
	}
	return out
}

// Value writes a sample value as an input series reads it.
func Value(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Ramp is a two-sample window over one scrape: counters from 0 to their
// value, gauges at their value throughout, so that over one interval a
// counter's increase is its whole value and a gauge reads as published.
// counter overrides a point's own kind (a dialect may read a gauge that
// holds a running total as a counter).
func Ramp(points []Point, counter func(Point) bool) []Input {
	var r Recorder
	first := make([]Point, len(points))
	for i, p := range points {
		first[i] = p
		if counter(p) {
			first[i].Value = 0
		}
	}
	r.Add(first)
	r.Add(points)
	return r.Inputs()
}

// Duration writes seconds as a promtool duration ("90s", "5m").
func Duration(seconds int) string {
	switch {
	case seconds%3600 == 0 && seconds > 0:
		return fmt.Sprintf("%dh", seconds/3600)
	case seconds%60 == 0 && seconds > 0:
		return fmt.Sprintf("%dm", seconds/60)
	}
	return fmt.Sprintf("%ds", seconds)
}
