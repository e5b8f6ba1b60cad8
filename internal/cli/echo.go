package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// What a message repeats of the user's own text (a flag's value, a path, a
// word taken for a command) is repeated one way: on one terminal-safe line
// and cut to termsafe.EchoRunes runes, so that a 100 kB argument makes one
// line and an escape or bidi character in it cannot drive the terminal.
// [usagef] does it to every string among its arguments, so that a new
// message cannot forget to; a string it must print whole (a list the
// command composed) is passed as [whole]. Whatever reaches stderr another
// way (a library's error) is cut word by word as it is printed
// ([clipWords]).

// echoed is a string [usagef] was given: %q writes it as termsafe.Quote
// does, any other verb as termsafe.Echo does.
type echoed string

// Format writes e under the verb's flags and width.
func (e echoed) Format(f fmt.State, verb rune) {
	directive := fmt.FormatString(f, verb)
	if verb == 'q' {
		fmt.Fprintf(f, strings.TrimSuffix(directive, "q")+"s", termsafe.Quote(string(e)))
		return
	}
	fmt.Fprintf(f, directive, termsafe.Echo(string(e)))
}

// whole is a string [usagef] writes as it is, on one terminal-safe line
// but not cut: what the command composed, such as a list of instances,
// whose parts are short or were cut where they came from.
type whole string

// echoArgs are args with every string made an [echoed] one.
func echoArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = echoed(v)
		case whole:
			out[i] = termsafe.Text(string(v))
		default:
			out[i] = a
		}
	}
	return out
}

// notice writes one line to stderr that is not an error, "inferscope: "
// and what format says, its string arguments repeated as [usagef] repeats
// them.
func notice(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "inferscope: "+format+"\n", echoArgs(args)...)
}

// clipWords cuts every word of s (a run without white space) longer than
// termsafe.EchoRunes runes to that many, ending in "…": what [printError]
// writes of an error that repeated a value whole, as a library's error may.
func clipWords(s string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if utf8.RuneCountInString(w) > termsafe.EchoRunes {
			words[i] = string([]rune(w)[:termsafe.EchoRunes-1]) + "…"
		}
	}
	return strings.Join(words, " ")
}
