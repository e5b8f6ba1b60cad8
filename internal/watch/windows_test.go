package watch

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

func TestParseWindows(t *testing.T) {
	const s, m, h = time.Second, time.Minute, time.Hour
	tests := []struct {
		in   string
		want []time.Duration
		err  string
	}{
		{in: DefaultWindows, want: []time.Duration{30 * s, m, 5 * m, 15 * m, h, 24 * h}},
		{in: "90", want: []time.Duration{90 * s}},
		{in: "0.5,2.25", want: []time.Duration{500 * time.Millisecond, 2250 * time.Millisecond}},
		{in: "1h30m, 2d ,1w", want: []time.Duration{90 * m, 48 * h, 168 * h}},
		{in: "5m,30s", want: []time.Duration{30 * s, 5 * m}},
		{in: "60s,1m,60", want: []time.Duration{m}},
		{in: "250ms", want: []time.Duration{250 * time.Millisecond}},
		{in: "5x", err: `--watch-windows: "5x" is not a duration (use 30s, 5m, 1h or seconds)`},
		{in: "30s,,1m", err: `--watch-windows: "" is not a duration`},
		{in: "30s,-5", err: `"-5" is not a duration`},
		{in: "1m30", err: `"1m30" is not a duration`},
		{in: "30m1h", want: []time.Duration{90 * m}}, // Go's spelling allows any order
		{in: "1.5m", want: []time.Duration{90 * s}},
		{in: "1.5", want: []time.Duration{1500 * time.Millisecond}},
		{in: "1.5s,1500ms", want: []time.Duration{1500 * time.Millisecond}},
		{in: "1ns", err: `--watch-windows: "1ns" is too short: a window spans at least two scrapes, and scrapes are at least 200ms apart`},
		{in: "200ms", err: `"200ms" is too short`},
		{in: "0.2", err: `"0.2" is too short`},
		{in: "201ms", want: []time.Duration{201 * time.Millisecond}},
		{in: "-5s", err: `"-5s" is not longer than zero`},
		{in: "1,2,3,4,5,6,7,8,9,10,11,12", want: []time.Duration{s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s, 8 * s, 9 * s, 10 * s, 11 * s, 12 * s}},
		{in: "1,2,3,4,5,6,7,8,9,10,11,12,13", err: "--watch-windows: 13 windows given; at most 12 are shown"},
		{in: "inf", err: `"inf" is not a duration`},
		{in: "1e400", err: `"1e400" is not a duration`},
		{in: "0s", err: `--watch-windows: "0s" is not longer than zero`},
		{in: "0", err: `"0" is not longer than zero`},
		{in: "  ", err: "no window given"},
	}
	for _, tt := range tests {
		got, err := ParseWindows(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseWindows(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseWindows(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestEffective(t *testing.T) {
	const s = time.Second
	ws := []time.Duration{30 * s, 60 * s, 300 * s}
	tests := []struct {
		interval time.Duration
		want     []time.Duration
	}{
		{s, ws},
		{30 * s, []time.Duration{60 * s, 300 * s}}, // not longer than the interval: dropped
		{299 * s, []time.Duration{300 * s}},
		{300 * s, []time.Duration{300 * s}}, // none would remain: the longest stays
		{time.Hour, []time.Duration{300 * s}},
	}
	for _, tt := range tests {
		if got := Effective(ws, tt.interval); !slices.Equal(got, tt.want) {
			t.Errorf("Effective(%v) = %v, want %v", tt.interval, got, tt.want)
		}
	}
}

// FuzzParseWindows checks that any flag value either fails with a message
// naming --watch-windows or yields positive, sorted, distinct windows whose
// labels read back as the same lengths.
func FuzzParseWindows(f *testing.F) {
	for _, s := range []string{DefaultWindows, "90", "1h30m", "5x", "0.001", "1y", ",", "1e9", "00000000000000000000001s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := ParseWindows(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--watch-windows: ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		if len(ws) == 0 {
			t.Fatal("no error and no window")
		}
		for i, w := range ws {
			if w <= 0 || (i > 0 && w <= ws[i-1]) {
				t.Fatalf("windows %v not positive, sorted and distinct", ws)
			}
			if w%time.Millisecond == 0 {
				back, err := ParseWindows(units.Duration(w))
				if err != nil || len(back) != 1 || back[0] != w {
					t.Fatalf("units.Duration(%v) = %q reads back as %v, %v", w, units.Duration(w), back, err)
				}
			}
		}
	})
}

// TestRatesLongestKept: at a 10 s interval windows of 5 s and 8 s are both
// too short; the longest stays, its baseline the previous scrape.
func TestRatesLongestKept(t *testing.T) {
	ws, err := ParseWindows("5s,8s")
	if err != nil {
		t.Fatal(err)
	}
	eff := Effective(ws, 10*time.Second)
	h := rates.NewHistory(longest(ws, 10*time.Second))
	for sec := 0.0; sec <= 30; sec += 10 {
		h.Add(snap(start0, "requests_total", 3*sec), at(sec))
	}
	s, figs := h.Section(eff)
	if want := []string{"", "now 10s", "8s"}; !slices.Equal(s.Table.Header, want) {
		t.Errorf("header %q, want %q", s.Table.Header, want)
	}
	if want := []string{"3", "3"}; len(s.Table.Rows) != 1 || !slices.Equal(s.Table.Rows[0].Cells, want) {
		t.Errorf("rows %+v, want requests %q", s.Table.Rows, want)
	}
	if _, ok := figs["5s"]; ok || *figs["8s"][rates.KeyElapsed] != 10 {
		t.Errorf("figures %v", figs)
	}
}

// While no rate can be given, the line says why: a proxy before its first
// request has published no counter yet; a server that publishes none never
// will.
func TestNoRatesSaysWhy(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct{ via, want string }{
		{"inferscope proxy", "no rates yet: no request has finished through the proxy"},
		{"", "no rates: this server publishes none of the counters"},
	} {
		s := newSession(Config{Interval: time.Second, Windows: []time.Duration{time.Minute}, Build: fakeBuild})
		snap := &snapshot.Snapshot{Dialect: "tabbyapi", Via: c.via, Scalars: map[string]float64{snapshot.RequestsProcessing: 0}}
		s.observe(snap, at, 0)
		var said string
		for _, row := range s.report(at).Sections[0].Rows {
			if row.ID == "rates_pending" {
				said = row.Note
			}
		}
		if !strings.HasPrefix(said, c.want) {
			t.Errorf("via %q: %q, want %q", c.via, said, c.want)
		}
	}
}
