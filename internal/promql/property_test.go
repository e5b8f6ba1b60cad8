package promql_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promqltest"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// state draws a server's state at the start and end of a five-minute
// window: gauges read at the end, counters rising from one to the other,
// each near the thresholds the notes judge by (and on some of them), so
// that both sides of every band are drawn.
func state(r *rand.Rand) (start, end promql.Values) {
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	g := map[string]float64{
		snapshot.RequestsProcessing: pick(0, 0, 1, 4, 8),
		snapshot.RequestsDeferred:   pick(0, 1, 7, 8, 9, 16, 30),
		snapshot.KVCacheMaxTokens:   1000,
		snapshot.KVCacheTokens:      pick(100, 899, 900, 901, 950, 1000, 1001),
		snapshot.KVOffloadMaxTokens: 256, snapshot.KVOffloadTokens: pick(100, 256, 257),
		snapshot.KVOffloadMaxBytes: 4096, snapshot.KVOffloadBytes: pick(1000, 4096, 4097),
		snapshot.RecurrentCacheMaxBytes: 1000, snapshot.RecurrentCacheBytes: pick(500, 900, 901, 1000, 1001),
	}
	g[snapshot.KVCacheUsageRatio] = math.Min(g[snapshot.KVCacheTokens]/1000, 1)
	// Increases over the window.
	inc := map[string]float64{
		snapshot.RequestsTotal:                        pick(0, 10, 100),
		snapshot.PromptTokensTotal:                    pick(0, 1000, 5000),
		snapshot.CachedTokensTotal:                    pick(0, 10, 1000),
		snapshot.TokensPredictedTotal:                 pick(0, 2000),
		snapshot.SpecDecodeNumDraftTokensTotal:        pick(0, 100, 400),
		snapshot.KVOffloadEvictionsTotal:              pick(0, 0, 5),
		snapshot.KVOffloadWrittenBytesTotal:           pick(0, 1000, 4000),
		snapshot.KVOffloadColdAllocsTotal:             pick(0, 0, 3),
		snapshot.RecurrentCacheEvictionsTotal:         pick(0, 0, 4),
		snapshot.RecurrentStrandedByKVTotal:           pick(0, 0, 2),
		snapshot.ExtraPreemptions:                     pick(0, 0, 1, 7),
		snapshot.ExtraAdmissionRejections:             pick(0, 0, 1, 30),
		snapshot.SpecDecodeNumDecodeStepsTotal:        pick(0, 50),
		snapshot.KVOffloadRestoredTokensTotal:         0,
		snapshot.RecurrentCacheStrandedEvictionsTotal: 0,
	}
	inc[snapshot.SpecDecodeNumAcceptedTokensTotal] = math.Floor(inc[snapshot.SpecDecodeNumDraftTokensTotal] * pick(0.2, 0.5, 0.51, 0.9))
	inc[snapshot.KVOffloadReadBytesTotal] = math.Floor(inc[snapshot.KVOffloadWrittenBytesTotal] * pick(0, 0.1, 0.25, 0.5, 1))
	inc[snapshot.RecurrentCacheLiveKVEvictionsTotal] = math.Min(inc[snapshot.RecurrentCacheEvictionsTotal], pick(0, 0, 1))
	inc[snapshot.PrefixCacheHits] = inc[snapshot.CachedTokensTotal]
	inc[snapshot.PrefixCacheQueries] = inc[snapshot.PromptTokensTotal] + inc[snapshot.CachedTokensTotal]
	inc[snapshot.RecurrentCappedTokensTotal] = math.Floor((inc[snapshot.PrefixCacheHits] + 10) * pick(0, 0.04, 0.06, 0.5))
	inc[snapshot.ExtraFinishedReason+"error"] = math.Min(inc[snapshot.RequestsTotal], pick(0, 0, 1))
	inc[snapshot.ExtraFinishedReason+"abort"] = math.Min(inc[snapshot.RequestsTotal]-inc[snapshot.ExtraFinishedReason+"error"], pick(0, 1, 20))
	inc[snapshot.ExtraFailedReason+"*"] = pick(0, 1, 10)
	// SGLang's tiers of hits and the work its retractions threw away,
	// near 5% of the prompt tokens computed.
	inc[snapshot.PrefixCacheHostHits] = math.Min(inc[snapshot.CachedTokensTotal], pick(0, 10))
	inc[snapshot.PrefixCacheStorageHits] = 0
	inc[snapshot.ExtraRetractedPromptTokens] = pick(0, 0, 40, 240)
	inc[snapshot.ExtraRetractedGeneratedTokens] = pick(0, 10)

	start = promql.Values{Scalars: map[string]float64{}, Hists: map[string]histogram.Histogram{}}
	end = promql.Values{Scalars: map[string]float64{}, Hists: map[string]histogram.Histogram{}}
	for n, v := range g {
		start.Scalars[n], end.Scalars[n] = v, v
	}
	// One base for every counter: a series read as two quantities
	// (llama.cpp's cached tokens are its hits) has one value.
	base := pick(0, 1000)
	for n, v := range inc {
		if d, _ := snapshot.Declared(n); d.Kind == snapshot.Counter || n == snapshot.ExtraFailedReason+"*" {
			start.Scalars[n], end.Scalars[n] = base, base+v
		}
	}
	// Queue time: a mean of a few seconds, or beyond the alert's 30 s.
	n, mean := pick(0, 10), pick(1, 29, 45)
	queue := func(k float64) histogram.Histogram {
		return histogram.Histogram{Count: k * n, Sum: k * n * mean,
			Buckets: []histogram.Bucket{{UpperBound: 10, Count: 0}, {UpperBound: 60, Count: k * n}, {UpperBound: math.Inf(1), Count: k * n}}}
	}
	start.Hists[snapshot.RequestQueueTimeSeconds], end.Hists[snapshot.RequestQueueTimeSeconds] = queue(1), queue(2)
	return start, end
}

// The property: on any state, the report's note (read by the dialect from
// the series, over the window) and the condition of its alert (evaluated
// by promtool on the same series, at the window's end) agree, both firing
// or neither, for every dialect's names.
func TestNotesAndConditionsAgree(t *testing.T) {
	promtool.Require(t, "promtool")
	r := rand.New(rand.NewPCG(13, 2026))
	const perDialect = 60
	var groups []promtool.Group
	fired := map[string]int{}
	for _, d := range promql.Dialects() {
		l, err := promql.Newest(d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		labels, err := l.ExampleLabels(map[string]string{"instance": "x:1", "job": "j"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range perDialect {
			a, b := state(r)
			var rec promtool.Recorder
			var snaps [2]*snapshot.Snapshot
			for k, v := range []promql.Values{a, b} {
				fams, err := l.Families(v, labels)
				if err != nil {
					t.Fatal(err)
				}
				if snaps[k], err = dialect.Map(fams, dialect.Options{Dialect: d}); err != nil {
					t.Fatalf("%s: %v", d, err)
				}
				rec.Add(promtool.Points(fams, nil))
			}
			o := promqltest.NewOracle(snaps[0], snaps[1], 300)
			g := promtool.Group{Name: fmt.Sprintf("%s state %d", d, i), Interval: "5m", InputSeries: rec.Inputs()}
			for _, c := range l.Conditions() {
				if !c.Note {
					continue
				}
				n := 0.0
				if o.Noted(c.ID) {
					n = 1
					fired[c.ID]++
				}
				g.ExprTests = append(g.ExprTests, promtool.ExprTest{Expr: "count(" + c.Expr + ") or vector(0)", EvalTime: "5m",
					Samples: []promtool.Sample{{Labels: "{}", Value: n}}})
			}
			groups = append(groups, g)
		}
	}
	// Both sides of every note are drawn somewhere.
	for _, id := range promql.ConditionIDs() {
		if promql.IsNote(id) && (fired[id] == 0 || fired[id] == len(groups)) {
			t.Errorf("note %s fired in %d of the states: the states do not draw both sides of it", id, fired[id])
		}
	}
	runTests(t, promtool.File{RuleFiles: []string{}, Tests: groups})
}
