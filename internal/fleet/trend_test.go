package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// A trend's rate divides by the time between the two readings it takes,
// not by the step: samples every 30 s read at steps of 45 s are 30 or 60
// s apart, and a counter growing 3 a second is 3 a second at every step
// (dividing by the step gave 2 and 4 in turn). A step with no new sample
// is a gap.
func TestTrendRateOverReadings(t *testing.T) {
	from := time.Unix(1_800_000_000, 0)
	step := 45 * time.Second
	by := []string{"job", "instance"}
	metric := model.Metric{"job": "j", "instance": "i"}
	var readings, newest model.SampleStream
	readings.Metric, newest.Metric = metric, metric
	for k := 0; k <= 6; k++ {
		at := from.Add(time.Duration(k) * step)
		last := at.Sub(from).Truncate(30 * time.Second) // the newest sample at or before the step
		if k == 5 {
			last = (4 * step).Truncate(30 * time.Second) // a scrape missed: step 4's sample again
		}
		readings.Values = append(readings.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: model.SampleValue(3 * last.Seconds())})
		newest.Values = append(newest.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: model.SampleValue(float64(from.Add(last).Unix()))})
	}
	idx, when := streamsByKey(model.Matrix{&readings}, by), streamsByKey(model.Matrix{&newest}, by)
	tr := series(idx[groupKey(metric, by)], when[groupKey(metric, by)], TrendRequests, from, from.Add(6*step), step)
	if tr == nil || len(tr.Values) != 6 {
		t.Fatalf("trend %+v, want 6 steps", tr)
	}
	for k, v := range tr.Values {
		switch {
		case k == 4:
			if !math.IsNaN(float64(v)) {
				t.Errorf("step %d: %v, want a gap (no new sample)", k+1, v)
			}
		case math.Abs(float64(v)-3) > 1e-9:
			t.Errorf("step %d: %v requests/s, want 3", k+1, v)
		}
	}
}
