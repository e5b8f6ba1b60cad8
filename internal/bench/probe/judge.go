package probe

import (
	"fmt"
	"math"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// judge makes the result's notes through the one table.
func judge(res *Result, busy int) report.List[report.Note] {
	in := analysis.ProbeRun{Busy: busy, Partial: res.Partial}
	num := func(v report.Number) float64 { return float64(v) }
	if p := res.Prefill; p != nil {
		for _, pt := range p.Points {
			cold := math.NaN()
			if pt.Cold != nil {
				cold = num(pt.Cold.Client)
			}
			in.Points = append(in.Points, analysis.ProbePoint{What: "prefill at " + units.Integer(float64(pt.Length)) + " tokens",
				Min: num(pt.Client.Min), Median: num(pt.Client.Median), Max: num(pt.Client.Max), Cold: cold,
				Cached: num(pt.CachedTokens), Overlap: math.NaN(), Failed: pt.Failed})
		}
	}
	if d := res.Decode; d != nil {
		for _, pt := range d.Points {
			cold := math.NaN()
			if pt.Cold != nil {
				cold = num(pt.Cold.Total)
			}
			in.Points = append(in.Points, analysis.ProbePoint{What: fmt.Sprintf("decode at batch %d", pt.Batch),
				Min: num(pt.Total.Min), Median: num(pt.Total.Median), Max: num(pt.Total.Max), Cold: cold,
				Cached: math.NaN(), Overlap: num(pt.Overlap), Failed: pt.Failed, Short: pt.EarlyStops})
		}
	}
	return analysis.JudgeProbe(in)
}
