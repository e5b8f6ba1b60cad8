package analysis

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
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

// Notes name the server's own event and knobs (issue 9.11): SGLang
// retracts, with its flags; vLLM preempts, with its engine arguments.
func TestPreemptionAdvice(t *testing.T) {
	for _, tc := range []struct {
		advice      snapshot.Advice
		label, note string
	}{
		{snapshot.Advice{Preempted: "retracted", Preemptions: "retractions", PreemptFix: "lower --max-running-requests, or raise --mem-fraction-static"}, "retractions",
			"2 requests were retracted: the KV cache ran out while they ran, and their work is recomputed; lower --max-running-requests, or raise --mem-fraction-static"},
		{snapshot.Advice{Preempted: "preempted", Preemptions: "preemptions", PreemptFix: "lower max_num_seqs or max_model_len, or raise gpu_memory_utilization"}, "preemptions",
			"2 requests were preempted: the KV cache ran out while they ran, and their work is recomputed; lower max_num_seqs or max_model_len, or raise gpu_memory_utilization"},
		// No advice: the event without knobs never borrowed from another server.
		{snapshot.Advice{}, "preemptions", "2 requests were preempted: the KV cache ran out while they ran, and their work is recomputed"},
	} {
		s := &snapshot.Snapshot{Dialect: "x", Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{},
			Extra: map[string]float64{"num_preemptions_total": 2}, Advice: tc.advice}
		r := Analyze(s, Options{})
		if got := row(t, r, "requests", "preemptions").Label; got != tc.label {
			t.Errorf("label %q, want %q", got, tc.label)
		}
		if got := noteText(r, "preemptions"); got != tc.note {
			t.Errorf("note %q\nwant %q", got, tc.note)
		}
	}
}

// With prefix caching off there is no block-size hint (issue 9.4).
func TestNoBlockSizeWhenPrefixCachingOff(t *testing.T) {
	for _, state := range []string{"off", "on", ""} {
		s := &snapshot.Snapshot{Dialect: "vllm", Scalars: map[string]float64{"prompt_tokens_total": 100, "cached_tokens_total": 0},
			Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{"kv_block_size": 16}, PrefixCaching: state}
		r := Analyze(s, Options{})
		has := false
		for _, sec := range r.Sections {
			for _, rw := range sec.Rows {
				has = has || rw.ID == "block_size"
			}
		}
		if has != (state != "off") {
			t.Errorf("PrefixCaching %q: block_size row shown = %v", state, has)
		}
	}
}

// llama.cpp: per-slot speeds from the counters, and no batch occupancy
// from 0/0 (issue 9.13, 9.14).
func TestLlamaCppRows(t *testing.T) {
	s := &snapshot.Snapshot{Dialect: "llamacpp", Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{},
		Extra: map[string]float64{"slot_prefill_tokens_per_second": 48213 / 31.415, "slot_decode_tokens_per_second": 49.14,
			"n_decode_total": 402117, "n_busy_slots_per_decode": 3.07}}
	r := Analyze(s, Options{})
	if v := row(t, r, "throughput", "slot_prefill_speed").Value; v != "1.5K tok/s" { // 1,534.7
		t.Errorf("prefill speed %q", v)
	}
	if v := row(t, r, "throughput", "slot_decode_speed").Value; v != "49.1 tok/s" {
		t.Errorf("decode speed %q", v)
	}
	if v := row(t, r, "throughput", "batch_occupancy").Value; v != "3.07 slots per decode" {
		t.Errorf("occupancy %q", v)
	}
	fresh := &snapshot.Snapshot{Dialect: "llamacpp", Scalars: map[string]float64{}, Histograms: map[string]*histogram.Histogram{},
		Extra: map[string]float64{"n_decode_total": 0, "n_busy_slots_per_decode": 0}}
	for _, sec := range Analyze(fresh, Options{}).Sections {
		for _, rw := range sec.Rows {
			if rw.ID == "batch_occupancy" || rw.ID == "decode_calls" || rw.ID == "poll_gauges" {
				t.Errorf("fresh server shows %s %q", rw.ID, rw.Value)
			}
		}
	}
}

func noteText(r *report.Report, id string) string {
	for _, n := range r.Notes {
		if n.ID == id {
			return n.Text
		}
	}
	return ""
}

// Without a dialect's advice no note or row borrows a server's knobs or
// mechanisms: every server-specific word comes from Snapshot.Advice.
func TestNoServerWordingWithoutAdvice(t *testing.T) {
	for _, fixture := range []string{"offload-thrashing", "offload-healthy", "hybrid-raise", "busy"} {
		s := load(t, fixture)
		want := s.Advice
		s.Advice = snapshot.Advice{}
		r := Analyze(s, Options{})
		var texts []string
		for _, n := range r.Notes {
			texts = append(texts, n.Text)
		}
		for _, sec := range r.Sections {
			for _, rw := range sec.Rows {
				texts = append(texts, rw.Label, rw.Value, rw.Note)
			}
		}
		for _, text := range texts {
			for _, word := range []string{want.OffloadBudget, want.RecurrentBudget, want.ColdAlloc, "tabbyAPI", "generator", "config.yml"} {
				if word != "" && strings.Contains(text, word) {
					t.Errorf("%s without advice: %q says %q", fixture, text, word)
				}
			}
		}
	}
}

// Finish-reason shares divide by a total summed most common reason first,
// not in the map's order, so that a share's last digit is the same on every
// run: 0.3 + 0.2 + 0.1 is 0.6, while 0.1 + 0.2 + 0.3 is 0.6000000000000001.
func TestFinishedSharesStable(t *testing.T) {
	stop, length, abort := 0.3, 0.2, 0.1
	want := abort / (stop + length + abort) // in float64, not constant arithmetic
	for range 20 {
		s := &snapshot.Snapshot{
			Scalars:    map[string]float64{},
			Histograms: map[string]*histogram.Histogram{},
			Extra: map[string]float64{
				snapshot.ExtraFinishedReason + "stop":   stop,
				snapshot.ExtraFinishedReason + "length": length,
				snapshot.ExtraFinishedReason + "abort":  abort,
			},
		}
		r := Analyze(s, Options{})
		got := row(t, r, "requests", "finished_abort").Bar
		if got == nil || float64(*got) != want {
			t.Fatalf("abort share bar = %v, want %v", fmtBar(got), want)
		}
	}
}

func fmtBar(b *report.Number) string {
	if b == nil {
		return "none"
	}
	return fmt.Sprint(float64(*b))
}
