package rates

import (
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// vllmLike is a scrape with preemptions and finish reasons at sec.
func vllmLike(sec float64, requests, preempted, errored float64) *snapshot.Snapshot {
	s := snap(start0, "requests_total", requests, "requests_processing", 1.0)
	s.Extra = map[string]float64{
		snapshot.ExtraPreemptions:              preempted,
		snapshot.ExtraFinishedReason + "stop":  requests - errored,
		snapshot.ExtraFinishedReason + "error": errored,
	}
	s.ScrapedAt = at(sec)
	return s
}

func noteIDs(r *report.Report) map[string]report.Note {
	out := map[string]report.Note{}
	for _, n := range r.Notes {
		if _, dup := out[n.ID]; !dup {
			out[n.ID] = n
		}
	}
	return out
}

func rowColour(r *report.Report, id string) report.Severity {
	sec, row, _ := strings.Cut(id, "/")
	for _, s := range r.Sections {
		if s.ID != sec {
			continue
		}
		for _, rw := range s.Rows {
			if rw.ID == row {
				return rw.Severity
			}
		}
	}
	return "absent"
}

// --since judges the window: 7 preemptions and 2 errors before it and none
// in it are information; 2 more in it are the window's note, its row
// coloured as the note says.
func TestSinceJudgesTheWindow(t *testing.T) {
	before := vllmLike(0, 100, 7, 2)
	tests := []struct {
		name   string
		after  *snapshot.Snapshot
		fired  map[string]report.Severity // note id → severity
		says   string                     // the preemptions note says this
		colour report.Severity            // requests/preemptions
		trips  bool                       // a note asks for action (--fail-on warn)
	}{
		{"quiet window", vllmLike(60, 150, 7, 2),
			map[string]report.Severity{analysis.NoteBeforeWindow: report.Info}, "not in the 1m between the two scrapes, only before it: 7 requests were preempted", report.None, false},
		{"preempted in it", vllmLike(60, 150, 9, 2),
			map[string]report.Severity{"preemptions": report.Warn, analysis.NoteBeforeWindow: report.Info}, "in the 1m between the two scrapes: 2 requests were preempted", report.Warn, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			life := analysis.Analyze(tt.after, analysis.Options{})
			if n := noteIDs(life); n["preemptions"].Severity != report.Warn || n["requests_errored"].Severity != report.Bad {
				t.Fatalf("the one-shot report judges the lifetime: %v", life.Notes)
			}
			r := SinceReport(life, before, tt.after)
			got := noteIDs(r)
			for id, sev := range tt.fired {
				if got[id].Severity != sev {
					t.Errorf("note %s: %q, want %s (notes %v)", id, got[id].Severity, sev, r.Notes)
				}
			}
			if _, ok := got["requests_errored"]; ok {
				t.Errorf("errors only before the window are judged bad: %v", r.Notes)
			}
			if !strings.Contains(joinNotes(r), tt.says) {
				t.Errorf("notes %q do not say %q", joinNotes(r), tt.says)
			}
			if c := rowColour(r, "requests/preemptions"); c != tt.colour {
				t.Errorf("preemptions row %q, want %q", c, tt.colour)
			}
			if c := rowColour(r, "requests/finished_error"); c != report.None {
				t.Errorf("error row %q: the lifetime's bad without a note", c)
			}
			if trips := r.Worst().Rank() >= report.Warn.Rank(); trips != tt.trips {
				t.Errorf("worst note %q: --fail-on warn would trip %v, want %v (it judges the window)", r.Worst(), trips, tt.trips)
			}
			if r.Sections[0].ID != "rates" || r.Rates == nil {
				t.Error("the rates are not first")
			}
			// The one-shot report is not changed.
			if n := noteIDs(life); n["preemptions"].Severity != report.Warn {
				t.Error("SinceReport changed the report it was given")
			}
		})
	}
}

// The watch view judges the longest window shown; with one scrape there is
// none yet and every note on what happened is before it.
func TestHistoryJudge(t *testing.T) {
	h := NewHistory(5 * time.Minute)
	first := vllmLike(0, 100, 7, 0)
	h.Add(first, first.ScrapedAt)
	r := h.Judge(analysis.Analyze(first, analysis.Options{}), first, []time.Duration{time.Minute, 5 * time.Minute})
	if n := noteIDs(r); n["preemptions"].ID != "" || n[analysis.NoteBeforeWindow].ID == "" {
		t.Errorf("one scrape: notes %v", r.Notes)
	}
	var last *snapshot.Snapshot
	for sec := 10; sec <= 400; sec += 10 {
		p := 7.0
		if sec >= 50 {
			// One preemption at 50 s: in the 5m column until its
			// baseline passes 40 s. Thinned to one sample per 30 s, the
			// history's baseline at 350 s is the sample at 30 s (5m20s
			// back), at 360 s the one at 60 s.
			p = 8
		}
		last = vllmLike(float64(sec), 100+float64(sec), p, 0)
		h.Add(last, last.ScrapedAt)
		r = h.Judge(analysis.Analyze(last, analysis.Options{}), last, []time.Duration{time.Minute, 5 * time.Minute})
		n := noteIDs(r)
		in := sec >= 50 && sec < 360
		if (n["preemptions"].ID != "") != in {
			t.Errorf("at %d s: preemptions note %v, want it %v", sec, n["preemptions"], in)
		}
		if in && !strings.HasPrefix(n["preemptions"].Text, "in the last ") {
			t.Errorf("at %d s: %q does not name the window", sec, n["preemptions"].Text)
		}
	}
}

func joinNotes(r *report.Report) string {
	var b strings.Builder
	for _, n := range r.Notes {
		b.WriteString(n.Text + "\n")
	}
	return b.String()
}
