package analysis

import (
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func sectionOf(r *report.Report, id string) *report.Section {
	for i := range r.Sections {
		if r.Sections[i].ID == id {
			return &r.Sections[i]
		}
	}
	return nil
}

// TestSlotsBreakdown: a slot that never ran has its size alone, a request
// without a limit has no tokens left, a speed shows only where a watch
// measured one; the summary counts the busy slots and the context spread.
func TestSlotsBreakdown(t *testing.T) {
	speed := 41.5
	s := &snapshot.Snapshot{Scalars: map[string]float64{"requests_processing": 2}, Slots: &snapshot.Slots{Status: snapshot.SlotsRead, Slots: []snapshot.Slot{
		{ID: 0, Ctx: 4096, Processing: true, HasTask: true, Task: 7, ContextTokens: 1024, PromptComputed: 900, PromptCached: 100, Decoded: 24, Remaining: -1, Speed: &speed},
		{ID: 1, Ctx: 4096, Processing: true, HasTask: true, Task: 8, ContextTokens: 300, PromptComputed: 300},
		{ID: 2, Ctx: 4096},
	}}}
	r := Analyze(s, Options{})
	sec := sectionOf(r, "slots")
	if sec == nil || sec.Table == nil || !sec.Fold {
		t.Fatalf("slots section %+v", sec)
	}
	if got := sec.Rows[0].Value; got != "2 of 3" {
		t.Errorf("busy %q, want 2 of 3", got)
	}
	// 1024 / 4096 = 25%, 300 / 4096 = 7.3%; the unused slot has no share.
	if got := sec.Rows[1].Value; got != "7.3%–25.0%" {
		t.Errorf("context %q", got)
	}
	want := [][]string{
		{"generating", "1.0K (25.0%)", "900", "100", "24", "no limit", "41.5"},
		{"prompt", "300 (7.3%)", "300", "0", "0", "0", ""},
		{"idle, unused", "", "", "", "", "", ""},
	}
	for i, w := range want {
		if got := strings.Join(sec.Table.Rows[i].Cells, "|"); got != strings.Join(w, "|") {
			t.Errorf("slot %d: %s, want %s", i, got, strings.Join(w, "|"))
		}
	}
	u := r.Breakdowns["slots"].Units
	if _, ok := u[0].Figures["tokens_remaining"]; ok || u[0].Figures["tokens_per_second"] != 41.5 || u[1].State != "prompt" || len(u[2].Figures) != 1 {
		t.Errorf("units %+v", u)
	}
	// An idle slot: its cached count is cleared on every build; from
	// b10406 its other counts too (Cleared), and only its context is
	// known.
	idle := &snapshot.Snapshot{Scalars: map[string]float64{"requests_processing": 0}, Slots: &snapshot.Slots{Status: snapshot.SlotsRead, Slots: []snapshot.Slot{
		{ID: 0, Ctx: 1024, HasTask: true, Task: 71, ContextTokens: 143, PromptComputed: 32, Decoded: 16},
		{ID: 1, Ctx: 1024, HasTask: true, Task: 70, ContextTokens: 143, Remaining: -1, Cleared: true},
	}}}
	ri := Analyze(idle, Options{})
	for i, w := range [][]string{
		{"idle", "143 (14.0%)", "32", "—", "16", "0"},
		{"idle", "143 (14.0%)", "—", "—", "—", "—"},
	} {
		if got := strings.Join(sectionOf(ri, "slots").Table.Rows[i].Cells, "|"); got != strings.Join(w, "|") {
			t.Errorf("idle slot %d: %s, want %s", i, got, strings.Join(w, "|"))
		}
	}
	iu := ri.Breakdowns["slots"].Units
	if _, ok := iu[0].Figures["prompt_tokens_cached"]; ok || iu[0].Figures["tokens_generated"] != 16 {
		t.Errorf("idle unit 0 %+v", iu[0].Figures)
	}
	if len(iu[1].Figures) != 3 || iu[1].Figures["context_tokens"] != 143 || iu[1].Figures["task"] != 70 {
		t.Errorf("cleared unit 1 %+v: want n_ctx, task and context only", iu[1].Figures)
	}
	folded := r.Folded("--breakdown")
	if fs := sectionOf(folded, "slots"); fs.Table != nil || fs.Rows[len(fs.Rows)-1].Note != "a row for each: --breakdown" || sec.Table == nil {
		t.Errorf("folded %+v", fs)
	}
}

// TestPartsBreakdown: a figure one unit lacks is a dash in its cell and
// absent from its figures; a column no unit has is left out.
func TestPartsBreakdown(t *testing.T) {
	part := func(v string, kv float64, waiting bool) snapshot.Part {
		p := &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsProcessing: 3, snapshot.KVCacheUsageRatio: kv}}
		if waiting {
			p.Scalars[snapshot.RequestsDeferred] = 4
		}
		return snapshot.Part{Label: "dp_rank", Value: v, Snapshot: p}
	}
	s := &snapshot.Snapshot{Scalars: map[string]float64{snapshot.RequestsProcessing: 6, snapshot.KVCacheUsageRatio: 0.5},
		Parts: []snapshot.Part{part("0", 0.2, true), part("1", 0.8, false)}}
	r := Analyze(s, Options{})
	sec := sectionOf(r, "dp_ranks")
	if sec == nil {
		t.Fatal("no dp_ranks section")
	}
	if got := strings.Join(sec.Table.Header, "|"); got != "DP rank|running|waiting|KV cache" {
		t.Errorf("header %s", got)
	}
	if got := strings.Join(sec.Table.Rows[1].Cells, "|"); got != "3|—|80.0%" {
		t.Errorf("rank 1: %s", got)
	}
	if _, ok := r.Breakdowns["dp_ranks"].Units[1].Figures[snapshot.RequestsDeferred]; ok {
		t.Error("a figure the rank does not publish is in its figures")
	}
	if sec.Rows[0].Value != "20.0%–80.0%" || !strings.Contains(sec.Rows[0].Note, "their mean, 50.0%") {
		t.Errorf("summary %+v", sec.Rows[0])
	}
}
