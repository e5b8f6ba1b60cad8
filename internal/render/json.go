package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
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
	// Extra adds top-level fields after the report's own, in key order. A
	// key the report already has is an error. Values are encoded by
	// encoding/json, so numbers that may be undefined should be *float64
	// (nil is null): a NaN float64 fails.
	//
	// Deprecated: set the field on the report instead (Report.Rates is
	// written last, and left out only when nil). Extra re-reads the whole
	// encoded report to find its keys.
	Extra map[string]any
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
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if !o.Compact && len(o.Extra) == 0 {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("render: encoding report: %w", err)
	}
	if len(o.Extra) > 0 {
		obj, err := addFields(bytes.TrimSuffix(out.Bytes(), []byte("\n")), o.Extra)
		if err != nil {
			return err
		}
		out.Reset()
		if o.Compact {
			out.Write(obj)
		} else if err := json.Indent(&out, obj, "", "  "); err != nil {
			return fmt.Errorf("render: indenting report: %w", err)
		}
		out.WriteByte('\n')
	}
	if _, err := w.Write(escapeControls(out.Bytes())); err != nil {
		return fmt.Errorf("render: writing report: %w", err)
	}
	return nil
}

// addFields appends extra's fields to the compact object obj.
func addFields(obj []byte, extra map[string]any) ([]byte, error) {
	var have map[string]json.RawMessage
	if err := json.Unmarshal(obj, &have); err != nil {
		return nil, fmt.Errorf("render: reading report JSON: %w", err)
	}
	out := append([]byte(nil), bytes.TrimSuffix(obj, []byte("}"))...)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if _, dup := have[k]; dup {
			return nil, fmt.Errorf("render: extra JSON field %q is already a report field", k)
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("render: encoding extra field name: %w", err)
		}
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(extra[k]); err != nil {
			return nil, fmt.Errorf("render: encoding extra field %q: %w", k, err)
		}
		out = append(out, ',')
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, bytes.TrimRight(vb.Bytes(), "\n")...)
	}
	return append(out, '}'), nil
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
