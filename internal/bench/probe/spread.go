package probe

import (
	"math"
	"slices"

	"github.com/inferscope/inferscope/internal/report"
)

func known(v report.Number) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// spreadOf is the spread of vs, the unknown ones left out: the median by
// the nearest rank (the smallest value with at least half at or below it,
// a value some request had), the least and the most.
func spreadOf(vs []float64) Spread {
	var k []float64
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			k = append(k, v)
		}
	}
	if len(k) == 0 {
		nan := report.Number(math.NaN())
		return Spread{Median: nan, Min: nan, Max: nan}
	}
	slices.Sort(k)
	rank := int(math.Ceil(0.5*float64(len(k)))) - 1
	return Spread{Median: report.Number(k[rank]), Min: report.Number(k[0]), Max: report.Number(k[len(k)-1]), N: len(k)}
}
