package termsafe

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Qwen3-27B", "Qwen3-27B"},
		{"unicode kept", "≤ 5 · — 模型 🚀", "≤ 5 · — 模型 🚀"},
		{"bidi marks dropped", "a\u200fb\u200ec\u061cd", "abcd"},
		{"OSC title with BEL", "a\x1b]0;pwned\x07b", "ab"},
		{"OSC hyperlink with ST", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"OSC with C1 ST", "a\x1b]0;pwned\u009cb", "ab"},
		{"unterminated OSC swallows the rest", "a\x1b]0;pwned", "a"},
		{"CSI clear screen", "\x1b[2Jx", "x"},
		{"CSI colour", "\x1b[1;31mred\x1b[0m", "red"},
		{"CSI private mode", "\x1b[?1049hx", "x"},
		{"CSI aborted by a control", "\x1b[12\x07x", "x"},
		{"C1 CSI", "\u009b31mred", "red"},
		{"C1 OSC", "\u009d0;pwned\u0007ok", "ok"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\ok", "ok"},
		{"APC", "\x1b_payload\x1b\\ok", "ok"},
		{"two-byte reset", "\x1bcok", "ok"},
		{"charset designation", "\x1b(Bok", "ok"},
		{"lone ESC at end", "ok\x1b", "ok"},
		{"ESC before non-ASCII", "\x1bé", "é"},
		{"carriage return", "safe\rEVIL", "safeEVIL"},
		{"backspace and bell", "a\bb\x07c", "abc"},
		{"DEL", "a\x7fb", "ab"},
		{"NUL", "a\x00b", "ab"},
		{"tab and newline become spaces", "a\tb\nc", "a b c"},
		{"other C1 dropped", "a\u0085b\u009cc", "abc"},
		{"bidi override dropped", "abc\u202edcba\u202c", "abcdcba"},
		{"bidi isolate dropped", "\u2066x\u2069", "x"},
		{"line separator", "a\u2028b", "a b"},
		{"invalid UTF-8", "a\x9b31mb\xff", "a\uFFFD31mb\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
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
	for _, tt := range tests {
		if got := Line(tt.in, tt.max); got != tt.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// FuzzLine: whatever the input, Line's result is printable UTF-8 on one
// line, within max runes, and Line leaves it as it is.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07", "\x1bP\x1b\\", "a\u202eb", "\xff", "a \t\n b", "日本語"} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 0 || max > 1000 {
			max = 0
		}
		out := Line(in, max)
		if !printable(out) || !utf8.ValidString(out) || strings.ContainsRune(out, 0x1b) {
			t.Fatalf("Line(%q) = %q is not printable", in, out)
		}
		if max > 0 && utf8.RuneCountInString(out) > max {
			t.Fatalf("Line(%q, %d) = %q is longer than %d runes", in, max, out, max)
		}
		if again := Line(out, max); again != out {
			t.Fatalf("Line is not idempotent: %q → %q → %q", in, out, again)
		}
	})
}

// printable reports text with no control, escape or bidi character and no
// line break, by the test's own list.
func printable(s string) bool {
	for _, r := range s {
		bidi := r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || bidi || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

func BenchmarkText(b *testing.B) {
	for _, s := range []string{"Qwen3-27B-exl3", "模型 · ≤ 5 — \x1b]0;pwned\x07 ok"} {
		b.Run(fmt.Sprint(len(s)), func(b *testing.B) {
			for b.Loop() {
				Text(s)
			}
		})
	}
}

// BenchmarkLine is a long error page full of colour, cut for a message.
func BenchmarkLine(b *testing.B) {
	s := strings.Repeat("text \x1b[31mred\x1b[0m ", 200)
	b.ReportAllocs()
	for b.Loop() {
		Line(s, 120)
	}
}
