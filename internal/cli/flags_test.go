package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1024", want: 1024},
		{in: "1k", want: 1 << 10},
		{in: "1K", want: 1 << 10},
		{in: "1KB", want: 1 << 10},
		{in: "2KiB", want: 2 << 10},
		{in: "64M", want: 64 << 20},
		{in: "64MiB", want: 64 << 20},
		{in: "64mb", want: 64 << 20},
		{in: "1G", want: 1 << 30},
		{in: "1.5M", want: 3 << 19},
		{in: "512B", want: 512},
		{in: " 8k ", want: 8 << 10},
		{in: "0.5k", want: 512},
		{in: "1x", bad: true},
		{in: "k", bad: true},
		{in: "", bad: true},
		{in: "-1k", bad: true},
		{in: "1T", bad: true},
		{in: "1..5M", bad: true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// --max-bytes with a unit is the cap a body meets: a 32 KiB cap takes the
// 18 KB idle fixture, a 16 KiB cap does not.
func TestMaxBytesUnits(t *testing.T) {
	file := fixtures + "idle.prom"
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() <= 16<<10 || fi.Size() > 32<<10 {
		t.Fatalf("the fixture is %d bytes; the test wants 16 KiB < size ≤ 32 KiB", fi.Size())
	}
	if _, errOut, code := runCLI(t, "", "--max-bytes", "32k", file); code != ExitOK {
		t.Errorf("32k: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "--max-bytes", "16KiB", file); code != ExitError || !strings.Contains(errOut, "16.0 KiB") {
		t.Errorf("16KiB: exit %d: %s", code, errOut)
	}
}

// A body too large for --max-bytes whose size is known (a plain file, an
// answer's Content-Length) is met with a cap that holds it: taking the
// hint's value reads it at the first try.
func TestMaxBytesHintHolds(t *testing.T) {
	file := fixtures + "idle.prom"
	body := readFile(t, file)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	suggested := regexp.MustCompile(`--max-bytes ([0-9]+k)$`)
	for _, target := range []string{file, srv.URL + "/metrics"} {
		_, errOut, code := runCLI(t, "", "--max-bytes", "1k", target)
		hint := strings.TrimSpace(errOut[strings.LastIndex(errOut, "inferscope: hint: "):])
		m := suggested.FindStringSubmatch(hint)
		if code != ExitError || m == nil {
			t.Fatalf("%s: exit %d, no cap suggested: %s", target, code, errOut)
		}
		if _, errOut, code := runCLI(t, "", "--max-bytes", m[1], target); code != ExitOK {
			t.Errorf("%s: the suggested --max-bytes %s: exit %d: %s", target, m[1], code, errOut)
		}
	}
}

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "2026-02-28T10:00:00Z", want: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{in: "2026-02-28T11:00:00+01:00", want: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{in: "1772272800", want: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{in: "1772272800.25", want: time.Date(2026, 2, 28, 10, 0, 0, 250e6, time.UTC)},
		{in: "2026-03-01T12:00:30Z", want: time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)}, // within a minute: clock skew
		{in: "2026-03-01T13:00:00Z", err: "is in the future"},
		{in: "1772366400000", err: "milliseconds"},
		{in: "946684799", err: "before 2000"},
		{in: "2026-02-28", err: "is not a time"},
		{in: "NaN", err: "is not a time"},
		{in: "", err: "is not a time"},
		// The layouts fleet took, now every time flag's.
		{in: "2026-02-28T10:00Z", want: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{in: "2026-02-28 10:00:30Z", want: time.Date(2026, 2, 28, 10, 0, 30, 0, time.UTC)},
		{in: "2026-02-28 11:00+01:00", want: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{in: "2026-02-28T10:00", err: "has no time zone"},
	}
	for _, tt := range tests {
		got, err := parseTime("at", tt.in, now)
		if tt.err != "" {
			msg, hints := "", []string(nil)
			if err != nil {
				msg, hints = explain(err)
			}
			if err == nil || !strings.Contains(msg+" "+strings.Join(hints, " "), tt.err) || len(hints) == 0 {
				t.Errorf("parseTime(%q) = %v, %v; want an error with a hint saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// A scrape time in the future (a file's first line, its modification
// time) is believed nowhere: the report says the time is unknown and what
// the file claimed, gives no uptime figure from it, and --since and --save
// refuse it, each saying how to give the time; --at gives it.
func TestFutureScrapeTime(t *testing.T) {
	dir := t.TempDir()
	body := readFile(t, fixtures+"idle.prom")
	plain := body[strings.IndexByte(string(body), '\n')+1:]
	future := filepath.Join(dir, "future.prom")
	if err := os.WriteFile(future, append([]byte("# inferscope: scraped_at=2999-01-01T00:00:00Z source=x\n"), plain...), 0o644); err != nil {
		t.Fatal(err)
	}
	const claimed = "its first line says it was scraped 2999-01-01 00:00:00 UTC, in the future"
	out, errOut, code := runCLI(t, "", "--width", "200", future)
	if lines := strings.SplitN(out, "\n", 3); code != ExitOK || strings.Contains(lines[0], "2999") || !strings.Contains(lines[1], "scrape time unknown: "+claimed) {
		t.Errorf("exit %d, the report's head:\n%.400s%s", code, out, errOut)
	}
	if regexp.MustCompile(`mean [0-9.]+ in flight`).MatchString(out) || !strings.Contains(out, "scrape time unknown: no mean in flight") {
		t.Errorf("a figure over an uptime from an unknown time:\n%s", out)
	}
	out, _, _ = runCLI(t, "", "--json", future)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["scraped_at"] != nil || doc["time_source"] != nil {
		t.Errorf("JSON scraped_at %v, time_source %v (%v)", doc["scraped_at"], doc["time_source"], err)
	}
	for _, args := range [][]string{{"--since", future, fixtures + "idle.prom"}, {"--since", fixtures + "idle.prom", future}} {
		out, errOut, code := runCLI(t, "", args...)
		checkError(t, code, out, errOut, []string{"has no scrape time to take a window from: " + claimed, "hint: give it its time first (inferscope --at TIME --save dated.prom FILE)"})
	}
	out, errOut, code = runCLI(t, "", "--save", filepath.Join(dir, "x.prom"), future)
	checkError(t, code, out, errOut, []string{"cannot save the scrape without its time: " + claimed, "hint: give it its time with --at TIME"})
	if out, errOut, code := runCLI(t, "", "--width", "200", "--at", "2026-11-30T12:00:00Z", future); code != ExitOK ||
		!strings.HasSuffix(strings.SplitN(out, "\n", 2)[0], "scraped 2026-11-30 12:00:00 UTC") || strings.Contains(out, "unknown: its first line") {
		t.Errorf("--at: exit %d %s\n%.300s", code, errOut, out)
	}
}

// The report says what its time is: a file's modification time is said to
// be one, stdin's time is when it was read, and --at gives the scrape time
// outright (to a file or stdin, and to --save).
func TestTimeSource(t *testing.T) {
	dir := t.TempDir()
	body := readFile(t, fixtures+"idle.prom")
	// The fixture without its saved-scrape line: a plain capture.
	plain := body[strings.IndexByte(string(body), '\n')+1:]
	file := filepath.Join(dir, "capture.prom")
	if err := os.WriteFile(file, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2025, 7, 4, 9, 30, 0, 0, time.UTC)
	if err := os.Chtimes(file, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		ScrapedAt  time.Time `json:"scraped_at"`
		TimeSource string    `json:"time_source"`
	}
	jsonOf := func(stdin string, args ...string) doc {
		t.Helper()
		out, errOut, code := runCLI(t, stdin, append([]string{"--json"}, args...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	title := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, stdin, append([]string{"--width", "200"}, args...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.SplitN(out, "\n", 2)[0]
	}

	if d := jsonOf("", file); !d.ScrapedAt.Equal(mtime) || d.TimeSource != scrape.TimeMtime {
		t.Errorf("file: %v %q, want the mtime", d.ScrapedAt, d.TimeSource)
	}
	if got := title("", file); !strings.HasSuffix(got, " · file modified 2025-07-04 09:30:00 UTC (taken as the scrape time)") {
		t.Errorf("file title: %q", got)
	}
	if got := title(string(plain), "-"); !strings.Contains(got, " · - · read ") || strings.Contains(got, "scraped") {
		t.Errorf("stdin title: %q", got)
	}
	if d := jsonOf(string(plain), "-"); d.TimeSource != scrape.TimeNow {
		t.Errorf("stdin time source %q", d.TimeSource)
	}
	if d := jsonOf("", fixtures+"idle.prom"); d.TimeSource != scrape.TimeSaved || !d.ScrapedAt.Equal(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("saved file: %v %q", d.ScrapedAt, d.TimeSource)
	}

	given := time.Date(2024, 1, 15, 8, 0, 0, 0, time.UTC)
	for _, at := range []string{"2024-01-15T08:00:00Z", "1705305600"} {
		if d := jsonOf("", "--at", at, file); !d.ScrapedAt.Equal(given) || d.TimeSource != scrape.TimeGiven {
			t.Errorf("--at %s: %v %q", at, d.ScrapedAt, d.TimeSource)
		}
		if d := jsonOf(string(plain), "--at", at, "-"); !d.ScrapedAt.Equal(given) || d.TimeSource != scrape.TimeGiven {
			t.Errorf("--at %s on stdin: %v %q", at, d.ScrapedAt, d.TimeSource)
		}
	}
	if got := title("", "--at", "1705305600", file); !strings.HasSuffix(got, " · scraped 2024-01-15 08:00:00 UTC") {
		t.Errorf("--at title: %q", got)
	}
	// --at overrides a saved time, and --save records the time given.
	saved := filepath.Join(dir, "dated.prom")
	if _, errOut, code := runCLI(t, "", "--at", "1705305600", "--save", saved, fixtures+"idle.prom"); code != ExitOK {
		t.Fatalf("--at --save: exit %d: %s", code, errOut)
	}
	if d := jsonOf("", saved); !d.ScrapedAt.Equal(given) || d.TimeSource != scrape.TimeSaved {
		t.Errorf("saved with --at: %v %q", d.ScrapedAt, d.TimeSource)
	}
}

// The bearer token is checked only where it would be sent: a file target
// does not fail on it.
func TestTokenCheckedOnlyForURLs(t *testing.T) {
	io, _, errb := iostreams.Test("", false, 0)
	io.Getenv = func(k string) string {
		if k == "INFERSCOPE_BEARER_TOKEN" {
			return "s3cret\n"
		}
		return ""
	}
	if code := run(context.Background(), []string{fixtures + "idle.prom"}, io); code != ExitOK {
		t.Errorf("a file with a bad token in the environment: exit %d: %s", code, errb)
	}
	if err := checkToken("tab\tinside is allowed"); err != nil {
		t.Errorf("a tab: %v", err)
	}
	if err := checkToken("x\x7f"); err == nil {
		t.Error("DEL accepted")
	}
}

// bounded returns the work's result; on a deadline it says --timeout was
// passed, unless the work explains its own timeout within the grace; on
// cancel it returns the context's error at once, work or no work.
func TestBounded(t *testing.T) {
	block := func(ctx context.Context) (int, error) { select {} }
	if v, err := bounded(context.Background(), time.Second, func(context.Context) (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("plain work: %v %v", v, err)
	}
	var te *timeoutError
	if _, err := bounded(context.Background(), 50*time.Millisecond, block); !errors.As(err, &te) || te.limit != 50*time.Millisecond {
		t.Errorf("blocked work: %v, want a timeoutError", err)
	}
	own := &scrape.Error{Kind: scrape.Timeout, Msg: "timed out after 50ms waiting for x"}
	if _, err := bounded(context.Background(), 50*time.Millisecond, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, own
	}); err != own {
		t.Errorf("a scrape's own timeout: %v", err)
	}
	// Work that notices the deadline but says only that is not believed.
	if _, err := bounded(context.Background(), 50*time.Millisecond, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}); !errors.As(err, &te) {
		t.Errorf("a bare deadline error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := bounded(ctx, time.Hour, block); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	// No timeout: only the context ends it.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := bounded(ctx, 0, block); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no timeout, the caller's deadline: %v", err)
	}
}

// Hints that show a command to paste quote what they hold for a shell.
func TestLookHintQuotes(t *testing.T) {
	for _, tt := range []struct {
		e    readError
		want string
	}{
		{readError{source: "http://gpu:5000/metrics"}, "check what the endpoint sends: curl -s http://gpu:5000/metrics | head"},
		{readError{source: "http://gpu:5000/metrics?a=1&b=2"}, "check what the endpoint sends: curl -s 'http://gpu:5000/metrics?a=1&b=2' | head"},
		{readError{source: "scrape.prom", fromFile: true}, "check the file: head scrape.prom"},
		{readError{source: "it's here; rm -rf ~", fromFile: true}, `check the file: head 'it'\''s here; rm -rf ~'`},
		{readError{source: "-", fromFile: true}, "check what was piped in: inferscope reads a Prometheus exposition on stdin"},
	} {
		if got := tt.e.lookHint(); got != tt.want {
			t.Errorf("lookHint(%q) = %q, want %q", tt.e.source, got, tt.want)
		}
	}
}

// The help texts as a user reads them: the flags, their defaults and
// limits, and the exit statuses.
func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		golden string
	}{
		{[]string{"--help"}, "help.txt"},
		{[]string{"help"}, "help.txt"},
		{[]string{"idle.prom", "-h"}, "help.txt"},
		{[]string{"demo", "--help"}, "demo-help.txt"},
		{[]string{"demo", "--once", "--help"}, "demo-help.txt"},
		{[]string{"help", "demo"}, "demo-help.txt"},
		{[]string{"proxy", "--help"}, "proxy-help.txt"},
		{[]string{"proxy", "--upstream", "x", "-h"}, "proxy-help.txt"},
	} {
		out, errOut, code := runCLI(t, "", tt.args...)
		if code != ExitOK || errOut != "" {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errOut)
		}
		golden.Check(t, tt.golden, out)
	}
}
