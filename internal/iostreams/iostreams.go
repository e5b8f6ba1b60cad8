// Package iostreams carries the standard streams and what is known about the
// terminal behind them (TTY, width, colour), so that no package writes to
// os.Stdout directly and every command can be tested with buffers.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// PipedWidth is the layout width when stdout is not a terminal.
const PipedWidth = 160

// IO is the streams of one command run.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// OutTTY reports whether Out is a terminal.
	OutTTY bool
	// Width returns the terminal's width in cells, or 0 when unknown.
	Width func() int
	// Getenv reads the environment (os.Getenv outside tests).
	Getenv func(string) string
}

// System returns the process's own streams.
func System() *IO {
	fd := int(os.Stdout.Fd())
	tty := term.IsTerminal(fd)
	return &IO{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTTY: tty,
		Width: func() int {
			if !tty {
				return 0
			}
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		},
		Getenv: os.Getenv,
	}
}

// Test returns streams backed by buffers: stdin reads in, and the two
// buffers collect stdout and stderr. tty says whether stdout pretends to be
// a terminal.
func Test(in string, tty bool, width int) (*IO, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &IO{
		In: bytes.NewBufferString(in), Out: &out, Err: &errb,
		OutTTY: tty,
		Width:  func() int { return width },
		Getenv: func(string) string { return "" },
	}, &out, &errb
}

// LayoutWidth is the width to lay a report out in: the terminal's width, or
// PipedWidth when stdout is not a terminal or its width is unknown.
func (s *IO) LayoutWidth() int {
	if s.OutTTY && s.Width != nil {
		if w := s.Width(); w > 0 {
			return w
		}
	}
	return PipedWidth
}

// ColorEnabled applies the colour rule: never under NO_COLOR or CLICOLOR=0
// (or when the caller disabled it), always under CLICOLOR_FORCE, otherwise
// only on a terminal that is not TERM=dumb.
func (s *IO) ColorEnabled(disabled bool) bool {
	if disabled || s.Getenv("NO_COLOR") != "" || s.Getenv("CLICOLOR") == "0" {
		return false
	}
	if v := s.Getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	return s.OutTTY && !s.dumb()
}

// FullScreen reports whether stdout is a terminal that can draw a
// full-screen view: a terminal, and not TERM=dumb (an editor's shell buffer,
// a serial console), which cannot move the cursor or switch screens.
func (s *IO) FullScreen() bool { return s.OutTTY && !s.dumb() }

// dumb reports TERM=dumb: a terminal without cursor movement or colour.
func (s *IO) dumb() bool { return s.Getenv("TERM") == "dumb" }
