package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/inferscope/inferscope/internal/report"
)

// JSON writes r as one JSON object indented by two spaces, followed by a
// newline. The fields are described in docs/json.md; NaN and ±Inf are
// null, missing lists are [].
func JSON(w io.Writer, r *report.Report) error {
	return JSONWith(w, r, JSONOptions{})
}

// JSONOptions adjust [JSONWith].
type JSONOptions struct {
	// Compact writes the object on one line (the watch mode's one object
	// per refresh) instead of indented.
	Compact bool
}

// JSONWith writes r as [JSON] does, with the adjustments of o.
//
// Whatever the report holds, the output is safe on a terminal: encoding/json
// escapes C0 controls, and JSONWith also escapes DEL, the C1 controls
// (U+0080–U+009F, which a terminal may take for CSI or OSC) and the Unicode
// bidi controls that text mode drops (embeddings and overrides
// U+202A–U+202E, isolates U+2066–U+2069, marks U+200E, U+200F and U+061C,
// which make a line read other than it is) as \uXXXX. The escapes decode to
// the same strings, so nothing is lost.
func JSONWith(w io.Writer, r *report.Report, o JSONOptions) error {
	if r == nil {
		return errors.New("render: nil report")
	}
	return JSONValue(w, r, o)
}

// JSONValue writes any value holding reports (the fleet view's document)
// as JSONWith writes one: the same indentation and the same escapes, so
// that it is as safe on a terminal.
func JSONValue(w io.Writer, v any, o JSONOptions) error {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if !o.Compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("render: encoding report: %w", err)
	}
	if _, err := w.Write(escapeControls(out.Bytes())); err != nil {
		return fmt.Errorf("render: writing report: %w", err)
	}
	return nil
}

// escapeControls rewrites DEL, C1 controls and bidi controls in encoded
// JSON as \uXXXX escapes. Outside strings JSON is ASCII, so every such
// character is inside a string, where an escape means the same.
func escapeControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, mustEscape) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if mustEscape(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// mustEscape reports the characters JSON output escapes beyond what
// encoding/json does: those termsafe.Text drops from text output.
func mustEscape(r rune) bool {
	switch {
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
