package cli

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// updating reports go test -update (the flag internal/golden defines).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// checkFile compares got with the file at path, or writes it under -update.
func checkFile(t *testing.T, path, got string) {
	t.Helper()
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run TestCLIDocs -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s is not what the command tree says: go test ./internal/cli -run TestCLIDocs -update rewrites it (read git diff)", path)
	}
}

// docs/cli.md and the man pages are written from the command tree, and
// kept in step with it.
func TestCLIDocs(t *testing.T) {
	md := CLIMarkdown()
	checkFile(t, "../../docs/cli.md", md)
	pages := ManPages()
	dir := "../../docs/man"
	if updating() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, page := range pages {
		checkFile(t, filepath.Join(dir, name), page)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; !ok {
			if updating() {
				os.Remove(f)
				continue
			}
			t.Errorf("%s is the page of no command", f)
		}
	}
	// Every command has its section and page, and every flag its row.
	for _, c := range docTree() {
		if !strings.Contains(md, "\n## "+c.CommandPath()+"\n") || pages[anchor(c)+".1"] == "" {
			t.Errorf("%s has no section or no man page", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(pages[anchor(c)+".1"], roff("--"+f.Name)) {
				t.Errorf("the man page of %s lacks --%s", c.CommandPath(), f.Name)
			}
		})
	}
	manReads(t, dir, pages)
}

// manReads checks that man reads each page without a warning, where man
// is installed.
func manReads(t *testing.T, dir string, pages map[string]string) {
	if _, err := exec.LookPath("man"); err != nil || updating() {
		return
	}
	for name := range pages {
		out, err := exec.Command("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", filepath.Join(dir, name)).CombinedOutput()
		if err != nil || strings.Contains(string(out), "warning:") {
			t.Errorf("man %s: %v\n%.2000s", name, err, out)
		}
	}
}

// Every flag that several commands take has one definition: the same
// shorthand, type, default and help text in each (issue 21: one name, one
// meaning, in every command).
func TestSharedFlagsOneDefinition(t *testing.T) {
	type def struct {
		short, typ, defValue, usage string
	}
	first := map[string]def{}
	where := map[string][]string{}
	for _, c := range docTree() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			d := def{f.Shorthand, f.Value.Type(), f.DefValue, f.Usage}
			where[f.Name] = append(where[f.Name], c.CommandPath())
			if prev, ok := first[f.Name]; !ok {
				first[f.Name] = d
			} else if prev != d {
				t.Errorf("--%s in %s is not as in %s:\n  %+v\n  %+v", f.Name, c.CommandPath(), where[f.Name][0], d, prev)
			}
		})
	}
	// The flags issue 21 names as shared are shared, and a shorthand means
	// one flag.
	for _, name := range []string{"output", "json", "watch", "timeout", "width", "no-color", "fail-on", "by", "selector", "at", "header", "dialect", "model", "window"} {
		if len(where[name]) < 2 {
			t.Errorf("--%s is taken only by %v", name, where[name])
		}
	}
	shorthands := map[string]string{}
	for name, d := range first {
		shorthands[name] = d.short
	}
	oneFlagPerShorthand(t, shorthands)
	// A report-writing command takes -o and --json, and a watching one -w.
	for _, cmd := range []string{"inferscope", "inferscope demo", "inferscope fleet", "inferscope proxy"} {
		for _, f := range []string{"output", "json", "watch"} {
			if !slices.Contains(where[f], cmd) {
				t.Errorf("%s does not take --%s", cmd, f)
			}
		}
	}
	// The time flags are times wherever they are taken: no command takes
	// --from, --to or --last as anything else.
	for _, name := range []string{"from", "to", "last", "at"} {
		for _, c := range where[name] {
			if c == "inferscope rules" || c == "inferscope dashboard" {
				t.Errorf("%s takes --%s", c, name)
			}
		}
	}
}

// oneFlagPerShorthand checks that no shorthand stands for two flags
// (shorthands: {flag: its shorthand}).
func oneFlagPerShorthand(t *testing.T, shorthands map[string]string) {
	seen := map[string]string{}
	for name, short := range shorthands {
		if short == "" {
			continue
		}
		if other, ok := seen[short]; ok {
			t.Errorf("-%s is both --%s and --%s", short, name, other)
		}
		seen[short] = name
	}
}

// Every flag that takes a value names it in its help (FORMAT, D, TIME),
// and help lists each flag once.
func TestEveryFlagNamesItsArgument(t *testing.T) {
	for _, c := range docTree() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" {
				return
			}
			if arg, _ := pflag.UnquoteUsage(f); arg == f.Value.Type() || arg == "" {
				t.Errorf("%s --%s: no `ARG` in its usage %q", c.CommandPath(), f.Name, f.Usage)
			}
		})
	}
}

// Every help says the exit statuses its command can end with: 0, 1 where
// it takes --fail-on, 2, and the signals' 130 and 143.
func TestEveryHelpSaysExitStatus(t *testing.T) {
	for _, c := range docTree() {
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "inferscope")), "--help")
		out, errOut, code := runCLI(t, "", args...)
		if code != ExitOK || errOut != "" {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		_, exits, ok := strings.Cut(out, "\nExit status:\n")
		if !ok {
			t.Errorf("%v: no exit status", args)
			continue
		}
		want := []int{ExitOK, ExitError, ExitInterrupted, ExitTerminated}
		if c.Flags().Lookup("fail-on") != nil {
			want = append(want, ExitFailOn)
		}
		for _, code := range want {
			if !strings.Contains(exits, "\n  "+strconv.Itoa(code)+" ") && !strings.HasPrefix(exits, "  "+strconv.Itoa(code)+" ") {
				t.Errorf("%v: exit status %d not said:\n%s", args, code, exits)
			}
		}
	}
}

// The bash completion script, sourced in a real bash, completes commands,
// flags and flag values by calling back into inferscope.
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs bash and the command as a process")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	// inferscope on PATH is this test binary, run as the command line
	// (TestMain).
	wrapper := "#!/bin/sh\nINFERSCOPE_TEST_MAIN=1 exec " + shellQuote(os.Args[0]) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "inferscope"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	script, errOut, code := runCLI(t, "", "completion", "bash")
	if code != ExitOK || !strings.Contains(script, "__start_inferscope") {
		t.Fatalf("completion bash: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "completion.bash"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// The script needs bash-completion's _get_comp_words_by_ref, as the
	// README says; CI installs the package.
	helpers := "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(helpers); err != nil {
		if os.Getenv("INFERSCOPE_CI") == "1" {
			t.Fatalf("bash-completion is not installed: %v", err)
		}
		t.Skip("bash-completion is not installed")
	}
	complete := func(line string) []string {
		t.Helper()
		prog := `source /usr/share/bash-completion/bash_completion
source completion.bash
COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
__start_inferscope inferscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "LINE="+line)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.TrimSpace(l))
		}
		return got
	}
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"inferscope fle", []string{"fleet"}},
		{"inferscope d", []string{"dashboard", "demo"}},
		{"inferscope --fail-on ", []string{"warn", "bad"}},
		{"inferscope -o ", []string{"text", "json"}},
		{"inferscope fleet --sor", []string{"--sort"}},
		{"inferscope demo --scenario off", []string{"offload-thrash", "offload-healthy"}},
		{"inferscope rules --dialect v", []string{"vllm"}},
		{"inferscope completion ", []string{"bash", "zsh", "fish", "powershell"}},
	} {
		got := complete(tt.line)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q completes to %q, want %q among them", tt.line, got, w)
			}
		}
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Every shell's script is written, and names the command.
func TestCompletionShells(t *testing.T) {
	for _, sh := range shells {
		out, errOut, code := runCLI(t, "", "completion", sh)
		if code != ExitOK || errOut != "" || !strings.Contains(out, "inferscope") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %s", sh, code, len(out), errOut)
		}
	}
}

// The tree is built afresh for every run: no flag value leaks from one run
// to the next (tests run the command line many times in one process).
func TestNoStateBetweenRuns(t *testing.T) {
	io, _, _ := iostreams.Test("", false, 0)
	a, b := newRoot(io, nil), newRoot(io, nil)
	var walk func(x, y *cobra.Command)
	walk = func(x, y *cobra.Command) {
		x.Flags().VisitAll(func(f *pflag.Flag) {
			if g := y.Flags().Lookup(f.Name); g != nil && g.Value == f.Value {
				t.Errorf("%s --%s shares its value between two trees", x.CommandPath(), f.Name)
			}
		})
		for i, s := range x.Commands() {
			walk(s, y.Commands()[i])
		}
	}
	walk(a, b)
	out, _, _ := runCLI(t, "", "--width", "100", "--json", fixtures+"idle.prom")
	again, _, _ := runCLI(t, "", fixtures+"idle.prom")
	if !strings.HasPrefix(out, "{") || strings.HasPrefix(again, "{") {
		t.Error("--json of one run carried into the next")
	}
}
