package scrape

import (
	"time"
)

// Kind classifies why a scrape failed, so that callers can branch (the watch
// loop retries all of them; the CLI prints Msg and Hints).
type Kind int

const (
	// Unreachable: no answer at all (refused, unknown host, TLS failed,
	// closed without a byte).
	Unreachable Kind = iota + 1
	// Timeout: no complete answer within Options.Timeout (or the caller's deadline).
	Timeout
	// NotFound: HTTP 404, usually metrics switched off in the server.
	NotFound
	// Unauthorized: HTTP 401 or 403.
	Unauthorized
	// HTTPStatus: any other status outside 2xx.
	HTTPStatus
	// TooLarge: the body, on the wire or decompressed, is over Options.MaxBytes.
	TooLarge
	// NoFile: the target was taken for a file and there is none.
	NoFile
	// Read: the answer or file could not be read (cut short, corrupt gzip,
	// unsupported encoding, permissions).
	Read
	// Redirect: a redirect inferscope will not follow (to another host with
	// credentials, or too many).
	Redirect
	// BadTarget: the target cannot be a URL, host or file (bad port, scheme).
	BadTarget
	// Canceled: the caller's context was canceled (the user quit).
	Canceled
	// BadResponse: the server answered, but not in readable HTTP (a
	// malformed status line, header or chunked body).
	BadResponse
)

var kindNames = map[Kind]string{
	Unreachable:  "unreachable",
	Timeout:      "timeout",
	NotFound:     "not_found",
	Unauthorized: "unauthorized",
	HTTPStatus:   "http_status",
	TooLarge:     "too_large",
	NoFile:       "no_file",
	Read:         "read",
	Redirect:     "redirect",
	BadTarget:    "bad_target",
	Canceled:     "canceled",
	BadResponse:  "bad_response",
}

// String returns a stable snake_case name, fit for JSON.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Error is a failed scrape. Msg is one lower-case line without a trailing
// period, already stripped of anything a server could use to drive a
// terminal; Hints are what to try, one line each. The CLI prints them as
// "inferscope: error: <Msg>" and "inferscope: hint: <hint>".
type Error struct {
	Kind  Kind
	Msg   string
	Hints []string
	// Err is the underlying cause, if any (for errors.Is / errors.As).
	Err error
	// Status is the HTTP status for NotFound, Unauthorized and HTTPStatus.
	Status int
	// Said is the server's own message quoted from an HTTPStatus answer
	// (a JSON error's message, an HTML title, the first words of text),
	// cleaned and cut: "" when it said nothing readable. A llama.cpp
	// router is told by it.
	Said string
	// Waited is how long the scrape ran before it failed (0 for files).
	Waited time.Duration
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func newError(k Kind, err error, msg string, hints ...string) *Error {
	return &Error{Kind: k, Msg: msg, Hints: hints, Err: err}
}
