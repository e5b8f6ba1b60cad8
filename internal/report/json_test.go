package report

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// Each JSON type on its own, through encoding/json as any caller would
// use it; the values are written out by hand.
func TestJSONTypes(t *testing.T) {
	nan, half := math.NaN(), 0.5
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"finite number", Number(0.25), `0.25`},
		{"tiny number", Number(1e-7), `1e-7`},
		{"NaN", Number(nan), `null`},
		{"-Inf", Number(math.Inf(-1)), `null`},
		{"nil number", (*Number)(nil), `null`},
		{"nil list", List[string](nil), `[]`},
		{"list", List[Number]{1, Number(nan)}, `[1,null]`},
		{"nil map", Map[Number](nil), `{}`},
		{"map", Map[string]{"b": "<", "a": "x"}, `{"a":"x","b":"\u003c"}`},
		{"zero time", Time{}, `null`},
		{"time", Time{time.Date(2025, 6, 1, 12, 0, 5, 250e6, time.UTC)}, `"2025-06-01T12:00:05.25Z"`},
		{"rates", Rates{"1m": {"a": &half, "b": nil, "c": &nan}}, `{"1m":{"a":0.5,"b":null,"c":null}}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(b) != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, b, tt.want)
		}
	}
}

// Report has no MarshalJSON of its own, so a struct that embeds it keeps
// its own fields beside the report's.
func TestReportEmbedded(t *testing.T) {
	b, err := json.Marshal(struct {
		Report
		Frame int `json:"frame"`
	}{Report{Schema: 1}, 7})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["frame"] != 7.0 || m["schema"] != 1.0 || m["scraped_at"] != nil {
		t.Errorf("embedded report: %s", b)
	}
	if _, ok := m["rates"]; ok {
		t.Errorf("rates without Report.Rates: %s", b)
	}
}

// Read back, a number written null is NaN (not known), never 0; a number
// written is itself.
func TestNumberRoundTrip(t *testing.T) {
	var v struct {
		A, B, C Number
		D       *Number
	}
	if err := json.Unmarshal([]byte(`{"A":null,"B":0.25,"C":1e-7,"D":null}`), &v); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(v.A)) || v.B != 0.25 || v.C != 1e-7 || v.D != nil {
		t.Errorf("read %+v", v)
	}
	if err := json.Unmarshal([]byte(`{"A":"x"}`), &v); err == nil {
		t.Error("a string read as a number")
	}
}
