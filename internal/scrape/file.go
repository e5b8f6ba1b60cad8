package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// savedPrefix starts the line Save writes before a body. The text format
// treats any "#" line that is not HELP or TYPE as a comment, so the file is
// still an exposition; OpenMetrics allows no such comments, so readers here
// drop the line before parsing (other tools: `tail -n +2 file`).
const savedPrefix = "# inferscope:"

// Save writes r as a saved scrape: one line recording when it was taken and
// from where,
//
//	# inferscope: scraped_at=2026-03-01T12:00:00.123456789Z source=http://gpu-box:5000/metrics
//
// then the body exactly as received. Reading the file back with Fetch
// restores ScrapedAt to the nanosecond. A result that was itself read from a
// saved file keeps its original source.
func Save(w io.Writer, r *Result) error {
	if r == nil {
		return errors.New("nothing to save")
	}
	if r.ScrapedAt.IsZero() {
		return errors.New("the scrape has no time to record")
	}
	src := r.Source
	if r.SavedSource != "" {
		src = r.SavedSource
	}
	if _, err := io.WriteString(w, savedLine(r.ScrapedAt, src)); err != nil {
		return fmt.Errorf("writing the saved scrape: %w", err)
	}
	if _, err := w.Write(r.Body); err != nil {
		return fmt.Errorf("writing the saved scrape: %w", err)
	}
	return nil
}

func savedLine(at time.Time, source string) string {
	return savedPrefix + " scraped_at=" + at.UTC().Format(time.RFC3339Nano) + " source=" + clean(source, 500) + "\n"
}

// parseSavedLine reads the line Save writes (without its newline; a trailing
// \r is ignored). It returns the recorded time and source, and ok only when
// the line is that comment with a valid scraped_at (RFC 3339, not before
// 2000). Fields it does not know are skipped, so later versions can add some
// before source, which runs to the end of the line (file paths hold spaces).
func parseSavedLine(line string) (at time.Time, source string, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	rest, found := strings.CutPrefix(line, savedPrefix)
	if !found {
		return time.Time{}, "", false
	}
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if s, isSource := strings.CutPrefix(rest, "source="); isSource {
			source = clean(s, 500)
			break
		}
		tok := rest
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			tok, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		if v, isTime := strings.CutPrefix(tok, "scraped_at="); isTime {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil || t.Unix() < epoch2000 {
				// No scrape predates inferscope; such a time is an edit
				// gone wrong, and would make every rate meaningless.
				return time.Time{}, "", false
			}
			at, ok = t, true
		}
	}
	if !ok {
		return time.Time{}, "", false
	}
	return at, source, true
}

// splitSaved separates a leading saved-scrape line from the body. A line
// that starts like one is removed even when it does not parse, since an
// OpenMetrics parser would choke on it; ok then reports false.
func splitSaved(body []byte) (rest []byte, at time.Time, source string, ok bool) {
	if !bytes.HasPrefix(body, []byte(savedPrefix)) {
		return body, time.Time{}, "", false
	}
	line := body
	rest = nil
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		line, rest = body[:i], body[i+1:]
	}
	at, source, ok = parseSavedLine(string(line))
	return rest, at, source, ok
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
		return nil, newError(Read, err, fmt.Sprintf("cannot read %s: %s", src, pathReason(err)))
	}
	if fi.IsDir() {
		return nil, newError(BadTarget, nil, fmt.Sprintf("%s is a directory, not a scrape file", src),
			"give a file saved with --save, - for stdin, or host:port for a server")
	}
	regular := fi.Mode().IsRegular()
	if regular && fi.Size() > o.MaxBytes {
		return nil, tooLarge(src, o.MaxBytes, false)
	}
	size := int64(0)
	if regular {
		size = fi.Size()
	}
	wire, err := readCapped(f, o.MaxBytes, size)
	if err != nil {
		if errors.Is(err, errCap) {
			return nil, tooLarge(src, o.MaxBytes, false)
		}
		return nil, newError(Read, err, fmt.Sprintf("cannot read %s: %s", src, pathReason(err)))
	}
	r, err := fromBytes(src, wire, o)
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
	return r, nil
}

func readStdin(t Target, o Options) (*Result, error) {
	if o.Stdin == nil {
		return nil, newError(Read, nil, "no standard input to read for -")
	}
	wire, err := readCapped(o.Stdin, o.MaxBytes, 0)
	if err != nil {
		if errors.Is(err, errCap) {
			return nil, tooLarge("stdin", o.MaxBytes, false)
		}
		return nil, newError(Read, err, "cannot read stdin: "+clean(err.Error(), 120))
	}
	r, err := fromBytes("stdin", wire, o)
	if err != nil {
		return nil, err
	}
	r.Source = "-"
	if r.TimeSource == "" {
		r.ScrapedAt, r.TimeSource = o.Now(), TimeNow
	}
	return r, nil
}

// fromBytes decompresses a file's bytes and reads a saved-scrape line; the
// caller fills in the time when there was none.
func fromBytes(src string, wire []byte, o Options) (*Result, error) {
	body, err := decode(wire, "", o.MaxBytes)
	if err != nil {
		return nil, decodeError(src, o.MaxBytes, err)
	}
	r := &Result{FromFile: true}
	var at time.Time
	var ok bool
	r.Body, at, r.SavedSource, ok = splitSaved(body)
	if ok {
		r.ScrapedAt, r.TimeSource = at, TimeSaved
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
	return newError(Read, err, fmt.Sprintf("cannot open %s: %s", src, pathReason(err)))
}

// pathReason is the operating system's reason without the path it repeats.
func pathReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return clean(err.Error(), 120)
}
