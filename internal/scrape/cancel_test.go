package scrape

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
)

// Ctrl-C while stdin has nothing to give (a terminal, `sleep 20 |`): the
// scrape ends as canceled instead of waiting for the writer.
func TestStdinCanceled(t *testing.T) {
	pr, pw := io.Pipe() // never written to
	t.Cleanup(func() { pw.Close() })
	o := testOptions()
	o.Stdin = pr
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel) // once the read has begun
	_, err := Fetch(ctx, "-", o)
	wantError(t, err, Canceled, "scrape of stdin canceled")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not unwrap to context.Canceled", err)
	}

	// A deadline is a timeout, not a cancellation.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = Fetch(ctx, "-", o)
	wantError(t, err, Timeout, "reading stdin")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not unwrap to context.DeadlineExceeded", err)
	}
}

// A FIFO blocks even its open until a writer comes: Ctrl-C ends that too;
// with a writer, it is read as a pipe (timed when read, not by mtime).
func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		path := filepath.Join(dir, name)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
		return path
	}
	unwritten := fifo("unwritten.fifo")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := Fetch(ctx, unwritten, testOptions())
	wantError(t, err, Canceled, "canceled")
	// Release the reader left blocked in open (if it got that far).
	go func() {
		if w, err := os.OpenFile(unwritten, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	}()

	written := fifo("written.fifo")
	go func() {
		w, err := os.OpenFile(written, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.WriteString(sampleText)
		w.Close()
	}()
	r, err := Fetch(context.Background(), written, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != sampleText || r.TimeSource != TimeNow || !r.ScrapedAt.Equal(fixedNow) {
		t.Errorf("fifo read %q at %v (%s)", r.Body, r.ScrapedAt, r.TimeSource)
	}
}

// The TLS handshake obeys Options.Timeout, through the request's context:
// the transport has no handshake timeout of its own (it was 10 s, and fired
// whatever --timeout said), and the error says where it stopped.
func TestTLSHandshakeTimeout(t *testing.T) {
	if tr := httpsafe.Transport(); tr.TLSHandshakeTimeout != 0 {
		t.Fatalf("shared transport has a TLS handshake timeout of its own: %v", tr.TLSHandshakeTimeout)
	}
	addr := silentServer(t)
	o := testOptions()
	o.Now = nil
	o.Timeout = 150 * time.Millisecond
	_, err := Fetch(context.Background(), "https://"+addr, o)
	e := wantError(t, err, Timeout, "timed out after 150ms: the TLS handshake with https://"+addr+"/metrics did not complete")
	if !hasHint(e, "is the port serving HTTPS? if it speaks plain HTTP, try http://"+addr+"/metrics") || hasHint(e, "--timeout") {
		t.Errorf("hints %q", e.Hints)
	}

	// The same port over plain HTTP: connected, the request sent, and no
	// answer: that is a wait for the server, and --timeout may help.
	_, err = Fetch(context.Background(), "http://"+addr, o)
	e = wantError(t, err, Timeout, "timed out after 150ms waiting for http://"+addr+"/metrics")
	if !hasHint(e, "--timeout 300ms") {
		t.Errorf("hints %q", e.Hints)
	}
}

// Every way a scrape can be read sets TimeSource.
func TestTimeSourceAlwaysSet(t *testing.T) {
	srv := newTextServer(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.prom")
	saved := filepath.Join(dir, "saved.prom")
	os.WriteFile(plain, []byte(sampleText), 0o600)
	os.WriteFile(saved, []byte("# inferscope: scraped_at=2026-01-02T03:04:05Z source=x\n"+sampleText), 0o600)
	// Written before the tests' clock (a time after it is unknown).
	before := fixedNow.Add(-time.Hour)
	os.Chtimes(plain, before, before)
	tests := []struct {
		target string
		stdin  string
		want   string
	}{
		{srv.URL, "", TimeScrape},
		{plain, "", TimeMtime},
		{saved, "", TimeSaved},
		{"-", sampleText, TimeNow},
		{"-", "# inferscope: scraped_at=2026-01-02T03:04:05Z source=x\n" + sampleText, TimeSaved},
		{"-", "", TimeNow},
	}
	for _, tc := range tests {
		o := testOptions()
		o.Stdin = strings.NewReader(tc.stdin)
		r, err := Fetch(context.Background(), tc.target, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.TimeSource != tc.want || r.ScrapedAt.IsZero() {
			t.Errorf("%s: time source %q at %v, want %q", tc.target, r.TimeSource, r.ScrapedAt, tc.want)
		}
	}
}
