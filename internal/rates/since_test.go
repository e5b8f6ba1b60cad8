package rates

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/snapshot"
)

func TestSince(t *testing.T) {
	stamp := func(s *snapshot.Snapshot, sec float64) *snapshot.Snapshot {
		s.ScrapedAt = at(sec)
		return s
	}
	restart := float64(at(100).Unix())
	token := func(s *snapshot.Snapshot, tok string) *snapshot.Snapshot {
		s.StartToken = tok
		return s
	}
	tests := []struct {
		name          string
		before, after *snapshot.Snapshot
		header        string            // the column's header, "" when no table
		cells         map[string]string // row id → cell
		say           string            // a row of the section says this
	}{
		{
			name:   "rates over the elapsed time",
			before: stamp(snap(start0, "requests_total", 10, "tokens_predicted_total", 1000), 0),
			after:  stamp(snap(start0, "requests_total", 262, "tokens_predicted_total", 26200), 252),
			header: "Δ 4m12s",
			cells:  map[string]string{"requests": "1", "generation": "100"}, // 252 and 25200 over 252 s
		},
		{
			// The proxy creates its series at its first request: saved
			// before it, three requests, saved after.
			name:   "counters created after the earlier scrape count from zero",
			before: stamp(snap(start0, "requests_processing", 0), 0),
			after:  stamp(snap(start0, "requests_processing", 0, "requests_total", 3, "tokens_predicted_total", 300), 30),
			header: "Δ 30s",
			cells:  map[string]string{"requests": "0.1", "generation": "10"},
		},
		{
			name:   "a reset between is counted from zero",
			before: stamp(snap(start0, "requests_total", 500), 0),
			after:  stamp(snap(start0, "requests_total", 120), 60),
			header: "Δ 1m",
			cells:  map[string]string{"requests": "2"},
			say:    "counted from zero",
		},
		{
			// llama.cpp restarted without a start header to tell: its
			// seconds counter fell while its token counter rose past the
			// old total. All count from zero: 13,500 tokens in 60 s is
			// 225 tok/s (folding each counter alone gave 2,856 / 60 = 47.6).
			name:   "one counter falls: all count from zero",
			before: stamp(snap(0, "tokens_predicted_total", 10644, "tokens_predicted_seconds_total", 300.5), 0),
			after:  stamp(snap(0, "tokens_predicted_total", 13500, "tokens_predicted_seconds_total", 60), 60),
			header: "Δ 1m",
			cells:  map[string]string{"generation": "225"},
			say:    "counted from zero",
		},
		{
			name:   "a restart between: no rates",
			before: stamp(snap(start0, "requests_total", 500), 0),
			after:  stamp(snap(restart, "requests_total", 600), 160),
			say:    "server restarted between the two scrapes",
		},
		{
			// llama.cpp's start header is a monotonic clock, no time, but a
			// new one after a restart (saved with the scrape by --save).
			name:   "a changed start token between: no rates",
			before: token(stamp(snap(0, "requests_total", 500), 0), "812.5"),
			after:  token(stamp(snap(0, "requests_total", 600), 160), "3.25"),
			say:    "server restarted between the two scrapes",
		},
		{
			name:   "no scrape time",
			before: snap(start0, "requests_total", 1),
			after:  stamp(snap(start0, "requests_total", 2), 10),
			say:    "--save",
		},
		{
			name:   "wrong order",
			before: stamp(snap(start0, "requests_total", 2), 10),
			after:  stamp(snap(start0, "requests_total", 1), 0),
			say:    "not the older one",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, rates := Since(tt.before, tt.after)
			if sec.ID != "rates" || !sec.Wide {
				t.Errorf("section %s wide %v", sec.ID, sec.Wide)
			}
			var said []string
			for _, r := range sec.Rows {
				said = append(said, r.Label+" "+r.Value+" "+r.Note)
			}
			if tt.say != "" && !strings.Contains(strings.Join(said, "\n"), tt.say) {
				t.Errorf("rows %q do not say %q", said, tt.say)
			}
			if tt.header == "" {
				if sec.Table != nil || rates != nil {
					t.Errorf("figures where none can be: %v", rates)
				}
				return
			}
			g := gridOf(t, sec)
			if !slices.Equal(g.header, []string{tt.header}) {
				t.Errorf("header %q, want %q", g.header, tt.header)
			}
			for id, c := range tt.cells {
				if got := g.rows[id]; len(got) != 1 || got[0] != c {
					t.Errorf("%s = %q, want %q", id, got, c)
				}
			}
			el := tt.after.ScrapedAt.Sub(tt.before.ScrapedAt).Seconds()
			if got := rates[KeySince][KeyElapsed]; got == nil || *got != el {
				t.Errorf("elapsed %v, want %v", got, el)
			}
		})
	}
}

func ExampleSince() {
	before := &snapshot.Snapshot{ScrapedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Scalars: map[string]float64{"tokens_predicted_total": 1000, "requests_total": 4}}
	after := &snapshot.Snapshot{ScrapedAt: before.ScrapedAt.Add(4*time.Minute + 10*time.Second),
		Scalars: map[string]float64{"tokens_predicted_total": 26000, "requests_total": 54}}
	sec, rates := Since(before, after)
	fmt.Println(strings.TrimSpace(sec.Table.Header[1]))
	for _, r := range sec.Table.Rows {
		fmt.Printf("%-17s %s\n", r.Label, r.Cells[0])
	}
	fmt.Println(*rates["since"]["generation"])
	// Output:
	// Δ 4m10s
	// generation tok/s  100
	// requests /s       0.2
	// 100
}
