package fleet

import (
	"math"
	"sort"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// boundary is an instance's canonical snapshot at one time: the ends of a
// window, and where counters restarted inside it the last reading before
// and the first after.
type boundary struct {
	at   time.Time
	snap *snapshot.Snapshot
	// reset says the server's counters restarted from zero at this
	// reading (raw samples fell, or its start time changed).
	reset bool
}

// windowDelta is an instance's increase over a window, with what shaped it.
type windowDelta struct {
	rates.Delta
	// resets lists when counters restarted inside the window.
	resets []time.Time
	// fromZero says the window counts from the process start (born inside
	// it), not from a first reading.
	fromZero bool
}

// deltaOver adds the increases between consecutive boundaries, in time
// order, as --since and the watch view count them: where a server's
// counters restart (a boundary marked reset, or any canonical counter, a
// histogram's count or the start time falling back), every counter counts
// from zero there, its increase being its new value. A counter missing
// from a boundary it is needed at has no increase (its rows no figure);
// so does a histogram whose buckets change layout.
//
// With fromZero the first boundary counts from zero as well: a server
// born inside the window did all of its counting there, and the window
// starts at start (its process start) instead of the first reading.
func deltaOver(bs []boundary, fromZero bool, start time.Time) windowDelta {
	d := windowDelta{fromZero: fromZero}
	if len(bs) == 0 {
		return d
	}
	d.Counters = map[string]float64{}
	d.Hists = map[string]histogram.Histogram{}
	// Only what every reading holds has an increase.
	counters, hists := common(bs)
	add := func(from, to *snapshot.Snapshot) {
		for _, name := range counters {
			v, _ := to.Scalar(name)
			if from != nil {
				p, _ := from.Scalar(name)
				v -= p
			}
			d.Counters[name] += v
		}
		for _, name := range hists {
			inc := *to.Hist(name)
			if from != nil {
				var ok bool
				if inc, ok = inc.Sub(*from.Hist(name)); !ok {
					d.Hists[name] = histogram.Histogram{Count: math.NaN()}
					continue
				}
			}
			if have, ok := d.Hists[name]; ok {
				sum, ok := addSame(have, inc)
				if !ok {
					sum = histogram.Histogram{Count: math.NaN()}
				}
				inc = sum
			}
			d.Hists[name] = inc
		}
	}
	if fromZero {
		add(nil, bs[0].snap)
	} else {
		start = bs[0].at
	}
	for i := 1; i < len(bs); i++ {
		a, b := bs[i-1], bs[i]
		if b.reset || fell(a.snap, b.snap) {
			d.resets = append(d.resets, b.at)
			add(nil, b.snap)
			continue
		}
		add(a.snap, b.snap)
	}
	// A histogram whose layout changed has no increase (marked NaN above).
	for name, h := range d.Hists {
		if math.IsNaN(h.Count) {
			delete(d.Hists, name)
		}
	}
	d.Seconds = bs[len(bs)-1].at.Sub(start).Seconds()
	d.Reset = len(d.resets) > 0
	return d
}

// common lists the canonical counters (present, finite, not negative) and
// histograms every boundary holds.
func common(bs []boundary) (counters, hists []string) {
	for name := range bs[0].snap.Scalars {
		if !isCounter(name) {
			continue
		}
		all := true
		for _, b := range bs {
			v, ok := b.snap.Scalar(name)
			all = all && ok && v >= 0
		}
		if all {
			counters = append(counters, name)
		}
	}
	for name, h := range bs[0].snap.Histograms {
		all := h != nil
		for _, b := range bs {
			all = all && b.snap.Hist(name) != nil
		}
		if all {
			hists = append(hists, name)
		}
	}
	sort.Strings(counters)
	sort.Strings(hists)
	return counters, hists
}

func isCounter(name string) bool {
	n, ok := snapshot.Declared(name)
	return ok && !n.Extra && n.Kind == snapshot.Counter
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fell reports a restart between two readings: a counter or a histogram's
// count fell, or the process start time changed.
func fell(a, b *snapshot.Snapshot) bool {
	if sa, sb := a.StartTime(), b.StartTime(); sa > 0 && sb > 0 && math.Abs(sa-sb) >= 1 {
		return true
	}
	for name, v := range b.Scalars {
		if !isCounter(name) {
			continue
		}
		if p, ok := a.Scalar(name); ok && finite(v) && v < p {
			return true
		}
	}
	for name, h := range b.Histograms {
		if p := a.Hist(name); p != nil && h != nil && h.Count < p.Count {
			return true
		}
	}
	return false
}

// addSame adds two increases of one histogram, bucket by bucket; ok is
// false when their layouts differ.
func addSame(a, b histogram.Histogram) (histogram.Histogram, bool) {
	if len(a.Buckets) != len(b.Buckets) {
		return histogram.Histogram{}, false
	}
	out := histogram.Histogram{Buckets: make([]histogram.Bucket, len(a.Buckets)), Count: a.Count + b.Count, Sum: a.Sum + b.Sum,
		NoSum: a.NoSum || b.NoSum, NoTop: a.NoTop || b.NoTop}
	for i := range a.Buckets {
		if a.Buckets[i].UpperBound != b.Buckets[i].UpperBound {
			return histogram.Histogram{}, false
		}
		out.Buckets[i] = histogram.Bucket{UpperBound: a.Buckets[i].UpperBound, Count: a.Buckets[i].Count + b.Buckets[i].Count}
	}
	return out, true
}

// mergeHist adds histograms whose bucket ladders may differ (two servers'
// TTFT buckets): over the union of their bounds, each counting at a bound
// it lacks what it has at its next lower bound, as dialect.Hist merges a
// server's series. Exact at every bound all share; below the truth
// elsewhere.
func mergeHist(hs []histogram.Histogram) histogram.Histogram {
	var out histogram.Histogram
	var bounds []float64
	for _, h := range hs {
		out.Count += h.Count
		out.Sum += h.Sum
		out.NoSum = out.NoSum || h.NoSum
		out.NoTop = out.NoTop || h.NoTop
		for _, b := range h.Buckets {
			bounds = append(bounds, b.UpperBound)
		}
	}
	sort.Float64s(bounds)
	for i, u := range bounds {
		if i > 0 && u == bounds[i-1] {
			continue
		}
		c := 0.0
		for _, h := range hs {
			j := sort.Search(len(h.Buckets), func(k int) bool { return h.Buckets[k].UpperBound > u })
			if j > 0 {
				c += h.Buckets[j-1].Count
			}
		}
		out.Buckets = append(out.Buckets, histogram.Bucket{UpperBound: u, Count: c})
	}
	out.Normalize()
	return out
}
