package spark

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHeightsMonotone is the property every trend rests on: over random
// series with random gaps, a larger value is never drawn lower, the lowest
// and highest values shown take the scale's bottom and top, and a cell is
// a gap exactly where its value is missing.
func TestHeightsMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 22))
	for trial := range 2000 {
		n := 1 + rng.IntN(90)
		values := make([]float64, n)
		for i := range values {
			switch rng.IntN(8) {
			case 0:
				values[i] = math.NaN()
			case 1:
				values[i] = math.Inf(1 - 2*rng.IntN(2))
			case 2:
				values[i] = 0
			default:
				values[i] = rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(8)-3))
			}
		}
		for _, axis := range []Axis{FromZero, FromFloor} {
			o := Options{Axis: axis, Width: rng.IntN(n + 1)}
			l := Draw(values, o)
			checkLine(t, trial, values, o, l)
		}
	}
}

func checkLine(t *testing.T, trial int, values []float64, o Options, l Line) {
	t.Helper()
	want := len(values)
	if o.Width > 0 {
		want = min(want, o.Width)
	}
	if len(l.Cells) != want {
		t.Fatalf("trial %d: %d cells for %d values at width %d", trial, len(l.Cells), len(values), o.Width)
	}
	for i, a := range l.Cells {
		v := values[a.Index]
		if a.Index != len(values)-want+i {
			t.Fatalf("trial %d: cell %d holds value %d: not the newest values in order", trial, i, a.Index)
		}
		gap := math.IsNaN(v) || math.IsInf(v, 0)
		if a.Gap() != gap || (a.Level == 0) != gap {
			t.Fatalf("trial %d: value %v drawn at level %d: a gap must be exactly a missing value", trial, v, a.Level)
		}
		if gap {
			continue
		}
		if a.Level < 1 || a.Level > Levels {
			t.Fatalf("trial %d: level %d out of 1..%d", trial, a.Level, Levels)
		}
		if v == l.Hi && l.Lo < l.Hi && a.Level != Levels {
			t.Fatalf("trial %d: the highest value %v at level %d", trial, v, a.Level)
		}
		if v > l.Lo && a.Level == 1 {
			t.Fatalf("trial %d: %v above the bottom %v drawn as the bottom", trial, v, l.Lo)
		}
		for _, b := range l.Cells {
			if !b.Gap() && a.Value < b.Value && a.Level > b.Level {
				t.Fatalf("trial %d: %v drawn at %d, above %v at %d", trial, a.Value, a.Level, b.Value, b.Level)
			}
		}
	}
	if o.Axis == FromZero && !math.IsNaN(l.Lo) && l.Lo > 0 {
		t.Fatalf("trial %d: a FromZero scale starts at %v", trial, l.Lo)
	}
	if utf8.RuneCountInString(l.String()) != len(l.Cells) {
		t.Fatalf("trial %d: %q is not one character per cell", trial, l.String())
	}
}

func TestDraw(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		o      Options
		want   string
		rng    string
	}{
		{"rate from zero", []float64{0, 1, 2, 4, 8}, Options{}, "▁▂▃▅█", "0–8"},
		{"gaps stay blank", []float64{2, nan, 4, math.Inf(1), 8}, Options{}, "▃ ▅ █", "0–8"},
		{"a rate above zero never reads as zero", []float64{0, 0.001, 100}, Options{}, "▁▂█", "0–100"},
		{"all zero is flat at the bottom", []float64{0, 0, 0}, Options{}, "▁▁▁", "0–0"},
		{"all equal above zero is the top", []float64{5, 5}, Options{}, "██", "0–5"},
		{"from a floor", []float64{4.2, 4.3, 4.4}, Options{Axis: FromFloor}, "▁▄█", "4.2–4.4"},
		{"flat from a floor states one value", []float64{3, 3}, Options{Axis: FromFloor}, "▁▁", "3"},
		{"only gaps", []float64{nan, nan}, Options{}, "  ", ""},
		{"width keeps the newest", []float64{100, 1, 2}, Options{Width: 2}, "▅█", "0–2"},
		{"ascii", []float64{0, 1, 2, 4, 8, nan}, Options{Glyphs: ASCII}, "_.-=# ", "0–8"},
		{"negative values lower a zero axis", []float64{-2, 0, 2}, Options{}, "▁▅█", "-2–2"},
	}
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Draw(tt.values, tt.o)
			if got := l.String(); got != tt.want {
				t.Errorf("Draw(%v) = %q, want %q", tt.values, got, tt.want)
			}
			if got := l.Range(format); got != tt.rng {
				t.Errorf("Range = %q, want %q", got, tt.rng)
			}
		})
	}
}

func TestScale(t *testing.T) {
	pct := func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
	for _, tc := range []struct {
		values []float64
		axis   Axis
		want   string
	}{
		{[]float64{0, 0.62}, FromZero, "0–62.0%"},
		{[]float64{0.1, 0.62}, FromZero, "0–62.0%"},
		{[]float64{0, 0}, FromZero, "0"},
		{[]float64{0.3, 0.3}, FromFloor, "30.0%"},
		{[]float64{0.3, 0.5}, FromFloor, "30.0%–50.0%"},
		{[]float64{math.NaN()}, FromZero, ""},
	} {
		if got := Draw(tc.values, Options{Axis: tc.axis}).Scale(pct); got != tc.want {
			t.Errorf("Scale of %v = %q, want %q", tc.values, got, tc.want)
		}
	}
}

func TestRuns(t *testing.T) {
	l := Draw([]float64{1, 2, 9, 10, math.NaN(), 1}, Options{})
	runs := Runs(l, func(c Cell) string {
		switch {
		case c.Gap():
			return "gap"
		case c.Value >= 9:
			return "warn"
		}
		return ""
	})
	want := []Run[string]{{"▂▂", ""}, {"▇█", "warn"}, {" ", "gap"}, {"▂", ""}}
	if !slices.Equal(runs, want) {
		t.Errorf("Runs = %q, want %q", runs, want)
	}
}

func TestShade(t *testing.T) {
	tests := []struct {
		share float64
		level int
	}{{math.NaN(), 0}, {-1, 0}, {0, 0}, {0.001, 1}, {0.25, 1}, {0.26, 2}, {0.5, 2}, {0.75, 3}, {0.9, 4}, {1, 4}, {2, 4}}
	for _, tt := range tests {
		if got := ShadeLevel(tt.share); got != tt.level {
			t.Errorf("ShadeLevel(%v) = %d, want %d", tt.share, got, tt.level)
		}
	}
	var b, a strings.Builder
	for n := range Shades + 1 {
		b.WriteString(Blocks.Shade(n))
		a.WriteString(ASCII.Shade(n))
	}
	if b.String() != " ░▒▓█" || a.String() != " .:*#" {
		t.Errorf("shades %q and %q", b.String(), a.String())
	}
}

func TestLocaleGlyphs(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want Glyphs
	}{
		{map[string]string{}, Blocks},
		{map[string]string{"LANG": "C"}, ASCII},
		{map[string]string{"LANG": "POSIX"}, ASCII},
		{map[string]string{"LANG": "en_US.UTF-8"}, Blocks},
		{map[string]string{"LANG": "C.utf8"}, Blocks},
		{map[string]string{"LANG": "de_DE.UTF-8@euro"}, Blocks},
		{map[string]string{"LANG": "en_US.ISO-8859-1"}, ASCII},
		{map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "C"}, ASCII},
		{map[string]string{"LANG": "C", "LC_CTYPE": "en_US.UTF-8"}, Blocks},
		{map[string]string{"LANG": "C", "LC_ALL": "en_GB.UTF-8"}, Blocks},
	}
	for _, tt := range tests {
		if got := LocaleGlyphs(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("LocaleGlyphs(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}
