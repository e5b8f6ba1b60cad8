package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/exposition"
)

// TestSaveFetchRoundTrip scrapes a server, saves the result, and reads the
// file back: the body is unchanged and the time is the same instant to the
// nanosecond, whatever the zone it was taken in.
func TestSaveFetchRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		format         exposition.Format
	}{
		{"text", "text/plain; version=0.0.4", sampleText, exposition.Text},
		{"openmetrics", "application/openmetrics-text; version=1.0.0", sampleOpenMetrics, exposition.OpenMetrics},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			zone := time.FixedZone("UTC+5:30", 5*3600+1800)
			at := time.Date(2026, 3, 1, 17, 30, 0, 987654321, zone)
			o := testOptions()
			o.Now = func() time.Time { return at }
			live, err := Fetch(context.Background(), srv.URL, o)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "before.prom")
			var buf bytes.Buffer
			if err := Save(&buf, live); err != nil {
				t.Fatal(err)
			}
			wantLine := "# inferscope: scraped_at=2026-03-01T12:00:00.987654321Z source=" + srv.URL + "/metrics\n"
			if !strings.HasPrefix(buf.String(), wantLine) || buf.String()[len(wantLine):] != tc.body {
				t.Fatalf("saved file:\n%s", buf.String())
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Fetch(context.Background(), path, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !got.ScrapedAt.Equal(at) || got.TimeSource != TimeSaved || !got.FromFile {
				t.Errorf("read back: %v (%s) fromFile=%v, want %v saved", got.ScrapedAt, got.TimeSource, got.FromFile, at)
			}
			if string(got.Body) != tc.body || got.Source != path || got.SavedSource != srv.URL+"/metrics" {
				t.Errorf("read back body %q source %q saved source %q", got.Body, got.Source, got.SavedSource)
			}
			// The saved file still parses, in the format the server used.
			f, err := exposition.DetectFormat(got.ContentType, got.Body)
			if err != nil || f != tc.format {
				t.Fatalf("format %v, %v", f, err)
			}
			if fams, err := exposition.Parse(got.Body, f); err != nil || len(fams) != 2 {
				t.Fatalf("parse: %d families, %v", len(fams), err)
			}
			// A text file with the line left in is still valid text: the
			// line is a comment to any Prometheus text parser.
			if tc.format == exposition.Text {
				if fams, err := exposition.Parse(buf.Bytes(), exposition.Text); err != nil || len(fams) != 2 {
					t.Fatalf("whole saved text file: %d families, %v", len(fams), err)
				}
			}

			// Saving what was read keeps the original source and time.
			var again bytes.Buffer
			if err := Save(&again, got); err != nil {
				t.Fatal(err)
			}
			if again.String() != buf.String() {
				t.Errorf("re-saved file differs:\n%s\nwant\n%s", again.String(), buf.String())
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	mtime := time.Date(2025, 11, 5, 8, 0, 0, 0, time.UTC)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.prom", []byte(sampleText))
	gz := write("scrape.prom.gz", gzipBytes(t, []byte("# inferscope: scraped_at=2026-01-02T03:04:05Z source=x\n"+sampleText)))
	bad := write("badline.prom", []byte("# inferscope: scraped_at=yesterday source=x\n"+sampleText))
	crlf := write("crlf.prom", []byte("# inferscope: scraped_at=2026-01-02T03:04:05Z source=a b\r\n"+sampleText))
	onlyLine := write("only.prom", []byte("# inferscope: scraped_at=2026-01-02T03:04:05Z source=x"))
	empty := write("empty.prom", nil)
	huge := write("huge.prom", bytes.Repeat([]byte("x 1\n"), 300))

	saved := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		target string
		at     time.Time
		source string
		body   string
		saved  string
	}{
		{"mtime", plain, mtime, TimeMtime, sampleText, ""},
		{"file URL", "file://" + filepath.ToSlash(plain), mtime, TimeMtime, sampleText, ""},
		{"gzip file", gz, saved, TimeSaved, sampleText, "x"},
		{"bad saved line is dropped", bad, mtime, TimeMtime, sampleText, ""},
		{"crlf saved line", crlf, saved, TimeSaved, sampleText, "a b"},
		{"only the line", onlyLine, saved, TimeSaved, "", "x"},
		{"empty", empty, mtime, TimeMtime, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Fetch(context.Background(), tc.target, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !r.ScrapedAt.Equal(tc.at) || r.TimeSource != tc.source {
				t.Errorf("time %v (%s), want %v (%s)", r.ScrapedAt, r.TimeSource, tc.at, tc.source)
			}
			if string(r.Body) != tc.body || r.SavedSource != tc.saved || !r.FromFile || r.Waited != 0 || r.Header != nil {
				t.Errorf("body %q saved source %q fromFile %v waited %v", r.Body, r.SavedSource, r.FromFile, r.Waited)
			}
		})
	}

	o := testOptions()
	o.MaxBytes = 1000
	_, err := Fetch(context.Background(), huge, o)
	wantError(t, err, TooLarge, huge+" is larger than the 1000 B cap")

	_, err = Fetch(context.Background(), dir, o)
	wantError(t, err, BadTarget, "is a directory")

	if os.Getuid() != 0 { // root reads anything
		locked := write("locked.prom", []byte(sampleText))
		os.Chmod(locked, 0)
		_, err = Fetch(context.Background(), locked, o)
		wantError(t, err, Read, "cannot open "+locked+": permission denied")
	}
}

func TestReadMissingFile(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		target string
		msg    string
		hint   string
	}{
		{"scrape.prom", "no such file: scrape.prom", `"scrape.prom" was taken for a file because it ends in .prom`},
		{"runs/a", "no such file: runs/a", "it has a path but no port"},
		{"./gpu-box", "no such file: ./gpu-box", "written as a path"},
	}
	for _, tc := range tests {
		_, err := Fetch(context.Background(), tc.target, testOptions())
		e := wantError(t, err, NoFile, tc.msg)
		if !hasHint(e, tc.hint) || !hasHint(e, "give host:port") {
			t.Errorf("%s: hints %q", tc.target, e.Hints)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v does not unwrap to ErrNotExist", err)
		}
	}
}

func TestReadStdin(t *testing.T) {
	o := testOptions()
	o.Stdin = strings.NewReader(sampleText)
	r, err := Fetch(context.Background(), "-", o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != "-" || string(r.Body) != sampleText || !r.ScrapedAt.Equal(fixedNow) || r.TimeSource != TimeNow || !r.FromFile {
		t.Errorf("stdin: %+v", r)
	}

	// A saved scrape piped in keeps its time.
	o.Stdin = strings.NewReader("# inferscope: scraped_at=2026-01-02T03:04:05.5Z source=http://h:5000/metrics\n" + sampleText)
	r, err = Fetch(context.Background(), "-", o)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC); !r.ScrapedAt.Equal(want) || r.TimeSource != TimeSaved || string(r.Body) != sampleText {
		t.Errorf("saved stdin: %v %s %q", r.ScrapedAt, r.TimeSource, r.Body)
	}

	o.Stdin = strings.NewReader(strings.Repeat("x", 2000))
	o.MaxBytes = 1000
	_, err = Fetch(context.Background(), "-", o)
	wantError(t, err, TooLarge, "stdin is larger than the 1000 B cap")

	o.Stdin = nil
	_, err = Fetch(context.Background(), "-", o)
	wantError(t, err, Read, "no standard input")

	o.Stdin = iotestErrReader{}
	_, err = Fetch(context.Background(), "-", o)
	wantError(t, err, Read, "cannot read stdin: disk on fire")
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestSave(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	// A hostile source cannot break out of the comment line.
	r := &Result{Source: "http://h/metrics\n# TYPE evil counter\nevil 1\x1b[2J", Body: []byte("a 1\n"), ScrapedAt: at}
	if err := Save(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "# inferscope: scraped_at=2026-03-01T12:00:00Z source=http://h/metrics # TYPE evil counter evil 1\na 1\n"
	if buf.String() != want {
		t.Errorf("Save wrote %q, want %q", buf.String(), want)
	}
	if fams, err := exposition.Parse(buf.Bytes(), exposition.Text); err != nil || len(fams) != 1 || fams[0].GetName() != "a" {
		t.Errorf("the saved file parses to %v, %v", fams, err)
	}

	for _, tc := range []struct {
		name string
		r    *Result
		w    *failWriter
		msg  string
	}{
		{"nil", nil, &failWriter{9}, "nothing to save"},
		{"no time", &Result{Body: []byte("a 1\n")}, &failWriter{9}, "no time"},
		{"line fails", &Result{ScrapedAt: at}, &failWriter{0}, "disk full"},
		{"body fails", &Result{ScrapedAt: at, Body: []byte("a 1\n")}, &failWriter{1}, "disk full"},
	} {
		if err := Save(tc.w, tc.r); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.msg)
		}
	}
}

func TestParseSavedLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		line   string
		ok     bool
		at     time.Time
		source string
	}{
		{"# inferscope: scraped_at=2026-01-02T03:04:05Z source=http://h:5000/metrics", true, at, "http://h:5000/metrics"},
		{"# inferscope: scraped_at=2026-01-02T03:04:05Z source=", true, at, ""},
		{"# inferscope: scraped_at=2026-01-02T03:04:05Z", true, at, ""},
		{"# inferscope: scraped_at=2026-01-02T08:34:05+05:30 source=x", true, at, "x"},
		{"# inferscope: scraped_at=2026-01-02T03:04:05.000000001Z source=x", true, at.Add(1), "x"},
		{"# inferscope: scraped_at=2026-01-02T03:04:05Z source=/runs/my scrape.prom\r", true, at, "/runs/my scrape.prom"},
		{"# inferscope:   version=2 scraped_at=2026-01-02T03:04:05Z  host=a source=x y", true, at, "x y"}, // unknown fields skipped
		{"# inferscope: source=x scraped_at=2026-01-02T03:04:05Z", false, time.Time{}, ""},                // source runs to the end
		{"# inferscope: scraped_at=2026-13-02T03:04:05Z source=x", false, time.Time{}, ""},
		{"# inferscope: scraped_at= source=x", false, time.Time{}, ""},
		{"# inferscope: scraped_at=1999-12-31T23:59:59Z source=x", false, time.Time{}, ""},
		{"# inferscope:", false, time.Time{}, ""},
		{"# inferscope scraped_at=2026-01-02T03:04:05Z", false, time.Time{}, ""},
		{"#inferscope: scraped_at=2026-01-02T03:04:05Z", false, time.Time{}, ""},
		{"# HELP a b", false, time.Time{}, ""},
		{"", false, time.Time{}, ""},
	}
	for _, tc := range tests {
		m, ok := parseSavedLine(tc.line)
		if ok != tc.ok || !m.at.Equal(tc.at) || m.source != tc.source || m.start != 0 || m.token != "" {
			t.Errorf("parseSavedLine(%q) = %+v %v, want %v %q %v", tc.line, m, ok, tc.at, tc.source, tc.ok)
		}
	}
}

// Save records the server's start header, parsed and raw, and reading the
// file restores both exactly: --since compares them across a restart.
func TestSaveStartHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Process-Start-Time-Unix", r.URL.Query().Get("v"))
		fmt.Fprint(w, sampleText)
	}))
	defer srv.Close()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	read := func(t *testing.T, saved []byte) *Result {
		t.Helper()
		path := filepath.Join(t.TempDir(), "s.prom")
		if err := os.WriteFile(path, saved, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Fetch(context.Background(), path, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		name, header string
		start        float64
		token        string
		line         string // the fields Save writes before source=
	}{
		{"tabbyAPI seconds", "1772366000.5", 1772366000.5, "1772366000.5", "start=1772366000.5 start_token=1772366000.5"},
		{"milliseconds", "1772366000123", 1772366000.123, "1772366000123", "start=1772366000.123 start_token=1772366000123"},
		{"llama.cpp monotonic µs", "432000123456", 0, "432000123456", "start_token=432000123456"},
		{"spaces and odd bytes", "boot  7 % = é", 0, "boot 7 % = é", "start_token=boot%207%20%25%20%3D%20%C3%A9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			o.Now = func() time.Time { return at }
			live, err := Fetch(context.Background(), srv.URL+"/metrics?v="+url.QueryEscape(tc.header), o)
			if err != nil {
				t.Fatal(err)
			}
			if live.HeaderStart != tc.start || live.StartToken != tc.token {
				t.Fatalf("live: %v %q", live.HeaderStart, live.StartToken)
			}
			var buf bytes.Buffer
			if err := Save(&buf, live); err != nil {
				t.Fatal(err)
			}
			want := "# inferscope: scraped_at=2026-03-01T12:00:00Z " + tc.line + " source=" + srv.URL + "/metrics?v=" + url.QueryEscape(tc.header) + "\n"
			if first, _, _ := strings.Cut(buf.String(), "\n"); first+"\n" != want {
				t.Fatalf("saved line %q, want %q", first, want)
			}
			got := read(t, buf.Bytes())
			if got.HeaderStart != tc.start || got.StartToken != tc.token || !got.ScrapedAt.Equal(at) || string(got.Body) != sampleText {
				t.Errorf("read back %v %q at %v", got.HeaderStart, got.StartToken, got.ScrapedAt)
			}
			// An older reader, which skips every key=value it does not know
			// before source=, sees the same time and source.
			fields := strings.Fields(strings.TrimPrefix(strings.SplitN(buf.String(), " source=", 2)[0], savedPrefix))
			for _, f := range fields {
				if !strings.Contains(f, "=") {
					t.Errorf("field %q is not key=value: an older reader would stop at it", f)
				}
			}
			// Saving what was read writes the same file.
			var again bytes.Buffer
			if err := Save(&again, got); err != nil || again.String() != buf.String() {
				t.Errorf("re-saved:\n%s\nwant\n%s", again.String(), buf.String())
			}
		})
	}

	// Tokens as Fetch cleans them, with every kind of byte it lets through,
	// round-trip through a file exactly.
	for _, tok := range []string{"a b", "%41", "100%", "日本 語 🚀", "x=y", "…", `"quoted" \ back`, strings.Repeat("9", 63) + "…"} {
		r := &Result{Source: "x", Body: []byte("a 1\n"), ScrapedAt: at, StartToken: tok}
		var buf bytes.Buffer
		if err := Save(&buf, r); err != nil {
			t.Fatal(err)
		}
		if got := read(t, buf.Bytes()); got.StartToken != tok || got.HeaderStart != 0 {
			t.Errorf("token %q read back as %q (start %v)", tok, got.StartToken, got.HeaderStart)
		}
	}

	// Hand-edited or hostile fields are ignored; the line still counts.
	for _, tc := range []struct {
		fields string
		start  float64
		token  string
	}{
		{"start=5 start_token=%zz", 0, ""},
		{"start=NaN start_token=a%1B%5B2Jb%0Ac", 0, "ab c"},
		{"start=1872366000", 0, ""}, // after the scrape, by more than a day
		{"start=+Inf start_token=%", 0, ""},
		{"start=1772366000 start_token=x start_token=y", 1772366000, "y"},
	} {
		got := read(t, []byte("# inferscope: scraped_at=2026-03-01T12:00:00Z "+tc.fields+" source=x\na 1\n"))
		if got.TimeSource != TimeSaved || got.HeaderStart != tc.start || got.StartToken != tc.token {
			t.Errorf("%s: %v %q (%s)", tc.fields, got.HeaderStart, got.StartToken, got.TimeSource)
		}
	}
}

// A time in the future (a first line, a modification time, beyond Skew)
// cannot be when the data was taken: the time is unknown, and the result
// says what the file claimed. Within the skew the time stands.
func TestFutureTimeUnknown(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	past := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	soon := fixedNow.Add(Skew / 2).Truncate(time.Second)
	for _, c := range []struct {
		name, target, stdin string
		at                  time.Time // zero: unknown
		claimed             string
	}{
		{name: "saved in 2999", target: write("a.prom", "# inferscope: scraped_at=2999-01-01T00:00:00Z source=x\n"+sampleText, past),
			claimed: "its first line says it was scraped 2999-01-01 00:00:00 UTC, in the future"},
		{name: "modified in 2200", target: write("b.prom", sampleText, time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)),
			claimed: "it was modified 2200-01-01 00:00:00 UTC, in the future"},
		{name: "piped in, saved in 2999", target: "-", stdin: "# inferscope: scraped_at=2999-01-01T00:00:00Z source=x\n" + sampleText,
			claimed: "its first line says it was scraped 2999-01-01 00:00:00 UTC"},
		{name: "saved within the skew", target: write("c.prom", "# inferscope: scraped_at="+soon.Format(time.RFC3339)+" source=x\n"+sampleText, past), at: soon},
		{name: "modified within the skew", target: write("d.prom", sampleText, soon), at: soon},
	} {
		o := testOptions()
		o.Stdin = strings.NewReader(c.stdin)
		r, err := Fetch(context.Background(), c.target, o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !r.ScrapedAt.Equal(c.at) || (r.TimeSource == "") != c.at.IsZero() || !strings.Contains(r.TimeUnknown, c.claimed) || (c.claimed == "") != (r.TimeUnknown == "") {
			t.Errorf("%s: scraped %v (%q), unknown %q; want %v, %q", c.name, r.ScrapedAt, r.TimeSource, r.TimeUnknown, c.at, c.claimed)
		}
	}
}
