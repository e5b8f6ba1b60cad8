package doctest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// loopbackAddr finds a loopback host and port in a command line.
var loopbackAddr = regexp.MustCompile(`\b(127\.0\.0\.1|localhost):(\d{2,5})\b`)

// ports maps each loopback port a block's commands name to a free one.
func ports(steps []step) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range steps {
		for _, m := range loopbackAddr.FindAllStringSubmatch(s.command, -1) {
			if _, ok := out[m[2]]; ok {
				continue
			}
			free, err := freePort()
			if err != nil {
				return nil, err
			}
			out[m[2]] = free
		}
	}
	return out, nil
}

// freePort is a loopback port nothing listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p, nil
}

// remap replaces the ports of loopback addresses in s by their mapping.
func remap(s string, m map[string]string) string {
	return loopbackAddr.ReplaceAllStringFunc(s, func(a string) string {
		host, port, _ := net.SplitHostPort(a)
		if to, ok := m[port]; ok {
			return host + ":" + to
		}
		return a
	})
}

// invert swaps a mapping's keys and values.
func invert(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// background reports a command that runs in the background: it ends in a
// single &.
func background(cmd string) bool {
	c := strings.TrimSpace(cmd)
	return strings.HasSuffix(c, "&") && !strings.HasSuffix(c, "&&")
}

// marker separates the commands' output in the script's.
const marker = "\x1e"

// waitHelper waits for addresses to accept connections, at most 10 s each.
const waitHelper = `doctest_wait() {
  for a in "$@"; do
    for _ in $(seq 200); do
      (exec 3<>"/dev/tcp/${a%:*}/${a##*:}") 2>/dev/null && break
      sleep 0.05
    done
  done
}
`

// script is the bash program that runs a block's steps (already remapped).
func script(steps []step) string {
	var b strings.Builder
	b.WriteString("exec 2>&1\n" + waitHelper)
	for i, s := range steps {
		fmt.Fprintf(&b, "printf '%s%d%s\\n'\n%s\n", marker, i, marker, s.command)
		if background(s.command) {
			var addrs []string
			for _, m := range loopbackAddr.FindAllString(s.command, -1) {
				addrs = append(addrs, strings.Replace(m, "localhost", "127.0.0.1", 1))
			}
			// The lines a background command prints as it starts (and the
			// files it writes) come with it, not with the next command:
			// a server is waited for until it answers, anything else is
			// given half a second.
			if len(addrs) > 0 {
				fmt.Fprintf(&b, "doctest_wait %s\nsleep 0.2\n", strings.Join(addrs, " "))
			} else {
				b.WriteString("sleep 0.5\n")
			}
		}
	}
	fmt.Fprintf(&b, "printf '%send%s\\n'\nkill $(jobs -p) 2>/dev/null\nwait 2>/dev/null\ntrue\n", marker, marker)
	return b.String()
}

// splitOutput cuts a script's output into each step's lines.
func splitOutput(out string, n int) ([][]string, error) {
	res := make([][]string, n)
	parts := strings.Split(out, marker)
	// parts: [before, "0", text0, "1", text1, …, "end", after]
	seen := 0
	for i := 1; i+1 < len(parts); i += 2 {
		tag := parts[i]
		if tag == "end" {
			break
		}
		k, err := strconv.Atoi(tag)
		if err != nil || k != seen || k >= n {
			return nil, fmt.Errorf("the script's output is out of order at %q", tag)
		}
		text := strings.TrimPrefix(parts[i+1], "\n")
		res[k] = lines(text)
		seen++
	}
	if seen != n {
		return nil, fmt.Errorf("the script stopped after %d of %d commands", seen, n)
	}
	return res, nil
}

// lines splits text into lines without a final empty one, trailing spaces
// cut.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " \t\r")
	}
	return ls
}

// runner runs console blocks.
type runner struct {
	bin     string // the folder holding the inferscope built for the tests
	root    string // the repository
	timeout time.Duration
}

// run runs a block's steps in a fresh folder dir and returns what each
// printed, its ports written back as the page has them.
func (r runner) run(steps []step, dir string) ([][]string, error) {
	for _, sub := range []string{"examples", "testdata"} {
		if err := os.Symlink(filepath.Join(r.root, sub), filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	m, err := ports(steps)
	if err != nil {
		return nil, err
	}
	remapped := make([]step, len(steps))
	for i, s := range steps {
		remapped[i] = step{command: remap(s.command, m)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script(remapped))
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + r.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + dir, "TMPDIR=" + dir, "TZ=UTC", "LANG=C.UTF-8", "NO_COLOR=1", "TERM=dumb",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	// Whatever the block left behind goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the block took longer than %v; it printed:\n%s", r.timeout, out.String())
	}
	if runErr != nil {
		return nil, fmt.Errorf("bash: %w; it printed:\n%s", runErr, out.String())
	}
	res, err := splitOutput(remap(out.String(), invert(m)), len(steps))
	if err != nil {
		return nil, fmt.Errorf("%w; it printed:\n%s", err, out.String())
	}
	return res, nil
}

// Normalisation: what a run cannot repeat.
var (
	rfc3339   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	dateTime  = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?( UTC)?`)
	timeOfDay = regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}\b`)
	// A build's version: a module or pseudo-version, or devel where the
	// build recorded none (a worktree, -buildvcs=false), with the commit
	// and +dirty where known.
	buildVer = regexp.MustCompile(`v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+dirty)?|\(devel\)|\bdevel(-[0-9a-f]{7,40})?(\+dirty)?`)
	commit   = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	// The toolchain and the platform a binary was built with and for.
	goRelease = regexp.MustCompile(`\bgo1\.\d+(\.\d+|rc\d+)?\b`)
	platform  = regexp.MustCompile(`\b(linux|darwin|windows|freebsd|openbsd|netbsd)/(amd64|arm64|386|arm|riscv64|ppc64le|s390x)\b`)
	// A number with what a run changes about it: a bound's sign, a
	// multiple's letter and a unit (108 ms and 1.08 s, 873 and 1.2K).
	// A digit after a letter is a name's (p50, Qwen3), not a number.
	number = regexp.MustCompile(`(^|[^\pL\pN_.])[≤≥~]?\d+([.,]\d+)*( ?(K|M|G|T|KiB|MiB|GiB|TiB|B|ns|µs|ms|s|min|h)\b|%|×)?`)
	// Runs of the cells bars, trends, heat strips and a table's rule are
	// drawn with: their length and shades follow the numbers.
	glyphs = regexp.MustCompile(`[▁▂▃▄▅▆▇█▉▊▋▌▍▎▏░▒▓─]+`)
	spaces = regexp.MustCompile(` {2,}`)
)

// normal is a line as it is compared: times, the version, commits and the
// toolchain masked, and with numbers, every number, every bar and the
// alignment they shift.
func normal(line string, numbers bool) string {
	line = rfc3339.ReplaceAllString(line, "TIME")
	line = dateTime.ReplaceAllString(line, "TIME")
	line = timeOfDay.ReplaceAllString(line, "TIME")
	line = commit.ReplaceAllString(line, "COMMIT")
	line = buildVer.ReplaceAllString(line, "VERSION")
	line = goRelease.ReplaceAllString(line, "GO")
	line = platform.ReplaceAllString(line, "PLATFORM")
	if numbers {
		line = number.ReplaceAllString(line, "${1}N")
		line = glyphs.ReplaceAllString(line, "BAR")
		line = spaces.ReplaceAllString(line, " ")
	}
	return line
}

// ellipsis is a shown line that stands for any number of lines; a shown
// line that ends in " …" stands for any line that starts as it does.
const ellipsis = "…"

// matches reports whether got is what shown shows, "…" lines standing for
// any lines.
func matches(shown, got []string, numbers bool) bool {
	if len(shown) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(shown[0]) == ellipsis {
		for k := 0; k <= len(got); k++ {
			if matches(shown[1:], got[k:], numbers) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(shown[0], got[0], numbers) && matches(shown[1:], got[1:], numbers)
}

// lineMatches reports whether a printed line is the one shown, normalised;
// a shown line ending in " …" needs only its start.
func lineMatches(shown, got string, numbers bool) bool {
	if start, ok := strings.CutSuffix(shown, " "+ellipsis); ok {
		return strings.HasPrefix(normal(got, numbers), strings.TrimRight(normal(start, numbers), " "))
	}
	return normal(shown, numbers) == normal(got, numbers)
}

// tools are the programs besides inferscope and the shell's own that the
// pages' blocks run: a machine without one cannot run such a block.
var tools = []string{"curl", "jq", "prometheus", "promtool", "vmalert", "victoria-metrics"}

// missing lists the tools a block's commands run that lookPath cannot find,
// each once. A tool is run where its name is a word of a command line on
// its own: not a flag (--prometheus) or a file (prometheus.yml).
func missing(steps []step, lookPath func(string) (string, error)) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range steps {
		words := strings.FieldsFunc(s.command, func(r rune) bool {
			return strings.ContainsRune(" \t\n|;&()", r)
		})
		for _, w := range words {
			if seen[w] || !slices.Contains(tools, w) {
				continue
			}
			seen[w] = true
			if _, err := lookPath(w); err != nil {
				out = append(out, w)
			}
		}
	}
	return out
}
