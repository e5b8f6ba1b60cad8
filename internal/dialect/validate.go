package dialect

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// maxProblems caps Snapshot.Invalid: a broken exporter can make every
// series invalid, and a note listing thousands says no more than twenty.
const maxProblems = 20

// validate drops every series whose published values cannot be, so that no
// dialect reads it and every figure derived from it is absent, and says why
// for each. A NaN gauge is a series with no value yet, not an invalid one:
// it stays (Sum and mean skip it). Families left with no series are dropped.
func validate(fams []*dto.MetricFamily) ([]*dto.MetricFamily, []snapshot.Problem) {
	var problems []snapshot.Problem
	var kept []*dto.MetricFamily
	for _, mf := range fams {
		var bad []int
		for i, m := range mf.GetMetric() {
			if why := invalidReason(mf.GetType(), m); why != "" {
				bad = append(bad, i)
				problems = append(problems, snapshot.Problem{Series: seriesName(mf.GetName(), m), Reason: why})
			}
		}
		if len(bad) == 0 {
			kept = append(kept, mf)
			continue
		}
		if len(bad) == len(mf.GetMetric()) {
			continue
		}
		cp := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
		for i, m := range mf.GetMetric() {
			if len(bad) > 0 && bad[0] == i {
				bad = bad[1:]
				continue
			}
			cp.Metric = append(cp.Metric, m)
		}
		kept = append(kept, cp)
	}
	return kept, problems
}

// capProblems keeps the first maxProblems and says how many more there were
// in one last entry.
func capProblems(ps []snapshot.Problem) []snapshot.Problem {
	if len(ps) <= maxProblems {
		return ps
	}
	more := len(ps) - maxProblems
	out := append([]snapshot.Problem(nil), ps[:maxProblems]...)
	return append(out, snapshot.Problem{Series: fmt.Sprintf("%d more series", more), Reason: "also invalid, not listed"})
}

// invalidReason says why a series cannot be, or "" when it can.
func invalidReason(t dto.MetricType, m *dto.Metric) string {
	switch {
	case m.Counter != nil:
		return counterReason(m.GetCounter().GetValue())
	case m.Gauge != nil:
		return gaugeReason(m.GetGauge().GetValue())
	case m.Untyped != nil:
		v := m.GetUntyped().GetValue()
		if t == dto.MetricType_COUNTER {
			return counterReason(v)
		}
		return gaugeReason(v)
	case m.Histogram != nil:
		return histogramReason(m.GetHistogram())
	}
	return ""
}

func counterReason(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN in a counter"
	case math.IsInf(v, 0):
		return num(v) + " in a counter"
	case v < 0:
		return "counter below zero (" + num(v) + ")"
	}
	return ""
}

func gaugeReason(v float64) string {
	if math.IsInf(v, 0) {
		return num(v) + " in a gauge"
	}
	return ""
}

// histogramReason checks a classic histogram: cumulative counts never fall,
// _count is at least the top finite bucket, _sum is finite and not negative
// when no bucket admits a negative observation.
func histogramReason(h *dto.Histogram) string {
	if why := bucketCountReason(h); why != "" {
		return why
	}
	l := ladderOf(h)
	for _, check := range []func(*dto.Histogram, ladder) string{fallingReason, countReason, sumReason} {
		if why := check(h, l); why != "" {
			return why
		}
	}
	return ""
}

// bucketCountReason finds a bucket count that is no count at all.
func bucketCountReason(h *dto.Histogram) string {
	for _, b := range h.GetBucket() {
		if n := cumulative(b); math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
			return "bucket le=" + num(b.GetUpperBound()) + " counts " + num(n)
		}
	}
	return ""
}

// bucket is one bucket of a ladder: its bound and cumulative count.
type bucket struct{ le, n float64 }

// ladder is a histogram's buckets in order of bound. Buckets come sorted
// from every exposition seen, and are then read in place; a sorted copy
// without NaN bounds is made only when they are not.
type ladder struct {
	inPlace []*dto.Bucket
	sorted  []bucket
}

func ladderOf(h *dto.Histogram) ladder {
	bs := h.GetBucket()
	inOrder := true
	for i := 1; i < len(bs); i++ {
		if !(bs[i].GetUpperBound() > bs[i-1].GetUpperBound()) {
			inOrder = false
			break
		}
	}
	if inOrder {
		return ladder{inPlace: bs}
	}
	var sorted []bucket
	for _, b := range bs {
		if !math.IsNaN(b.GetUpperBound()) {
			sorted = append(sorted, bucket{b.GetUpperBound(), cumulative(b)})
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].le < sorted[j].le })
	return ladder{sorted: sorted}
}

func (l ladder) len() int {
	if l.sorted != nil {
		return len(l.sorted)
	}
	return len(l.inPlace)
}

func (l ladder) at(i int) bucket {
	if l.sorted != nil {
		return l.sorted[i]
	}
	b := l.inPlace[i]
	return bucket{b.GetUpperBound(), cumulative(b)}
}

// fallingReason finds a cumulative count below the one before it.
func fallingReason(_ *dto.Histogram, l ladder) string {
	for i := 1; i < l.len(); i++ {
		if prev, cur := l.at(i-1), l.at(i); cur.n < prev.n {
			return fmt.Sprintf("cumulative bucket counts fall (le=%s: %s, then le=%s: %s)", num(prev.le), num(prev.n), num(cur.le), num(cur.n))
		}
	}
	return ""
}

// countReason finds a _count that is no count, or one below the top finite
// bucket's.
func countReason(h *dto.Histogram, l ladder) string {
	if h.SampleCount == nil && h.SampleCountFloat == nil {
		return ""
	}
	total := float64(h.GetSampleCount()) + h.GetSampleCountFloat()
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return "_count is " + num(total)
	}
	for i := l.len() - 1; i >= 0; i-- {
		b := l.at(i)
		if math.IsInf(b.le, 1) {
			continue
		}
		if total < b.n {
			return fmt.Sprintf("_count %s is below its top finite bucket's %s (le=%s)", num(total), num(b.n), num(b.le))
		}
		break
	}
	return ""
}

// sumReason finds an infinite _sum, or a negative one where no bucket
// admits a negative observation.
func sumReason(h *dto.Histogram, l ladder) string {
	if h.SampleSum == nil {
		return ""
	}
	switch sum := h.GetSampleSum(); {
	case math.IsInf(sum, 0):
		return "_sum is " + num(sum)
	case sum < 0 && l.len() > 0 && l.at(0).le >= 0:
		return fmt.Sprintf("negative _sum (%s) with no bucket below 0", num(sum))
	}
	return ""
}

// num writes a value as the exposition would.
func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// seriesName writes a series as published, name{label="value",…}, made
// safe to print: label values come from the server.
func seriesName(name string, m *dto.Metric) string {
	var b strings.Builder
	b.WriteString(name)
	if len(m.GetLabel()) > 0 {
		b.WriteByte('{')
		for i, lp := range m.GetLabel() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(lp.GetName())
			b.WriteString("=")
			b.WriteString(strconv.Quote(lp.GetValue()))
		}
		b.WriteByte('}')
	}
	return termsafe.Line(b.String(), 200)
}
