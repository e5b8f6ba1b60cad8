package rates

import (
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
	var t Total
	switch r.kind {
	case kRate:
		t = r.rateTotal(parts)
	case kRatio:
		t = r.ratioTotal(parts)
	case kSampled:
		// A share of scrapes is one session's; a fleet has none.
	default:
		t = r.quantileTotal(parts)
	}
	t.Of = len(parts)
	return t
}

// counts reports whether part p gives the row: it has the row, and a
// window with length.
func (r Row) counts(p Part) bool { return has(p.Rows, r) && p.Delta.Seconds > 0 }

// rateTotal adds the parts' rates as each shows it. A share of each
// part's own time (engine busy) does not add: two engines busy half the
// time are not one engine busy all of it, so its total is the mean of the
// parts' shares, the fleet's engines busy on average.
func (r Row) rateTotal(parts []Part) Total {
	var t Total
	sum := 0.0
	for _, p := range parts {
		if !r.counts(p) {
			continue
		}
		if f := r.figure(p.Delta); f.Value != nil {
			sum += *f.Value
			t.Over++
		}
	}
	switch {
	case t.Over > 0 && r.format == fPercent:
		t.Value = ptr(sum / float64(t.Over))
	case t.Over > 0:
		t.Value = ptr(sum)
	}
	return t
}

// ratioTotal divides the sums of the ratio's counters' increases over the
// parts that have every one of them.
func (r Row) ratioTotal(parts []Part) Total {
	var t Total
	names := appendNew(nil, r.num)
	for _, d := range r.den {
		names = appendNew(names, d)
	}
	sum := Delta{Seconds: 1, Counters: map[string]float64{}}
	for _, p := range parts {
		if !r.counts(p) || !hasAll(p.Delta.Counters, names) {
			continue
		}
		for _, n := range names {
			sum.Counters[n] += p.Delta.Counters[n]
		}
		t.Over++
	}
	if t.Over > 0 {
		t.Figure = r.figure(sum)
	}
	return t
}

func hasAll(m map[string]float64, names []string) bool {
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return false
		}
	}
	return true
}

// quantileTotal is the row's estimate of the parts' bucket increases,
// added.
func (r Row) quantileTotal(parts []Part) Total {
	var t Total
	var hs []histogram.Histogram
	for _, p := range parts {
		if h, ok := p.Delta.Hists[r.hist]; ok && r.counts(p) {
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
// bound, as dialect.Hist merges a server's series (histogram.MergeLadders).
func AddHists(hs []histogram.Histogram) histogram.Histogram {
	var out histogram.Histogram
	series := make([][]histogram.Bucket, 0, len(hs))
	for _, h := range hs {
		out.Count += h.Count
		out.Sum += h.Sum
		out.NoSum = out.NoSum || h.NoSum
		out.NoTop = out.NoTop || h.NoTop
		series = append(series, h.Buckets)
	}
	out.Buckets = histogram.MergeLadders(series)
	out.Normalize()
	return out
}
