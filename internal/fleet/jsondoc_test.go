package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/jsondoc"
)

// docTables maps each "Fleet: …" heading of docs/json.md to the JSON
// objects its field table describes ("." between keys, "[]" for an
// array's elements).
var docTables = map[string][]string{
	"Fleet: top level": {""},
	"Fleet: each row":  {"instances[]", "totals"},
}

// opaque are the objects whose keys are data or documented elsewhere on
// the page (a report, a trend, a note).
var opaque = []string{"backend", "instances[].instance", "instances[].rates", "totals.rates", "instances[].stated", "totals.stated",
	"instances[].trends", "totals.trends", "totals.coverage", "instances[].report", "totals.report"}

// Every field the fleet's document writes is in docs/json.md with its
// type, and every field documented there is written: the recorded fleet
// read as the table reads it (instances read whole with why, trends) and
// whole (each report), now and over a past range, one instance made
// unreadable.
func TestFleetJSONDocumented(t *testing.T) {
	docs := jsondoc.Fields(t, jsondoc.Tables{Page: "../../docs/json.md", Bases: docTables, Under: []string{"Fleet"}})
	if len(docs) < 30 {
		t.Fatalf("docs/json.md: %d fleet fields documented: the section moved", len(docs))
	}
	api := recordedAPI(t, "range")
	push, whole := both(t, api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s, Trend: true})
	whole.Instances[0].State, whole.Instances[0].Err = Unreadable, errors.New("its series cannot be read")
	now := *push
	now.Range, now.Version = false, "v1.2.3"
	seen := map[string]bool{}
	for _, f := range []*Fleet{push, whole, &now} {
		var b bytes.Buffer
		if err := f.JSON(&b, false); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		var walk func(prefix string, val any)
		walk = func(p string, val any) {
			if p != "" {
				seen[p] = true
				kinds, ok := docs[p]
				switch {
				case !ok:
					t.Errorf("%s is written but not in docs/json.md", p)
				case !slices.Contains(kinds, jsondoc.Kind(val)):
					t.Errorf("%s is a %s, docs/json.md says %v", p, jsondoc.Kind(val), kinds)
				}
				if slices.Contains(opaque, p) {
					return
				}
			}
			switch x := val.(type) {
			case map[string]any:
				for k, v := range x {
					walk(strings.TrimPrefix(p+"."+k, "."), v)
				}
			case []any:
				if p == "instances" {
					for _, e := range x {
						for k, v := range e.(map[string]any) {
							walk("instances[]."+k, v)
						}
					}
				}
			}
		}
		walk("", v)
	}
	// A row's field need be written in one kind of row (an instance's,
	// the totals').
	for p := range docs {
		field := strings.TrimPrefix(strings.TrimPrefix(p, "instances[]."), "totals.")
		if !seen[p] && !seen["instances[]."+field] && !seen["totals."+field] {
			t.Errorf("docs/json.md documents %s, which the document does not write", p)
		}
	}
}
