// Package golden checks a test's output against a golden file: the one way
// inferscope's packages keep rendered output under test.
//
// # Layout
//
// A golden file is testdata/<name> in the directory of the package under
// test; name may hold subdirectories ("real/vllm.txt"). The file holds the
// output exactly, byte for byte, with nothing added.
//
// # Updating
//
// Under go test -update, [Check] writes the output to the file instead of
// comparing, creating the file and its directories as needed:
//
//	go test ./internal/render -run TestTextGolden -update
//	git diff internal/render/testdata
//
// A rewritten file is to be read by a person before it is committed: the
// point of a golden file is that a change to the output is seen.
//
// # Converting a test
//
// Drop the package's own update flag and helper, and call
//
//	golden.Check(t, "name.txt", got) // got is a string or a []byte
//
// where the file was testdata/name.txt. A file elsewhere moves under
// testdata/ with git mv, its content unchanged.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// dir is the directory of the package under test: go test starts a test
// binary there, and it is read at init, before any test moves away with
// t.Chdir.
var dir = func() string {
	d, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("golden: %v", err))
	}
	return d
}()

// Check compares got with the golden file testdata/<name> and reports a
// difference as an error of t, with a line diff; under -update it writes
// got to the file instead. name is a path relative to testdata/, with
// slashes, that stays inside it.
func Check[T ~string | ~[]byte](t testing.TB, name string, got T) {
	t.Helper()
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		t.Fatalf("golden: %q is not a name under testdata/", name)
	}
	shown := "testdata/" + name
	path := filepath.Join(dir, "testdata", filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden: %v (go test -update writes it)", err)
		return
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("the output differs from %s (- file, + output):\n%s(go test -update rewrites the file; read git diff before committing it)",
			shown, Diff(string(want), string(got)))
	}
}

// contextLines is how many unchanged lines a hunk of [Diff] shows either side
// of a change; maxShown caps the changed lines shown in all.
const (
	contextLines = 2
	maxShown     = 60
)

// Diff describes how got differs from want line by line, in the manner of
// a unified diff: hunks headed "@@ line N @@" (N counts want's lines), with
// unchanged lines indented by two spaces, want's lines marked "- " and
// got's "+ ". A line holding a control character (an escape sequence, a
// carriage return) is shown quoted. Diff is "" when want equals got.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	endsApart := strings.HasSuffix(want, "\n") != strings.HasSuffix(got, "\n")
	if !endsApart {
		// Both end a last line, or neither does: nothing to show there.
		want, got = strings.TrimSuffix(want, "\n"), strings.TrimSuffix(got, "\n")
	}
	var b strings.Builder
	ops := editScript(strings.Split(want, "\n"), strings.Split(got, "\n"))
	shown := 0
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: the change at i and every later one with at most two
		// contexts after the one before, with a context either side.
		last := i
		for j := i + 1; j < len(ops); j++ {
			if ops[j].kind == ' ' {
				continue
			}
			if j-last-1 > 2*contextLines {
				break
			}
			last = j
		}
		start, end := max(0, i-contextLines), min(len(ops), last+1+contextLines)
		fmt.Fprintf(&b, "@@ line %d @@\n", ops[start].line+1)
		for _, op := range ops[start:end] {
			if op.kind != ' ' {
				if shown++; shown > maxShown {
					b.WriteString("… (more changes not shown)\n")
					return b.String()
				}
			}
			b.WriteString(string(op.kind) + " " + quoted(op.text) + "\n")
		}
		i = end
	}
	if endsApart {
		b.WriteString("(one ends with a newline, the other does not)\n")
	}
	return b.String()
}

// op is one line of an edit script: kept (' '), only in want ('-') or only
// in got ('+'); line is its index in want (for '+', where it would go).
type op struct {
	kind byte
	text string
	line int
}

// maxCells bounds the table of [middle].
const maxCells = 4 << 20

// editScript is a shortest edit script turning w into g: their common
// start and end kept, and between them [middle]'s script.
func editScript(w, g []string) []op {
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	var ops []op
	for i := range pre {
		ops = append(ops, op{' ', w[i], i})
	}
	ops = append(ops, middle(w[pre:len(w)-suf], g[pre:len(g)-suf], pre)...)
	for i := len(w) - suf; i < len(w); i++ {
		ops = append(ops, op{' ', w[i], i})
	}
	return ops
}

// middle is an edit script turning w into g, whose first line is line
// from of the whole: by the longest common subsequence of their lines, or,
// when its table would pass maxCells, w's lines out and g's in.
func middle(w, g []string, from int) []op {
	n, m := len(w), len(g)
	var ops []op
	if (n+1)*(m+1) > maxCells {
		for i, s := range w {
			ops = append(ops, op{'-', s, from + i})
		}
		for _, s := range g {
			ops = append(ops, op{'+', s, from + n})
		}
		return ops
	}
	lcs := lcsTable(w, g)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && w[i] == g[j]:
			ops = append(ops, op{' ', w[i], from + i})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', w[i], from + i})
			i++
		default:
			ops = append(ops, op{'+', g[j], from + i})
			j++
		}
	}
	return ops
}

// lcsTable holds at [i][j] the length of the longest common subsequence
// of w[i:] and g[j:].
func lcsTable(w, g []string) [][]int {
	lcs := make([][]int, len(w)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(g)+1)
	}
	for i := len(w) - 1; i >= 0; i-- {
		for j := len(g) - 1; j >= 0; j-- {
			if w[i] == g[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	return lcs
}

// quoted shows a line as it is, or Go-quoted when it holds a control
// character that would act on the terminal reading the test's log.
func quoted(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 }) {
		return strconv.Quote(s)
	}
	return s
}
