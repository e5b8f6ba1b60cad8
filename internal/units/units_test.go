package units

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"zero s", Seconds(0), "0 s"},
		{"sub-ms", Seconds(0.00042), "0.42 ms"},
		{"few ms", Seconds(0.0042), "4.2 ms"},
		{"ms", Seconds(0.85), "850 ms"},
		{"just under 1 s stays ms", Seconds(0.9994), "999 ms"},
		{"rounds up to s, never 1000 ms", Seconds(0.9999), "1.00 s"},
		{"s", Seconds(1.2), "1.20 s"},
		{"tens of s", Seconds(12.34), "12.3 s"},
		{"rounds up to tens of s, never 10.00 s", Seconds(9.9999), "10.0 s"},
		{"rounds up to min, never 60.0 s", Seconds(59.97), "1.0 min"},
		{"rounds up to h, never 60.0 min", Seconds(3598), "1.0 h"},
		{"min", Seconds(246), "4.1 min"},
		{"hours", Seconds(9000), "2.5 h"},
		{"days", Seconds(3 * 86400), "3.0 d"},
		{"nan s", Seconds(math.NaN()), "—"},
		{"count small", Count(950), "950"},
		{"count K", Count(1234), "1.2K"},
		{"count 12K", Count(12345), "12.3K"},
		{"count 203K", Count(203000), "203K"},
		{"count just below 1K rounds up", Count(999.7), "1.0K"},
		{"count M", Count(4.5e6), "4.5M"},
		{"count B", Count(1.2e9), "1.2B"},
		{"count fraction", Count(2.5), "2.5"},
		// A real rate never reads as 0, as a real share never reads 0.0%.
		{"count small fraction", Count(0.04), "0.04"},
		{"count tiny fraction", Count(0.004), "<0.01"},
		{"count zero", Count(0), "0"},
		{"count fraction rounding to 0.1", Count(0.05), "0.1"},
		{"bytes", Bytes(512), "512 B"},
		{"KiB", Bytes(1536), "1.5 KiB"},
		{"GiB", Bytes(8 << 30), "8.0 GiB"},
		{"big GiB", Bytes(200 << 30), "200 GiB"},
		{"percent", Percent(0.133), "13.3%"},
		{"percent zero", Percent(0), "0.0%"},
		{"percent tiny", Percent(3.0 / 15600), "0.02%"},
		{"percent tinier", Percent(1e-6), "<0.01%"},
		{"factor small", Factor(1.94), "1.9x"},
		{"factor 10", Factor(12.4), "12x"},
		{"factor thousands", Factor(1250), "1,250x"},
		{"thousands", Integer(1234567), "1,234,567"},
		{"thousands small", Integer(638), "638"},
		// Absurd magnitudes stay short (a broken server can publish 1e300).
		{"count T", Count(3e12), "3.0T"},
		{"count huge", Count(1.37e16), "1.4e16"},
		{"count absurd", Count(1e300), "1.0e300"},
		{"count negative huge", Count(-2e20), "-2.0e20"},
		{"integer huge", Integer(1e300), "1.0e300"},
		{"integer just below", Integer(999999999999999), "999,999,999,999,999"},
		{"bytes EiB", Bytes(3 * (1 << 60)), "3.0 EiB"},
		{"bytes absurd", Bytes(1e30), "1.0e30 B"},
		{"percent absurd", Percent(137329101562500), "1.4e16%"},
		{"percent large but plain", Percent(12.5), "1250.0%"},
		{"days huge", Seconds(1e300), "1.2e295 d"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"500ms", 500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"1.5h", 90 * time.Minute, true},
		{"30", 30 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{".25", 250 * time.Millisecond, true},
		{"-2s", -2 * time.Second, true}, // callers judge the sign
		{"5x", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"1e300", 0, false},
		// PromQL's units beyond the hour, alone and with Go's.
		{"1d", 24 * time.Hour, true},
		{"2d", 48 * time.Hour, true},
		{"1w", 168 * time.Hour, true},
		{"1y", 365 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"30m1h", 90 * time.Minute, true}, // Go's spelling allows any order
		{"1.5m", 90 * time.Second, true},
		{"-1d", -24 * time.Hour, true},
		{"0", 0, true},
		{"-0", 0, true},
		{"250µs", 250 * time.Microsecond, true},
		{"1m30", 0, false}, // a number without a unit after the first
		{"1h-5m", 0, false},
		{"d", 0, false},
		{".d", 0, false},
		{"-", 0, false},
		{"1D", 0, false},
		{"300y", 0, false}, // beyond what a time.Duration holds
		// A time.Duration holds 2,562,047 h 47 min and a bit.
		{"106752d", 0, false},
		{"106751d24h", 0, false},
		{"106751d23h", 2562047 * time.Hour, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m30s"},
		{24 * time.Hour, "24h"},
		{168 * time.Hour, "168h"},
		{90*time.Minute + 5*time.Second, "1h30m5s"},
		{2*time.Hour + 5*time.Minute, "2h5m"},
		{time.Hour + time.Second, "1h1s"},
		{1500 * time.Millisecond, "1.5s"},
		{3240 * time.Millisecond, "3.24s"},
		{90*time.Second + 250*time.Millisecond, "1m30.25s"},
		{time.Hour + 500*time.Millisecond, "1h0.5s"},
		{250 * time.Millisecond, "250ms"},
		{999 * time.Millisecond, "999ms"},
		{250 * time.Microsecond, "250µs"},
		{-2 * time.Second, "-2s"},
	}
	for _, tt := range tests {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// FuzzParseDuration checks that any flag value either fails with a message
// quoting it or gives a length that Duration spells so that it reads back
// the same.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30", "0.5", "500ms", "1m30s", "1.5h", "2d", "1w", "1y", "1d12h", "-2s", "5x", "1m30", "1e300", "00000000000000000000001s", "250µs", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), strconv.Quote(s)+" is ") {
				t.Fatalf("error %q does not quote the input", err)
			}
			return
		}
		back, err := ParseDuration(Duration(d))
		if err != nil || back != d {
			t.Fatalf("Duration(%v) = %q reads back as %v, %v", d, Duration(d), back, err)
		}
	})
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64M", 1 << 30: "1G", 1536: "1536", 3 << 10: "3k", 100: "100"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
	// The least size in whole units that holds n: a cap to suggest.
	for n, want := range map[int64]string{18997: "19k", 1024: "1k", 1025: "2k", 100: "100", 0: "1", 1 << 20: "1M", 70_000_000: "67M", 1<<30 + 1: "2G"} {
		if got := SizeHolding(n); got != want {
			t.Errorf("SizeHolding(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    float64
		one  string
		many []string
		want string
	}{
		{1, "request", nil, "1 request"},
		{0, "request", nil, "0 requests"},
		{2, "request", nil, "2 requests"},
		{1234, "request", nil, "1,234 requests"},
		{0.6, "token", nil, "1 token"}, // the noun agrees with the count as written
		{1, "series", []string{"series"}, "1 series"},
		{3, "instance's histograms", []string{"instances' histograms"}, "3 instances' histograms"},
	} {
		if got := Plural(c.n, c.one, c.many...); got != c.want {
			t.Errorf("Plural(%v, %q) = %q, want %q", c.n, c.one, got, c.want)
		}
	}
}
