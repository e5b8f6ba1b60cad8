package fleet

import (
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
)

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
