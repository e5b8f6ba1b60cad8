package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// snap is a hand-made snapshot: only what a case states is published.
func snap(scalars map[string]float64) *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Source: "test", Dialect: "tabbyapi", ScrapedAt: scrapedAt, TimeSource: "saved",
		Scalars: scalars, Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{},
	}
}

func findRow(r *report.Report, section, id string) (report.Row, bool) {
	for _, s := range r.Sections {
		if s.ID != section {
			continue
		}
		for _, rw := range s.Rows {
			if rw.ID == id {
				return rw, true
			}
		}
	}
	return report.Row{}, false
}

// noUndefined fails on any row or note that prints NaN or Inf: an absent
// figure is left out or shown as a dash, never as an undefined number.
func noUndefined(t *testing.T, r *report.Report) {
	t.Helper()
	bad := func(s string) bool {
		return strings.Contains(s, "NaN") || strings.Contains(s, "Inf") && !strings.Contains(s, "+Inf bucket")
	}
	for _, s := range r.Sections {
		for _, rw := range s.Rows {
			if bad(rw.Value) || bad(rw.Note) {
				t.Errorf("%s/%s prints an undefined number: %q %q", s.ID, rw.ID, rw.Value, rw.Note)
			}
		}
	}
	for _, n := range r.Notes {
		if bad(n.Text) {
			t.Errorf("note %s prints an undefined number: %q", n.ID, n.Text)
		}
	}
}

// Issue 9 class 1 and issue 15 classes 5–7: a figure needs every series it
// is built from; an absent or impossible input leaves it out.
func TestAbsentInputsLeaveFiguresOut(t *testing.T) {
	tests := []struct {
		name    string
		s       *snapshot.Snapshot
		section string
		id      string
		wantRow bool
		value   string // when wantRow: the row's value contains this
		note    string // when wantRow: the row's note contains this
		noteID  string // a note that must fire ("" none required)
		noNote  string // a note that must not fire
		check   func(t *testing.T, r *report.Report)
	}{
		{
			name:    "queries without hits: no hit rate",
			s:       snap(map[string]float64{"prefix_cache_queries": 507000, "requests_total": 10}),
			section: "prefix_cache", id: "hit_rate",
			check: func(t *testing.T, r *report.Report) {
				if r.Figures.PrefixCacheHitRatio != nil {
					t.Errorf("hit ratio = %v, want null", *r.Figures.PrefixCacheHitRatio)
				}
			},
		},
		{
			name:    "hits without queries: no hit rate",
			s:       snap(map[string]float64{"prefix_cache_hits": 100, "requests_total": 10}),
			section: "prefix_cache", id: "hit_rate",
		},
		{
			name:    "more hits than queries: counters out of step, no figure",
			s:       snap(map[string]float64{"prefix_cache_queries": 100, "prefix_cache_hits": 150, "requests_total": 1}),
			section: "prefix_cache", id: "hit_rate", wantRow: true, value: "—", note: "out of step",
			check: func(t *testing.T, r *report.Report) {
				if r.Figures.PrefixCacheHitRatio != nil {
					t.Errorf("hit ratio = %v, want null", *r.Figures.PrefixCacheHitRatio)
				}
			},
		},
		{
			name:    "all prompt tokens with the cached share unknown are not prefill work",
			s:       snap(map[string]float64{snapshot.PromptTokensAll: 507000, "tokens_predicted_total": 1000, "requests_total": 10}),
			section: "throughput", id: "prompt_tokens", wantRow: true, value: "507K", note: "cache hits included; this server does not say how many",
			check: func(t *testing.T, r *report.Report) {
				if _, ok := findRow(r, "throughput", "prefill_work"); ok {
					t.Error("a prefill work row from tokens that include cache hits")
				}
			},
		},
		{
			// vLLM before 0.16 (and the llm-d simulator): every prompt
			// token, and the prefix cache's lookups and hits: the hits are
			// among the prompt tokens, and lookups less hits estimate the
			// computed ones (23.5K − 17.9K = 5.6K), said as an estimate.
			name: "all prompt tokens beside the prefix cache's counts: how they relate",
			s: snap(map[string]float64{snapshot.PromptTokensAll: 23300, "prefix_cache_queries": 23500, "prefix_cache_hits": 17900,
				"tokens_predicted_total": 1000, "requests_total": 10}),
			section: "throughput", id: "prompt_tokens", wantRow: true, value: "23.3K", note: "includes the prefix cache's 17.9K hits: ≈5.6K computed (looked up − hit)",
		},
		{
			name:    "two populations: prefill work of those that said what was cached, the rest apart",
			s:       snap(map[string]float64{"prompt_tokens_total": 400, snapshot.PromptTokensAll: 720, "tokens_predicted_total": 10, "requests_total": 3}),
			section: "throughput", id: "prompt_tokens", wantRow: true, value: "720", note: "more, from requests whose cached share is unknown",
			check: func(t *testing.T, r *report.Report) {
				if rw, _ := findRow(r, "throughput", "prefill_work"); !strings.Contains(rw.Note, "of the requests that said them") {
					t.Errorf("prefill work note = %q", rw.Note)
				}
			},
		},
		{
			name: "prefix caching off: every prompt token computed, no hit rate section",
			s: func() *snapshot.Snapshot {
				s := snap(map[string]float64{"prompt_tokens_total": 5000, "tokens_predicted_total": 100, "requests_total": 2})
				s.PrefixCaching = "off"
				return s
			}(),
			section: "prefix_cache", id: "prefix_caching_off", wantRow: true, value: "off", note: "every prompt token is computed",
			check: func(t *testing.T, r *report.Report) {
				if rw, _ := findRow(r, "throughput", "prefill_work"); !strings.Contains(rw.Note, "prefix caching off") {
					t.Errorf("prefill work note = %q, want it to say prefix caching is off", rw.Note)
				}
			},
		},
		{
			name:    "drafted without accepted: no acceptance",
			s:       snap(map[string]float64{"spec_decode_num_draft_tokens_total": 100, "spec_decode_num_decode_steps_total": 50, "requests_total": 1}),
			section: "spec_decode", id: "draft_acceptance", wantRow: true, value: "—", note: "not published",
			check: func(t *testing.T, r *report.Report) {
				if r.Figures.SpecDecodeAcceptance != nil || r.Figures.SpecDecodeTokensPerStep != nil {
					t.Error("acceptance or tokens per step from an unpublished accepted count")
				}
			},
		},
		{
			name:    "infinite accepted tokens are absent, not a figure",
			s:       snap(map[string]float64{"spec_decode_num_draft_tokens_total": 100, "spec_decode_num_accepted_tokens_total": math.Inf(1), "spec_decode_num_decode_steps_total": 50, "requests_total": 1}),
			section: "spec_decode", id: "draft_acceptance", wantRow: true, value: "—",
		},
		{
			name:    "KV tokens above capacity: said, and no pressure advice",
			s:       snap(map[string]float64{"kv_cache_tokens": 1.3732910156250000e16, "kv_cache_max_tokens": 100000}),
			section: "live", id: "kv_cache", wantRow: true, value: "used exceeds capacity",
			noteID: "kv_cache_over_capacity", noNote: "kv_cache_pressure",
		},
		{
			name: "recurrent cache over budget is shown, never clamped",
			// The metric set's reference: 18,853,396,480 B held against a
			// 17.2 GB budget, usage 1.097.
			s: snap(map[string]float64{"recurrent_cache_bytes": 18853396480, "recurrent_cache_max_bytes": 17179869184,
				"recurrent_checkpoints": 110, "recurrent_checkpoint_bytes": 171394513}),
			section: "recurrent", id: "cache", wantRow: true, value: "109.7% over budget", noteID: "recurrent_over_budget",
		},
		{
			name:    "queue pressure: 2,826 queued against 162 running",
			s:       snap(map[string]float64{"requests_processing": 162, "requests_deferred": 2826}),
			section: "live", id: "state", wantRow: true, value: "162 generating, 2,826 queued", noteID: "queue_pressure",
		},
		{
			name:    "a short queue is not pressure",
			s:       snap(map[string]float64{"requests_processing": 4, "requests_deferred": 3}),
			section: "live", id: "state", wantRow: true, value: "4 generating, 3 queued", noNote: "queue_pressure",
		},
		{
			name:    "waiting with none running",
			s:       snap(map[string]float64{"requests_processing": 0, "requests_deferred": 5}),
			section: "live", id: "state", wantRow: true, value: "0 generating, 5 queued", noteID: "queue_stalled",
		},
		{
			name:    "only the waiting gauge published",
			s:       snap(map[string]float64{"requests_deferred": 0}),
			section: "live", id: "state", wantRow: true, value: "0 queued",
		},
		{
			name:    "offload RAM without its gauges reads as a dash, not 0",
			s:       snap(map[string]float64{"kv_offload_max_bytes": 1 << 30, "kv_offload_max_tokens": 1000}),
			section: "kv_offload", id: "ram", wantRow: true, value: "— / 1.0 GiB pinned",
			check: func(t *testing.T, r *report.Report) {
				if rw, _ := findRow(r, "kv_offload", "traffic"); !strings.Contains(rw.Note, "not published") {
					t.Errorf("traffic note = %q", rw.Note)
				}
				if r.Figures.KVOffloadPayback != nil || r.Figures.KVOffloadHitShare != nil {
					t.Error("offload figures from unpublished series")
				}
			},
		},
		{
			name: "an invalid series is named in a note",
			s: func() *snapshot.Snapshot {
				s := snap(map[string]float64{"requests_processing": 1})
				s.Invalid = []snapshot.Problem{{Series: "tabbyapi:requests_total", Reason: "a counter below zero (-180)"}}
				return s
			}(),
			section: "live", id: "state", wantRow: true, value: "1 generating", noteID: "invalid_series",
			check: func(t *testing.T, r *report.Report) {
				for _, n := range r.Notes {
					if n.ID == "invalid_series" && !strings.Contains(n.Text, "tabbyapi:requests_total") {
						t.Errorf("note does not name the series: %q", n.Text)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Analyze(tt.s, Options{Hist: true})
			noUndefined(t, r)
			rw, ok := findRow(r, tt.section, tt.id)
			if ok != tt.wantRow {
				t.Fatalf("row %s/%s present = %v, want %v (%+v)", tt.section, tt.id, ok, tt.wantRow, rw)
			}
			if ok && (!strings.Contains(rw.Value, tt.value) || !strings.Contains(rw.Note, tt.note)) {
				t.Errorf("row = %q / %q, want value with %q and note with %q", rw.Value, rw.Note, tt.value, tt.note)
			}
			if tt.noteID != "" && !hasNote(r, tt.noteID) {
				t.Errorf("notes %v, want %s", noteIDs(r), tt.noteID)
			}
			if tt.noNote != "" && hasNote(r, tt.noNote) {
				t.Errorf("notes %v, must not have %s", noteIDs(r), tt.noNote)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// Issue 9 class 6: a two-year-old capture whose only time is the file's
// modification time must not read as an idle server.
func TestFileTimeImplausible(t *testing.T) {
	start := scrapedAt.Add(-5 * time.Hour)
	base := map[string]float64{
		"prompt_seconds_total": 84, "tokens_predicted_seconds_total": 612, "requests_total": 180,
		"process_start_time_seconds": float64(start.Unix()),
	}
	copied := scrapedAt.Add(2 * 365 * 24 * time.Hour) // the file was copied two years later
	for _, tt := range []struct {
		source   string
		now      time.Time
		wantUtil bool
	}{
		{"mtime", copied, false},
		{"now", copied, false},
		{"saved", copied, true}, // a recorded time is the scrape's own: then the figure stands
		{"mtime", scrapedAt, true},
	} {
		s := snap(base)
		s.TimeSource = tt.source
		r := Analyze(s, Options{Now: tt.now})
		if got := r.Figures.MeanInFlight != nil; got != tt.wantUtil {
			t.Errorf("%s at %v: requests in flight present = %v, want %v", tt.source, tt.now, got, tt.wantUtil)
		}
		if r.Figures.Utilization != nil {
			t.Errorf("%s at %v: utilization from request time", tt.source, tt.now)
		}
		if got := hasNote(r, "file_time_not_scrape_time"); got == tt.wantUtil {
			t.Errorf("%s at %v: file-time note = %v, want %v", tt.source, tt.now, got, !tt.wantUtil)
		}
		if !tt.wantUtil {
			// 696 s of request time in 5 h up is 0.039 in flight: the
			// hand-worked figure is only right with the real scrape time.
			continue
		}
		if tt.now.Equal(scrapedAt) {
			if u := float64(*r.Figures.MeanInFlight); math.Abs(u-696.0/18000) > 1e-9 || r.Figures.BusyAtMost == nil || float64(*r.Figures.BusyAtMost) != u {
				t.Errorf("in flight = %v, busy at most %v, want 696/18000 both", u, r.Figures.BusyAtMost)
			}
		}
	}
}

// Issue 15 class 16: a histogram with 200,000 buckets prints at most
// maxDistRows bucket rows, and the rows still add up to every observation.
func TestDistributionFoldsManyBuckets(t *testing.T) {
	const n = 200000
	h := &histogram.Histogram{Count: n, Sum: n * n / 2}
	for i := 1; i <= n; i++ {
		h.Buckets = append(h.Buckets, histogram.Bucket{UpperBound: float64(i), Count: float64(i)})
	}
	h.Normalize()
	s := snap(map[string]float64{"requests_total": n})
	s.Histograms["request_prompt_tokens"] = h
	r := Analyze(s, Options{Hist: true})
	var sec *report.Section
	for i := range r.Sections {
		if r.Sections[i].ID == "dist_request_prompt_tokens" {
			sec = &r.Sections[i]
		}
	}
	if sec == nil {
		t.Fatal("no distribution section")
	}
	total, bucketRows := 0.0, 0
	for _, rw := range sec.Rows {
		if !strings.HasPrefix(rw.ID, "le_") {
			continue
		}
		bucketRows++
		var v float64
		for _, c := range strings.ReplaceAll(rw.Value, ",", "") {
			v = v*10 + float64(c-'0')
		}
		total += v
	}
	if bucketRows > maxDistRows {
		t.Errorf("%d bucket rows, want at most %d", bucketRows, maxDistRows)
	}
	if total != n {
		t.Errorf("rows add up to %v, want %d", total, n)
	}
	if last := sec.Rows[len(sec.Rows)-1]; last.ID != "folded" || !strings.Contains(last.Note, "200,000 occupied buckets") {
		t.Errorf("last row = %+v, want the folded caveat", last)
	}
}

// The cumulative section says its request times are no rate, and points
// to where rates are: --watch for a one-shot report, the table above when
// the report is shown under windowed rates (issue 21: the watch view said
// "see --watch" inside --watch).
func TestNoRatePointsToRates(t *testing.T) {
	s := snap(map[string]float64{
		snapshot.RequestsTotal: 10, snapshot.TokensPredictedTotal: 1000,
		snapshot.PromptSecondsTotal: 2, snapshot.TokensPredictedSecondsTotal: 20,
	})
	for _, tt := range []struct {
		with bool
		want string
	}{
		{false, "summed request time, not a rate: see --watch"},
		{true, "summed request time, not a rate: the rates are above"},
	} {
		row, ok := findRow(Analyze(s, Options{WithRates: tt.with}), "throughput", "no_rate")
		if !ok || row.Note != tt.want {
			t.Errorf("WithRates %v: row %+v (found %v), want note %q", tt.with, row, ok, tt.want)
		}
	}
}
