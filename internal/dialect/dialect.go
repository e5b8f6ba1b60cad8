// Package dialect translates one server's metric families into a canonical
// snapshot: the quantities the inspector reasons about, under their tabbyAPI
// names without the prefix, whatever server published them. Each dialect
// handles its server's semantic traps (what a counter includes, what unit it
// counts in), not just its names.
package dialect

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
	dto "github.com/prometheus/client_model/go"
)

// Options choose how families are read.
type Options struct {
	// Dialect forces a dialect by name; "" detects it from the series present.
	Dialect string
	// Model restricts a multi-model scrape to one served model; "" is all
	// together.
	Model string
}

// UnknownError is an exposition with no series of any known server.
type UnknownError struct {
	Prefixes []string // the name prefixes it did have
}

func (e *UnknownError) Error() string {
	if len(e.Prefixes) == 0 {
		return "the exposition has no series at all"
	}
	return "no inference-server series found (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
}

// ErrUnknownDialect is returned for a --dialect name that is not supported.
var ErrUnknownDialect = errors.New("unknown dialect")

// dialect is one server's reading of the exposition.
type dialect struct {
	name string
	// match reports whether a family name belongs to this server.
	match func(name string) bool
	// read fills the canonical snapshot from the families.
	read func(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error
}

// all lists the supported dialects; detection prefers the one with most
// families when a scrape mixes them.
var all = []dialect{tabbyAPI}

// Names lists the supported dialect names.
func Names() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.name
	}
	return out
}

// Map reads families into a canonical snapshot. Source, ScrapedAt and the
// other scrape fields are left for the caller to fill.
func Map(fams []*dto.MetricFamily, o Options) (*snapshot.Snapshot, error) {
	d, err := pick(fams, o.Dialect)
	if err != nil {
		return nil, err
	}
	s := &snapshot.Snapshot{
		Dialect:    d.name,
		Scalars:    map[string]float64{},
		Histograms: map[string]*histogram.Histogram{},
		Extra:      map[string]float64{},
		Prefixes:   Prefixes(fams),
		Raw:        fams,
		Model:      o.Model,
	}
	if err := d.read(fams, o, s); err != nil {
		return nil, fmt.Errorf("reading %s series: %w", d.name, err)
	}
	return s, nil
}

func pick(fams []*dto.MetricFamily, name string) (dialect, error) {
	if name != "" {
		for _, d := range all {
			if d.name == name {
				return d, nil
			}
		}
		return dialect{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownDialect, name, strings.Join(Names(), ", "))
	}
	best, bestN := -1, 0
	for i, d := range all {
		n := 0
		for _, mf := range fams {
			if d.match(mf.GetName()) {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return dialect{}, &UnknownError{Prefixes: Prefixes(fams)}
	}
	return all[best], nil
}

// Prefixes lists the distinct name prefixes in fams: the part before the
// first colon, else before the first underscore.
func Prefixes(fams []*dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, mf := range fams {
		n := mf.GetName()
		if i := strings.IndexByte(n, ':'); i > 0 {
			seen[n[:i+1]] = true
		} else if i := strings.IndexByte(n, '_'); i > 0 {
			seen[n[:i+1]] = true
		} else {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Sum adds a family's sample values across all its series (counters,
// gauges, untyped), skipping NaN samples; ok is false when the family has no
// usable sample. For a single unlabelled NaN sample it returns NaN, ok: the
// series exists but has no value yet.
func Sum(mf *dto.MetricFamily, keep func(*dto.Metric) bool) (v float64, ok bool) {
	nan := false
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		var x float64
		switch {
		case m.Counter != nil:
			x = m.GetCounter().GetValue()
		case m.Gauge != nil:
			x = m.GetGauge().GetValue()
		case m.Untyped != nil:
			x = m.GetUntyped().GetValue()
		default:
			continue
		}
		if math.IsNaN(x) {
			nan = true
			continue
		}
		v += x
		ok = true
	}
	if !ok && nan {
		return math.NaN(), true
	}
	return v, ok
}

// Hist merges a family's histogram series (summing buckets with equal
// bounds across label sets, as sum by (le) would), or returns nil when it
// has none.
func Hist(mf *dto.MetricFamily, keep func(*dto.Metric) bool) *histogram.Histogram {
	var h *histogram.Histogram
	for _, m := range mf.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		dh := m.GetHistogram()
		if dh == nil {
			continue
		}
		if h == nil {
			h = &histogram.Histogram{}
		}
		h.Count += float64(dh.GetSampleCount())
		if dh.SampleCountFloat != nil {
			h.Count += dh.GetSampleCountFloat()
		}
		if s := dh.GetSampleSum(); !math.IsNaN(s) {
			h.Sum += s
		}
		for _, b := range dh.GetBucket() {
			c := float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				c += b.GetCumulativeCountFloat()
			}
			merged := false
			for i := range h.Buckets {
				if h.Buckets[i].UpperBound == b.GetUpperBound() {
					h.Buckets[i].Count += c
					merged = true
					break
				}
			}
			if !merged {
				h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: b.GetUpperBound(), Count: c})
			}
		}
	}
	if h != nil {
		h.Normalize()
	}
	return h
}
