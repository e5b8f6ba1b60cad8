package iostreams

import "testing"

func TestColorRule(t *testing.T) {
	tests := []struct {
		name     string
		tty      bool
		env      map[string]string
		disabled bool
		want     bool
	}{
		{"terminal", true, nil, false, true},
		{"pipe", false, nil, false, false},
		{"--no-color", true, nil, true, false},
		{"NO_COLOR", true, map[string]string{"NO_COLOR": "1"}, false, false},
		{"CLICOLOR=0", true, map[string]string{"CLICOLOR": "0"}, false, false},
		{"CLICOLOR_FORCE on a pipe", false, map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{"CLICOLOR_FORCE=0 is not forcing", false, map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{"NO_COLOR beats CLICOLOR_FORCE", false, map[string]string{"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, false, false},
		{"--no-color beats CLICOLOR_FORCE", false, map[string]string{"CLICOLOR_FORCE": "1"}, true, false},
		{"TERM=dumb terminal", true, map[string]string{"TERM": "dumb"}, false, false},
		{"TERM=dumb with CLICOLOR_FORCE", true, map[string]string{"TERM": "dumb", "CLICOLOR_FORCE": "1"}, false, true},
		{"TERM=xterm terminal", true, map[string]string{"TERM": "xterm-256color"}, false, true},
	}
	for _, tt := range tests {
		io, _, _ := Test("", tt.tty, 100)
		io.Getenv = func(k string) string { return tt.env[k] }
		if got := io.ColorEnabled(tt.disabled); got != tt.want {
			t.Errorf("%s: colour %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLayoutWidth(t *testing.T) {
	tests := []struct {
		tty   bool
		width int
		want  int
	}{
		{true, 120, 120},
		{true, 0, PipedWidth}, // terminal that cannot say its size
		{false, 120, PipedWidth},
	}
	for _, tt := range tests {
		io, _, _ := Test("", tt.tty, tt.width)
		if got := io.LayoutWidth(); got != tt.want {
			t.Errorf("tty %v width %d: %d, want %d", tt.tty, tt.width, got, tt.want)
		}
	}
}

// TERM=dumb is a terminal that cannot move the cursor: no full-screen view.
func TestFullScreen(t *testing.T) {
	tests := []struct {
		tty  bool
		term string
		want bool
	}{
		{true, "xterm-256color", true},
		{true, "", true},
		{true, "dumb", false},
		{false, "xterm-256color", false},
	}
	for _, tt := range tests {
		io, _, _ := Test("", tt.tty, 100)
		io.Getenv = func(k string) string {
			if k == "TERM" {
				return tt.term
			}
			return ""
		}
		if got := io.FullScreen(); got != tt.want {
			t.Errorf("tty %v TERM=%q: full screen %v, want %v", tt.tty, tt.term, got, tt.want)
		}
	}
}
