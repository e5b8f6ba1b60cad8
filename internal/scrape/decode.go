package scrape

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// errCap reports a body over the byte cap: the policy's own error, so that
// a cap met in the HTTP client and one met here are one.
var errCap = httpsafe.ErrTooLarge

// unsupportedEncodingError names a Content-Encoding we did not offer.
type unsupportedEncodingError struct{ enc string }

func (e *unsupportedEncodingError) Error() string { return "unsupported Content-Encoding " + e.enc }

// gzipError wraps a corrupt gzip stream.
type gzipError struct{ err error }

func (e *gzipError) Error() string { return "corrupt gzip data: " + e.err.Error() }
func (e *gzipError) Unwrap() error { return e.err }

// gzipMagic starts every gzip stream; no exposition text can start with it.
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// decode undoes a Content-Encoding ("" for files), capping the result at max
// bytes so that a small compressed bomb cannot fill memory. A body that
// starts with the gzip magic is decompressed even when nothing says so: a
// saved scrape.prom.gz, or a server serving a pre-compressed file.
func decode(wire []byte, contentEncoding string, max int64) ([]byte, error) {
	var codings []string
	for c := range strings.SplitSeq(contentEncoding, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && c != "identity" {
			codings = append(codings, c)
		}
	}
	switch {
	case len(codings) == 0:
		if bytes.HasPrefix(wire, gzipMagic) {
			return gunzip(wire, max)
		}
		return wire, nil
	case len(codings) == 1 && (codings[0] == "gzip" || codings[0] == "x-gzip"):
		return gunzip(wire, max)
	}
	return nil, &unsupportedEncodingError{enc: clean(contentEncoding, 40)}
}

func gunzip(wire []byte, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(wire))
	if err != nil {
		return nil, &gzipError{err}
	}
	// The gzip trailer holds the size mod 2³²: a hint to size the buffer,
	// trusted only as far as the cap and gzip's best ratio (~1032:1) allow.
	hint := int64(0)
	if n := len(wire); n >= 18 {
		if isize := int64(binary.LittleEndian.Uint32(wire[n-4:])); isize <= 1032*int64(n) {
			hint = isize
		}
	}
	body, err := httpsafe.ReadAll(zr, max, hint)
	if err != nil {
		if errors.Is(err, errCap) {
			return nil, err
		}
		return nil, &gzipError{err}
	}
	return body, nil
}

// tooLarge names the cap and the flag that raises it; src names the body,
// and size is its size where known before reading it (a plain file's, a
// Content-Length; 0 if not): the cap suggested then holds it, where
// otherwise each try could only be told to try four times more.
func tooLarge(src string, max, size int64, decompressed bool) *Error {
	what := "is larger than"
	if decompressed {
		what = "decompresses to more than"
	}
	msg := fmt.Sprintf("%s %s the %s cap (--max-bytes %s)", src, what, units.Bytes(float64(max)), units.Size(max))
	if size > max {
		return newError(TooLarge, errCap, msg, fmt.Sprintf("it is %s; to read it, raise the cap: --max-bytes %s", units.Bytes(float64(size)), units.SizeHolding(size)))
	}
	raise := max * 4
	if raise/4 != max || raise <= 0 {
		raise = max
	}
	return newError(TooLarge, errCap, msg,
		fmt.Sprintf("if the body is meant to be that large, raise the cap, e.g. --max-bytes %s (%s)", units.Size(raise), units.Bytes(float64(raise))))
}

// decodeError explains a failure of decode; src names the body ("the answer
// from URL", a file path) and look is a command that shows it.
func decodeError(src string, max int64, err error, look string) *Error {
	var ue *unsupportedEncodingError
	switch {
	case errors.Is(err, errCap):
		return tooLarge(src, max, 0, true)
	case errors.As(err, &ue):
		return newError(Read, err, fmt.Sprintf("%s came with Content-Encoding %q, which inferscope did not ask for", src, ue.enc),
			"a proxy in between may be recompressing; inferscope reads gzip and plain bodies")
	}
	reason := err.Error()
	var ge *gzipError
	if errors.As(err, &ge) {
		reason = ge.err.Error()
	}
	return newError(Read, err, fmt.Sprintf("%s holds gzip data that is corrupt: %s", src, clean(reason, 80)),
		"the compressed data is damaged or cut short; "+look)
}
