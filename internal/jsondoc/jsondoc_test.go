package jsondoc

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// A page of two sections: the tables read are those under the prefixes
// asked, each field at its base's path, the type column as kinds.
func TestFields(t *testing.T) {
	page := filepath.Join(t.TempDir(), "json.md")
	os.WriteFile(page, []byte("# JSON\n\n## Thing: top level\n\n| field | type | meaning |\n|---|---|---|\n"+
		"| `a` | integer | A. |\n| `b`, `c` | string or null | B and C. |\n\n### Thing: each part\n\n| field | type | meaning |\n|---|---|---|\n"+
		"| `d` | array of strings | D. |\n\n## Other: top level\n\n| field | type | meaning |\n|---|---|---|\n| `x` | boolean | X. |\n"), 0o644)
	got := Fields(t, Tables{Page: page, Under: []string{"Thing"},
		Bases: map[string][]string{"Thing: top level": {""}, "Thing: each part": {"parts[]", "whole"}}})
	want := map[string][]string{"a": {"number"}, "b": {"string", "null"}, "c": {"string", "null"}, "parts[].d": {"array"}, "whole.d": {"array"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
	all := Fields(t, Tables{Page: page, Others: []string{"Thing"}, Bases: map[string][]string{"Other: top level": {"o"}}})
	if !reflect.DeepEqual(all, map[string][]string{"o.x": {"boolean"}}) {
		t.Errorf("everything but Thing: %v", all)
	}
}

func TestKind(t *testing.T) {
	for v, want := range map[any]string{nil: "null", 1.5: "number", "s": "string", true: "boolean"} {
		if got := Kind(v); got != want {
			t.Errorf("Kind(%v) = %s, want %s", v, got, want)
		}
	}
	if Kind([]any{}) != "array" || Kind(map[string]any{}) != "object" {
		t.Error("arrays and objects")
	}
}

// Check finds a field written and not documented, one of another kind,
// one documented and not written, in every element of an array, and does
// not enter an opaque object.
func TestCheck(t *testing.T) {
	docs := map[string][]string{"a": {"number"}, "parts": {"array"}, "parts[].d": {"string"}, "gone": {"string"}, "data": {"object"}}
	v := map[string]any{"a": "x", "parts": []any{map[string]any{"d": "ok"}, map[string]any{"d": "ok", "e": 1.0}}, "data": map[string]any{"k": 1.0}}
	rec := &recorder{TB: t}
	Check(rec, docs, v, []string{"data"})
	want := []string{
		"a is a string, docs/json.md says [number]",
		"docs/json.md documents gone, which is not written",
		"parts[].e is written but not in docs/json.md",
	}
	slices.Sort(rec.errs)
	if !slices.Equal(rec.errs, want) {
		t.Errorf("Check said %q, want %q", rec.errs, want)
	}
}

// recorder keeps what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}
