// Package promqltest runs the simulator's scenarios into series a
// promtool test can load, and says what each figure and condition of
// internal/promql must return over a window, computed the report's way:
// from two scrapes, through the dialect and the analysis, with no PromQL.
// Tests of promql, rules and dashboards hold the two to each other.
package promqltest

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/sim"
)

// Target is the labels every simulated series carries, as a scrape
// config would give them.
var Target = promtool.Labels{"instance": "sim:8000", "job": "inferscope-demo"}

// Run is one scenario scraped at a fixed step.
type Run struct {
	Scenario string
	Step     time.Duration
	// Snapshots are the dialect's readings, one per scrape, the first at 0.
	Snapshots []*snapshot.Snapshot
	// Last is the last scrape's families.
	Last []*dto.MetricFamily
	// Inputs are the scrapes as promtool input series, with Target's
	// labels and an up series of 1 throughout.
	Inputs []promtool.Input
}

// Simulate runs a scenario for total simulated time and scrapes its
// exporter every step, from 0.
func Simulate(scenario string, seed uint64, total, step time.Duration) (*Run, error) {
	cfg, err := sim.Scenario(scenario, seed)
	if err != nil {
		return nil, err
	}
	cfg.Epoch = sim.DefaultEpoch
	s, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: cfg.Epoch})
	s.SetRecorder(m)
	r := &Run{Scenario: scenario, Step: step}
	var rec promtool.Recorder
	for at := time.Duration(0); at <= total; at += step {
		s.RunUntil(at)
		var b bytes.Buffer
		if err := m.WriteText(&b); err != nil {
			return nil, err
		}
		fams, err := exposition.Parse(b.Bytes(), exposition.Text)
		if err != nil {
			return nil, fmt.Errorf("%s at %v: %w", scenario, at, err)
		}
		snap, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s at %v: %w", scenario, at, err)
		}
		snap.ScrapedAt = cfg.Epoch.Add(at)
		r.Snapshots = append(r.Snapshots, snap)
		r.Last = fams
		up := promtool.Labels{"__name__": "up"}
		for k, v := range Target {
			up[k] = v
		}
		rec.Add(append(promtool.Points(fams, Target), promtool.Point{Labels: up, Value: 1}))
	}
	r.Inputs = rec.Inputs()
	return r, nil
}

// At returns the snapshot scraped at t (a multiple of the step).
func (r *Run) At(t time.Duration) *snapshot.Snapshot {
	i := int(t / r.Step)
	if i < 0 || i >= len(r.Snapshots) || time.Duration(i)*r.Step != t {
		return nil
	}
	return r.Snapshots[i]
}

// Window is what a report would say of the window from a to b: counters
// as their increase (counted from zero past a reset, as increase() does),
// histograms as their increase, gauges as read at b.
func Window(a, b *snapshot.Snapshot) *snapshot.Snapshot {
	w := &snapshot.Snapshot{
		Dialect: b.Dialect, ScrapedAt: b.ScrapedAt, Models: b.Models, Advice: b.Advice, PrefixCaching: b.PrefixCaching,
		Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{},
	}
	delta := func(name string, vb float64, from map[string]float64) float64 {
		d, _ := snapshot.Declared(name)
		if d.Kind != snapshot.Counter {
			return vb
		}
		va, ok := from[name]
		if !ok || va > vb {
			return vb
		}
		return vb - va
	}
	for k, v := range b.Scalars {
		if k == snapshot.ProcessStartTimeSeconds {
			continue
		}
		w.Scalars[k] = delta(k, v, a.Scalars)
	}
	for k, v := range b.Extra {
		w.Extra[k] = delta(k, v, a.Extra)
	}
	for k, h := range b.Histograms {
		if p, ok := a.Histograms[k]; ok {
			if d, ok := h.Sub(*p); ok {
				w.Histograms[k] = &d
				continue
			}
		}
		c := *h
		w.Histograms[k] = &c
	}
	return w
}

// Oracle says what a window's figures and conditions are, the report's
// way.
type Oracle struct {
	W       *snapshot.Snapshot
	R       *report.Report
	Seconds float64
}

// NewOracle reads the window from a to b, seconds long.
func NewOracle(a, b *snapshot.Snapshot, seconds float64) *Oracle {
	w := Window(a, b)
	return &Oracle{W: w, R: analysis.Analyze(w, analysis.Options{}), Seconds: seconds}
}

// Noted reports whether the report of the window makes a note.
func (o *Oracle) Noted(id string) bool {
	for _, n := range o.R.Notes {
		if n.ID == id {
			return true
		}
	}
	return false
}

// NoteText is the report's text of a note, "" when it does not make it.
func (o *Oracle) NoteText(id string) string {
	for _, n := range o.R.Notes {
		if n.ID == id {
			return n.Text
		}
	}
	return ""
}

func (o *Oracle) scalar(name string) float64 {
	if v, ok := o.W.Scalar(name); ok {
		return v
	}
	if v, ok := o.W.Extra[name]; ok {
		return v
	}
	return math.NaN()
}

func (o *Oracle) rate(name string) float64 { return o.scalar(name) / o.Seconds }

func div(a, b float64) float64 {
	if b == 0 && a == 0 {
		return math.NaN()
	}
	return a / b
}

func fig(n *report.Number) float64 {
	if n == nil {
		return math.NaN()
	}
	return float64(*n)
}

// Figure is a figure's value over the window (NaN for no value, as 0/0
// gives); ok is false for an id the oracle does not know.
func (o *Oracle) Figure(id string) (float64, bool) {
	s := o.scalar
	switch id {
	case "live/running":
		return s(snapshot.RequestsProcessing), true
	case "live/waiting":
		return s(snapshot.RequestsDeferred), true
	case "live/kv_cache":
		if !math.IsNaN(s(snapshot.KVCacheTokens)) && !math.IsNaN(s(snapshot.KVCacheMaxTokens)) {
			return div(s(snapshot.KVCacheTokens), s(snapshot.KVCacheMaxTokens)), true
		}
		return s(snapshot.KVCacheUsageRatio), true
	case "live/kv_offload":
		return div(s(snapshot.KVOffloadTokens), s(snapshot.KVOffloadMaxTokens)), true
	case "throughput/prefill_work":
		return o.rate(snapshot.PromptTokensTotal), true
	case "throughput/prompt_tokens":
		return o.rate(snapshot.PromptTokensAll), true
	case "throughput/cached":
		return o.rate(snapshot.CachedTokensTotal), true
	case "throughput/decode_work":
		return o.rate(snapshot.TokensPredictedTotal), true
	case "throughput/requests":
		return o.rate(snapshot.RequestsTotal), true
	case "phases/engine_busy":
		return o.rate(snapshot.PromptSecondsTotal) + o.rate(snapshot.TokensPredictedSecondsTotal), true
	case "phases/prefill_share":
		return fig(o.R.Figures.PrefillShare), true
	case "phases/decode_share":
		return fig(o.R.Figures.DecodeShare), true
	case "spec_decode/draft_acceptance":
		return div(s(snapshot.SpecDecodeNumAcceptedTokensTotal), s(snapshot.SpecDecodeNumDraftTokensTotal)), true
	case "spec_decode/tokens_per_step":
		return 1 + div(s(snapshot.SpecDecodeNumAcceptedTokensTotal), s(snapshot.SpecDecodeNumDecodeStepsTotal)), true
	case "spec_decode/mean_acceptance_length":
		return 1 + div(s(snapshot.SpecDecodeNumAcceptedTokensTotal), s(snapshot.ExtraSpecDecodeDrafts)), true
	case "prefix_cache/hit_rate":
		return div(s(snapshot.PrefixCacheHits), s(snapshot.PrefixCacheQueries)), true
	case "kv_offload/hit_share":
		return div(s(snapshot.KVOffloadRestoredTokensTotal), s(snapshot.PrefixCacheHits)), true
	case "kv_offload/traffic":
		return div(s(snapshot.KVOffloadReadBytesTotal), s(snapshot.KVOffloadWrittenBytesTotal)), true
	case "kv_offload/read":
		return o.rate(snapshot.KVOffloadReadBytesTotal), true
	case "kv_offload/written":
		return o.rate(snapshot.KVOffloadWrittenBytesTotal), true
	case "kv_offload/evictions":
		return o.rate(snapshot.KVOffloadEvictionsTotal), true
	case "kv_offload/cold_allocs":
		return o.rate(snapshot.KVOffloadColdAllocsTotal), true
	case "recurrent/cache":
		return div(s(snapshot.RecurrentCacheBytes), s(snapshot.RecurrentCacheMaxBytes)), true
	case "recurrent/capped":
		c := s(snapshot.RecurrentCappedTokensTotal)
		return div(c, c+s(snapshot.PrefixCacheHits)), true
	case "recurrent/live_kv_evictions":
		return o.rate(snapshot.RecurrentCacheLiveKVEvictionsTotal), true
	case "requests/preemptions":
		return o.rate(snapshot.ExtraPreemptions), true
	}
	for _, h := range histFigures {
		prefix := h.section + "/" + h.row + "_"
		if q, ok := strings.CutPrefix(id, prefix); ok {
			sum, ok := o.R.Histograms[h.hist]
			if !ok {
				return math.NaN(), true
			}
			switch q {
			case "mean":
				return float64(sum.Mean), true
			case "p50":
				return float64(sum.P50), true
			case "p90":
				return float64(sum.P90), true
			case "p99":
				return float64(sum.P99), true
			}
		}
	}
	return 0, false
}

var histFigures = []struct{ section, row, hist string }{
	{"latency", "ttft", snapshot.TimeToFirstTokenSeconds},
	{"latency", "queue", snapshot.RequestQueueTimeSeconds},
	{"latency", "prefill", snapshot.RequestPrefillTimeSeconds},
	{"latency", "decode", snapshot.RequestDecodeTimeSeconds},
	{"latency", "itl", snapshot.InterTokenLatencySeconds},
	{"latency", "tpot", snapshot.RequestTimePerOutputTokenSeconds},
	{"latency", "e2e", snapshot.E2ERequestLatencySeconds},
	{"size", "prompt", snapshot.RequestPromptTokens},
	{"size", "generation", snapshot.RequestGenerationTokens},
}

// Condition is a condition's value over the window (what its expression
// returns where it holds) and whether it holds: for a note, whether the
// report makes it; for the alerts no note covers, their own definition.
// ok is false for an id the oracle does not know.
func (o *Oracle) Condition(id string) (value float64, holds, ok bool) {
	s := o.scalar
	f := func(fid string) float64 { v, _ := o.Figure(fid); return v }
	switch id {
	case "kv_cache_over_capacity", "kv_cache_pressure":
		return f("live/kv_cache"), o.Noted(id), true
	case "queue_pressure":
		return s(snapshot.RequestsDeferred), o.Noted(id), true
	case "kv_offload_over_capacity":
		if v := f("live/kv_offload"); v > 1 {
			return v, o.Noted(id), true
		}
		return div(s(snapshot.KVOffloadBytes), s(snapshot.KVOffloadMaxBytes)), o.Noted(id), true
	case "kv_offload_cold_allocs":
		return s(snapshot.KVOffloadColdAllocsTotal), o.Noted(id), true
	case "kv_offload_thrashing":
		return f("kv_offload/traffic"), o.Noted(id), true
	case "recurrent_over_budget":
		return f("recurrent/cache"), o.Noted(id), true
	case "recurrent_live_kv_evictions":
		return s(snapshot.RecurrentCacheLiveKVEvictionsTotal), o.Noted(id), true
	case "recurrent_raise_budget":
		return f("recurrent/capped"), o.Noted(id), true
	case "preemptions":
		return s(snapshot.ExtraPreemptions), o.Noted(id), true
	case "requests_errored":
		return s(snapshot.ExtraFinishedReason + "error"), o.Noted(id), true
	case "draft_acceptance_low":
		return f("spec_decode/draft_acceptance"), o.Noted(id), true
	case "admission_stalled":
		w := s(snapshot.RequestsDeferred)
		return w, w > 0 && s(snapshot.RequestsProcessing) == 0, true
	case "queue_time_high":
		v := f("latency/queue_mean")
		return v, v > promql.QueueTimeHigh.Seconds(), true
	case "target_down":
		return 0, false, true
	}
	return 0, false, false
}
