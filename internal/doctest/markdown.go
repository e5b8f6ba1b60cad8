package doctest

import (
	"fmt"
	"regexp"
	"strings"
)

// block is one fenced block of a page.
type block struct {
	info    string // the fence's info string: console, sh, …
	options string // a doctest comment on the line before the fence
	start   int    // the index of the first line inside the fence
	end     int    // the index of the closing fence
	lines   []string
}

// blocks finds the fenced blocks of a page's lines.
func blocks(lines []string) ([]block, error) {
	var out []block
	for i := 0; i < len(lines); i++ {
		fence, info, ok := opening(lines[i])
		if !ok {
			continue
		}
		b := block{info: info, start: i + 1}
		if i > 0 {
			b.options = doctestComment(lines[i-1])
		}
		j := i + 1
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != fence; j++ {
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: a block that never closes", i+1)
		}
		b.end, b.lines = j, lines[i+1:j]
		out = append(out, b)
		i = j
	}
	return out, nil
}

// opening reads a fence's opening line: its fence (``` or longer) and info
// string.
func opening(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, "```") {
		return "", "", false
	}
	n := len(t) - len(strings.TrimLeft(t, "`"))
	return t[:n], strings.TrimSpace(t[n:]), true
}

// doctestComment is what a <!-- doctest: … --> line says, or "".
func doctestComment(line string) string {
	s, ok := strings.CutPrefix(strings.TrimSpace(line), "<!-- doctest:")
	if !ok {
		return ""
	}
	s, ok = strings.CutSuffix(s, "-->")
	if !ok {
		return ""
	}
	return strings.TrimSpace(s)
}

// step is one command of a console block and what the page says it
// printed.
type step struct {
	command string // continuation lines joined with their newlines
	shown   []string
}

// hereDoc finds a here-document's delimiter: <<EOF, <<'EOF' or <<"EOF".
var hereDoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_]+)['"]?`)

// session reads a console block into its steps. Lines before the first
// command are an error: nothing could have printed them.
func session(lines []string) ([]step, error) {
	var out []step
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("output before the first command: %q", lines[i])
			}
			last := &out[len(out)-1]
			last.shown = append(last.shown, lines[i])
			continue
		}
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		// A here-document's lines are the command's, up to its delimiter.
		if m := hereDoc.FindStringSubmatch(cmd); m != nil {
			for i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
				if lines[i] == m[1] {
					break
				}
			}
		}
		out = append(out, step{command: cmd})
	}
	return out, nil
}

// commandLines are the inferscope command lines an sh block shows: each
// line (joined with its continuations) that starts with "inferscope " (or
// "go run ./cmd/inferscope "),
// without a trailing comment, split into words as the shell would split
// plain words and quotes. A line using the shell beyond that (a pipe, a
// redirection, a variable) is cut at the first such word.
func commandLines(lines []string) [][]string {
	var out [][]string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSpace(strings.TrimSuffix(line, `\`)) + " " + strings.TrimSpace(lines[i])
		}
		rest, ok := strings.CutPrefix(line, "inferscope ")
		if !ok {
			if rest, ok = strings.CutPrefix(line, "go run ./cmd/inferscope "); !ok {
				continue
			}
		}
		// An example's description follows it after two or more spaces.
		if i := strings.Index(rest, "  "); i >= 0 {
			rest = rest[:i]
		}
		if strings.Contains(rest, "...") || strings.Contains(rest, "…") {
			continue // a placeholder: not a command as it stands
		}
		words, ok := shellWords(rest)
		if !ok {
			continue
		}
		out = append(out, words)
	}
	return out
}

// shellWords splits a command line's plain words and quoted strings, up to
// the first word the shell would do more with (a comment, a pipe, a
// redirection, a substitution, a background job); false for a line whose
// quotes do not close.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case !inWord && strings.IndexByte("#|&;<>", c) >= 0:
			return words, true
		case strings.IndexByte("|&;<>$`(", c) >= 0:
			return words, true // the shell does more here: the word is not known
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}
