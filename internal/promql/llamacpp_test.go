package promql_test

import (
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The two generations of llama.cpp's counting, as the dialect reads them
// (internal/dialect's TestLlamaCppVersions holds those figures to the
// workload; TestQuantitiesMatchDialect holds these expressions to them):
// b10309's prompt_seconds_total is request prefill time, so request time
// splits into prefill and decode; b10470's is the engine's prefill time,
// a share of the wall clock, and no split is written from it.
func TestLlamaCppVersionsRead(t *testing.T) {
	for _, tc := range []struct {
		build      string
		has, lacks []string
		figures    []string
		noFigures  []string
	}{
		{
			build:     "b10309",
			has:       []string{snapshot.PromptSecondsTotal, snapshot.TokensPredictedSecondsTotal},
			lacks:     []string{snapshot.EnginePrefillSecondsTotal, snapshot.CachedTokensTotal, snapshot.PrefixCacheQueries},
			figures:   []string{"phases/prefill_share", "phases/decode_share", "phases/mean_in_flight"},
			noFigures: []string{"phases/engine_prefill", "prefix_cache/hit_rate"},
		},
		{
			build:     "b10470",
			has:       []string{snapshot.EnginePrefillSecondsTotal, snapshot.TokensPredictedSecondsTotal, snapshot.CachedTokensTotal, snapshot.PrefixCacheQueries},
			lacks:     []string{snapshot.PromptSecondsTotal},
			figures:   []string{"phases/engine_prefill", "prefix_cache/hit_rate"},
			noFigures: []string{"phases/prefill_share", "phases/decode_share", "phases/mean_in_flight"},
		},
	} {
		l, err := promql.New(fromFile(t, "../../testdata/real/llama.cpp-"+tc.build+"-workload.prom"), "llamacpp", promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range tc.has {
			if !l.Has(q) {
				t.Errorf("%s: does not read %s", tc.build, q)
			}
		}
		for _, q := range tc.lacks {
			if l.Has(q) {
				t.Errorf("%s: reads %s", tc.build, q)
			}
		}
		for _, id := range tc.figures {
			if _, ok := l.Figure(id); !ok {
				t.Errorf("%s: no figure %s", tc.build, id)
			}
		}
		for _, id := range tc.noFigures {
			if _, ok := l.Figure(id); ok {
				t.Errorf("%s: figure %s", tc.build, id)
			}
		}
	}
	// The engine's prefill share is the rate of the seconds alone.
	l, err := promql.New(fromFile(t, "../../testdata/real/llama.cpp-b10470-workload.prom"), "llamacpp", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := figure(t, l, "phases/engine_prefill"); !strings.Contains(e, "llamacpp:prompt_seconds_total") || strings.Contains(e, "tokens_predicted") {
		t.Errorf("engine prefill: %s", e)
	}
}
