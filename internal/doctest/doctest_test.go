package doctest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/cli"
	"github.com/inferscope/inferscope/internal/testwait"
)

var update = flag.Bool("update", false, "write what the pages' commands print now into the pages")

const root = "../.."

// bin is the folder holding the inferscope built from this tree.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	testwait.Parallel(6) // the blocks mostly wait on what they started
	dir, err := os.MkdirTemp("", "doctest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Built as the tests are: under -race the packages are already
	// compiled for the race detector (and the pages' commands run with
	// it); a plain build would compile the whole tree a second time.
	args, env := []string{"build"}, []string{"CGO_ENABLED=0"}
	if raceEnabled {
		args, env = append(args, "-race"), []string{"CGO_ENABLED=1"}
	}
	build := exec.Command("go", append(args, "-o", filepath.Join(dir, "inferscope"), "./cmd/inferscope")...)
	build.Dir = root
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building inferscope: %v\n%s", err, out)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pages are the pages whose examples are held to what the tool does.
func pages(t *testing.T) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// TestConsoleBlocks runs every console block of every page and compares
// what each command prints with what the page shows. The blocks run in
// parallel (-parallel, six by default: TestMain): each has its own folder and
// ports, and most of their time is waiting on what they started.
func TestConsoleBlocks(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	r := runner{bin: bin, root: mustAbs(t, root), timeout: 90 * time.Second}
	var mu sync.Mutex
	edits := map[string][]edit{}
	lines := map[string][]string{}
	// With -update, each page is rewritten once its blocks have all run.
	t.Cleanup(func() {
		for page, es := range edits {
			slices.SortFunc(es, func(a, b edit) int { return a.b.start - b.b.start })
			if err := os.WriteFile(page, []byte(strings.Join(apply(lines[page], es), "\n")), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		ls := strings.Split(string(raw), "\n")
		lines[page] = ls
		bs, err := blocks(ls)
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for _, b := range bs {
			if b.info != "console" {
				continue
			}
			name := fmt.Sprintf("%s:%d", filepath.Base(page), b.start)
			if reason, skip := strings.CutPrefix(b.options, "skip"); skip {
				if strings.TrimSpace(reason) == "" {
					t.Errorf("%s: a skipped block must say why (<!-- doctest: skip REASON -->)", name)
				}
				continue
			}
			steps, err := session(b.lines)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			numbers := b.options == "numbers"
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if lack := missing(steps, exec.LookPath); len(lack) > 0 {
					// CI installs every tool a block runs (.ci/run): there a
					// missing one is a failure, not a block left unchecked.
					if os.Getenv("INFERSCOPE_CI") == "1" {
						t.Fatalf("%s not on PATH (INFERSCOPE_CI=1): .ci/run installs them", strings.Join(lack, ", "))
					}
					t.Skipf("%s not on PATH", strings.Join(lack, ", "))
				}
				got, err := r.run(steps, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				var newLines []string
				for i, s := range steps {
					newLines = append(newLines, prompt(s.command)...)
					if matches(s.shown, got[i], numbers) {
						newLines = append(newLines, s.shown...)
						continue
					}
					newLines = append(newLines, got[i]...)
					if !*update {
						t.Errorf("$ %s\nthe page shows:\n%s\nit prints:\n%s", s.command, strings.Join(s.shown, "\n"), strings.Join(got[i], "\n"))
					}
				}
				if *update && strings.Join(newLines, "\n") != strings.Join(b.lines, "\n") {
					mu.Lock()
					edits[page] = append(edits[page], edit{b, newLines})
					mu.Unlock()
				}
			})
		}
	}
}

// edit is a block's new lines.
type edit struct {
	b     block
	lines []string
}

// apply replaces the edited blocks' lines in a page's (their fences stay),
// the last block first so that the earlier ones' bounds still hold.
func apply(ls []string, edits []edit) []string {
	for k := len(edits) - 1; k >= 0; k-- {
		e := edits[k]
		out := append([]string{}, ls[:e.b.start]...)
		out = append(out, e.lines...)
		ls = append(out, ls[e.b.end:]...)
	}
	return ls
}

// prompt writes a command back as the page shows it.
func prompt(cmd string) []string {
	ls := strings.Split(cmd, "\n")
	ls[0] = "$ " + ls[0]
	return ls
}

// TestShownCommandsParse holds every inferscope command line an sh or
// console block shows to the command line as it is: the command exists,
// takes those flags, and that many arguments.
func TestShownCommandsParse(t *testing.T) {
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := blocks(strings.Split(string(raw), "\n"))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for _, b := range bs {
			var src []string
			switch b.info {
			case "sh", "bash", "shell":
				src = b.lines
			case "console":
				steps, err := session(b.lines)
				if err != nil {
					continue // TestConsoleBlocks says so
				}
				for _, s := range steps {
					// A command shown failing on purpose (its output says
					// why) is held to that output when the block runs.
					if !slices.ContainsFunc(s.shown, func(l string) bool { return strings.HasPrefix(l, "inferscope: error: ") }) {
						src = append(src, strings.Split(s.command, "\n")...) // continuation lines joined as the shell joins them
					}
				}
			default:
				continue
			}
			for _, words := range commandLines(src) {
				if err := cli.Check(words); err != nil {
					t.Errorf("%s:%d: inferscope %s: %v", filepath.Base(page), b.start, strings.Join(words, " "), err)
				}
			}
		}
	}
}

// TestCommandBlocksAreConsole holds every block that shows a command with
// its output ("$ " lines) to being a console block, which TestConsoleBlocks
// runs: output shown anywhere else could go stale unseen.
func TestCommandBlocksAreConsole(t *testing.T) {
	for _, page := range pages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := blocks(strings.Split(string(raw), "\n"))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for _, b := range bs {
			if b.info == "console" {
				continue
			}
			for _, l := range b.lines {
				if strings.HasPrefix(l, "$ ") {
					t.Errorf("%s:%d: a block of %q shows a command and its output: make it a console block (or one of commands alone, sh)", filepath.Base(page), b.start, b.info)
					break
				}
			}
		}
	}
}

// TestLinks holds every relative link of the README, the changelog and
// docs/ to a file that exists and, with a #fragment, to a heading (or an
// <a id>) of that page.
func TestLinks(t *testing.T) {
	all := append(pages(t), filepath.Join(root, "CHANGELOG.md"))
	anchorsOf := map[string]map[string]bool{}
	read := func(p string) ([]string, error) {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		return strings.Split(string(raw), "\n"), nil
	}
	for _, page := range all {
		ls, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(ls) {
			target := page
			if l.path != "" {
				target = filepath.Join(filepath.Dir(page), l.path)
			}
			where := fmt.Sprintf("%s:%d: %s#%s", filepath.Base(page), l.line, l.path, l.fragment)
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: no such file", where)
				continue
			}
			if l.fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			as, ok := anchorsOf[target]
			if !ok {
				tl, err := read(target)
				if err != nil {
					t.Fatal(err)
				}
				as = anchors(tl)
				anchorsOf[target] = as
			}
			if !as[l.fragment] {
				t.Errorf("%s: no such heading in %s", where, filepath.Base(target))
			}
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestUsageFlags holds the flag table of docs/usage.md to the main
// command's flags as docs/cli.md lists them (written from the command
// tree): a flag added, renamed or removed shows here.
func TestUsageFlags(t *testing.T) {
	usage := tableFlags(t, filepath.Join(root, "docs", "usage.md"), "## Flags of the main command")
	cli := tableFlags(t, filepath.Join(root, "docs", "cli.md"), "## inferscope")
	delete(cli, "--help")
	delete(cli, "--version")
	for f := range cli {
		if !usage[f] {
			t.Errorf("docs/usage.md's table lacks %s, a flag of inferscope (docs/cli.md)", f)
		}
	}
	for f := range usage {
		if !cli[f] {
			t.Errorf("docs/usage.md's table has %s, which inferscope does not take (docs/cli.md)", f)
		}
	}
}

// longFlag is a long flag's name in a table's first cell.
var longFlag = regexp.MustCompile("--[a-z][a-z-]*")

// tableFlags are the long flags named in the first cells of the first flag
// table under heading in page.
func tableFlags(t *testing.T, page, heading string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	in, table := false, false
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case l == heading:
			in = true
		case in && strings.HasPrefix(l, "## "):
			in = false
		case in && strings.HasPrefix(l, "| flag |"):
			table = true
		case in && table && strings.HasPrefix(l, "|"):
			first, _, _ := strings.Cut(strings.TrimPrefix(l, "|"), "|")
			for _, f := range longFlag.FindAllString(first, -1) {
				out[f] = true
			}
		case in && table:
			return out
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no flag table under %q", page, heading)
	}
	return out
}
