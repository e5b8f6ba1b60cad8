package bench

import (
	"math"
	"slices"
	"strconv"

	"github.com/inferscope/inferscope/internal/report"
)

// Histogram is a figure's distribution over the measured requests, in
// bins: Counts[i] requests had a value at or above Edges[i] and below
// Edges[i+1]. The edges are round numbers, so that a bin can be read off
// its edges: where the values span a factor of 20 or more they are spaced
// evenly on a log scale (ten to a decade, Renard's 1, 1.25, 1.6, 2, 2.5,
// 3.2, 4, 5, 6.3, 8; five or one where the values span more decades than
// 40 bins hold at ten), else evenly (a step of 1, 2 or 5 times a power of
// ten, about 30 bins).
type Histogram struct {
	// Scale is "log" or "linear": how the edges are spaced, and so how a
	// chart of it reads best.
	Scale  string                     `json:"scale"`
	Edges  report.List[report.Number] `json:"edges"`
	Counts report.List[int]           `json:"counts"`
}

// Bins most a histogram is given, and about how many where the edges are
// spaced evenly.
const (
	maxBins    = 40
	linearBins = 30
)

// renard10 are the log scale's edges in a decade, times 100.
var renard10 = []int64{100, 125, 160, 200, 250, 320, 400, 500, 630, 800}

// histogramOf bins values (NaN ones left out); nil where none is left.
func histogramOf(values []float64) *Histogram {
	v := slices.DeleteFunc(slices.Clone(values), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
	if len(v) == 0 {
		return nil
	}
	slices.Sort(v)
	lo, hi := v[0], v[len(v)-1]
	var h *Histogram
	if lo > 0 && hi/lo >= 20 {
		h = &Histogram{Scale: "log", Edges: logEdges(lo, hi)}
	} else {
		h = &Histogram{Scale: "linear", Edges: linearEdges(lo, hi)}
	}
	h.Counts = make(report.List[int], len(h.Edges)-1)
	bin := 0
	for _, x := range v {
		for x >= float64(h.Edges[bin+1]) {
			bin++
		}
		h.Counts[bin]++
	}
	return h
}

// decimal is m×10^e as the float nearest that decimal, so that an edge
// is written as the round number it is (0.0125, never 0.012500000000000001).
func decimal(m int64, e int) report.Number {
	f, _ := strconv.ParseFloat(strconv.FormatInt(m, 10)+"e"+strconv.Itoa(e), 64)
	return report.Number(f)
}

// logEdges are the log scale's edges from the last at or below lo to the
// first above hi (0 < lo < hi).
func logEdges(lo, hi float64) report.List[report.Number] {
	decades := math.Log10(hi / lo)
	marks := renard10
	switch {
	case decades*10 <= maxBins-2:
	case decades*5 <= maxBins-2:
		marks = []int64{100, 160, 250, 400, 630}
	default:
		marks = []int64{100}
	}
	// edge k is marks[k mod len] × 10^(k div len − 2), k counted from 10^0.
	n := len(marks)
	at := func(k int) report.Number {
		d := k / n
		if k%n < 0 {
			d--
		}
		return decimal(marks[((k%n)+n)%n], d-2)
	}
	k := int(math.Floor(math.Log10(lo))) * n
	for float64(at(k+1)) <= lo {
		k++
	}
	for float64(at(k)) > lo {
		k--
	}
	var edges report.List[report.Number]
	for ; ; k++ {
		edges = append(edges, at(k))
		if float64(at(k)) > hi {
			return edges
		}
	}
}

// linearEdges are edges a round step apart, from the last multiple of it
// at or below lo to the first above hi.
func linearEdges(lo, hi float64) report.List[report.Number] {
	// The step: the least of 1, 2 or 5 times a power of ten at or above
	// span/linearBins; for one value, a tenth of it.
	raw := (hi - lo) / linearBins
	if raw <= 0 {
		raw = math.Abs(lo) / 10
		if raw == 0 {
			raw = 1
		}
	}
	e := int(math.Floor(math.Log10(raw)))
	var m int64 = 1
	for _, c := range []int64{1, 2, 5, 10} {
		if float64(decimal(c, e)) >= raw*(1-1e-9) {
			m = c
			break
		}
	}
	if m == 10 {
		m, e = 1, e+1
	}
	step := float64(decimal(m, e))
	k := int64(math.Floor(lo / step))
	for float64(decimal(k*m, e)) > lo {
		k--
	}
	var edges report.List[report.Number]
	for ; ; k++ {
		edges = append(edges, decimal(k*m, e))
		if float64(decimal(k*m, e)) > hi {
			return edges
		}
	}
}
