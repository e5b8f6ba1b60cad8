package termsafe

import (
	"fmt"
	"testing"
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
		{"  lead and trail  ", 0, "lead and trail"},
		{"a\r\n\tb\n\nc", 0, "a b c"},
		{"red \x1b[31mtext\x1b[0m", 0, "red text"},
		{"日本語テキスト", 3, "日本…"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"abc def", 5, "abc…"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := Line(tt.in, tt.max); got != tt.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
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
