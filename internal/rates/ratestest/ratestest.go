// Package ratestest builds the canonical snapshots that tests of rates and
// of the watch view feed them: a few series by name, histograms from
// bounds and counts, and a scrape with every series the rates read.
package ratestest

import (
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Snap builds a canonical snapshot with a process start time (none when
// start is 0) and series given as name, value pairs: a float64 or int is a
// scalar (an Extra figure where the name is declared one), a
// *histogram.Histogram a histogram.
func Snap(start float64, kv ...any) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Scalars:    map[string]float64{},
		Histograms: map[string]*histogram.Histogram{},
		Extra:      map[string]float64{},
	}
	if start != 0 {
		s.Scalars["process_start_time_seconds"] = start
	}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		into := s.Scalars
		if d, ok := snapshot.Declared(name); ok && d.Extra {
			into = s.Extra
		}
		switch v := kv[i+1].(type) {
		case float64:
			into[name] = v
		case int:
			into[name] = float64(v)
		case *histogram.Histogram:
			s.Histograms[name] = v
		}
	}
	return s
}

// Hist builds a normalized histogram from upper bounds and cumulative
// counts, one more count than bounds: the last is the +Inf bucket's.
func Hist(bounds []float64, counts []float64) *histogram.Histogram {
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

// Full is a scrape of a process started at start with every series the
// rates table reads, its counters advanced to second sec of a steady load.
func Full(start float64, sec int) *snapshot.Snapshot {
	f := float64(sec)
	lat := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	counts := func(n float64) []float64 {
		c := make([]float64, len(lat)+1)
		for i := range c {
			c[i] = n * float64(min(i+1, len(lat))) / float64(len(lat))
		}
		return c
	}
	return Snap(start,
		"prompt_tokens_total", 900*f, "cached_tokens_total", 300*f,
		"prefix_cache_hits", 300*f, "prefix_cache_queries", 1200*f,
		"tokens_predicted_total", 80*f, "requests_total", f/2,
		"spec_decode_requests_total", f/2, "spec_decode_num_accepted_tokens_total", 50*f, "spec_decode_num_draft_tokens_total", 70*f,
		"prompt_seconds_total", 0.2*f, "tokens_predicted_seconds_total", 0.7*f,
		"kv_offload_max_tokens", 1e6, "kv_offload_restored_tokens_total", 64*f,
		"kv_offload_read_bytes_total", 1e6*f, "kv_offload_written_bytes_total", 2e6*f,
		"time_to_first_token_seconds", Hist(lat, counts(f/2)),
		"e2e_request_latency_seconds", Hist(lat, counts(f/2)),
	)
}
