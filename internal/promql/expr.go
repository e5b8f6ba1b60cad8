package promql

import (
	"sort"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// selector writes a ref's series selector, with the library's matchers.
// suffix picks a histogram's _bucket, _sum or _count series.
func (l *Library) selector(r ref, suffix string) string {
	var ms []string
	name := r.name + suffix
	if r.bare && suffix == "" {
		ms = append(ms, `__name__=~`+quote(name+"|"+name+"_total"))
		name = ""
	}
	for _, m := range r.match {
		ms = append(ms, m.String())
	}
	for _, m := range l.sel {
		ms = append(ms, m.String())
	}
	if len(ms) == 0 {
		return name
	}
	return name + "{" + strings.Join(ms, ", ") + "}"
}

// by writes an aggregation's grouping: " by (le, instance)", or "" to
// aggregate everything.
func (l *Library) grouping(extra ...string) string {
	labels := append(append([]string(nil), extra...), l.by...)
	if len(labels) == 0 {
		return ""
	}
	return " by (" + strings.Join(labels, ", ") + ")"
}

// overReplicas takes e's largest value over the replicas its series
// repeat under, where they repeat one.
func (r ref) overReplicas(e string) string {
	if len(r.replicas) == 0 {
		return e
	}
	return "max without (" + strings.Join(r.replicas, ", ") + ") (" + e + ")"
}

// reduce writes op over e to the library's labels (and extra ones), first
// taking the largest value over replicas where the series repeat one, then
// adding the series one engine splits a quantity into (within).
func (l *Library) reduce(op string, r ref, e string, extra ...string) string {
	e = r.overReplicas(e)
	if len(r.within) > 0 {
		e = "sum without (" + strings.Join(r.within, ", ") + ") (" + e + ")"
	}
	return op + l.grouping(extra...) + " (" + e + ")"
}

// op is how a quantity's series add up to the library's labels: summed, or
// averaged where each is an engine's own fraction or busy time.
func (s source) op() string {
	if s.mean {
		return "avg"
	}
	return "sum"
}

// combine joins a source's terms, each written by write.
func combine(s source, write func(ref) string) string {
	var b strings.Builder
	for i, t := range s.terms {
		e := write(t.ref)
		switch {
		case t.zero:
			e = "0 * " + e
		case t.zeroWith != nil:
			e = "(" + e + " or 0 * " + write(*t.zeroWith) + ")"
		}
		switch {
		case i == 0 && t.neg:
			b.WriteString("-" + e)
		case i == 0:
			b.WriteString(e)
		case t.neg:
			b.WriteString(" - " + e)
		default:
			b.WriteString(" + " + e)
		}
	}
	if len(s.terms) > 1 {
		return "(" + b.String() + ")"
	}
	return b.String()
}

// counter writes fn (rate or increase) of a counter quantity over the
// window, aggregated; ok is false when the server does not publish it.
func (l *Library) counter(fn, name string) (string, bool) {
	s, ok := l.src[name]
	if !ok || s.kind != snapshot.Counter {
		return "", false
	}
	return combine(s, func(r ref) string {
		return l.reduce(s.op(), r, fn+"("+l.selector(r, "")+"["+l.window+"])")
	}), true
}

// rate is a counter's per-second rate over the window.
func (l *Library) rate(name string) (string, bool) { return l.counter("rate", name) }

// increase is a counter's increase over the window.
func (l *Library) increase(name string) (string, bool) { return l.counter("increase", name) }

// gauge writes a gauge quantity aggregated: summed, or averaged where each
// series is a fraction of its own cache.
func (l *Library) gauge(name string) (string, bool) {
	if s, ok := l.src[name]; !ok || s.kind != snapshot.Gauge {
		return "", false
	}
	return l.Reading(name)
}

// histRate writes the rate of a histogram's _sum or _count, aggregated.
func (l *Library) histRate(name, suffix string) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	return l.reduce("sum", r, "rate("+l.selector(r, suffix)+"["+l.window+"])"), true
}

// quantile writes histogram_quantile over the buckets' rates summed by le
// and the library's labels.
func (l *Library) quantile(name string, q float64) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	return "histogram_quantile(" + num(q) + ", " + l.reduce("sum", r, "rate("+l.selector(r, "_bucket")+"["+l.window+"])", "le") + ")", true
}

// mean writes a histogram's mean over the window: the rate of its sum over
// the rate of its count (never a rate of sums alone).
func (l *Library) mean(name string) (string, bool) {
	sum, ok1 := l.histRate(name, "_sum")
	count, ok2 := l.histRate(name, "_count")
	return div(sum, count), ok1 && ok2
}

// div writes a ratio of two expressions aggregated to the same labels.
func div(a, b string) string { return a + " / " + b }

// num writes a number as PromQL reads it.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// all reports whether every ok is true.
func all(oks ...bool) bool {
	for _, ok := range oks {
		if !ok {
			return false
		}
	}
	return true
}

// Quantity writes one canonical quantity (a snapshot name) over the window
// as the report's one-scrape figure would be if the server had started at
// the window's start: a counter's increase, a gauge's value, a histogram's
// count of observations. ok is false when the server does not publish it.
func (l *Library) Quantity(name string) (string, bool) {
	s, ok := l.src[name]
	if !ok {
		return "", false
	}
	switch s.kind {
	case snapshot.Counter:
		return l.increase(name)
	case snapshot.Gauge:
		return l.gauge(name)
	}
	r := s.terms[0].ref
	return l.reduce("sum", r, "increase("+l.selector(r, "_count")+"["+l.window+"])"), true
}

// HistogramSum writes a histogram's sum of observations over the window.
func (l *Library) HistogramSum(name string) (string, bool) {
	r, ok := l.histRef(name)
	if !ok {
		return "", false
	}
	return l.reduce("sum", r, "increase("+l.selector(r, "_sum")+"["+l.window+"])"), true
}

// Quantities lists the canonical quantities the library reads, sorted.
func (l *Library) Quantities() []string {
	out := make([]string, 0, len(l.src))
	for n := range l.src {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Counters lists the series names the library reads as counters (a rate
// or an increase), sorted: what a store must hold as rising totals.
func (l *Library) Counters() []string {
	return l.stored(func(k snapshot.Kind) bool { return k == snapshot.Counter || k == snapshot.Histogram })
}
