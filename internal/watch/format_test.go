package watch

import (
	"math"
	"testing"
	"time"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{1e-9, "<0.01"},
		{0.00999, "<0.01"},
		{0.01, "0.01"},
		{0.125, "0.12"}, // %.2f rounds half to even on the binary value
		{1, "1.00"},
		{9.994, "9.99"},
		{9.996, "10.0"}, // decided on the rounded value: never "10.00"
		{12.34, "12.3"},
		{99.96, "100"},
		{123.4, "123"},
		{999.4, "999"},
		{999.6, "1.00K"},
		{1234, "1.23K"},
		{12345, "12.3K"},
		{123456, "123K"},
		{999_600, "1.00M"},
		{2_500_000, "2.50M"},
		{45_600_000, "45.6M"},
		{999_600_000, "1000M"},
		{-3, "-3.00"},
		{math.NaN(), ""},
		{math.Inf(1), ""},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.v); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if len(FormatNumber(tt.v)) > 5 {
			t.Errorf("FormatNumber(%v) = %q is wider than 5", tt.v, FormatNumber(tt.v))
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{0.000001, "<0.01ms"},
		{0.0005, "0.50ms"},
		{0.0123, "12.3ms"},
		{0.6, "600ms"},
		{0.9996, "1.00s"},
		{7.5, "7.50s"},
		{42, "42.0s"},
		{59.96, "1.00min"},
		{120, "2.00min"},
		{5400, "90.0min"},
	}
	for _, tt := range tests {
		if got := FormatSeconds(tt.v); got != tt.want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCompact(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{50 * time.Millisecond, "50ms"},
		{100 * time.Millisecond, "0.1s"},
		{2 * time.Second, "2.0s"},
		{2030 * time.Millisecond, "2.0s"},
		{9960 * time.Millisecond, "10s"},
		{45 * time.Second, "45s"},
		{59600 * time.Millisecond, "1m"},
		{4*time.Minute + 12*time.Second, "4m12s"},
		{2*time.Hour + 5*time.Minute + 10*time.Second, "2h5m"},
		{26 * time.Hour, "26h"},
		{-time.Second, "0ms"},
	}
	for _, tt := range tests {
		if got := Compact(tt.d); got != tt.want {
			t.Errorf("Compact(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
