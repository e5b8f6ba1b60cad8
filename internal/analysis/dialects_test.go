package analysis

import (
	"fmt"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func TestDialectRows(t *testing.T) {
	s := &snapshot.Snapshot{
		Dialect: "vllm",
		Scalars: map[string]float64{
			"prefix_cache_queries": 10000, "prefix_cache_hits": 0,
			"spec_decode_num_draft_tokens_total": 4000, "spec_decode_num_accepted_tokens_total": 2000,
		},
		Histograms: map[string]*histogram.Histogram{},
		Extra: map[string]float64{
			"num_preemptions_total":  3,
			"finished_reason:stop":   90,
			"finished_reason:length": 6,
			"finished_reason:abort":  2,
			"finished_reason:error":  2,
			"kv_block_size":          1024,
			// 1000 drafts of 4 tokens; per position 800, 600, 400, 200 accepted.
			"spec_decode_num_drafts_total":    1000,
			"spec_decode_accepted_per_pos:0":  800,
			"spec_decode_accepted_per_pos:1":  600,
			"spec_decode_accepted_per_pos:2":  400,
			"spec_decode_accepted_per_pos:3":  200,
			"spec_decode_accepted_per_pos:10": 0,
		},
	}
	r := Analyze(s, Options{})
	tests := []struct{ section, id, field, want string }{
		{"requests", "preemptions", "value", "3"},
		{"requests", "finished_stop", "value", "90.0%"},
		{"requests", "finished_error", "value", "2.0%"},
		{"requests", "finished_length", "note", "6 requests: hit max_tokens"},
		{"prefix_cache", "block_size", "value", "1,024 tokens"},
		// 1 + 2000/1000.
		{"spec_decode", "mean_acceptance_length", "value", "3.00"},
		{"spec_decode", "position_0", "value", "80.0%"},
		{"spec_decode", "position_3", "value", "20.0%"},
		{"spec_decode", "position_10", "value", "0.0%"},
	}
	for _, tt := range tests {
		rw := row(t, r, tt.section, tt.id)
		got := rw.Value
		if tt.field == "note" {
			got = rw.Note
		}
		if got != tt.want {
			t.Errorf("%s/%s %s = %q, want %q", tt.section, tt.id, tt.field, got, tt.want)
		}
	}
	for _, id := range []string{"preemptions", "requests_errored", "prefix_block_size"} {
		if !hasNote(r, id) {
			t.Errorf("note %s missing: %v", id, noteIDs(r))
		}
	}
	// Position rows sort numerically: 0,1,2,3,10.
	var order []string
	for _, s := range r.Sections {
		if s.ID == "spec_decode" {
			for _, rw := range s.Rows {
				order = append(order, rw.ID)
			}
		}
	}
	want := []string{"draft_acceptance", "mean_acceptance_length", "position_0", "position_1", "position_2", "position_3", "position_10"}
	if len(order) != len(want) {
		t.Fatalf("spec rows %v", order)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("spec rows %v, want %v", order, want)
		}
	}
}

func TestModelListCapped(t *testing.T) {
	var models []string
	for i := range 50 {
		models = append(models, fmt.Sprintf("m%02d", i))
	}
	r := Analyze(&snapshot.Snapshot{Dialect: "vllm", Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{}, Models: models}, Options{})
	want := "50 models served, reported together: m00, m01, m02, m03, m04, m05, m06, m07 and 42 more (--model to pick one)"
	if len(r.Header) == 0 || r.Header[0] != want {
		t.Errorf("header %q, want %q", r.Header, want)
	}
}
