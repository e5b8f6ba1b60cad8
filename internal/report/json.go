package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// The report types get their JSON form from the types of their fields, so
// a field added to a type is in the JSON with nothing else to change:
// [Number] writes NaN and ±Inf (a "-nan" gauge before the first request, a
// mean of no observations) as null instead of failing the whole encoding;
// [List] and [Map] write nil as [] and {}, so that a program reading the
// report finds what the schema promises; [Time] writes an unknown time as
// null. docs/json.md describes the result field by field.

// Number is a float64 that JSON writes as null when it is NaN or ±Inf.
type Number float64

// MarshalJSON implements json.Marshaler, formatting finite values as
// encoding/json formats a float64.
func (n Number) MarshalJSON() ([]byte, error) {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), v, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN (not known), as
// MarshalJSON wrote it, never 0.
func (n *Number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = Number(v)
	return nil
}

// List is a slice that JSON writes as [] when it is nil.
type List[T any] []T

// MarshalJSON implements json.Marshaler.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return marshal([]T(l))
}

// Map is a string-keyed map that JSON writes as {} when it is nil (keys
// sorted, as encoding/json sorts them).
type Map[V any] map[string]V

// MarshalJSON implements json.Marshaler.
func (m Map[V]) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return marshal(map[string]V(m))
}

// Time is a time.Time that JSON writes as RFC 3339 with fractional seconds
// where there are any, or as null when it is zero (unknown).
type Time struct{ time.Time }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := append(make([]byte, 0, len(time.RFC3339Nano)+2), '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler: null is the zero (unknown)
// time.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	return t.Time.UnmarshalJSON(b)
}

// Rates is Report.Rates: {window label: {row id: value per second or
// ratio}}, nil where the window has no figure. The values are *float64, as
// the rates are computed, and JSON writes NaN and ±Inf among them as null.
type Rates map[string]map[string]*float64

// MarshalJSON implements json.Marshaler.
func (r Rates) MarshalJSON() ([]byte, error) {
	out := make(map[string]map[string]*Number, len(r))
	for window, rows := range r {
		w := make(map[string]*Number, len(rows))
		for id, v := range rows {
			w[id] = (*Number)(v)
		}
		out[window] = w
	}
	return marshal(out)
}

// marshal encodes v without HTML escaping: the report's text holds "<0.01"
// and "≤" for people to read, not markup to guard.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
