package analysis

import (
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/report"
)

// raw converts the server's own families for the report's "raw" field: the
// canonical figures speak one language for every server, and this keeps
// what each server said, labels and all.
func raw(fams []*dto.MetricFamily) []report.RawFamily {
	out := make([]report.RawFamily, 0, len(fams))
	for _, mf := range fams {
		f := report.RawFamily{
			Name:   mf.GetName(),
			Type:   strings.ToLower(mf.GetType().String()),
			Help:   mf.GetHelp(),
			Series: make([]report.RawSeries, 0, len(mf.GetMetric())),
		}
		for _, m := range mf.GetMetric() {
			s := report.RawSeries{Labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				s.Labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.Value = num(m.GetCounter().GetValue())
			case m.Gauge != nil:
				s.Value = num(m.GetGauge().GetValue())
			case m.Untyped != nil:
				s.Value = num(m.GetUntyped().GetValue())
			case m.Histogram != nil:
				h := m.GetHistogram()
				s.Count, s.Sum = num(float64(h.GetSampleCount())+h.GetSampleCountFloat()), num(h.GetSampleSum())
				inf := false
				for _, b := range h.GetBucket() {
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					s.Buckets = append(s.Buckets, report.Bucket{LE: formatLE(b.GetUpperBound()), Count: report.Number(float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat())})
				}
				// An exposition cut short of its +Inf bucket gets one holding
				// the count, so that the list ends as the schema says.
				if !inf {
					s.Buckets = append(s.Buckets, report.Bucket{LE: "+Inf", Count: *s.Count})
				}
			case m.Summary != nil:
				sm := m.GetSummary()
				s.Count, s.Sum = num(float64(sm.GetSampleCount())), num(sm.GetSampleSum())
				for _, q := range sm.GetQuantile() {
					s.Quantiles = append(s.Quantiles, report.Quantile{Quantile: strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64), Value: report.Number(q.GetValue())})
				}
			}
			f.Series = append(f.Series, s)
		}
		out = append(out, f)
	}
	return out
}
