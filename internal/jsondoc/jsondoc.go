// Package jsondoc reads the field tables of docs/json.md, so that each
// package's tests hold the JSON it writes to the page and the page to the
// JSON: every field written is documented with its type, every field
// documented is written.
package jsondoc

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Tables says which field tables of a page to read.
type Tables struct {
	// Page is the path of docs/json.md from the test's folder.
	Page string
	// Bases maps a table's heading to the JSON objects it describes ("."
	// between keys, "[]" for an array's elements, "" the top level); a
	// table under one of Mine that it does not map is an error.
	Bases map[string][]string
	// Under picks the tables read: those whose heading starts with one of
	// them (all where empty), but for those under one of Others.
	Under, Others []string
	// Mine are the prefixes whose every table must be mapped (Under where
	// empty).
	Mine []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// Fields reads the tables: {path: the JSON kinds its type column allows}.
func Fields(t testing.TB, o Tables) map[string][]string {
	t.Helper()
	f, err := os.Open(o.Page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	under := func(h string, prefixes []string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(h, p) })
	}
	mine := o.Mine
	if len(mine) == 0 {
		mine = o.Under
	}
	out := map[string][]string{}
	heading, in := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			heading, in = strings.TrimSpace(strings.TrimLeft(line, "#")), false
		case strings.HasPrefix(line, "| field | type |"):
			in = (len(o.Under) == 0 || under(heading, o.Under)) && !under(heading, o.Others)
			if _, ok := o.Bases[heading]; in && !ok && (len(mine) == 0 || under(heading, mine)) {
				t.Errorf("%s: a field table under %q that this test does not map to JSON", o.Page, heading)
			}
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			if len(cells) < 4 {
				t.Fatalf("%s: table row %q has no type column", o.Page, line)
			}
			kinds := Kinds(t, strings.TrimSpace(cells[2]))
			for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
				for _, base := range o.Bases[heading] {
					out[Join(base, m[1])] = kinds
				}
			}
		default:
			in = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Kinds turns a type column ("number or null", "array of strings") into
// the kinds a decoded value may have (an integer is a number).
func Kinds(t testing.TB, col string) []string {
	t.Helper()
	var out []string
	for _, k := range strings.Split(col, " or ") {
		k, _, _ = strings.Cut(k, " of ")
		switch k {
		case "integer":
			k = "number"
		case "number", "string", "boolean", "object", "array", "null":
		default:
			t.Errorf("docs/json.md: unknown type %q in %q", k, col)
		}
		out = append(out, k)
	}
	return out
}

// Join is a field's path in its object's.
func Join(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// Kind is a decoded JSON value's kind, as the type columns name it.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// Check holds the decoded document v to docs (Fields): every field
// written is documented with its kind, every field documented is written.
// An object's fields are "path.key", an array's elements' "path[].key"
// (every element's); a path in opaque is checked, not entered (its keys
// are data, or documented elsewhere).
func Check(t testing.TB, docs map[string][]string, v any, opaque []string) {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				p := Join(path, k)
				seen[p] = true
				kinds, ok := docs[p]
				switch {
				case !ok:
					t.Errorf("%s is written but not in docs/json.md", p)
				case !slices.Contains(kinds, Kind(val)):
					t.Errorf("%s is a %s, docs/json.md says %v", p, Kind(val), kinds)
				}
				if !slices.Contains(opaque, p) {
					walk(p, val)
				}
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
	for p := range docs {
		if !seen[p] {
			t.Errorf("docs/json.md documents %s, which is not written", p)
		}
	}
}
