package fleet

import (
	"slices"
	"strconv"
	"strings"
)

// The instance column names every row so that no two read alike, at any
// width. What every row's id shares at its start and its end (whole
// parts, cut at a separator: "inferscope-demo/127.0.0.1:" of
// "inferscope-demo/127.0.0.1:40001") is said once above the table, and
// each cell holds the rest ("40001"). A cell too long for the column is
// cut where rows differ, keeping what tells them apart: its end (a port,
// a pod's hash), else its start, else both ends, else the stretch where it
// differs from the row most like it; only where no cut of a width keeps
// every row apart are the rows numbered ("#3 …"). The notes and the JSON
// name instances in full.

// instanceNames are the instance cells of a fleet grouped by: each
// grouping label's values told apart on their own (what every row's job
// shares, what every row's instance does), a label whose value every row
// shares said only above the table; the ids' where an instance has no
// labels (a fleet made by hand).
func instanceNames(ins []*Instance, by []string) names {
	labels := idLabels(by)
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
		if len(in.Labels) != len(labels) {
			return namesOf(ids)
		}
	}
	if len(ins) < 2 {
		return names{parts: ids}
	}
	n := names{parts: make([]string, len(ins))}
	var template []string
	shares := false
	for _, l := range labels {
		vals := make([]string, len(ins))
		for i, in := range ins {
			if vals[i] = in.Labels[l]; vals[i] == "" {
				vals[i] = "-" // as groupID writes it
			}
		}
		if !slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] }) {
			template, shares = append(template, vals[0]), true
			continue
		}
		ln := namesOf(vals)
		if ln.shared == "" {
			template = append(template, "…")
		} else {
			template, shares = append(template, ln.shared), true
		}
		for i, p := range ln.parts {
			if n.parts[i] != "" {
				n.parts[i] += "/"
			}
			n.parts[i] += p
		}
	}
	if !shares {
		return names{parts: ids}
	}
	n.shared = strings.Join(template, "/")
	return n
}

// names are the instance cells of a table.
type names struct {
	// shared is what every row's id shares, "…" where the rows differ
	// ("inferscope-demo/127.0.0.1:…"); "" where they share nothing, or
	// there is one row.
	shared string
	// parts are each row's id without the shared part.
	parts []string
}

// separators are where a shared part may end (or, at the end, start): a
// label's value is never cut but at one.
const separators = "/:.-_@ "

// namesOf finds what the ids share and what sets each apart.
func namesOf(ids []string) names {
	n := names{parts: append([]string(nil), ids...)}
	if len(ids) < 2 {
		return n
	}
	pre, suf := ids[0], ids[0]
	for _, id := range ids[1:] {
		pre = pre[:commonPrefix(pre, id)]
		suf = suf[len(suf)-commonSuffix(suf, id):]
	}
	// Whole parts only: the prefix ends at a separator, the suffix
	// starts at one.
	pre = pre[:strings.LastIndexAny(pre, separators)+1]
	if i := strings.IndexAny(suf, separators); i >= 0 {
		suf = suf[i:]
	} else {
		suf = ""
	}
	// Every row keeps something of its own.
	for _, id := range ids {
		for len(pre)+len(suf) >= len(id) && suf != "" {
			suf = trimFront(suf)
		}
		for len(pre)+len(suf) >= len(id) && pre != "" {
			pre = trimBack(pre)
		}
	}
	if pre == "" && suf == "" {
		return n
	}
	for i, id := range ids {
		n.parts[i] = id[len(pre) : len(id)-len(suf)]
	}
	n.shared = pre + "…" + suf
	return n
}

// trimFront drops a suffix's first part: from its next separator on.
func trimFront(s string) string {
	if i := strings.IndexAny(s[1:], separators); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// trimBack drops a prefix's last part: up to the separator before it.
func trimBack(s string) string {
	return s[:strings.LastIndexAny(s[:len(s)-1], separators)+1]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	// Not inside a character.
	for n > 0 && n < len(a) && !startsRune(a[n]) {
		n--
	}
	return n
}

func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	for n > 0 && n < len(a) && !startsRune(a[len(a)-n]) {
		n--
	}
	return n
}

func startsRune(b byte) bool { return b&0xC0 != 0x80 }

// widest is the width of the longest part.
func (n names) widest() int {
	w := 0
	for _, p := range n.parts {
		w = max(w, cells(p))
	}
	return w
}

// ways are how a part is cut to w cells, in the order tried: its end (a
// port, a pod's hash), its start, both ends.
var ways = []func(p string, w int) string{
	tail,
	head,
	func(p string, w int) string { return ends(p, (w-1)/2, w-1-(w-1)/2) },
}

// fitting is the narrowest width, at least least, at which one of the
// ways keeps every row apart (the widest part where none does before).
// Each way keeps more apart the more it keeps, so each is searched by
// halves.
func (n names) fitting(least int) int {
	widest := n.widest()
	best := max(least, widest)
	for _, way := range ways {
		lo, hi := least, best // hi keeps them apart
		for lo < hi {
			mid := (lo + hi) / 2
			if n.apart(way, mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		best = hi
	}
	return best
}

// apart says whether cutting every part one way to w keeps them apart.
func (n names) apart(way func(string, int) string, w int) bool {
	seen := make(map[string]bool, len(n.parts))
	for _, p := range n.parts {
		c := way(p, w)
		if seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// at is the cells at width w: each part, cut where rows differ where it
// is longer; where no cut keeps every row apart, the rows are numbered.
func (n names) at(w int) []string {
	if cs, ok := n.cut(w); ok {
		return cs
	}
	return n.numbered(w)
}

// cut cuts the parts to w cells, each in the same way, trying the ways
// that keep what tells them apart, then each around where it differs
// from the part most like it; ok is false where none keeps every row
// apart.
func (n names) cut(w int) ([]string, bool) {
	if n.widest() <= w && distinct(n.parts) {
		return n.parts, true
	}
	if w < 2 {
		return nil, false
	}
	for _, way := range ways {
		if n.apart(way, w) {
			cs := make([]string, len(n.parts))
			for i, p := range n.parts {
				cs[i] = way(p, w)
			}
			return cs, true
		}
	}
	if cs := n.differing(w); distinct(cs) {
		return cs, true
	}
	return nil, false
}

// differing cuts each part around where it differs from the part most
// like it: "…ab-7f…".
func (n names) differing(w int) []string {
	cs := make([]string, len(n.parts))
	for i, p := range n.parts {
		if cells(p) <= w {
			cs[i] = p
			continue
		}
		at := 0
		for j, o := range n.parts {
			if j != i {
				at = max(at, commonPrefix(p, o))
			}
		}
		rs := []rune(p)
		// The rune where it differs, with what comes before it.
		k := len([]rune(p[:at]))
		start := max(0, min(k-(w-2)/2, len(rs)-(w-2)))
		mid := string(rs[start:])
		cs[i] = "…" + fit(mid, w-1)
		if start == 0 {
			cs[i] = fit(p, w)
		}
	}
	return cs
}

// numbered are the parts each after its row's number, cut to w: distinct
// whatever the parts.
func (n names) numbered(w int) []string {
	cs := make([]string, len(n.parts))
	for i, p := range n.parts {
		num := "#" + strconv.Itoa(i+1)
		if cells(num) >= w {
			cs[i] = num
			continue
		}
		cs[i] = num + " " + tail(p, w-cells(num)-1)
	}
	return cs
}

// tail is the end of s in w cells, after "…" where cut.
func tail(s string, w int) string {
	if cells(s) <= w {
		return s
	}
	if w <= 1 {
		return "…"
	}
	rs := []rune(s)
	out := ""
	for i := len(rs) - 1; i >= 0; i-- {
		next := string(rs[i:])
		if cells(next)+1 > w {
			break
		}
		out = next
	}
	return "…" + out
}

// head is the start of s in w cells, before "…" where cut.
func head(s string, w int) string { return fit(s, w) }

// ends is s's first h cells and last t, "…" between, where s is longer
// than h+t+1.
func ends(s string, h, t int) string {
	if cells(s) <= h+t+1 {
		return s
	}
	return strings.TrimSuffix(fit(s, h+1), "…") + tail(s, t+1)
}

func distinct(cs []string) bool {
	seen := make(map[string]bool, len(cs))
	for _, c := range cs {
		if seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}
