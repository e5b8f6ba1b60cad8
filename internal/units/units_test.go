package units

import (
	"math"
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
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
