package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/version"
	"github.com/inferscope/inferscope/internal/watch"
)

// errorCase is one way the command line can fail: the arguments, stdin and
// environment, and what stderr must say, in order.
type errorCase struct {
	name  string
	args  []string
	stdin string
	env   map[string]string
	want  []string
}

// Every error path of the command line, as a user meets it: exit 2, nothing
// on stdout, one `inferscope: error:` line and at least one
// `inferscope: hint:` line, lower case, no trailing period, no stray line.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	status := func(code int) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", code)
		}))
	}
	unauth, teapot := status(http.StatusUnauthorized), status(http.StatusTeapot)
	defer unauth.Close()
	defer teapot.Close()
	serve := func(body string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write([]byte(body))
		}))
	}
	garbage := serve("# TYPE a gauge\na 1\nthis is { not metrics\n")
	defer garbage.Close()
	other := serve("# TYPE go_goroutines gauge\ngo_goroutines 7\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n")
	defer other.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer slow.Close()
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()
	// A port something holds.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	idle := fixtures + "idle.prom"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(readFile(t, idle))
	zw.Close()
	cut := write("cut.prom.gz", gz.Bytes()[:gz.Len()/2])
	odd := write("my scrape $(x).prom", []byte("<html>not metrics</html>\n"))

	tests := []errorCase{
		// Flags.
		{"unknown flag", []string{"--frobnicate"}, "", nil, []string{"error: unknown flag --frobnicate", "hint: inferscope --help lists the flags"}},
		{"missing value", []string{idle, "--width"}, "", nil, []string{"error: flag needs an argument: --width"}},
		{"bad timeout", []string{"--timeout", "soon", idle}, "", nil, []string{`error: invalid value "soon" for --timeout: not a duration`}},
		{"bool with a value", []string{"--json=maybe", idle}, "", nil, []string{`error: --json takes no value (or --json=true, --json=false), not "maybe"`, "hint: "}},
		{"width not a number", []string{"--width", "wide", idle}, "", nil, []string{`error: invalid value "wide" for --width: not a number`}},
		{"width beyond int", []string{"--width", "99999999999999999999", idle}, "", nil, []string{`for --width: out of range`}},
		{"width too wide", []string{"--width", "99999999999", idle}, "", nil, []string{"error: --width 99999999999 is wider than inferscope lays out (at most 1000)", "hint: use --width 40 to 1000"}},
		{"width 1e8", []string{"--width", "100000000", idle}, "", nil, []string{"error: --width 100000000 is wider"}},
		{"width too narrow", []string{"--width", "10", idle}, "", nil, []string{"error: --width 10 is too narrow"}},
		{"negative width", []string{"--width", "-5", idle}, "", nil, []string{"error: --width -5 is too narrow"}},
		{"columns", []string{"--columns", "5", idle}, "", nil, []string{"error: --columns 5 is out of range", "hint: use --columns 1 to 4"}},
		{"bad fail-on", []string{"--fail-on", "meh", "x.prom"}, "", nil, []string{`error: --fail-on "meh" is not a severity`}},
		{"zero timeout", []string{"--timeout", "0", idle}, "", nil, []string{"error: --timeout must be positive"}},
		{"max-bytes not a size", []string{"--max-bytes", "1x", idle}, "", nil, []string{`error: invalid value "1x" for --max-bytes: not a size (use bytes, or k, M or G: 512k, 64M, 1G)`}},
		{"max-bytes too large", []string{"--max-bytes", "2G", idle}, "", nil, []string{"error: --max-bytes 2G is more than inferscope reads (at most 1G)", "hint: "}},
		{"max-bytes zero", []string{"--max-bytes", "0", idle}, "", nil, []string{"error: --max-bytes must be positive"}},
		{"two targets", []string{"a.prom", "b.prom"}, "", nil, []string{"error: too many targets"}},
		{"three with since", []string{"--since", "a.prom", "b.prom", "c.prom"}, "", nil, []string{"error: too many targets", "hint: --since FILE takes the earlier scrape"}},
		{"bad header", []string{"--header", "NoColon", idle}, "", nil, []string{`error: --header "NoColon"`, "hint: write it as --header 'Name: value'"}},
		// Modes.
		{"zero watch", []string{"--watch", "0s", idle}, "", nil, []string{"error: --watch 0s is shorter than the shortest refresh interval (200ms)", "hint: use --watch 200ms or longer"}},
		{"watch 1ns", []string{"--watch", "1ns", "--json", idle}, "", nil, []string{"error: --watch 1ns is shorter than the shortest refresh interval (200ms)"}},
		{"watch and since", []string{"--watch", "2s", "--since", "a.prom", idle}, "", nil, []string{"error: --watch and --since do not go together"}},
		{"watch stdin", []string{"--watch", "1s", "-"}, "", nil, []string{"error: --watch re-reads its target, and stdin can be read only once", "hint: watch a server"}},
		{"since stdin twice", []string{"--since", "-", "-"}, "", nil, []string{"error: --since - and the target - would both read stdin", "hint: save one scrape"}},
		{"save with watch", []string{"--watch", "2s", "--save", "x.prom", idle}, "", nil, []string{"error: --save does not go with --watch"}},
		{"windows without watch", []string{"--watch-windows", "1m", idle}, "", nil, []string{"error: --watch-windows sets the windows of --watch", "hint: add an interval"}},
		{"heat without watch", []string{"--heat", idle}, "", nil, []string{"error: --heat draws the latency of each --watch interval", "hint: add an interval, e.g. --watch 2s --heat"}},
		{"heat with demo once", []string{"demo", "--once", "--heat"}, "", nil, []string{"error: --heat does nothing with --once"}},
		{"ascii with demo no-ui", []string{"demo", "--no-ui", "--ascii"}, "", nil, []string{"error: --ascii does nothing with --no-ui"}},
		{"heat with proxy alone", []string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--heat"}, "", nil, []string{"error: --heat is for the live view, which needs --watch"}},
		{"bad windows", []string{"--watch", "1s", "--watch-windows", "5x", idle}, "", nil, []string{`error: --watch-windows: "5x" is not a duration`, "hint: "}},
		{"windows 1ns", []string{"--watch", "1s", "--watch-windows", "1ns", idle}, "", nil, []string{`error: --watch-windows: "1ns" is too short: a window spans at least two scrapes, and scrapes are at least 200ms apart`}},
		{"too many windows", []string{"--watch", "1s", "--watch-windows", "1,2,3,4,5,6,7,8,9,10,11,12,13", idle}, "", nil, []string{"error: --watch-windows: 13 windows given; at most 12 are shown"}},
		{"windows renamed", []string{"--windows", "1m", idle}, "", nil, []string{"error: unknown flag --windows", "hint: --windows is now --watch-windows"}},
		{"a misspelt flag", []string{"--jsn", idle}, "", nil, []string{"error: unknown flag --jsn", "hint: did you mean --json?", "hint: inferscope --help lists the flags"}},
		{"one dash", []string{"-json", idle}, "", nil, []string{"error: unknown flag -json: a long flag takes two dashes, --json", "hint: inferscope --help"}},
		{"one dash, shorthands first", []string{idle, "-hist"}, "", nil, []string{"error: unknown flag -hist: a long flag takes two dashes, --hist"}},
		{"width 0", []string{"--width", "0", idle}, "", nil, []string{"error: --width 0 is too narrow for a report", "hint: use --width 40 to 1000, or leave it out"}},
		{"columns 0", []string{"--columns", "0", idle}, "", nil, []string{"error: --columns 0 is out of range", "hint: use --columns 1 to 4, or leave it out"}},
		{"fleet width 0", []string{"fleet", "--prometheus", "http://p:9090", "--width", "0"}, "", nil, []string{"error: --width 0 is too narrow"}},
		{"a misspelt command", []string{"flet", "--prometheus", "http://p:9090"}, "", nil, []string{`error: unknown command "flet"; did you mean inferscope fleet?`, "hint: to scrape a host of that name, give its port"}},
		{"a misspelt command alone", []string{"dmeo"}, "", nil, []string{`error: unknown command "dmeo"; did you mean inferscope demo?`}},
		{"output", []string{"-o", "yaml", idle}, "", nil, []string{`error: --output "yaml" is not a format`, "hint: use -o text or -o json"}},
		{"output and json", []string{"-o", "text", "--json", idle}, "", nil, []string{"error: --json and --output text disagree", "hint: "}},
		{"version v on a command", []string{"fleet", "-v"}, "", nil, []string{"error: unknown flag -v", "hint: inferscope --version prints the version", "hint: inferscope fleet --help"}},
		{"help of no command", []string{"help", "nope"}, "", nil, []string{`error: no command "nope"`, "hint: inferscope --help lists the commands"}},
		{"help of a misspelt command", []string{"help", "flet"}, "", nil, []string{`error: no command "flet"; did you mean fleet?`, "hint: inferscope help fleet is its help"}},
		{"completion shell", []string{"completion", "tcsh"}, "", nil, []string{"error: give the shell", "hint: inferscope completion takes one of: bash, zsh, fish, powershell"}},
		// --at.
		{"at not a time", []string{"--at", "yesterday", idle}, "", nil, []string{`error: --at "yesterday" is not a time`, "hint: give a time as RFC 3339"}},
		{"at before 2000", []string{"--at", "100", idle}, "", nil, []string{"error: --at 1970-01-01T00:01:40Z is before 2000"}},
		{"at in milliseconds", []string{"--at", "1772366400000", idle}, "", nil, []string{"error: --at 1772366400000 is in the future", "hint: that reads as Unix milliseconds or finer"}},
		{"at with a URL", []string{"--at", "1772366400", notFound.URL}, "", nil, []string{"error: --at gives the time of a file or stdin; a live scrape of http://127.0.0.1:", "hint: leave out --at"}},
		{"at offset 24h", []string{"--at", "2026-12-03T05:59:54+24:00", idle}, "", nil, []string{`error: --at "2026-12-03T05:59:54+24:00" has the offset +24:00, outside RFC 3339's`, "hint: write the offset as -23:59 to +23:59"}},
		{"at offset 60 minutes", []string{"--at", "2026-12-03T05:59:54+23:60", idle}, "", nil, []string{`has the offset +23:60, outside`}},
		{"at offset 60 minutes short", []string{"--at", "2026-12-03T05:59-00:60", idle}, "", nil, []string{`has the offset -00:60, outside`}},
		{"at with watch", []string{"--at", "1772366400", "--watch", "2s", idle}, "", nil, []string{"error: --at does not go with --watch"}},
		{"at with since", []string{"--at", "1772366400", "--since", idle, idle}, "", nil, []string{"error: --at gives one scrape's time, and --since reads two"}},
		// The environment.
		{"token with a newline", []string{notFound.URL}, "", map[string]string{"INFERSCOPE_BEARER_TOKEN": "s3cret\n"},
			[]string{"error: INFERSCOPE_BEARER_TOKEN holds a character not allowed in an HTTP header (a trailing newline?)", `hint: strip it: export INFERSCOPE_BEARER_TOKEN=`}},
		{"token with a control", []string{"--since", idle, notFound.URL}, "", map[string]string{"INFERSCOPE_BEARER_TOKEN": "s3\x01cret"},
			[]string{"error: INFERSCOPE_BEARER_TOKEN holds a character not allowed in an HTTP header (a control character, byte 3 of 7)", "hint: set it to the token alone"}},
		// Targets.
		{"missing file", []string{"no-such-scrape.prom"}, "", nil, []string{"error: ", "no-such-scrape.prom", "hint: "}},
		{"directory", []string{dir}, "", nil, []string{"error: ", "is a directory", "hint: "}},
		{"404", []string{notFound.URL + "/metrics"}, "", nil, []string{"error: ", "404", "enable_metrics"}},
		{"401", []string{unauth.URL}, "", nil, []string{"error: ", "401", "--header"}},
		{"418", []string{teapot.URL}, "", nil, []string{"error: ", "418", "hint: "}},
		{"refused", []string{refused}, "", nil, []string{"error: ", "hint: "}},
		{"scrape timeout", []string{"--timeout", "0.3", slow.URL}, "", nil, []string{"error: timed out after", "hint: "}},
		{"too large", []string{"--max-bytes", "1k", idle}, "", nil, []string{"error: ", "hint: "}},
		{"corrupt gzip", []string{cut}, "", nil, []string{"error: ", "hint: "}},
		{"garbage", []string{garbage.URL}, "", nil, []string{"error: not a Prometheus exposition: line 3", "hint: check what the endpoint sends: curl -s http://127.0.0.1:"}},
		{"garbage file quoted", []string{odd}, "", nil, []string{"error: ", "hint: check the file: head '" + odd + "'"}},
		{"stdin garbage", []string{"-"}, "<html>hello</html>", nil, []string{"error: not a Prometheus exposition", "hint: check what was piped in"}},
		{"no known series", []string{other.URL}, "", nil, []string{"error: no inference-server series found (saw prefixes: go_, process_)", "hint: "}},
		{"bad dialect", []string{"--dialect", "ollama", idle}, "", nil, []string{`error: unknown dialect "ollama"`, "hint: --dialect takes one of"}},
		{"wrong dialect", []string{"--dialect", "vllm", idle}, "", nil, []string{"error: no vllm series found (saw prefixes: tabbyapi:)", "hint: leave out --dialect"}},
		{"unknown model", []string{"--model", "nope", "../../testdata/dialects/vllm-new.prom"}, "", nil, []string{"error: ", "hint: --model takes one of: "}},
		{"since missing", []string{"--since", "gone.prom", idle}, "", nil, []string{"error: --since gone.prom: no such file", "hint: "}},
		{"since reversed", []string{"--since", fixtures + "busy.prom", "-"}, "# inferscope: scraped_at=2020-01-01T00:00:00Z\n" + string(readFile(t, idle)), nil,
			[]string{"error: --since ", "was scraped at", "not before the target", "hint: the file given to --since must be the earlier scrape"}},
		{"save to a missing folder", []string{"--save", filepath.Join(dir, "no", "such", "x.prom"), idle}, "", nil, []string{"error: cannot save the scrape", "hint: check that the folder exists"}},
		{"pipeline timeout", []string{"--timeout", "0.3", "-"}, "", nil, // Either the read or the whole command times out first: both say the limit.
			[]string{"300ms", "hint: "}},
		// The demo.
		{"demo argument", []string{"demo", "chat"}, "", nil, []string{`error: unexpected argument "chat"`, "hint: "}},
		{"demo scenario", []string{"demo", "--scenario", "nope"}, "", nil, []string{"error: ", "nope", "hint: inferscope demo --help lists"}},
		{"demo flag", []string{"demo", "--frob"}, "", nil, []string{"error: unknown flag --frob", "hint: inferscope demo --help lists the flags"}},
		{"demo speed", []string{"demo", "--speed", "0"}, "", nil, []string{"error: speed must be a positive number", "hint: "}},
		{"demo speed high", []string{"demo", "--speed", "5000"}, "", nil, []string{"error: speed 5000 is above", "hint: "}},
		{"demo sim-time 0", []string{"demo", "--once", "--sim-time", "0"}, "", nil, []string{"error: --sim-time must be positive", "hint: simulate some time, such as --sim-time 10m"}},
		{"demo sim-time long", []string{"demo", "--once", "--sim-time", "10000h"}, "", nil, []string{"error: --sim-time 10000h is more than the demo simulates (at most 168h)", "hint: "}},
		{"demo sim-time without once", []string{"demo", "--sim-time", "1h"}, "", nil, []string{"error: --sim-time does nothing with the watch view", "hint: "}},
		{"demo once listen", []string{"demo", "--once", "--listen", ":0"}, "", nil, []string{"error: --listen does nothing with --once"}},
		{"demo no-ui json", []string{"demo", "--no-ui", "--json"}, "", nil, []string{"error: --json does nothing with --no-ui"}},
		{"demo listen in use", []string{"demo", "--no-ui", "--listen", held.Addr().String()}, "", nil, []string{"error: cannot listen on " + held.Addr().String() + ": the address is already in use", "hint: pick another address with --listen"}},
		{"demo listen no port", []string{"demo", "--no-ui", "--listen", "not-an-address"}, "", nil, []string{"error: cannot listen on not-an-address: ", "hint: give --listen a host:port of this machine"}},
		{"demo listen bad port", []string{"demo", "--listen", "127.0.0.1:99999"}, "", nil, []string{"error: cannot listen on 127.0.0.1:99999: ", "invalid port", "hint: give --listen a host:port"}},
		{"demo once no-ui", []string{"demo", "--once", "--no-ui"}, "", nil, []string{"error: --once and --no-ui do not go together"}},
		{"demo width", []string{"demo", "--once", "--width", "5000"}, "", nil, []string{"error: --width 5000 is wider"}},
		{"demo narrow", []string{"demo", "--once", "--width", "5"}, "", nil, []string{"error: --width 5 is too narrow for a report", "hint: use --width 40 or more"}},
		{"demo columns", []string{"demo", "--columns", "9"}, "", nil, []string{"error: --columns 9 is out of range"}},
		{"demo windows empty", []string{"demo", "--watch-windows", ""}, "", nil, []string{"error: --watch-windows: no window given"}},
		{"demo watch", []string{"demo", "--watch", "10ms"}, "", nil, []string{"error: --watch 10ms is shorter"}},
		{"demo windows", []string{"demo", "--watch-windows", "1ns"}, "", nil, []string{`error: --watch-windows: "1ns" is too short`}},
		{"demo json=maybe", []string{"demo", "--once", "--json=maybe"}, "", nil, []string{"error: --json takes no value"}},
		{"demo seed", []string{"demo", "--seed", "-1"}, "", nil, []string{`error: invalid value "-1" for --seed: not a number`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			io, out, errb := iostreams.Test(tt.stdin, false, 0)
			if tt.name == "pipeline timeout" {
				io.In = blockingReader{}
			}
			io.Getenv = func(k string) string { return tt.env[k] }
			code := run(context.Background(), tt.args, io)
			checkError(t, code, out.String(), errb.String(), tt.want)
		})
	}
}

// checkError checks one failure as TestErrors wants it.
func checkError(t *testing.T, code int, out, errOut string, want []string) {
	t.Helper()
	if code != ExitError {
		t.Errorf("exit %d, want %d", code, ExitError)
	}
	if out != "" {
		t.Errorf("stdout not empty: %.300q", out)
	}
	rest := errOut
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stderr lacks %q:\n%s", w, errOut)
		}
		rest = rest[i+len(w):]
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "inferscope: error: ") {
		t.Fatalf("want an error line then hints:\n%s", errOut)
	}
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line, "inferscope: hint: ") {
			t.Errorf("stray stderr line %q", line)
		}
	}
	for _, line := range lines {
		if strings.HasSuffix(line, ".") {
			t.Errorf("trailing period: %q", line)
		}
		if strings.Contains(line, "render:") || strings.Contains(line, "s3cret") {
			t.Errorf("internal prefix or a secret shown: %q", line)
		}
	}
}

// blockingReader is a stdin that never delivers a byte.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

// fullWriter is stdout on a full disk.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
}

// A report that cannot be written says so once, with the system's reason;
// a watch frame likewise.
func TestWriteError(t *testing.T) {
	for _, args := range [][]string{
		{fixtures + "idle.prom"},
		{"--json", fixtures + "idle.prom"},
		{"--watch", "1s", fixtures + "idle.prom"},
		{"demo", "--once", "--sim-time", "1m"},
	} {
		io, _, errb := iostreams.Test("", false, 0)
		io.Out = fullWriter{}
		code := run(context.Background(), args, io)
		checkError(t, code, "", errb.String(), []string{"inferscope: error: cannot write the report to stdout: no space left on device\n", "hint: "})
		if strings.Count(errb.String(), "no space") != 1 {
			t.Errorf("%v: the reason is said more than once:\n%s", args, errb)
		}
	}
}

// The output and view flags are one set, checked alike for every command:
// the same bad value gets the same error from inspect in each mode and from
// the demo in each form that reads it.
func TestSharedFlagsEveryCommand(t *testing.T) {
	idle := fixtures + "idle.prom"
	commands := [][]string{
		{idle},
		{"--watch", "1s", idle},
		{"--since", idle, idle},
		{"demo", "--once"},
		{"demo"},
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--width", "5"}, "inferscope: error: --width 5 is too narrow for a report\n"},
		{[]string{"--width", "1001"}, "inferscope: error: --width 1001 is wider than inferscope lays out (at most 1000)\n"},
		{[]string{"--columns", "5"}, "inferscope: error: --columns 5 is out of range\n"},
		{[]string{"--json=maybe"}, `inferscope: error: --json takes no value (or --json=true, --json=false), not "maybe"` + "\n"},
		{[]string{"--hist=2"}, `inferscope: error: --hist takes no value (or --hist=true, --hist=false), not "2"` + "\n"},
		{[]string{"--no-color=x"}, `inferscope: error: --no-color takes no value (or --no-color=true, --no-color=false), not "x"` + "\n"},
	} {
		for _, cmd := range commands {
			args := append(slices.Clone(cmd), bad.args...)
			_, errOut, code := runCLI(t, "", args...)
			if line, _, _ := strings.Cut(errOut, "\n"); code != ExitError || line+"\n" != bad.want {
				t.Errorf("%v: exit %d, stderr %q; want %q", args, code, errOut, bad.want)
			}
		}
	}
	// The watch flags likewise, for inspect's view and the demo's.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--watch", "100ms"}, "inferscope: error: --watch 100ms is shorter than the shortest refresh interval (200ms)\n"},
		{[]string{"--watch", "2s", "--watch-windows", "5x"}, `inferscope: error: --watch-windows: "5x" is not a duration (use 30s, 5m, 1h or seconds)` + "\n"},
	} {
		for _, cmd := range [][]string{{idle}, {"demo"}} {
			args := append(slices.Clone(cmd), bad.args...)
			_, errOut, code := runCLI(t, "", args...)
			if line, _, _ := strings.Cut(errOut, "\n"); code != ExitError || line+"\n" != bad.want {
				t.Errorf("%v: exit %d, stderr %q; want %q", args, code, errOut, bad.want)
			}
		}
	}
}

// exitCode is the one way out: each kind of error to its code, and to what
// stderr says of it.
func TestExitCode(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		code   int
		stderr string
	}{
		{"success", context.Background(), nil, ExitOK, ""},
		{"Ctrl-C", canceled, nil, ExitInterrupted, ""},
		{"Ctrl-C with an error", canceled, errors.New("reading stdin: interrupted"), ExitInterrupted, ""},
		{"a canceled context's error", context.Background(), fmt.Errorf("scrape: %w", context.Canceled), ExitInterrupted, ""},
		{"Ctrl-C in the watch view", context.Background(), watch.ErrInterrupted, ExitInterrupted, ""},
		{"--fail-on, one report", context.Background(), &failOnError{failOn: report.Warn, notes: []firedNote{{id: "kv_offload_thrashing", severity: report.Warn}}}, ExitFailOn,
			"inferscope: --fail-on warn tripped: kv_offload_thrashing (warn)\n"},
		{"--fail-on, a fleet", context.Background(), &failOnError{failOn: report.Warn, notes: []firedNote{
			{id: "a", severity: report.Bad, where: "ns/pod-1"}, {id: "b", severity: report.Warn}, {id: "c", severity: report.Warn}, {id: "d", severity: report.Warn},
			{id: "e", severity: report.Warn}, {id: "f", severity: report.Warn}, {id: "g", severity: report.Warn}}}, ExitFailOn,
			"inferscope: --fail-on warn tripped: a (bad) on ns/pod-1, b (warn), c (warn), d (warn), e (warn), and 2 more\n"},
		{"--fail-on, a watch", context.Background(), &watch.TrippedError{FailOn: report.Warn, At: at, Note: report.Note{ID: "kv_full", Severity: report.Bad, Text: "KV cache\x1b[2J full"}}, ExitFailOn,
			"inferscope: --fail-on warn tripped at 2026-03-01 12:00:00 UTC, the watch stopped: kv_full (bad): KV cache full\n"},
		{"a frame not written", context.Background(), &watch.WriteError{Err: &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}}, ExitError,
			"inferscope: error: cannot write the report to stdout: broken pipe\ninferscope: hint: check where stdout goes: a full disk, or a pipe whose reader has gone\n"},
		{"a usage error", context.Background(), usagef("use --width 40 or more", "--width %d is too narrow for a report", 5), ExitError,
			"inferscope: error: --width 5 is too narrow for a report\ninferscope: hint: use --width 40 or more\n"},
		{"any other error", context.Background(), errors.New("something broke."), ExitError,
			"inferscope: error: something broke\ninferscope: hint: inferscope --help says what inferscope reads and lists the flags\n"},
		{"a listen address in use", context.Background(), &demo.ListenError{Addr: "127.0.0.1:9400", InUse: true, Err: syscall.EADDRINUSE}, ExitError,
			"inferscope: error: cannot listen on 127.0.0.1:9400: the address is already in use\ninferscope: hint: pick another address with --listen, or leave it out for a free port\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := exitCode(tt.ctx, &stderr, tt.err); code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}

// The version the build stamps (-ldflags -X …/internal/cli.Version=v1.2.3)
// is what `inferscope version` prints and what every HTTP scrape sends as
// its User-Agent: one-shot, --since and --watch.
func TestVersionUserAgent(t *testing.T) {
	// A warn note on the state now (KV pressure): --fail-on warn ends a
	// watch at its first scrape (a note on what happened would wait for
	// the window to show it).
	body := readFile(t, fixtures+"busy.prom")
	var (
		mu     sync.Mutex
		agents []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	defer func(v string) { version.Version = v }(version.Version)
	version.Version = "v1.2.3"

	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		if out, _, code := runCLI(t, "", args...); code != ExitOK || !strings.HasPrefix(out, "inferscope v1.2.3\n") || !strings.Contains(out, "built with go") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	for _, args := range [][]string{
		{srv.URL},
		{"--since", srv.URL, srv.URL},
		{"--watch", "0.2s", "--fail-on", "warn", srv.URL},
	} {
		_, errOut, code := runCLI(t, "", args...)
		if code != ExitOK && code != ExitFailOn {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) != 4 {
		t.Fatalf("%d scrapes, want 4: %q", len(agents), agents)
	}
	for _, ua := range agents {
		if ua != "inferscope/v1.2.3" {
			t.Errorf("User-Agent %q, want inferscope/v1.2.3", ua)
		}
	}
}
