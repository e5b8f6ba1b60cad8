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
// nothing. A set belongs to one scrape at a time (see famPool), so
// concurrent scrapes never share one.
type famSet struct {
	fams   []*dto.MetricFamily // sorted by name
	vals   [numScalars]float64
	hists  [numHists]histFam
	tokens *tokenHists // the token histograms the two token families are laid out for
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

func newFamSet(m *Metrics) *famSet {
	s := &famSet{fams: make([]*dto.MetricFamily, 0, numScalars+numHists)}
	for i, d := range scalars {
		mt := &dto.Metric{}
		typ := dto.MetricType_GAUGE
		if d.kind == gauge {
			mt.Gauge = &dto.Gauge{Value: &s.vals[i]}
		} else {
			typ = dto.MetricType_COUNTER
			mt.Counter = &dto.Counter{Value: &s.vals[i]}
			if d.created() {
				mt.Counter.CreatedTimestamp = m.createdPB
			}
		}
		s.fams = append(s.fams, &dto.MetricFamily{
			Name: proto.String(m.ns + ":" + d.name), Help: proto.String(d.help), Type: typ.Enum(),
			Metric: []*dto.Metric{mt},
		})
	}
	fixed := [numHists][]float64{
		hQueue: latencyBuckets[:], hPrefill: latencyBuckets[:], hDecode: latencyBuckets[:],
		hTTFT: ttftBuckets[:], hE2E: latencyBuckets[:], hAcceptance: acceptanceBuckets[:],
	}
	for i, d := range hists {
		if fixed[i] != nil {
			s.hists[i].layout(fixed[i], m.createdPB)
		}
		s.fams = append(s.fams, &dto.MetricFamily{
			Name: proto.String(m.ns + ":" + d.name), Help: proto.String(d.help), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &s.hists[i].h}},
		})
	}
	slices.SortFunc(s.fams, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return s
}

// fill refreshes the set's values from a reading.
func (s *famSet) fill(m *Metrics, r *reading) {
	s.vals = r.scalarValues(m.start)
	if th := r.t.tokens; s.tokens != th {
		s.hists[hPromptTokens].layout(th.ladder.bounds, th.created)
		s.hists[hGenerationTokens].layout(th.ladder.bounds, th.created)
		s.tokens = th
	}
	hv := r.histValues()
	for i := range hv {
		hf := &s.hists[i]
		hf.count = cumulate(hf.cum, hv[i].counts)
		hf.sum = hv[i].sum
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

func (p *famPool) get(m *Metrics) *famSet {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return newFamSet(m)
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
	s := m.sets.get(m)
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
