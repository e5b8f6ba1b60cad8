package scrape

import (
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		in, name, value string
		err             string
	}{
		{in: "Authorization: Bearer abc", name: "Authorization", value: "Bearer abc"},
		{in: "X-Api-Key:abc", name: "X-Api-Key", value: "abc"},
		{in: "  X-Empty :  ", name: "X-Empty", value: ""},
		{in: "X-Url: http://a:b/c", name: "X-Url", value: "http://a:b/c"},
		{in: "X-Tab: a\tb", name: "X-Tab", value: "a\tb"},
		{in: "Bearer abc", err: "no colon"},
		{in: ": abc", err: "name before ':' is empty"},
		{in: "Bad Name: v", err: `"Bad Name" is not a header name`},
		{in: "X-Inject: a\r\nHost: evil", err: "holds a control character"},
		{in: "X-Nul: a\x00", err: "holds a control character"},
	}
	for _, tc := range tests {
		name, value, err := ParseHeader(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHeader(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "abc") {
				t.Errorf("ParseHeader(%q) error %q repeats the value", tc.in, err)
			}
			continue
		}
		if err != nil || name != tc.name || value != tc.value {
			t.Errorf("ParseHeader(%q) = %q, %q, %v; want %q, %q", tc.in, name, value, err, tc.name, tc.value)
		}
	}
}

func TestKindString(t *testing.T) {
	for k := Unreachable; k <= Canceled; k++ {
		if s := k.String(); s == "unknown" || s == "" {
			t.Errorf("Kind(%d) has no name", k)
		}
	}
	if Kind(0).String() != "unknown" {
		t.Error("the zero Kind has a name")
	}
}
