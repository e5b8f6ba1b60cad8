package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// sglangSnap is a hand-made SGLang snapshot with the 2026 figures given.
func sglangSnap(scalars, extra map[string]float64) *snapshot.Snapshot {
	s := snap(scalars)
	s.Dialect = "sglang"
	s.Extra = extra
	s.Advice = snapshot.Advice{Preempted: "retracted", Preemptions: "retractions", PreemptFix: "lower --max-running-requests"}
	return s
}

// Retracted work is judged as a share of the prompt tokens computed: 600
// + 0 of 10,000 (6%) warns, 400 + 99 of 10,000 (4.99%) does not, and
// without the computed tokens there is no share to judge.
func TestRetractedWork(t *testing.T) {
	for _, c := range []struct {
		name              string
		computed, in, out float64
		hasComputed       bool
		value, note       string
		fires             bool
	}{
		{"over 5%", 10000, 600, 0, true, "600 tokens", "6.0% of the prompt tokens computed", true},
		{"under 5%", 10000, 400, 99, true, "499 tokens", "5.0% of the prompt tokens computed", false},
		{"exactly 5%", 10000, 400, 100, true, "500 tokens", "5.0% of the prompt tokens computed", true},
		{"no computed tokens", 0, 600, 0, false, "600 tokens", "computed again on resuming", false},
		{"nothing retracted", 10000, 0, 0, true, "0 tokens", "0 prompt + 0 generated", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := map[string]float64{snapshot.RequestsTotal: 10}
			if c.hasComputed {
				sc[snapshot.PromptTokensTotal] = c.computed
			}
			r := Analyze(sglangSnap(sc, map[string]float64{
				snapshot.ExtraPreemptions: 2, snapshot.ExtraRetractedPromptTokens: c.in, snapshot.ExtraRetractedGeneratedTokens: c.out,
			}), Options{})
			row, ok := findRow(r, "requests", "retracted_work")
			if !ok {
				t.Fatal("no retracted work row")
			}
			if row.Value != c.value || !strings.Contains(row.Note, c.note) {
				t.Errorf("row %q %q, want %q and a note with %q", row.Value, row.Note, c.value, c.note)
			}
			fired := slices.Contains(noteIDs(r), "retracted_work")
			if fired != c.fires || fired != (row.Severity == report.Warn) {
				t.Errorf("note fired %v, row %v; want %v", fired, row.Severity, c.fires)
			}
			if fired && !strings.Contains(r.Notes[len(r.Notes)-1].Text, "lower --max-running-requests") {
				t.Errorf("note %q lacks the server's knob", r.Notes[len(r.Notes)-1].Text)
			}
		})
	}
	// Half the waste is no figure.
	r := Analyze(sglangSnap(map[string]float64{snapshot.PromptTokensTotal: 100}, map[string]float64{snapshot.ExtraRetractedPromptTokens: 600}), Options{})
	if row, _ := findRow(r, "requests", "retracted_work"); row.Value != "—" || slices.Contains(noteIDs(r), "retracted_work") {
		t.Errorf("prompt tokens alone: row %q, notes %q", row.Value, noteIDs(r))
	}
}

// The live state's parts, each worked out from the figures given.
func TestLiveStateParts(t *testing.T) {
	r := Analyze(sglangSnap(map[string]float64{
		snapshot.RequestsProcessing: 56, snapshot.RequestsDeferred: 19,
		snapshot.KVCacheTokens: 310000, snapshot.KVCacheMaxTokens: 800000,
		snapshot.KVCacheEvictableTokens: 30000, snapshot.KVCacheFreeTokens: 458000,
	}, map[string]float64{
		snapshot.ExtraRunningByPriority + "10": 18, snapshot.ExtraRunningByPriority + "0": 38, snapshot.ExtraRunningByPriority + "2": 0,
		snapshot.ExtraQueuedByPriority + "10": 17, snapshot.ExtraQueuedByPriority + "0": 2,
		snapshot.ExtraPausedRequests: 3, snapshot.ExtraKVPoolUsage + "swa": 0.665, snapshot.ExtraContextLength: 131072,
	}), Options{})
	var ids []string
	for _, s := range r.Sections {
		if s.ID == "live" {
			for _, row := range s.Rows {
				ids = append(ids, row.ID)
			}
		}
	}
	// Priorities in numeric order, 2 before 10.
	want := []string{"state", "priority_0", "priority_2", "priority_10", "paused", "kv_cache", "kv_cached", "kv_pool_swa", "context_length"}
	if !slices.Equal(ids, want) {
		t.Errorf("live rows %q, want %q", ids, want)
	}
	for _, c := range []struct{ id, value, note string }{
		{"priority_0", "38 generating, 2 queued", "of the state above"},
		{"priority_2", "0 generating", ""}, // no queued series for it
		{"priority_10", "18 generating, 17 queued", ""},
		{"paused", "3 requests", "weight update"},
		{"kv_cache", "38.8%", "310K / 800K tokens, full-attention pool"}, // 310,000 / 800,000
		{"kv_cached", "3.8%", "30.0K tokens no running request holds"},   // 30,000 / 800,000 = 3.75%
		{"kv_cached", "", "458K free"},
		{"kv_pool_swa", "66.5%", "full-attention pool"},
		{"context_length", "131K tokens", "holds 6.1 requests"}, // 800,000 / 131,072 = 6.10
	} {
		row, _ := findRow(r, "live", c.id)
		if !strings.Contains(row.Value, c.value) || !strings.Contains(row.Note, c.note) {
			t.Errorf("%s: %q %q, want %q and %q", c.id, row.Value, row.Note, c.value, c.note)
		}
	}
	// Nothing paused is no row; no pool beside the KV cache, no pool word.
	r = Analyze(sglangSnap(map[string]float64{snapshot.KVCacheTokens: 1, snapshot.KVCacheMaxTokens: 4},
		map[string]float64{snapshot.ExtraPausedRequests: 0}), Options{})
	if _, ok := findRow(r, "live", "paused"); ok {
		t.Error("a paused row for none paused")
	}
	if row, _ := findRow(r, "live", "kv_cache"); strings.Contains(row.Note, "pool") {
		t.Errorf("KV note %q names a pool without a hybrid model", row.Note)
	}
}

// The engine's busy time split by phase, and the hits by tier.
func TestEnginePhasesAndTiers(t *testing.T) {
	r := Analyze(sglangSnap(map[string]float64{
		snapshot.EngineBusySecondsTotal: 1500, snapshot.EnginePrefillSecondsTotal: 120, snapshot.EngineDecodeSecondsTotal: 1200,
		snapshot.PrefixCacheQueries: 25300000, snapshot.PrefixCacheHits: 15550000, snapshot.PromptTokensTotal: 9750000,
		snapshot.PrefixCacheHostHits: 1250000, snapshot.PrefixCacheStorageHits: 0, snapshot.RequestsTotal: 1,
	}, map[string]float64{}), Options{})
	for _, c := range []struct{ section, id, value, note string }{
		{"phases", "engine_prefill", "8.0%", "2.0 min of engine time"}, // 120 / 1500
		{"phases", "engine_decode", "80.0%", "20.0 min"},               // 1200 / 1500
		{"phases", "engine_other", "12.0%", "3.0 min"},                 // (1500 − 1320) / 1500
		{"prefix_cache", "hit_device", "56.5%", "14.3M"},               // (15.55M − 1.25M) / 25.3M
		{"prefix_cache", "hit_host", "4.9%", "1.2M"},                   // 1.25M / 25.3M = 4.94%
		{"prefix_cache", "hit_storage", "0.0%", ""},
	} {
		row, ok := findRow(r, c.section, c.id)
		if !ok || row.Value != c.value || !strings.Contains(row.Note, c.note) {
			t.Errorf("%s/%s: %v %q %q, want %q and %q", c.section, c.id, ok, row.Value, row.Note, c.value, c.note)
		}
	}
	// No hit beyond the device: no tier rows; phases adding up to the
	// busy time: no "other".
	r = Analyze(sglangSnap(map[string]float64{
		snapshot.EngineBusySecondsTotal: 100, snapshot.EnginePrefillSecondsTotal: 30, snapshot.EngineDecodeSecondsTotal: 70,
		snapshot.PrefixCacheQueries: 100, snapshot.PrefixCacheHits: 50, snapshot.PrefixCacheHostHits: 0, snapshot.RequestsTotal: 1,
	}, map[string]float64{}), Options{})
	for _, id := range []string{"phases/engine_other", "prefix_cache/hit_host", "prefix_cache/hit_device"} {
		sec, row, _ := strings.Cut(id, "/")
		if _, ok := findRow(r, sec, row); ok {
			t.Errorf("%s shown", id)
		}
	}
}

// SGLang's verify passes: tokens per pass, and no draft acceptance row
// (it counts no drafted tokens).
func TestTokensPerVerify(t *testing.T) {
	r := Analyze(sglangSnap(map[string]float64{snapshot.TokensPredictedTotal: 1020000, snapshot.RequestsTotal: 1500},
		map[string]float64{snapshot.ExtraSpecVerifyCalls: 300000}), Options{})
	row, ok := findRow(r, "spec_decode", "tokens_per_verify")
	if !ok || row.Value != "3.40" { // 1,020,000 / 300,000
		t.Errorf("tokens per verify %v %q, want 3.40", ok, row.Value)
	}
	if _, ok := findRow(r, "spec_decode", "draft_acceptance"); ok {
		t.Error("a draft acceptance row where no drafted tokens are counted")
	}
	if !SectionsOf(r2s(r)).SpecDecode {
		t.Error("verify passes do not open the speculative section")
	}
}

// r2s is a snapshot with the report's Extra, for SectionsOf.
func r2s(r *report.Report) *snapshot.Snapshot {
	s := snap(map[string]float64{})
	for k, v := range r.Extra {
		s.Extra[k] = float64(v)
	}
	return s
}
