package scrape

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain text", 0, "plain text"},
		{"  lead and trail  ", 0, "lead and trail"},
		{"a\r\n\tb\n\nc", 0, "a b c"},
		{"red \x1b[31mtext\x1b[0m", 0, "red text"},
		{"\x1b[2J\x1b[Hcleared", 0, "cleared"},
		{"title \x1b]0;pwned\x07after", 0, "title after"},
		{"link \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", 0, "link click"},
		{"dcs \x1bPq#0;2;0;0;0\x1b\\end", 0, "dcs end"},
		{"reset\x1bcdone", 0, "resetdone"},
		{"unterminated \x1b]0;forever", 0, "unterminated"},
		{"csi cut \x1b[31", 0, "csi cut"},
		{"esc at end\x1b", 0, "esc at end"},
		{"esc before é\x1bé", 0, "esc before éé"}, // a lone ESC is dropped; é is text
		{"nul\x00bell\x07del\x7f", 0, "nulbelldel"},
		{"c1 \u009b31m csi", 0, "c1 csi"}, // the 8-bit CSI goes with its parameters
		{"bidi \u202egnp.exe\u202c", 0, "bidi gnp.exe"},
		{"bad utf8 \xff\xfe!", 0, "bad utf8 \uFFFD\uFFFD!"},
		{"日本語テキスト", 3, "日本…"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"abc def", 4, "abc…"},
		{"abc def", 5, "abc…"},
		{"abc def", 6, "abc d…"},
		{"ab", 1, "…"},
		{"", 5, ""},
	}
	for _, tc := range tests {
		if got := clean(tc.in, tc.max); got != tc.want {
			t.Errorf("clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
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
