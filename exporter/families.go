package exporter

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// famSet is one prepared set of the metric set's families, built once and
// refreshed in place by each scrape that takes it: every value in the
// families points into the set's own fields, so a refresh allocates
// nothing. It is built again only when what is published changes (a new
// model, a series left out, a new token ladder). A set belongs to one
// scrape at a time (see famPool), so concurrent scrapes never share one.
type famSet struct {
	fams   []*dto.MetricFamily // the published families, sorted by name
	engine [numScalars]float64 // the unlabelled scalars' values
	series []seriesStore
	layout []seriesKey // what fams was built for, one per series
	ep     presence    // the unlabelled scalars published
}

// seriesStore is the storage behind one label set's metrics.
type seriesStore struct {
	vals  [numScalars]float64
	hists [numHists]histFam
}

// seriesKey is what one label set's metrics were laid out for.
type seriesKey struct {
	s      *series
	tokens *tokenHists
	p      presence
}

// histFam is the storage behind one histogram family of a famSet.
type histFam struct {
	h       dto.Histogram
	bounds  []float64
	cum     []uint64
	buckets []dto.Bucket
	ptrs    []*dto.Bucket
	count   uint64
	sum     float64
}

// layout points the histogram at fresh storage for the given bounds.
func (hf *histFam) layout(bounds []float64, created *timestamppb.Timestamp) {
	n := len(bounds)
	hf.bounds = slices.Clone(bounds) // the dto points into these: keep them private
	hf.cum = make([]uint64, n)
	hf.buckets = make([]dto.Bucket, n)
	hf.ptrs = make([]*dto.Bucket, n)
	for i := range n {
		hf.buckets[i].UpperBound = &hf.bounds[i]
		hf.buckets[i].CumulativeCount = &hf.cum[i]
		hf.ptrs[i] = &hf.buckets[i]
	}
	hf.h.SampleCount, hf.h.SampleSum = &hf.count, &hf.sum
	hf.h.Bucket, hf.h.CreatedTimestamp = hf.ptrs, created
}

// histBounds are the fixed bounds of each histogram; the token histograms'
// come from their ladder.
var histBounds = [numHists][]float64{
	hQueue: latencyBuckets[:], hPrefill: latencyBuckets[:], hDecode: latencyBuckets[:],
	hTTFT: ttftBuckets[:], hE2E: latencyBuckets[:], hAcceptance: acceptanceBuckets[:],
}

// build lays the set out for one reading: the families published, each
// with one metric per label set publishing it, pointing into the set.
func (fs *famSet) build(m *Metrics, r *reading, keys []seriesKey, ep presence) {
	n := len(keys)
	fs.series = make([]seriesStore, n)
	fs.layout = slices.Clone(keys)
	fs.ep = ep
	fs.fams = fs.fams[:0]
	for i, d := range scalars {
		var metrics []*dto.Metric
		add := func(v *float64, labels []*dto.LabelPair, created *timestamppb.Timestamp) {
			mt := &dto.Metric{Label: labels}
			if d.kind == gauge {
				mt.Gauge = &dto.Gauge{Value: v}
			} else {
				mt.Counter = &dto.Counter{Value: v}
				if d.created() {
					mt.Counter.CreatedTimestamp = created
				}
			}
			metrics = append(metrics, mt)
		}
		if !rules[i].perSeries {
			if ep.has(i) {
				add(&fs.engine[i], nil, m.createdPB)
			}
		} else {
			for k, key := range keys {
				if key.p.has(i) {
					add(&fs.series[k].vals[i], key.s.pairs, key.s.since)
				}
			}
		}
		if len(metrics) == 0 {
			continue
		}
		typ := dto.MetricType_GAUGE
		if d.kind != gauge {
			typ = dto.MetricType_COUNTER
		}
		fs.fams = append(fs.fams, &dto.MetricFamily{
			Name: proto.String(m.ns + ":" + d.name), Help: proto.String(d.help), Type: typ.Enum(), Metric: metrics,
		})
	}
	for i, d := range hists {
		var metrics []*dto.Metric
		for k, key := range keys {
			if !key.p.has(numScalars + i) {
				continue
			}
			hf := &fs.series[k].hists[i]
			t := r.at(k)
			if b := histBounds[i]; b != nil {
				hf.layout(b, key.s.since)
			} else {
				hf.layout(key.tokens.ladder.bounds, t.tokens.created)
			}
			metrics = append(metrics, &dto.Metric{Label: key.s.pairs, Histogram: &hf.h})
		}
		if len(metrics) == 0 {
			continue
		}
		fs.fams = append(fs.fams, &dto.MetricFamily{
			Name: proto.String(m.ns + ":" + d.name), Help: proto.String(d.help), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: metrics,
		})
	}
	slices.SortFunc(fs.fams, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
}

// fill refreshes the set's values from a reading, laying it out again
// first when what is published has changed.
func (fs *famSet) fill(m *Metrics, r *reading) {
	n := r.count()
	var one [1]seriesKey
	keys := one[:]
	if n != 1 {
		keys = make([]seriesKey, n)
	}
	for k := range keys {
		t := r.at(k)
		hv := t.histValues()
		keys[k] = seriesKey{s: t.s, tokens: t.tokens, p: t.presence(&hv)}
	}
	ep := enginePresence(m.unknown)
	if ep != fs.ep || !slices.Equal(keys, fs.layout) || fs.fams == nil {
		fs.build(m, r, keys, ep)
	}
	r.engineValues(&fs.engine, m.start)
	for k := range n {
		st, t := &fs.series[k], r.at(k)
		t.values(&st.vals)
		hv := t.histValues()
		for i := range hv {
			if !keys[k].p.has(numScalars + i) {
				continue
			}
			hf := &st.hists[i]
			hf.count = cumulate(hf.cum, hv[i].counts)
			hf.sum = hv[i].sum
		}
	}
}

// famPool keeps prepared sets between scrapes. A scrape takes one (or
// builds one when all are out) and gives it back when its encoding is done.
type famPool struct {
	mu   sync.Mutex
	free []*famSet
}

// keepSets bounds how many idle sets are kept: enough for the scrapers a
// server sees at once (Prometheus, a person, a dashboard).
const keepSets = 4

func (p *famPool) get() *famSet {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return &famSet{}
}

func (p *famPool) put(s *famSet) {
	p.mu.Lock()
	if len(p.free) < keepSets {
		p.free = append(p.free, s)
	}
	p.mu.Unlock()
}

// gatherer serves the metric set and the caller's collectors in Registry()
// to promhttp, as a TransactionalGatherer: the families it returns belong
// to the scrape until promhttp calls done, which gives the set back.
type gatherer struct{ m *Metrics }

func (g gatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	m := g.m
	s := m.sets.get()
	var r reading
	m.read(&r)
	s.fill(m, &r)
	done := func() { m.sets.put(s) }
	extra, err := m.reg.Gather()
	if err != nil {
		err = fmt.Errorf("exporter: gathering the caller's collectors: %w", err)
	}
	if len(extra) == 0 {
		return s.fams, done, err
	}
	merged, mergeErr := mergeFamilies(s.fams, extra)
	if err == nil {
		err = mergeErr
	}
	return merged, done, err
}

// mergeFamilies merges two name-sorted lists of families into a new one. A
// family of extra whose name the set already serves is left out and
// reported: one name cannot have two sources.
func mergeFamilies(set, extra []*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	out := make([]*dto.MetricFamily, 0, len(set)+len(extra))
	var err error
	i := 0
	for _, mf := range extra {
		for i < len(set) && set[i].GetName() < mf.GetName() {
			out = append(out, set[i])
			i++
		}
		if i < len(set) && set[i].GetName() == mf.GetName() {
			if err == nil {
				err = fmt.Errorf("exporter: the caller's registry has a family %s, which the metric set already serves", mf.GetName())
			}
			continue
		}
		out = append(out, mf)
	}
	return append(out, set[i:]...), err
}
