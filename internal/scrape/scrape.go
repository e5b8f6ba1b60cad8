// Package scrape turns a user's target into an exposition body to parse.
//
// A target is an HTTP URL, a host with or without a port, a file (a scrape
// saved with [Save], or any exposition text) or "-" for stdin; [Resolve]
// documents how an ambiguous one is judged. [Fetch] reads it within a time
// limit and a byte cap and reports when the data was taken ([Result.ScrapedAt]
// and [Result.TimeSource]) and how long the server made us wait.
//
// # When the data was taken
//
// [Result.TimeSource] is always set. An HTTP scrape is timed when the answer
// arrived ([TimeScrape]); a file or stdin that starts with the line [Save]
// writes, by the time recorded there ([TimeSaved]). A regular file without
// that line takes its modification time as the scrape time ([TimeMtime]),
// which is only right if the file was written when it was scraped and not
// copied since: callers should say so, and the CLI's --at gives the real
// time ([TimeGiven], set by the caller). Stdin or a pipe without the line is
// timed when it was read ([TimeNow]). A saved or modification time after
// now (beyond [Skew]) cannot be when the data was taken: the time is then
// unknown ([Result.ScrapedAt] zero, [Result.TimeSource] empty), and
// [Result.TimeUnknown] says what the file claimed, since a rate over a
// window from it would be meaningless.
//
// # Cancellation
//
// The context ends any scrape: an HTTP request at once, a read of stdin, a
// pipe or a FIFO as soon as the context is done (the blocked read is left
// behind; the process is expected to exit). Options.Timeout bounds HTTP
// only, dial and TLS handshake included: a pipe's writer has its own pace.
//
// # Untrusted input
//
// Everything a server sends is treated as hostile: requests go through
// inferscope's HTTP policy (internal/httpsafe), so that bodies are capped
// on the wire, the headers given and URL user info go to the target's host
// only, and a redirect to another host is refused while there are any;
// bodies are capped again after gzip decompression here, and any server
// text quoted in an [Error] is stripped of control characters and escape
// sequences and truncated. [Result.Body] and
// [Result.Header] are returned as received: whoever prints from them must
// clean them.
//
// # Errors
//
// Every failure is an [*Error] with a [Kind], a one-line lower-case message
// and hints saying what to try.
package scrape

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Defaults for zero Options fields.
const (
	// DefaultTimeout is generous because a busy tabbyAPI holds scrapes for
	// seconds while its event loop serves generation.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBytes bounds a body; real scrapes are tens of kilobytes.
	DefaultMaxBytes int64 = 64 << 20
	// DefaultUserAgent names inferscope as a build of no known version
	// does; the version is the caller's to know.
	DefaultUserAgent = "inferscope/dev"
)

// Accept asks for the text format only. Python's prometheus_client answers
// OpenMetrics whenever the header names it, whatever its q value, and every
// server we read speaks text; an OpenMetrics answer is still read.
const Accept = "text/plain;version=0.0.4;q=1,text/plain;q=0.9,*/*;q=0.1"

// Options controls one fetch. The zero value is ready to use.
type Options struct {
	// Timeout bounds a whole HTTP scrape: dial, TLS handshake, headers and
	// body (DefaultTimeout when ≤ 0). Files and stdin end with the context.
	Timeout time.Duration
	// MaxBytes caps the body on the wire and after decompression, and a
	// file's size (DefaultMaxBytes when ≤ 0).
	MaxBytes int64
	// Headers are sent with every request (from --header and
	// INFERSCOPE_BEARER_TOKEN). A "Host" entry sets the request's host.
	Headers http.Header
	// Stdin is read for the target "-".
	Stdin io.Reader
	// Client's transport carries the requests (tests, custom TLS); the
	// policy over it (redirects, caps, where headers go) is inferscope's
	// own.
	Client *http.Client
	// Now reads the clock (time.Now when nil).
	Now func() time.Time
	// UserAgent is sent as the User-Agent header (DefaultUserAgent when
	// empty). The CLI sends its version: inferscope/v1.2.3.
	UserAgent string
}

// Where Result.ScrapedAt comes from.
const (
	TimeScrape = "scrape" // an HTTP scrape: when the answer arrived
	TimeSaved  = "saved"  // the time Save recorded in the file's first line
	TimeMtime  = "mtime"  // a file without that line: its modification time
	TimeNow    = "now"    // stdin or a pipe without that line: when it was read
	TimeGiven  = "given"  // the user said when (--at)
)

// Skew is how far a time may be after now and still be taken as now: the
// clock that wrote it may run a little ahead of ours. --at is bounded by it
// too.
const Skew = time.Minute

// Result is one scrape's body and what is known about it.
type Result struct {
	// Source names where the body came from, for display: the URL with any
	// password redacted, the file path, or "-" for stdin.
	Source string
	// Body is the exposition, decompressed, without a saved-scrape line.
	Body []byte
	// ContentType is the response's Content-Type ("" for files and stdin).
	ContentType string
	// Header is the response's header as received (untrusted; nil for files).
	Header http.Header
	// ScrapedAt is when the data was taken; TimeSource says how it is known.
	// Both are zero where the file claimed a time in the future, and
	// TimeUnknown says what it claimed ("" otherwise).
	ScrapedAt   time.Time
	TimeSource  string
	TimeUnknown string
	// Waited is how long the scrape took, request to last byte (0 for files).
	Waited time.Duration
	// HeaderStart is the Process-Start-Time-Unix header in Unix seconds when
	// it holds a plausible time, else 0. See ParseStartHeader.
	HeaderStart float64
	// StartToken is that header's raw value, cleaned and cut to 64 runes:
	// llama.cpp sends a monotonic clock that is no time at all but still
	// changes when the server restarts, so compare tokens to spot restarts.
	StartToken string
	// FromFile reports a body read from a file or stdin, not a live scrape.
	FromFile bool
	// SavedSource is the source recorded by Save, when the file had one.
	SavedSource string
	// AnsweredJSON is the URL first scraped when it answered JSON and the
	// text was read from [TextPath] of the same server instead (TensorRT-LLM's
	// trtllm-serve): Source is where the text came from. TextPathFailed
	// says why that path gave nothing to read when it was tried in vain,
	// and the JSON answer is the Result.
	AnsweredJSON, TextPathFailed string
}

// Fetch resolves target (see Resolve) and reads it.
func Fetch(ctx context.Context, target string, o Options) (*Result, error) {
	t, err := Resolve(target)
	if err != nil {
		return nil, err
	}
	return fetchTarget(ctx, t, o)
}

// fetchTarget reads an already resolved target.
func fetchTarget(ctx context.Context, t Target, o Options) (*Result, error) {
	o = o.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, canceledError(t, err, 0)
	}
	switch {
	case t.URL != nil:
		r, err := fetchHTTP(ctx, t, o)
		if err != nil || !t.PathAdded || !isJSON(r) {
			return r, err
		}
		return textPath(ctx, t, o, r)
	case t.Stdin:
		return readAsync(ctx, t, o, func() (*Result, error) { return readStdin(t, o) })
	case t.Path != "":
		return readAsync(ctx, t, o, func() (*Result, error) { return readFile(t, o) })
	}
	return nil, newError(BadTarget, nil, "empty target", "give host:port, a URL, a file, or - for stdin")
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}

func canceledError(t Target, err error, waited time.Duration) *Error {
	e := newError(Canceled, err, "scrape of "+sourceOf(t)+" canceled")
	e.Waited = waited
	return e
}

// sourceOf names a target for messages: redacted, cleaned, one line.
func sourceOf(t Target) string {
	switch {
	case t.URL != nil:
		return clean(t.URL.Redacted(), 200)
	case t.Stdin:
		return "stdin"
	}
	return clean(t.Path, 200)
}
