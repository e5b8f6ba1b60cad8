package fleet

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/report"
)

// At 80 cells the table keeps its notes column, the column that says what
// is wrong: other columns are left out and the instance cut first, and a
// notes cell too long for it keeps the ids that fit whole and counts the
// rest.
func TestNarrowTableKeepsNotes(t *testing.T) {
	api := recordedAPI(t, "range")
	push, _ := both(t, api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s})
	push.Store = "http://prometheus:9090"
	got := byInstance(push)
	warn := func(id string, ids ...string) {
		for _, n := range ids {
			got[id].Report.Notes = append(got[id].Report.Notes, report.Note{ID: n, Severity: report.Warn})
		}
	}
	warn("llm/vllm-a", "kv_cache_pressure", "preemptions", "queue_pressure")
	got["llm/sglang-a"].Report.Notes = append(got["llm/sglang-a"].Report.Notes, report.Note{ID: "requests_errored", Severity: report.Bad})
	for _, w := range []int{80, 60} {
		var b bytes.Buffer
		if err := push.Text(&b, TextOptions{Width: w}); err != nil {
			t.Fatal(err)
		}
		table := strings.Split(b.String(), "\n")[3:10]
		for _, l := range table {
			if n := cells(l); n > w {
				t.Errorf("width %d: a line of %d cells: %s", w, n, l)
			}
		}
		if !strings.Contains(table[0], "notes") || !strings.Contains(b.String(), "requests_errored") {
			t.Errorf("width %d: the notes column is gone:\n%s", w, b.String())
		}
		if w == 80 {
			golden.Check(t, "notes-80.txt", b.String())
		}
	}
}

func TestFitIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"requests_errored preemptions", 40, "requests_errored preemptions"},
		{"requests_errored preemptions queue_pressure", 31, "requests_errored preemptions +1"},
		{"requests_errored preemptions queue_pressure", 30, "requests_errored +2"},
		{"requests_errored preemptions queue_pressure", 20, "requests_errored +2"},
		{"requests_errored preemptions", 14, "requests_e… +1"},
		{"kv_cache_pressure", 12, "kv_cache_pr…"},
	} {
		if got := fitIDs(tc.in, tc.w); got != tc.want || cells(got) > tc.w {
			t.Errorf("fitIDs(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}
