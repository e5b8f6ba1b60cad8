package watch

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// t0 is the fake clock's origin; processes in tests started an hour before.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var start0 = float64(t0.Unix() - 3600)

// at is the fake clock: sec seconds after t0.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// snap builds a canonical snapshot with a process start time and scalars
// given as name, value pairs.
func snap(start float64, kv ...any) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Scalars:    map[string]float64{},
		Histograms: map[string]*histogram.Histogram{},
	}
	if start != 0 {
		s.Scalars["process_start_time_seconds"] = start
	}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case float64:
			s.Scalars[name] = v
		case int:
			s.Scalars[name] = float64(v)
		case *histogram.Histogram:
			s.Histograms[name] = v
		}
	}
	return s
}

// hist builds a normalized histogram from upper bounds and cumulative counts
// (the +Inf bucket is added holding the last count).
func mkHist(bounds []float64, counts []float64) *histogram.Histogram {
	h := &histogram.Histogram{}
	for i, b := range bounds {
		h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: b, Count: counts[i]})
	}
	h.Count = counts[len(counts)-1]
	// A sum the buckets make possible: each observation at the middle of its
	// bucket, those above the last bound at 1.5 times it.
	lo, prev := 0.0, 0.0
	for i, b := range bounds {
		h.Sum += (counts[i] - prev) * (lo + b) / 2
		lo, prev = b, counts[i]
	}
	h.Sum += (h.Count - prev) * lo * 1.5
	h.Normalize()
	return h
}

// approx compares figures computed in two ways.
func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
