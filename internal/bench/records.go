package bench

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
)

// RecordFormat is how --records writes each request: one JSON object a
// line, or CSV with a header.
type RecordFormat int

const (
	JSONL RecordFormat = iota
	CSV
)

// RecordFormatOf chooses the format by a file's extension: .jsonl (or
// .ndjson, .json) or .csv.
func RecordFormatOf(path string) (RecordFormat, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return JSONL, nil
	case ".csv":
		return CSV, nil
	}
	return 0, fmt.Errorf("%s: the records' format is chosen by the extension: .jsonl or .csv", path)
}

// recordFields are the columns of a record, in order: times in seconds
// (from the run's start for scheduled and sent, from the send for the
// rest), empty (CSV) or null (JSON) where not reached or not known;
// resent says the request went out again on a new connection, its
// kept-alive one closed by the server before it took the request.
var recordFields = []string{"index", "warmup", "scheduled", "sent", "slot_wait", "ttfb", "ttft", "e2e", "done",
	"content_events", "prompt_tokens", "output_tokens", "cached_tokens", "token_source",
	"requested_prompt", "requested_output", "status", "error", "error_detail", "finish", "resent"}

// RecordWriter streams Records to a file as they end, never keeping them.
type RecordWriter struct {
	w      *bufio.Writer
	csv    *csv.Writer
	format RecordFormat
	row    []string
	err    error
}

// NewRecordWriter writes records to w in format f (CSV starts with its
// header).
func NewRecordWriter(w io.Writer, f RecordFormat) *RecordWriter {
	rw := &RecordWriter{w: bufio.NewWriterSize(w, 64<<10), format: f, row: make([]string, len(recordFields))}
	if f == CSV {
		rw.csv = csv.NewWriter(rw.w)
		rw.err = rw.csv.Write(recordFields)
	}
	return rw
}

// Write writes one record; the first error is kept and returned by every
// later call and by Flush.
func (rw *RecordWriter) Write(r load.Record) error {
	if rw.err != nil {
		return rw.err
	}
	row := rw.row
	row[0] = strconv.Itoa(r.Index)
	row[1] = strconv.FormatBool(r.Warmup)
	row[2], row[3], row[4] = secs(r.Scheduled), secs(r.Sent), secs(r.SlotWait)
	row[5], row[6], row[7], row[8] = secs(r.TTFB), secs(r.TTFT), secs(r.E2E), secs(r.Done)
	row[9] = strconv.Itoa(r.ContentEvents)
	row[10], row[11], row[12] = count(r.PromptTokens), count(r.OutputTokens), count(r.CachedTokens)
	row[13] = r.TokenSource
	row[14], row[15] = count(r.RequestedPrompt), count(r.RequestedOutput)
	if r.RequestedOutput == 0 {
		row[15] = "" // none asked
	}
	row[16] = ""
	if r.Status > 0 {
		row[16] = strconv.Itoa(r.Status)
	}
	row[17], row[18], row[19] = string(r.Error), r.ErrorDetail, r.Finish
	row[20] = strconv.FormatBool(r.Resent)
	if rw.format == CSV {
		rw.err = rw.csv.Write(row)
		return rw.err
	}
	rw.err = rw.jsonLine(row)
	return rw.err
}

// numeric says which fields JSON writes as numbers (or null when empty).
var numeric = func() []bool {
	out := make([]bool, len(recordFields))
	for i, f := range recordFields {
		switch f {
		case "warmup", "token_source", "error", "error_detail", "finish", "resent":
		default:
			out[i] = true
		}
	}
	return out
}()

func (rw *RecordWriter) jsonLine(row []string) error {
	b := rw.w
	b.WriteByte('{')
	for i, f := range recordFields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(f)
		b.WriteString(`":`)
		v := row[i]
		switch {
		case f == "warmup" || f == "resent":
			b.WriteString(v)
		case numeric[i] && v == "":
			b.WriteString("null")
		case numeric[i]:
			b.WriteString(v)
		default:
			q, _ := json.Marshal(v) // a string always encodes
			b.Write(q)
		}
	}
	b.WriteString("}\n")
	return nil
}

// Flush writes what is buffered.
func (rw *RecordWriter) Flush() error {
	if rw.csv != nil {
		rw.csv.Flush()
		if rw.err == nil {
			rw.err = rw.csv.Error()
		}
	}
	if err := rw.w.Flush(); rw.err == nil {
		rw.err = err
	}
	return rw.err
}

// secs writes a time in seconds to the microsecond; "" for one not
// reached (-1).
func secs(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// count writes a count; "" for unknown (-1) or not set.
func count(n int) string {
	if n < 0 {
		return ""
	}
	return strconv.Itoa(n)
}
