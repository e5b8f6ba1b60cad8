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
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/rates"
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
// as their increase (counted from zero past a reset, or where a lacks
// them), histograms as their increase, gauges as read at b; the windowed
// views' own reading (rates.Between, analysis.WindowSnapshot).
func Window(a, b *snapshot.Snapshot) *snapshot.Snapshot {
	d, ok := rates.Between(a, b)
	if !ok {
		return analysis.WindowSnapshot(b, analysis.Window{})
	}
	return analysis.WindowSnapshot(b, analysis.Window{Counters: d.Counters, Hists: d.Hists})
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
	if f, ok := figureOracles[id]; ok {
		return f(o), true
	}
	for _, h := range histFigures {
		q, ok := strings.CutPrefix(id, h.section+"/"+h.row+"_")
		if !ok {
			continue
		}
		sum, ok := o.R.Histograms[h.hist]
		if !ok {
			return math.NaN(), true
		}
		v, ok := map[string]report.Number{"mean": sum.Mean, "p50": sum.P50, "p90": sum.P90, "p99": sum.P99}[q]
		return float64(v), ok
	}
	return 0, false
}

// gauge, rate and ratio read a window's figures from its snapshot.
func gauge(name string) func(*Oracle) float64 {
	return func(o *Oracle) float64 { return o.scalar(name) }
}
func rate(name string) func(*Oracle) float64 { return func(o *Oracle) float64 { return o.rate(name) } }
func ratio(num, den string) func(*Oracle) float64 {
	return func(o *Oracle) float64 { return div(o.scalar(num), o.scalar(den)) }
}
func onePlus(num, den string) func(*Oracle) float64 {
	return func(o *Oracle) float64 { return 1 + div(o.scalar(num), o.scalar(den)) }
}
func reported(f func(*report.Figures) *report.Number) func(*Oracle) float64 {
	return func(o *Oracle) float64 { return fig(f(&o.R.Figures)) }
}

// figureOracles compute each figure but the latency and size rows.
var figureOracles = map[string]func(*Oracle) float64{
	"live/running": gauge(snapshot.RequestsProcessing),
	"live/waiting": gauge(snapshot.RequestsDeferred),
	"live/kv_cache": func(o *Oracle) float64 {
		if !math.IsNaN(o.scalar(snapshot.KVCacheTokens)) && !math.IsNaN(o.scalar(snapshot.KVCacheMaxTokens)) {
			return div(o.scalar(snapshot.KVCacheTokens), o.scalar(snapshot.KVCacheMaxTokens))
		}
		return o.scalar(snapshot.KVCacheUsageRatio)
	},
	"live/kv_offload":          ratio(snapshot.KVOffloadTokens, snapshot.KVOffloadMaxTokens),
	"throughput/prefill_work":  rate(snapshot.PromptTokensTotal),
	"throughput/prompt_tokens": rate(snapshot.PromptTokensAll),
	"throughput/cached":        rate(snapshot.CachedTokensTotal),
	"throughput/decode_work":   rate(snapshot.TokensPredictedTotal),
	"throughput/requests":      rate(snapshot.RequestsTotal),
	"throughput/prefill_work_estimate": func(o *Oracle) float64 {
		return math.Max(o.rate(snapshot.PrefixCacheQueries)-o.rate(snapshot.PrefixCacheHits), 0)
	},
	"phases/engine_busy":    rate(snapshot.EngineBusySecondsTotal),
	"phases/engine_prefill": rate(snapshot.EnginePrefillSecondsTotal),
	"phases/engine_decode":  rate(snapshot.EngineDecodeSecondsTotal),
	"phases/mean_in_flight": func(o *Oracle) float64 {
		return o.rate(snapshot.PromptSecondsTotal) + o.rate(snapshot.TokensPredictedSecondsTotal)
	},
	"phases/prefill_share":               reported(func(f *report.Figures) *report.Number { return f.PrefillShare }),
	"phases/decode_share":                reported(func(f *report.Figures) *report.Number { return f.DecodeShare }),
	"spec_decode/draft_acceptance":       ratio(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDraftTokensTotal),
	"spec_decode/tokens_per_step":        onePlus(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.SpecDecodeNumDecodeStepsTotal),
	"spec_decode/mean_acceptance_length": onePlus(snapshot.SpecDecodeNumAcceptedTokensTotal, snapshot.ExtraSpecDecodeDrafts),
	"prefix_cache/hit_rate":              ratio(snapshot.PrefixCacheHits, snapshot.PrefixCacheQueries),
	"prefix_cache/hit_host":              ratio(snapshot.PrefixCacheHostHits, snapshot.PrefixCacheQueries),
	"prefix_cache/hit_storage":           ratio(snapshot.PrefixCacheStorageHits, snapshot.PrefixCacheQueries),
	"spec_decode/tokens_per_verify":      ratio(snapshot.TokensPredictedTotal, snapshot.ExtraSpecVerifyCalls),
	"kv_offload/hit_share":               ratio(snapshot.KVOffloadRestoredTokensTotal, snapshot.PrefixCacheHits),
	"kv_offload/traffic":                 ratio(snapshot.KVOffloadReadBytesTotal, snapshot.KVOffloadWrittenBytesTotal),
	"kv_offload/read":                    rate(snapshot.KVOffloadReadBytesTotal),
	"kv_offload/written":                 rate(snapshot.KVOffloadWrittenBytesTotal),
	"kv_offload/evictions":               rate(snapshot.KVOffloadEvictionsTotal),
	"kv_offload/cold_allocs":             rate(snapshot.KVOffloadColdAllocsTotal),
	"recurrent/cache":                    ratio(snapshot.RecurrentCacheBytes, snapshot.RecurrentCacheMaxBytes),
	"recurrent/capped": func(o *Oracle) float64 {
		c := o.scalar(snapshot.RecurrentCappedTokensTotal)
		return div(c, c+o.scalar(snapshot.PrefixCacheHits))
	},
	"recurrent/live_kv_evictions": rate(snapshot.RecurrentCacheLiveKVEvictionsTotal),
	"requests/preemptions":        rate(snapshot.ExtraPreemptions),
	"requests/retracted_work": func(o *Oracle) float64 {
		return o.rate(snapshot.ExtraRetractedPromptTokens) + o.rate(snapshot.ExtraRetractedGeneratedTokens)
	},
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
	if v, ok := noteValues[id]; ok {
		return v(o), o.Noted(id), true
	}
	switch id {
	case "admission_stalled":
		w := o.scalar(snapshot.RequestsDeferred)
		return w, w > 0 && o.scalar(snapshot.RequestsProcessing) == 0, true
	case "queue_time_high":
		v, _ := o.Figure("latency/queue_mean")
		return v, v > promql.QueueTimeHigh.Seconds(), true
	case "target_down":
		return 0, false, true
	}
	return 0, false, false
}

// figure reads one of the window's figures.
func figure(id string) func(*Oracle) float64 {
	return func(o *Oracle) float64 { v, _ := o.Figure(id); return v }
}

// noteValues are what each note's condition returns where it holds.
var noteValues = map[string]func(*Oracle) float64{
	"kv_cache_over_capacity": figure("live/kv_cache"),
	"kv_cache_pressure":      figure("live/kv_cache"),
	"queue_pressure":         gauge(snapshot.RequestsDeferred),
	"kv_offload_over_capacity": func(o *Oracle) float64 {
		if v, _ := o.Figure("live/kv_offload"); v > 1 {
			return v
		}
		return div(o.scalar(snapshot.KVOffloadBytes), o.scalar(snapshot.KVOffloadMaxBytes))
	},
	"kv_offload_cold_allocs":      gauge(snapshot.KVOffloadColdAllocsTotal),
	"kv_offload_thrashing":        figure("kv_offload/traffic"),
	"recurrent_over_budget":       figure("recurrent/cache"),
	"recurrent_live_kv_evictions": gauge(snapshot.RecurrentCacheLiveKVEvictionsTotal),
	"recurrent_raise_budget":      figure("recurrent/capped"),
	"preemptions":                 gauge(snapshot.ExtraPreemptions),
	"requests_errored":            gauge(snapshot.ExtraFinishedReason + "error"),
	"draft_acceptance_low":        figure("spec_decode/draft_acceptance"),
	"requests_refused":            gauge(snapshot.ExtraAdmissionRejections),
	"retracted_work": func(o *Oracle) float64 {
		return div(o.scalar(snapshot.ExtraRetractedPromptTokens)+o.scalar(snapshot.ExtraRetractedGeneratedTokens), o.scalar(snapshot.PromptTokensTotal))
	},
}
