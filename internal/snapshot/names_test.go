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
		name string
		want Name // zero: not declared
	}{
		{"requests_total", Name{Kind: Counter}},
		{"kv_cache_usage_ratio", Name{Kind: Gauge}},
		{"time_to_first_token_seconds", Name{Kind: Histogram}},
		{"tabbyapi:requests_total", Name{}},
		{"num_preemptions_total", Name{Kind: Counter, Extra: true}},
		{"finished_reason:stop", Name{Kind: Counter, Extra: true}},
		{"spec_decode_accepted_per_pos:0", Name{Kind: Counter, Extra: true}},
		{"finished_reason:", Name{}},
		{"kv_block_size", Name{Kind: Gauge, Extra: true}},
		{"nope:x", Name{}},
		{"", Name{}},
	}
	for _, tt := range tests {
		n, ok := Declared(tt.name)
		if ok != (tt.want != Name{}) || ok && n != tt.want {
			t.Errorf("Declared(%q) = %+v, %v; want %+v", tt.name, n, ok, tt.want)
		}
	}
}
