package dialect

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/internal/exposition"
)

// Fixtures must be possible scrapes: for every histogram series the sum lies
// between what its buckets allow (each observation at least its bucket's
// lower bound and at most its upper bound), or percentiles tested against
// them would be judged on impossible data.
func TestFixtureHistogramsConsistent(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/dialects/*.prom")
	more, _ := filepath.Glob("../../testdata/tabbyapi/*.prom")
	for _, f := range append(files, more...) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, mf := range fams {
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				if h == nil {
					continue
				}
				lo, hi, prevLE, prevC := 0.0, 0.0, 0.0, 0.0
				for _, b := range h.GetBucket() {
					if n := float64(b.GetCumulativeCount()) - prevC; n > 0 {
						lo += n * math.Max(prevLE, 0)
						hi += n * b.GetUpperBound()
					}
					prevLE, prevC = b.GetUpperBound(), float64(b.GetCumulativeCount())
				}
				if rest := float64(h.GetSampleCount()) - prevC; rest > 0 {
					lo += rest * prevLE
					hi = math.Inf(1)
				}
				sum := h.GetSampleSum()
				if sum < lo*(1-1e-9)-1e-9 || sum > hi*(1+1e-9)+1e-9 {
					t.Errorf("%s: %s%v: sum %g outside [%g, %g]", f, mf.GetName(), m.GetLabel(), sum, lo, hi)
				}
			}
		}
	}
}
