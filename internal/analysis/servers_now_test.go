package analysis

import (
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// vllmAdvice is vLLM's wording, as its dialect gives it.
var vllmAdvice = snapshot.Advice{
	QueueFix:       "raise max_num_seqs",
	AdmissionLimit: "--max-num-queued-reqs caps the requests in flight",
	QueueDeferred:  "deferred requests wait on a LoRA adapter slot",
	Wake:           "POST /wake_up",
}

func withExtra(s *snapshot.Snapshot, x map[string]float64) *snapshot.Snapshot {
	for k, v := range x {
		s.Extra[k] = v
	}
	s.Advice = vllmAdvice
	return s
}

func note(r *report.Report, id string) (report.Note, bool) {
	for _, n := range r.Notes {
		if n.ID == id {
			return n, true
		}
	}
	return report.Note{}, false
}

// Issue 28: vLLM's live state as it is now. Requests refused at
// admission never reach the queue gauges or the finished count: an
// overloaded server must not look calm. A deferred queue is not a capacity
// problem, and a sleeping engine is not idle.
func TestLiveStateNow(t *testing.T) {
	tests := []struct {
		name      string
		s         *snapshot.Snapshot
		row       string // the live row to check
		value     string // its value contains this ("" none expected; "-" the row is absent)
		rowNote   string // its note contains this
		colour    report.Severity
		noteID    string // a note that must fire with text containing noteText
		noteText  string
		noteIDNot string // a note that must not fire
	}{
		{
			// An idle-looking server that refused 312 requests: 290 by the
			// request cap, 22 by the prompt-token cap.
			name: "refused while the queue is empty",
			s: withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 0, "requests_total": 40}), map[string]float64{
				snapshot.ExtraAdmissionRejections:                             312,
				snapshot.ExtraAdmissionRejectionsBy + "max_num_queued_reqs":   290,
				snapshot.ExtraAdmissionRejectionsBy + "max_num_queued_tokens": 22,
			}),
			row: "refused", value: "312 requests", rowNote: "max_num_queued_reqs 290, max_num_queued_tokens 22", colour: report.Warn,
			noteID: "requests_refused", noteText: "312 requests were refused with 503 at admission, before queueing: they reach neither the queue nor the finished count, so the queue and the request rate understate the load; --max-num-queued-reqs caps the requests in flight; raise the limit",
		},
		{
			name: "none refused",
			s:    withExtra(snap(map[string]float64{"requests_processing": 2, "requests_deferred": 0}), map[string]float64{snapshot.ExtraAdmissionRejections: 0}),
			row:  "refused", value: "0 requests", rowNote: "none",
			noteIDNot: "requests_refused",
		},
		{
			name: "not published: no row, no note",
			s:    withExtra(snap(map[string]float64{"requests_processing": 2, "requests_deferred": 0}), nil),
			row:  "refused", value: "-",
			noteIDNot: "requests_refused",
		},
		{
			// 16 waiting against 4 running is pressure, but 12 of the 16
			// wait on a LoRA slot: the capacity knobs are not the advice.
			name: "queue mostly deferred",
			s: withExtra(snap(map[string]float64{"requests_processing": 4, "requests_deferred": 16}),
				map[string]float64{snapshot.ExtraWaitingDeferred: 12}),
			row: "state", value: "4 generating, 16 queued", rowNote: "12 of the queue deferred", colour: report.Warn,
			noteID: "queue_pressure", noteText: "but 12 of them are deferred, not waiting for capacity: deferred requests wait on a LoRA adapter slot",
		},
		{
			// vLLM #53130's stuck scheduler at 12:10: 4 running, 487
			// waiting, 468 of them deferred.
			name: "vllm 53130",
			s: withExtra(snap(map[string]float64{"requests_processing": 4, "requests_deferred": 487}),
				map[string]float64{snapshot.ExtraWaitingDeferred: 468}),
			row: "state", value: "4 generating, 487 queued", rowNote: "468 of the queue deferred", colour: report.Warn,
			noteID: "queue_pressure", noteText: "487 requests queued against 4 running: requests spend longer waiting than the batch can absorb, and time to first token grows with the queue; but 468 of them are deferred",
		},
		{
			// 2 of 16 deferred: the queue is capacity's, the advice too.
			name: "queue mostly capacity",
			s: withExtra(snap(map[string]float64{"requests_processing": 4, "requests_deferred": 16}),
				map[string]float64{snapshot.ExtraWaitingDeferred: 2}),
			row: "state", value: "4 generating, 16 queued", rowNote: "2 of the queue deferred", colour: report.Warn,
			noteID: "queue_pressure", noteText: "grows with the queue; raise max_num_seqs",
		},
		{
			name: "all deferred, none running",
			s: withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 3}),
				map[string]float64{snapshot.ExtraWaitingDeferred: 3}),
			row: "state", value: "3 queued",
			noteID: "queue_stalled", noteText: "3 requests waiting and none running: they are deferred, not waiting for capacity",
		},
		{
			// Asleep at level 1 with nothing to do reads asleep, not idle.
			name: "asleep, nothing waiting",
			s: withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 0}), map[string]float64{
				snapshot.ExtraSleepState + "awake": 0, snapshot.ExtraSleepState + "weights_offloaded": 1, snapshot.ExtraSleepState + "discard_all": 0,
			}),
			row: "state", value: "asleep: weights offloaded to CPU memory, sleep level 1",
			noteIDNot: "queue_stalled",
		},
		{
			name: "asleep at level 2 with a queue",
			s: withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 2}), map[string]float64{
				snapshot.ExtraSleepState + "awake": 0, snapshot.ExtraSleepState + "weights_offloaded": 0, snapshot.ExtraSleepState + "discard_all": 1,
			}),
			row: "state", value: "asleep: weights and KV cache discarded, sleep level 2, 2 queued",
			noteID: "queue_stalled", noteText: "the engine is asleep (weights and KV cache discarded, sleep level 2), so nothing runs until it is woken (POST /wake_up)",
		},
		{
			name: "awake and idle",
			s: withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 0}), map[string]float64{
				snapshot.ExtraSleepState + "awake": 2, snapshot.ExtraSleepState + "weights_offloaded": 0, snapshot.ExtraSleepState + "discard_all": 0,
			}),
			row: "state", value: "idle",
		},
		{
			// TGI's reservation: 6,144 of a 98,304-token budget is 6.25%.
			name: "token budget with its maximum",
			s: withExtra(snap(map[string]float64{"requests_processing": 3}), map[string]float64{
				snapshot.ExtraTokenBudgetReserved: 6144, snapshot.ExtraTokenBudgetMax: 98304,
			}),
			row: "token_budget", value: "6.2% reserved", rowNote: "6.1K / 98.3K tokens: prompt + max_new_tokens of the running batch, not KV in use",
		},
		{
			name: "token budget without it",
			s: withExtra(snap(map[string]float64{"requests_processing": 3}), map[string]float64{
				snapshot.ExtraTokenBudgetReserved: 6144,
			}),
			row: "token_budget", value: "6.1K tokens reserved", rowNote: "the budget is not published",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Analyze(tt.s, Options{})
			noUndefined(t, r)
			row, ok := findRow(r, "live", tt.row)
			switch {
			case tt.value == "-":
				if ok {
					t.Errorf("row %s = %+v, want none", tt.row, row)
				}
			case !ok:
				t.Errorf("no row %s", tt.row)
			default:
				if !strings.Contains(row.Value, tt.value) || !strings.Contains(row.Note, tt.rowNote) {
					t.Errorf("row %s = %q / %q, want %q / %q", tt.row, row.Value, row.Note, tt.value, tt.rowNote)
				}
				if row.Severity != tt.colour {
					t.Errorf("row %s colour %v, want %v", tt.row, row.Severity, tt.colour)
				}
			}
			if tt.noteID != "" {
				n, ok := note(r, tt.noteID)
				if !ok || !strings.Contains(n.Text, tt.noteText) {
					t.Errorf("note %s = %q (%v), want it to contain %q", tt.noteID, n.Text, ok, tt.noteText)
				}
			}
			if _, ok := note(r, tt.noteIDNot); tt.noteIDNot != "" && ok {
				t.Errorf("note %s fired", tt.noteIDNot)
			}
		})
	}
}

// The refusals are a note on what happened: a window judges its own
// (30 in the window fire it; none in the window, 312 before it, say so as
// information).
func TestRefusedJudgedOnTheWindow(t *testing.T) {
	s := withExtra(snap(map[string]float64{"requests_processing": 0, "requests_deferred": 0}), map[string]float64{snapshot.ExtraAdmissionRejections: 312})
	r := Analyze(s, Options{})
	in := JudgeWindow(r, s, &Window{Label: "the last 5m", Counters: map[string]float64{snapshot.ExtraAdmissionRejections: 30}})
	if n, ok := note(in, "requests_refused"); !ok || !strings.HasPrefix(n.Text, "in the last 5m: 30 requests were refused") {
		t.Errorf("window with 30 refused: %q %v", n.Text, ok)
	}
	before := JudgeWindow(r, s, &Window{Label: "the last 5m", Counters: map[string]float64{snapshot.ExtraAdmissionRejections: 0}})
	if _, ok := note(before, "requests_refused"); ok {
		t.Error("a window with none refused fires the note")
	}
	if n, ok := note(before, NoteBeforeWindow); !ok || !strings.Contains(n.Text, "312 requests were refused") {
		t.Errorf("refusals before the window: %q %v", n.Text, ok)
	}
	if row, _ := findRow(before, "live", "refused"); row.Severity != report.None {
		t.Errorf("refused row colour %v with none in the window", row.Severity)
	}
}

// Engine steps, speculated tokens, TGI's engine time and entry count, and
// an offload connector that publishes only its transfers.
func TestStepsTimeAndTransfers(t *testing.T) {
	s := withExtra(snap(map[string]float64{
		"requests_total": 1000, "tokens_predicted_total": 380000,
		// Busy 224.7 s of a 3,600 s uptime: 6.2%.
		"engine_busy_seconds_total": 224.7, "process_start_time_seconds": float64(scrapedAt.Unix() - 3600),
		// 44.7 s of prefill calls and 180 s of decode calls: 19.9% and 80.1%
		// of the busy time, nothing else.
		"engine_prefill_seconds_total": 44.7, "engine_decode_seconds_total": 180,
		"kv_offload_read_bytes_total": 12e9, "kv_offload_written_bytes_total": 48e9,
	}), map[string]float64{
		snapshot.ExtraStepTokens: 2930000, snapshot.ExtraEngineSteps: 45000, // 65.1 a step
		snapshot.ExtraSpeculatedTokens: 12000, snapshot.ExtraSpeculationSteps: 30000, // 1.40 a request-step
		snapshot.ExtraRequestCount:          205,
		snapshot.ExtraKVOffloadLoadSeconds:  1, // 12 GB/s
		snapshot.ExtraKVOffloadStoreSeconds: 4, // 12 GB/s
	})
	s.Advice.EngineBusy = "time in batch prefill and decode calls"
	r := Analyze(s, Options{})
	noUndefined(t, r)
	for _, c := range []struct{ section, id, value, note string }{
		{"throughput", "step_tokens", "65.1", "mean over 45.0K steps"},
		{"throughput", "speculated", "12.0K accepted", "1.40 tokens per request-step"},
		{"phases", "engine_busy", "3.7 min of 1.0 h up", "6.2% utilization (time in batch prefill and decode calls)"},
		{"phases", "engine_prefill", "19.9%", "44.7 s of engine time"},
		{"phases", "engine_decode", "80.1%", "3.0 min of engine time"},
		{"requests", "entry_calls", "205", "not requests received"},
		{"kv_offload", "traffic", "11.2 GiB read · 44.7 GiB written", "0.25 read back"},
		{"kv_offload", "speed", "load 11.2 GiB/s, store 11.2 GiB/s", "while transferring"},
	} {
		row, ok := findRow(r, c.section, c.id)
		if !ok || !strings.Contains(row.Value, c.value) || !strings.Contains(row.Note, c.note) {
			t.Errorf("%s/%s = %q / %q (%v), want %q / %q", c.section, c.id, row.Value, row.Note, ok, c.value, c.note)
		}
	}
	// The connector publishes no capacity, pages or RAM: no rows of them.
	for _, id := range []string{"hit_share", "ram", "churn"} {
		if row, ok := findRow(r, "kv_offload", id); ok {
			t.Errorf("kv_offload/%s = %+v, want none for a connector", id, row)
		}
	}
	// None accepted, as every server without speculation says: no row.
	s.Extra[snapshot.ExtraSpeculatedTokens] = 0
	if row, ok := findRow(Analyze(s, Options{}), "throughput", "speculated"); ok {
		t.Errorf("speculated with none accepted: %+v", row)
	}
}
