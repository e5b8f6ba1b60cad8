package scrape

import (
	"strings"
	"testing"
	"time"
)

func TestFmtDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{500 * time.Microsecond, "500µs"},
		{50 * time.Millisecond, "50ms"},
		{999 * time.Millisecond, "999ms"},
		{time.Second, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{3240 * time.Millisecond, "3.2s"},
		{30 * time.Second, "30s"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m30s"},
		{2 * time.Hour, "2h"},
		{2*time.Hour + 5*time.Minute, "2h5m"},
		{-2 * time.Second, "-2s"},
	}
	for _, tc := range tests {
		if got := fmtDuration(tc.d); got != tc.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestFmtBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1000, "1000 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{64 << 20, "64 MiB"}, {1 << 30, "1 GiB"}, {1<<62 + 1<<61, "6 EiB"},
	}
	for _, tc := range tests {
		if got := fmtBytes(tc.n); got != tc.want {
			t.Errorf("fmtBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		in, name, value string
		err             string
	}{
		{in: "Authorization: Bearer abc", name: "Authorization", value: "Bearer abc"},
		{in: "X-Api-Key:abc", name: "X-Api-Key", value: "abc"},
		{in: "  X-Empty :  ", name: "X-Empty", value: ""},
		{in: "X-Url: http://a:b/c", name: "X-Url", value: "http://a:b/c"},
		{in: "X-Tab: a\tb", name: "X-Tab", value: "a\tb"},
		{in: "Bearer abc", err: "no colon"},
		{in: ": abc", err: "name before ':' is empty"},
		{in: "Bad Name: v", err: `"Bad Name" is not a header name`},
		{in: "X-Inject: a\r\nHost: evil", err: "holds a control character"},
		{in: "X-Nul: a\x00", err: "holds a control character"},
	}
	for _, tc := range tests {
		name, value, err := ParseHeader(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHeader(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "abc") {
				t.Errorf("ParseHeader(%q) error %q repeats the value", tc.in, err)
			}
			continue
		}
		if err != nil || name != tc.name || value != tc.value {
			t.Errorf("ParseHeader(%q) = %q, %q, %v; want %q, %q", tc.in, name, value, err, tc.name, tc.value)
		}
	}
}

func TestKindString(t *testing.T) {
	for k := Unreachable; k <= Canceled; k++ {
		if s := k.String(); s == "unknown" || s == "" {
			t.Errorf("Kind(%d) has no name", k)
		}
	}
	if Kind(0).String() != "unknown" {
		t.Error("the zero Kind has a name")
	}
}
