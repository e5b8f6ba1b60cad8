package fleet

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/spark"
)

// For any set of distinct instance ids and any width the command line
// accepts (40 to 1,000 cells), the table's instance cells differ, and
// none is wider than its column: ids that share long stretches at either
// end or in the middle, differ in one character, hold wide characters,
// by the hundred.
func TestNamesTellRowsApart(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	pieces := []string{"vllm", "engine", "serviceMonitor", "llm", "10.0.0.", "127.0.0.1", "7f9c4d", "abcde", "0", "pod", "décodé", "推理", "x"}
	seps := []string{"/", ":", ".", "-", "_", "", " "}
	piece := func() string {
		if r.IntN(4) == 0 {
			return fmt.Sprint(r.IntN(100000))
		}
		return pieces[r.IntN(len(pieces))]
	}
	for c := range 600 {
		n := 2 + r.IntN(60)
		if c%50 == 0 {
			n = 300 + r.IntN(700)
		}
		pre, suf := "", ""
		for range r.IntN(6) {
			pre += piece() + seps[r.IntN(len(seps))]
		}
		for range r.IntN(4) {
			suf += seps[r.IntN(len(seps))] + piece()
		}
		seen := map[string]bool{}
		var ids []string
		base := ""
		for range 1 + r.IntN(8) {
			base += piece() + seps[r.IntN(len(seps))]
		}
		for len(ids) < n {
			var mid string
			switch r.IntN(3) {
			case 0: // one character apart from the others, in the middle
				i := r.IntN(len(base) + 1)
				mid = base[:i] + fmt.Sprint(len(ids)) + base[i:]
			case 1:
				mid = base + fmt.Sprint(r.IntN(1000000))
			default:
				for range 1 + r.IntN(5) {
					mid += piece() + seps[r.IntN(len(seps))]
				}
			}
			id := pre + mid + suf
			if id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		f := &Fleet{}
		for _, id := range ids {
			f.Instances = append(f.Instances, &Instance{ID: id, State: Up})
		}
		for _, width := range []int{40, 41 + r.IntN(60), 100 + r.IntN(900)} {
			g := newGrid(columns(false, spark.Blocks), f)
			g.fit(width)
			got := map[string]int{}
			for k, row := range g.rows {
				cell := row[0]
				if j, ok := got[cell]; ok {
					t.Fatalf("case %d, width %d: rows %q and %q both read %q (column %d wide)", c, width, ids[j], ids[k], cell, g.widths[0])
				}
				got[cell] = k
				if w := cells(cell); w > g.widths[0] && !strings.HasPrefix(cell, "#") {
					t.Fatalf("case %d, width %d: %q is %d cells in a column of %d", c, width, cell, w, g.widths[0])
				}
			}
		}
	}
}

// What every row shares is whole parts, at a separator, at either end;
// each row keeps something of its own; one row is its whole id.
func TestNamesShared(t *testing.T) {
	for _, tc := range []struct {
		ids    []string
		shared string
		parts  []string
	}{
		{[]string{"inferscope-demo/127.0.0.1:40001", "inferscope-demo/127.0.0.1:40002"}, "inferscope-demo/127.0.0.1:…", []string{"40001", "40002"}},
		{[]string{"vllm/10.0.0.1:8000", "vllm/10.0.0.12:8000"}, "vllm/10.0.0.…:8000", []string{"1", "12"}},
		{[]string{"llm/vllm-engine-7f9c4d-abcde", "llm/vllm-engine-7f9c4d-fghij"}, "llm/vllm-engine-7f9c4d-…", []string{"abcde", "fghij"}},
		// Not inside a part: "vllm-a" and "vllm-b" share no whole part.
		{[]string{"vllm-a", "vllm-b"}, "vllm-…", []string{"a", "b"}},
		{[]string{"a1", "a2"}, "", []string{"a1", "a2"}},
		// One id the other's start: each keeps something.
		{[]string{"a/b", "a/b/c"}, "a/…", []string{"b", "b/c"}},
		{[]string{"job/x"}, "", []string{"job/x"}},
	} {
		n := namesOf(tc.ids)
		if n.shared != tc.shared || strings.Join(n.parts, " ") != strings.Join(tc.parts, " ") {
			t.Errorf("namesOf(%q) = %q %q, want %q %q", tc.ids, n.shared, n.parts, tc.shared, tc.parts)
		}
	}
}
