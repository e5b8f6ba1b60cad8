package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// savedPrefix starts the line Save writes before a body. The text format
// treats any "#" line that is not HELP or TYPE as a comment, so the file is
// still an exposition; OpenMetrics allows no such comments, so readers here
// drop the line before parsing (other tools: `tail -n +2 file`).
const savedPrefix = "# inferscope:"

// savedMeta is what the saved line records about a scrape.
type savedMeta struct {
	at     time.Time
	source string
	// start and token are Result.HeaderStart and Result.StartToken: the
	// server's start header, so that comparing two saved files can tell a
	// restart (0 and "" when the server sent none).
	start float64
	token string
}

// Save writes r as a saved scrape: one line recording when it was taken, the
// server's start header when it sent one, and from where,
//
//	# inferscope: scraped_at=2026-03-01T12:00:00.123456789Z start=1772366000.5 start_token=1772366000.5 source=http://gpu-box:5000/metrics
//
// then the body exactly as received. Reading the file back with Fetch
// restores ScrapedAt to the nanosecond, and HeaderStart and StartToken as
// they were. The token is percent-encoded (it may hold spaces); readers
// that predate start and start_token skip them, as they skip any field
// they do not know before source, which runs to the end of the line. A
// result that was itself read from a saved file keeps its original source.
func Save(w io.Writer, r *Result) error {
	if r == nil {
		return errors.New("nothing to save")
	}
	if r.ScrapedAt.IsZero() {
		return errors.New("the scrape has no time to record")
	}
	m := savedMeta{at: r.ScrapedAt, source: r.Source, start: r.HeaderStart, token: r.StartToken}
	if r.SavedSource != "" {
		m.source = r.SavedSource
	}
	if _, err := io.WriteString(w, savedLine(m)); err != nil {
		return fmt.Errorf("writing the saved scrape: %w", err)
	}
	if _, err := w.Write(r.Body); err != nil {
		return fmt.Errorf("writing the saved scrape: %w", err)
	}
	return nil
}

func savedLine(m savedMeta) string {
	var b strings.Builder
	b.WriteString(savedPrefix + " scraped_at=" + m.at.UTC().Format(time.RFC3339Nano))
	if m.start > 0 && !math.IsInf(m.start, 0) {
		b.WriteString(" start=" + strconv.FormatFloat(m.start, 'f', -1, 64))
	}
	if tok := clean(m.token, 64); tok != "" {
		b.WriteString(" start_token=" + encodeToken(tok))
	}
	b.WriteString(" source=" + clean(m.source, 500) + "\n")
	return b.String()
}

// encodeToken percent-encodes every byte but letters, digits and . _ - :
// so that a token is one field whatever it holds.
func encodeToken(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isASCIILetter(c) || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// decodeToken undoes encodeToken; ok is false for a malformed escape.
func decodeToken(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// parseSavedLine reads the line Save writes (without its newline; a trailing
// \r is ignored). It returns what the line records, and ok only when the
// line is that comment with a valid scraped_at (RFC 3339, not before 2000).
// A start that is not a plausible time (after 2000, at most a day after
// scraped_at) or a token that does not decode is ignored. Fields it does
// not know are skipped, so later versions can add some before source,
// which runs to the end of the line (file paths hold spaces).
// One function: a tokenizer, one case per key.
func parseSavedLine(line string) (m savedMeta, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	rest, found := strings.CutPrefix(line, savedPrefix)
	if !found {
		return savedMeta{}, false
	}
	start := ""
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if s, isSource := strings.CutPrefix(rest, "source="); isSource {
			m.source = clean(s, 500)
			break
		}
		tok := rest
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			tok, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		key, v, _ := strings.Cut(tok, "=")
		switch key {
		case "scraped_at":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil || t.Unix() < epoch2000 {
				// No scrape predates inferscope; such a time is an edit
				// gone wrong, and would make every rate meaningless.
				return savedMeta{}, false
			}
			m.at, ok = t, true
		case "start":
			start = v
		case "start_token":
			if s, valid := decodeToken(v); valid {
				m.token = clean(s, 64)
			}
		}
	}
	if !ok {
		return savedMeta{}, false
	}
	if v, err := strconv.ParseFloat(start, 64); err == nil && v >= epoch2000 &&
		v <= float64(m.at.Add(24*time.Hour).UnixNano())/1e9 {
		m.start = v
	}
	return m, true
}

// splitSaved separates a leading saved-scrape line from the body. A line
// that starts like one is removed even when it does not parse, since an
// OpenMetrics parser would choke on it; ok then reports false.
func splitSaved(body []byte) (rest []byte, m savedMeta, ok bool) {
	if !bytes.HasPrefix(body, []byte(savedPrefix)) {
		return body, savedMeta{}, false
	}
	line := body
	rest = nil
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		line, rest = body[:i], body[i+1:]
	}
	m, ok = parseSavedLine(string(line))
	return rest, m, ok
}

// readAsync runs read, a file or stdin read, and returns its result, or a
// canceled (or timed out) scrape as soon as ctx is done: a read from a
// terminal, a pipe or a FIFO (whose very open blocks until a writer comes)
// may never end, and Ctrl-C must. The read is left behind, blocked; the
// process is about to exit.
func readAsync(ctx context.Context, t Target, o Options, read func() (*Result, error)) (*Result, error) {
	if ctx.Done() == nil {
		return read()
	}
	type result struct {
		r   *Result
		err error
	}
	done := make(chan result, 1)
	start := o.Now()
	go func() {
		r, err := read()
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
		waited := o.Now().Sub(start)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The deadline is the caller's; where it is plainly the
			// Timeout the user gave, say that figure rather than the
			// milliseconds of scheduling around it.
			said := units.Seconds(waited.Seconds())
			if d := waited - o.Timeout; d > -o.Timeout/10 && d < o.Timeout/10 {
				said = units.Duration(o.Timeout)
			}
			e := newError(Timeout, ctx.Err(), fmt.Sprintf("timed out after %s reading %s", said, sourceOf(t)),
				"whatever writes to it did not finish in time; check that it ends")
			e.Waited = waited
			return nil, e
		}
		return nil, canceledError(t, ctx.Err(), waited)
	}
}

func readFile(t Target, o Options) (*Result, error) {
	src := sourceOf(t)
	f, err := os.Open(t.Path)
	if err != nil {
		return nil, openError(t, src, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, newError(Read, err, fmt.Sprintf("cannot read %s: %s", src, pathReason(err)), lsHint(t))
	}
	if fi.IsDir() {
		return nil, newError(BadTarget, nil, fmt.Sprintf("%s is a directory, not a scrape file", src),
			"give a file saved with --save, - for stdin, or host:port for a server")
	}
	regular := fi.Mode().IsRegular()
	if regular && fi.Size() > o.MaxBytes {
		return nil, tooLarge(src, o.MaxBytes, plainSize(f, fi.Size()), false)
	}
	size := int64(0)
	if regular {
		size = fi.Size()
	}
	wire, err := httpsafe.ReadAll(f, o.MaxBytes, size)
	if err != nil {
		if errors.Is(err, errCap) {
			return nil, tooLarge(src, o.MaxBytes, 0, false)
		}
		return nil, newError(Read, err, fmt.Sprintf("cannot read %s: %s", src, pathReason(err)), lsHint(t))
	}
	r, err := fromBytes(src, wire, o, "check it with: gzip -t "+termsafe.ShellEcho(t.Path))
	if err != nil {
		return nil, err
	}
	r.Source = src
	if r.TimeSource == "" {
		// A pipe such as <(curl …) has no useful modification time.
		r.ScrapedAt, r.TimeSource = o.Now(), TimeNow
		if regular {
			r.ScrapedAt, r.TimeSource = fi.ModTime(), TimeMtime
		}
	}
	r.unlessFuture(o.Now())
	return r, nil
}

// plainSize is the body's size a file of size bytes holds, where it can be
// known before reading it: size for plain text, 0 for gzip (whose body is
// larger than the file).
func plainSize(f *os.File, size int64) int64 {
	magic := make([]byte, 2)
	if n, _ := f.ReadAt(magic, 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return 0
	}
	return size
}

func readStdin(t Target, o Options) (*Result, error) {
	if o.Stdin == nil {
		return nil, newError(Read, nil, "no standard input to read for -",
			"pipe a scrape in, e.g. curl -s http://gpu-box:5000/metrics | inferscope -")
	}
	wire, err := httpsafe.ReadAll(o.Stdin, o.MaxBytes, 0)
	if err != nil {
		if errors.Is(err, errCap) {
			return nil, tooLarge("stdin", o.MaxBytes, 0, false)
		}
		return nil, newError(Read, err, "cannot read stdin: "+clean(err.Error(), 120),
			"pipe a scrape in, or give the file or URL instead of -")
	}
	r, err := fromBytes("stdin", wire, o, "check what is piped in")
	if err != nil {
		return nil, err
	}
	r.Source = "-"
	if r.TimeSource == "" {
		r.ScrapedAt, r.TimeSource = o.Now(), TimeNow
	}
	r.unlessFuture(o.Now())
	return r, nil
}

// unlessFuture leaves the scrape time unknown where the file claims one
// after now, beyond Skew: no scrape was taken in the future (a hand-edited
// first line, a clock that was wrong), and the window of --since would be
// computed from it.
func (r *Result) unlessFuture(now time.Time) {
	if !r.ScrapedAt.After(now.Add(Skew)) {
		return
	}
	claimed := "the time " + r.ScrapedAt.UTC().Format("2006-01-02 15:04:05 MST")
	switch r.TimeSource {
	case TimeSaved:
		claimed = "its first line says it was scraped " + r.ScrapedAt.UTC().Format("2006-01-02 15:04:05 MST")
	case TimeMtime:
		claimed = "it was modified " + r.ScrapedAt.UTC().Format("2006-01-02 15:04:05 MST")
	}
	r.ScrapedAt, r.TimeSource, r.TimeUnknown = time.Time{}, "", claimed+", in the future"
}

// fromBytes decompresses a file's bytes and reads a saved-scrape line; the
// caller fills in the time when there was none. look says how to examine
// the input, for the hint on corrupt gzip data.
func fromBytes(src string, wire []byte, o Options, look string) (*Result, error) {
	body, err := decode(wire, "", o.MaxBytes)
	if err != nil {
		return nil, decodeError(src, o.MaxBytes, err, look)
	}
	r := &Result{FromFile: true}
	var m savedMeta
	var ok bool
	r.Body, m, ok = splitSaved(body)
	if ok {
		r.ScrapedAt, r.TimeSource = m.at, TimeSaved
		r.SavedSource, r.HeaderStart, r.StartToken = m.source, m.start, m.token
	}
	return r, nil
}

func openError(t Target, src string, err error) *Error {
	if errors.Is(err, fs.ErrNotExist) {
		e := newError(NoFile, err, "no such file: "+src)
		if t.Why != "" {
			e.Hints = append(e.Hints, fmt.Sprintf("%q was taken for a file because %s", clean(t.Input, 60), t.Why))
		}
		e.Hints = append(e.Hints, "to scrape a server give host:port (e.g. gpu-box:5000) or http://host:port/metrics; - reads stdin")
		return e
	}
	e := newError(Read, err, fmt.Sprintf("cannot open %s: %s", src, pathReason(err)))
	if errors.Is(err, fs.ErrPermission) {
		e.Hints = append(e.Hints, "you may not read it: check its permissions with ls -l "+termsafe.ShellEcho(t.Path))
	} else {
		e.Hints = append(e.Hints, lsHint(t))
	}
	return e
}

func lsHint(t Target) string {
	return "check the file: ls -l " + termsafe.ShellEcho(t.Path)
}

// pathReason is the operating system's reason without the path it repeats.
func pathReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return clean(err.Error(), 120)
}
