package analysis

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// A window snapshot holds each counter's increase, the gauges and peaks as
// at the end, and nothing the window does not know.
func TestWindowSnapshot(t *testing.T) {
	s := &snapshot.Snapshot{Dialect: "x",
		Scalars: map[string]float64{snapshot.RequestsTotal: 100, snapshot.RequestsProcessing: 3, snapshot.NTokensMax: 4096,
			snapshot.PromptTokensTotal: 9000, snapshot.ProcessStartTimeSeconds: 1.7e9},
		Extra: map[string]float64{snapshot.ExtraPreemptions: 7, snapshot.ExtraKVBlockSize: 16}}
	w := WindowSnapshot(s, Window{Counters: map[string]float64{snapshot.RequestsTotal: 10, snapshot.ExtraPreemptions: 2}})
	want := map[string]float64{snapshot.RequestsTotal: 10, snapshot.RequestsProcessing: 3, snapshot.NTokensMax: 4096}
	for k, v := range want {
		if got, ok := w.Scalars[k]; !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	for _, k := range []string{snapshot.PromptTokensTotal, snapshot.ProcessStartTimeSeconds} {
		if _, ok := w.Scalars[k]; ok {
			t.Errorf("%s is in the window, which does not know it", k)
		}
	}
	if w.Extra[snapshot.ExtraPreemptions] != 2 || w.Extra[snapshot.ExtraKVBlockSize] != 16 {
		t.Errorf("extra %v", w.Extra)
	}
	if s.Scalars[snapshot.RequestsTotal] != 100 {
		t.Error("the scrape was changed")
	}
}

// Every fixture judged over a window in which nothing happened: no note
// on what happened is the window's, each the lifetime made is said to be
// before it, as information; and the report keeps the contract that a row
// is coloured warn or bad only beside a note of that severity for it.
func TestJudgeWindowQuiet(t *testing.T) {
	rowsOf := map[string][]string{}
	for _, j := range judgements {
		if j.note != "" {
			rowsOf[j.note] = append(rowsOf[j.note], j.rows...)
		}
	}
	ids := WindowedNotes()
	before := 0
	for _, f := range fixtures(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format, _ := exposition.DetectFormat("", body)
		fams, err := exposition.Parse(body, format)
		if err != nil {
			t.Fatal(err)
		}
		s, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			continue
		}
		s.ScrapedAt = scrapedAt
		life := Analyze(s, Options{})
		quiet := Window{Label: "the last 5m", Counters: map[string]float64{}}
		for k := range s.Scalars {
			if IsWindowCounter(k) {
				quiet.Counters[k] = 0
			}
		}
		for k := range s.Extra {
			if IsWindowCounter(k) {
				quiet.Counters[k] = 0
			}
		}
		for _, w := range []*Window{&quiet, nil} {
			r := JudgeWindow(life, s, w)
			lifetime := 0
			for _, n := range life.Notes {
				if slices.Contains(ids, n.ID) {
					lifetime++
				}
			}
			got := 0
			for _, n := range r.Notes {
				switch {
				case slices.Contains(ids, n.ID):
					t.Errorf("%s: %s fires on a window in which nothing happened", f, n.ID)
				case n.ID == NoteBeforeWindow:
					got++
					if n.Severity != report.Info || !strings.HasPrefix(n.Text, "not in ") {
						t.Errorf("%s: %+v", f, n)
					}
				}
			}
			if got != lifetime {
				t.Errorf("%s: %d notes before the window, the lifetime made %d", f, got, lifetime)
			}
			before += got
			for _, sec := range r.Sections {
				for _, row := range sec.Rows {
					if row.Severity != report.Warn && row.Severity != report.Bad {
						continue
					}
					path := sec.ID + "/" + row.ID
					if !slices.ContainsFunc(r.Notes, func(n report.Note) bool {
						return n.Severity == row.Severity && slices.Contains(rowsOf[n.ID], path)
					}) {
						t.Errorf("%s: row %s is %s with no note for it in the window", f, path, row.Severity)
					}
				}
			}
		}
	}
	if before == 0 {
		t.Error("no fixture has a note on what happened: the test checks little")
	}
}

// A window in which the events happened makes the notes, worded for it,
// with the window's own figures; the lifetime report is left as it was.
func TestJudgeWindowBusy(t *testing.T) {
	s := &snapshot.Snapshot{Dialect: "x", Scalars: map[string]float64{snapshot.RequestsTotal: 100,
		snapshot.KVOffloadMaxBytes: 1 << 30, snapshot.KVOffloadBytes: 1 << 29, snapshot.KVOffloadReadBytesTotal: 9e9,
		snapshot.KVOffloadWrittenBytesTotal: 10e9, snapshot.KVOffloadEvictionsTotal: 40}}
	life := Analyze(s, Options{})
	if slices.ContainsFunc(life.Notes, func(n report.Note) bool { return n.ID == "kv_offload_thrashing" }) {
		t.Fatal("the lifetime pays back: no thrashing note")
	}
	// In the window: 1 GB read of 10 GB written, with evictions.
	w := &Window{Label: "the last 5m", Counters: map[string]float64{snapshot.RequestsTotal: 10,
		snapshot.KVOffloadReadBytesTotal: 1e9, snapshot.KVOffloadWrittenBytesTotal: 10e9, snapshot.KVOffloadEvictionsTotal: 5}}
	r := JudgeWindow(life, s, w)
	i := slices.IndexFunc(r.Notes, func(n report.Note) bool { return n.ID == "kv_offload_thrashing" })
	if i < 0 || !strings.HasPrefix(r.Notes[i].Text, "in the last 5m: KV offload thrashing: only 0.10 ") {
		t.Fatalf("notes %v", r.Notes)
	}
	for _, sec := range r.Sections {
		for _, row := range sec.Rows {
			if sec.ID+"/"+row.ID == "kv_offload/traffic" && row.Severity != report.Warn {
				t.Errorf("traffic row %q: the window's note is warn", row.Severity)
			}
		}
	}
	if len(life.Notes) != len(Analyze(s, Options{}).Notes) {
		t.Error("JudgeWindow changed the report it was given")
	}
}
