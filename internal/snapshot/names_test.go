package snapshot

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// Every name constant of names.go is in the kind tables under the kind its
// doc line states, and every table entry is a constant: the declarations
// and the tables that dialect tests check against cannot drift apart.
func TestNamesDeclaredOnce(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Values) == 0 {
				continue // Kind constants after the first
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			name := vs.Names[0].Name
			value, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			if consts[value] {
				t.Errorf("%s: %q is declared twice", name, value)
			}
			consts[value] = true
			table := declared
			if strings.HasPrefix(name, "Extra") {
				table = declaredExtra
			}
			kind, ok := table[value]
			if !ok {
				t.Errorf("%s (%q) is not in the kind table", name, value)
				continue
			}
			doc := vs.Doc.Text()
			if !strings.HasPrefix(doc, name+" ") || !strings.Contains(doc, " "+kind.String()) || !strings.Contains(doc, ";") {
				t.Errorf("%s: the doc line must start with the name, say %q and give the unit after a semicolon: %q", name, kind, doc)
			}
		}
	}
	for _, table := range []map[string]Kind{declared, declaredExtra} {
		for value := range table {
			if !consts[value] {
				t.Errorf("%q is in a kind table but is not a declared constant", value)
			}
		}
	}
}

func TestDeclared(t *testing.T) {
	tests := []struct {
		name  string
		extra bool
		want  Kind // 0: not declared
	}{
		{"requests_total", false, Counter},
		{"kv_cache_usage_ratio", false, Gauge},
		{"time_to_first_token_seconds", false, Histogram},
		{"num_preemptions_total", false, 0}, // an Extra key, not a scalar
		{"tabbyapi:requests_total", false, 0},
		{"num_preemptions_total", true, Counter},
		{"finished_reason:stop", true, Counter},
		{"spec_decode_accepted_per_pos:0", true, Counter},
		{"finished_reason:", true, 0},
		{"requests_total", true, 0},
		{"kv_block_size", true, Gauge},
		{"nope:x", true, 0},
	}
	for _, tt := range tests {
		lookup := Declared
		if tt.extra {
			lookup = DeclaredExtra
		}
		k, ok := lookup(tt.name)
		if ok != (tt.want != 0) || k != tt.want {
			t.Errorf("declared(%q, extra %v) = %v, %v; want %v", tt.name, tt.extra, k, ok, tt.want)
		}
	}
}
