package fleet

import (
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// From readings to figures: an instance's window is the difference of its
// readings (deltaOver, as --since computes it), and the table's figures
// are the rates rows' over it (figuresOf), whichever read gave them.

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
// from zero there, its increase being its new value. A counter or
// histogram the window's last reading has counts from zero at a reading
// that lacks it, unless one before had it (it is carried over that
// reading): vLLM and llm-d create their counters at the first request,
// after the instance's first sample. One the last reading lacks has no
// increase (its rows no figure); nor has a histogram whose buckets change
// layout.
//
// With fromZero the first boundary counts from zero as well: a server
// born inside the window did all of its counting there, and the window
// starts at start (its process start) instead of the first reading.
func deltaOver(bs []boundary, fromZero bool, start time.Time) windowDelta {
	d := windowDelta{fromZero: fromZero}
	if len(bs) == 0 {
		return d
	}
	// fresh[i]: the counters restarted from zero at reading i.
	fresh := make([]bool, len(bs))
	fresh[0] = fromZero
	for i := 1; i < len(bs); i++ {
		if bs[i].reset || fell(bs[i-1].snap, bs[i].snap) {
			fresh[i] = true
			d.resets = append(d.resets, bs[i].at)
		}
	}
	last := bs[len(bs)-1].snap
	d.Counters = map[string]float64{}
	for _, name := range countersOf(last) {
		d.Counters[name] = counterIncrease(bs, fresh, name)
	}
	d.Hists = map[string]histogram.Histogram{}
	for name, h := range last.Histograms {
		if h == nil {
			continue
		}
		if inc, ok := histIncrease(bs, fresh, name); ok {
			d.Hists[name] = inc
		}
	}
	if !fromZero {
		start = bs[0].at
	}
	d.Seconds = bs[len(bs)-1].at.Sub(start).Seconds()
	d.Reset = len(d.resets) > 0
	return d
}

// counterIncrease adds one counter's increases over the readings: from
// the value before (0 at a restart, or before the counter was ever read),
// or all of its value where it fell.
func counterIncrease(bs []boundary, fresh []bool, name string) float64 {
	inc, prev := 0.0, 0.0
	for i, b := range bs {
		if fresh[i] {
			prev = 0
		}
		v, ok := counterOf(b.snap, name)
		if !ok {
			continue // carried: the next reading continues from prev
		}
		switch {
		case i == 0 && !fresh[0]:
			// The window starts here.
		case v < prev:
			inc += v
		default:
			inc += v - prev
		}
		prev = v
	}
	return inc
}

// histIncrease adds one histogram's increases over the readings as
// counterIncrease does; ok is false where its buckets changed layout.
func histIncrease(bs []boundary, fresh []bool, name string) (histogram.Histogram, bool) {
	var inc *histogram.Histogram
	var prev *histogram.Histogram
	for i, b := range bs {
		if fresh[i] {
			prev = nil
		}
		cur := b.snap.Hist(name)
		if cur == nil {
			continue
		}
		if i == 0 && !fresh[0] {
			prev = cur
			continue
		}
		step := *cur
		if prev != nil {
			var ok bool
			if step, ok = cur.Sub(*prev); !ok {
				return histogram.Histogram{}, false
			}
		}
		if inc != nil {
			var ok bool
			if step, ok = addSame(*inc, step); !ok {
				return histogram.Histogram{}, false
			}
		}
		inc, prev = &step, cur
	}
	if inc == nil {
		// Read once, at the window's start and end alike: nothing grew.
		h := *bs[len(bs)-1].snap.Hist(name)
		zero, _ := h.Sub(h)
		return zero, true
	}
	return *inc, true
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

// Figures are an instance's numbers in the fleet table.
type Figures struct {
	// KV is the KV cache's use: at the window's end for "now", the
	// largest in a past range (each engine's largest, averaged over
	// data-parallel engines as the dialect averages their use).
	KV *float64
	// Waiting is the requests queued: at the end, or the largest.
	Waiting *float64
	// Rows and Rates are the window's figures, as the rates table has
	// them (rates.RowsFor of the instance).
	Rows  []rates.Row
	Rates []rates.Figure
	// Seconds is what the rates divide by (the totals': the window).
	Seconds float64
	// Totals are the totals' figures with how many instances each covers
	// (rates.Totals), one per row; nil for an instance.
	Totals []rates.Total
	// GPU are its GPUs' figures over the window (nil where none joined);
	// GPUCoverage, the totals', how many instances each covers.
	GPU         *GPUFigures
	GPUCoverage map[string]Coverage
}

// Rate returns the figure of the row id, and whether the instance has the
// row.
func (f Figures) Rate(id string) (rates.Row, rates.Figure, bool) {
	for i, r := range f.Rows {
		if r.ID == id {
			return r, f.Rates[i], true
		}
	}
	return rates.Row{}, rates.Figure{}, false
}

// value is a row's figure, nil where there is none.
func (f Figures) value(id string) *float64 {
	_, fig, ok := f.Rate(id)
	if !ok {
		return nil
	}
	return fig.Value
}

func figuresOf(s, peak *snapshot.Snapshot, d rates.Delta, past bool) Figures {
	g := s
	if past {
		g = peak
	}
	f := Figures{Rows: rates.RowsFor(s), Seconds: d.Seconds}
	f.Rates = rates.Compute(d, f.Rows)
	if g != nil {
		if v, ok := g.Scalar(snapshot.KVCacheUsageRatio); ok {
			f.KV = &v
		}
		if v, ok := g.Scalar(snapshot.RequestsDeferred); ok {
			f.Waiting = &v
		}
	}
	return f
}
