package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// TestPictureGlyphs: the bars are drawn in block characters, or in ASCII
// with --ascii or where the locale is not UTF-8; the words keep theirs.
func TestPictureGlyphs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		ascii bool
	}{
		{name: "no locale", args: nil, ascii: false},
		{name: "UTF-8 locale", env: map[string]string{"LANG": "en_US.UTF-8"}, ascii: false},
		{name: "--ascii", args: []string{"--ascii"}, env: map[string]string{"LANG": "en_US.UTF-8"}, ascii: true},
		{name: "LANG=C", env: map[string]string{"LANG": "C"}, ascii: true},
		{name: "LC_ALL=POSIX over a UTF-8 LANG", env: map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "POSIX"}, ascii: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errb := iostreams.Test("", false, 0)
			io.Getenv = func(k string) string { return tc.env[k] }
			if code := run(context.Background(), append(tc.args, "--width", "100", fixtures+"busy.prom"), io); code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			text := out.String()
			blocks := strings.ContainsAny(text, "█░▏▎▍▌▋▊▉")
			hashes := strings.Contains(text, "#....") || strings.Contains(text, "##")
			if blocks == tc.ascii || hashes != tc.ascii {
				t.Errorf("ascii %v: blocks %v, # bars %v:\n%s", tc.ascii, blocks, hashes, text)
			}
		})
	}
}
