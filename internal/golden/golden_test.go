package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports; Fatalf ends the
// check as it would end a test.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

type fatal struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	panic(fatal{})
}

// check runs Check in a package directory of its own, holding the golden
// files given (name → content), and returns what it reported.
func check[T ~string | ~[]byte](t *testing.T, files map[string]string, name string, got T) *recorder {
	t.Helper()
	old := dir
	dir = t.TempDir()
	t.Cleanup(func() { dir = old })
	for n, content := range files {
		p := filepath.Join(dir, "testdata", n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != (fatal{}) {
				panic(p)
			}
		}()
		Check(r, name, got)
	}()
	return r
}

func TestCheck(t *testing.T) {
	files := map[string]string{"report.txt": "a\nb\nc\n", "real/x.json": "{}\n"}
	tests := []struct {
		name, file, got string
		want            []string // substrings of the one error, in order; none for a pass
		fatal           bool
	}{
		{"equal", "report.txt", "a\nb\nc\n", nil, false},
		{"in a subdirectory", "real/x.json", "{}\n", nil, false},
		{"a changed line", "report.txt", "a\nB\nc\n", []string{"differs from testdata/report.txt (- file, + output)", "@@ line 1 @@\n  a\n- b\n+ B\n  c\n", "go test -update rewrites"}, false},
		{"a missing newline", "report.txt", "a\nb\nc", []string{"@@ line 2 @@\n  b\n  c\n- \n(one ends with a newline, the other does not)\n"}, false},
		{"no file", "none.txt", "x", []string{"none.txt", "go test -update writes it"}, false},
		{"outside testdata", "../report.txt", "x", []string{`"../report.txt" is not a name under testdata/`}, true},
		{"absolute", "/etc/passwd", "x", []string{"is not a name under testdata/"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := check(t, files, tt.file, tt.got)
			if tt.want == nil {
				if len(r.errs) > 0 {
					t.Fatalf("reported %q", r.errs)
				}
				return
			}
			if len(r.errs) != 1 || r.fatal != tt.fatal {
				t.Fatalf("reported %q (fatal %v), want one error (fatal %v)", r.errs, r.fatal, tt.fatal)
			}
			rest := r.errs[0]
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("the error lacks %q:\n%s", w, r.errs[0])
				}
				rest = rest[i+len(w):]
			}
		})
	}
	// A []byte is compared as its string.
	if r := check(t, files, "report.txt", []byte("a\nb\nc\n")); len(r.errs) > 0 {
		t.Errorf("[]byte: %q", r.errs)
	}
	if r := check(t, files, "report.txt", []byte("a\n")); len(r.errs) != 1 {
		t.Errorf("[]byte that differs: %q", r.errs)
	}
}

// Under -update, Check writes the file, its directories too, and passes.
func TestCheckUpdate(t *testing.T) {
	*update = true
	defer func() { *update = false }()
	r := check(t, map[string]string{"old.txt": "old\n"}, "old.txt", "new\n")
	if len(r.errs) > 0 {
		t.Fatalf("reported %q", r.errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "testdata", "old.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("old.txt = %q, %v; want it rewritten", b, err)
	}
	r = check(t, nil, "deep/er/new.txt", []byte("made\n"))
	if len(r.errs) > 0 {
		t.Fatalf("reported %q", r.errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "testdata", "deep", "er", "new.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("new.txt = %q, %v", b, err)
	}
}

// lines numbers n lines from 1: "1\n2\n…n\n".
func lines(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprint(i + 1)
	}
	return l
}

// edit returns lines(n) with the given lines (numbered from 1) replaced,
// or dropped where the replacement is "DROP", as text.
func edit(n int, repl map[int]string) string {
	var out []string
	for i, l := range lines(n) {
		switch r, ok := repl[i+1]; {
		case !ok:
			out = append(out, l)
		case r != "DROP":
			out = append(out, r)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

func TestDiff(t *testing.T) {
	ten := edit(10, nil)
	tests := []struct {
		name, want, got, diff string
	}{
		{"equal", ten, ten, ""},
		{"one line changed", ten, edit(10, map[int]string{5: "five"}), "@@ line 3 @@\n  3\n  4\n- 5\n+ five\n  6\n  7\n"},
		{"the first line", ten, edit(10, map[int]string{1: "one"}), "@@ line 1 @@\n- 1\n+ one\n  2\n  3\n"},
		{"a line added", "1\n2\n3\n", "1\n2\nnew\n3\n", "@@ line 1 @@\n  1\n  2\n+ new\n  3\n"},
		{"a line dropped", ten, edit(10, map[int]string{4: "DROP"}), "@@ line 2 @@\n  2\n  3\n- 4\n  5\n  6\n"},
		// Changes at lines 2 and 9 are six lines apart: two hunks.
		{"two hunks", ten, edit(10, map[int]string{2: "b", 9: "i"}),
			"@@ line 1 @@\n  1\n- 2\n+ b\n  3\n  4\n@@ line 7 @@\n  7\n  8\n- 9\n+ i\n  10\n"},
		// Lines 3 and 7 leave three unchanged between them: one hunk.
		{"one hunk for close changes", ten, edit(10, map[int]string{3: "c", 7: "g"}),
			"@@ line 1 @@\n  1\n  2\n- 3\n+ c\n  4\n  5\n  6\n- 7\n+ g\n  8\n  9\n"},
		{"an escape quoted", "red\n", "\x1b[31mred\x1b[0m\n", "@@ line 1 @@\n- red\n+ \"\\x1b[31mred\\x1b[0m\"\n"},
		{"a carriage return quoted", "a\n", "a\r\n", "@@ line 1 @@\n- a\n+ \"a\\r\"\n"},
		{"no newline at the end", "a\n", "a", "@@ line 1 @@\n  a\n- \n(one ends with a newline, the other does not)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.want, tt.got); got != tt.diff {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tt.diff)
			}
		})
	}
}

// A diff of many changes shows the first maxShown changed lines, then says
// there are more; inputs too long for the table still get one.
func TestDiffCapped(t *testing.T) {
	all := map[int]string{}
	for i := 1; i <= 100; i++ {
		all[i] = "x" + fmt.Sprint(i)
	}
	d := Diff(edit(100, nil), edit(100, all))
	if n := strings.Count(d, "\n- ") + strings.Count(d, "\n+ "); n != maxShown {
		t.Errorf("%d changed lines shown, want %d:\n%s", n, maxShown, d)
	}
	if !strings.HasSuffix(d, "… (more changes not shown)\n") {
		t.Errorf("no word of the rest:\n%s", d)
	}
	// One change in a long input: the common start and end need no table.
	long := 3000
	d = Diff(edit(long, nil), edit(long, map[int]string{1500: "changed"}))
	if want := "@@ line 1498 @@\n  1498\n  1499\n- 1500\n+ changed\n  1501\n  1502\n"; d != want {
		t.Errorf("long input: %q, want %q", d, want)
	}
	// Changes far apart in it: the lines between are too many for the
	// table (2981² cells), and show as one changed block.
	d = Diff(edit(long, nil), edit(long, map[int]string{10: "a", 2990: "b"}))
	if !strings.HasPrefix(d, "@@ line 8 @@\n  8\n  9\n- 10\n- 11\n") || !strings.HasSuffix(d, "… (more changes not shown)\n") {
		t.Errorf("long input, changes far apart:\n%.300s", d)
	}
}
