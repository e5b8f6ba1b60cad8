package analysis

import (
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The bands a figure falls in, chosen once: the report's rows judge by
// them, and a trend colours each of its cells by them (Colour,
// QueueColour), so a cell and a row of the same value take one colour.

// kvBand is the band of a KV cache usage ratio.
func kvBand(ratio float64) band {
	switch {
	case ratio > 1:
		return kvCacheOverCapacity
	case ratio >= kvPressure:
		return kvCachePressure
	}
	return kvCacheOK
}

// queueBand is the band of the requests waiting and running, where one
// applies (ok false where nothing waits).
func queueBand(run, wait float64) (b band, ok bool) {
	switch {
	case wait <= 0:
		return 0, false
	case run == 0:
		return queueStalled, true
	case wait >= queueFactor*run && wait >= queueMin:
		return queuePressure, true
	}
	return 0, false
}

// acceptanceBand is the band of a draft acceptance ratio.
func acceptanceBand(acc float64) band {
	switch {
	case acc > acceptanceGood:
		return draftAcceptanceGood
	case acc > acceptanceLow:
		return draftAcceptanceFair
	}
	return draftAcceptanceLow
}

// hitRateBand is the band of a prefix cache hit ratio.
func hitRateBand(ratio float64) band {
	if ratio > hitRateGood {
		return hitRateGoodBand
	}
	return hitRateLow
}

// colourers are the rows judged by a band of one figure, by the key
// ("section/row") the judgement table names them by.
var colourers = map[string]func(float64) band{
	"live/kv_cache":                kvBand,
	"spec_decode/draft_acceptance": acceptanceBand,
	"prefix_cache/hit_rate":        hitRateBand,
}

// Colour is the colour the report gives the row ("section/row", as
// docs/notes.md names it) whose figure is v: the colour of the band v falls
// in, through the judgement table; None for a row no band of one figure
// judges.
func Colour(row string, v float64) report.Severity {
	f, ok := colourers[row]
	if !ok {
		return report.None
	}
	return judgements[f(v)].colour
}

// QueueColour is the colour the state row ("live/state") takes with run
// requests running and wait waiting.
func QueueColour(run, wait float64) report.Severity {
	if b, ok := queueBand(run, wait); ok {
		return judgements[b].colour
	}
	return report.None
}

// KVUsage is the share of the KV cache in use in s, as the report's KV
// cache row gives it (from the token gauges where capacity is known, else
// the server's own ratio); ok is false where s has neither.
func KVUsage(s *snapshot.Snapshot) (ratio float64, ok bool) {
	return (&analyzer{s: s}).kvUsage()
}
