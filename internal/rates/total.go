package rates

import (
	"sort"

	"github.com/inferscope/inferscope/internal/histogram"
)

// Part is one server's share of a total: its window, and the rows it has
// ([RowsFor] its scrape).
type Part struct {
	Delta Delta
	Rows  []Row
}

// Total is a row's figure over several servers, and which of them it
// covers.
type Total struct {
	Figure
	// Over is how many parts the figure is made of: those that have the
	// row and a figure for it (a rate), or the counters or histogram it
	// reads (a ratio, a percentile). Of is how many parts there are.
	Over, Of int
}

// Totals is the arithmetic of a total: every row some part has, in the
// table's order, each figure the same computation as the parts' own rows
// over the union of their data. A rate is the sum of the parts' rates as
// each shows it (a part born or gone inside the window divides by its own
// time there, and the total adds what the rows show); a ratio divides the
// sums of its counters' increases; a percentile is [Row]'s own estimate of
// the summed bucket increases (exact where the parts share a bucket
// ladder), so it lies between the parts' own. Each is made of the parts
// that can give it, and says how many (Over of Of): never smaller than
// one of its own rows, as a total of only the parts with every series
// would be.
func Totals(parts []Part) ([]Row, []Total) {
	var set rowSet
	for _, p := range parts {
		for _, r := range p.Rows {
			set |= 1 << indexOf(r.ID)
		}
	}
	rs := set.rows()
	out := make([]Total, len(rs))
	for i, r := range rs {
		out[i] = r.total(parts)
	}
	return rs, out
}

func indexOf(id string) int {
	for i, r := range rows {
		if r.ID == id {
			return i
		}
	}
	panic("rates: no row " + id)
}

// has reports whether rs holds the row r.
func has(rs []Row, r Row) bool {
	for _, x := range rs {
		if x.ID == r.ID {
			return true
		}
	}
	return false
}

// total is the row's figure over the parts.
func (r Row) total(parts []Part) Total {
	t := Total{Of: len(parts)}
	switch r.kind {
	case kRate:
		sum := 0.0
		for _, p := range parts {
			if !has(p.Rows, r) || !(p.Delta.Seconds > 0) {
				continue
			}
			if f := r.figure(p.Delta); f.Value != nil {
				sum += *f.Value
				t.Over++
			}
		}
		if t.Over > 0 {
			t.Value = ptr(sum)
		}
		return t
	case kRatio:
		sum := Delta{Seconds: 1, Counters: map[string]float64{}}
		for _, p := range parts {
			if !has(p.Rows, r) || !(p.Delta.Seconds > 0) {
				continue
			}
			num, ok := p.Delta.Counters[r.num]
			for _, d := range r.den {
				_, okD := p.Delta.Counters[d]
				ok = ok && okD
			}
			if !ok {
				continue
			}
			sum.Counters[r.num] += num
			for _, d := range r.den {
				if d != r.num {
					sum.Counters[d] += p.Delta.Counters[d]
				}
			}
			t.Over++
		}
		if t.Over > 0 {
			t.Figure = r.figure(sum)
		}
		return t
	}
	var hs []histogram.Histogram
	for _, p := range parts {
		h, ok := p.Delta.Hists[r.hist]
		if has(p.Rows, r) && ok && p.Delta.Seconds > 0 {
			hs = append(hs, h)
		}
	}
	t.Over = len(hs)
	if t.Over > 0 {
		t.Figure = r.figure(Delta{Seconds: 1, Hists: map[string]histogram.Histogram{r.hist: AddHists(hs)}})
	}
	return t
}

// AddHists adds histograms, bucket by bucket. Where their bucket ladders
// differ (two servers' TTFT buckets) it adds over the union of their
// bounds, each counting at a bound it lacks what it has at its next lower
// bound, as dialect.Hist merges a server's series: exact at every bound
// all share, below the truth elsewhere.
func AddHists(hs []histogram.Histogram) histogram.Histogram {
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
