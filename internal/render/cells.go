package render

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// cond measures display cells. It is fixed rather than taken from the
// locale (go-runewidth's default reads LANG and counts East Asian ambiguous
// characters such as ·, —, ≤ and the block elements as two cells under a CJK
// locale): terminals draw those narrow by default whatever the locale, and a
// layout that changed with LANG could not be tested.
var cond = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// ellipsis marks text cut to fit.
const ellipsis = "…"

// cells returns the display width of s.
func cells(s string) int { return cond.StringWidth(s) }

// fit returns s cut to at most w cells, ending in … when it was cut.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if cells(s) <= w {
		return s
	}
	if w == 1 {
		return ellipsis
	}
	return cond.Truncate(s, w, ellipsis)
}

// wrap breaks s into at most maxLines lines of at most w cells, at spaces,
// cutting words longer than a line by cells; what does not fit in
// maxLines is cut with …. Each line costs a pass over what is left, so the
// bound keeps a server's megabyte of text from costing more than a few
// passes.
func wrap(s string, w, maxLines int) []string {
	if w <= 0 || maxLines <= 0 {
		return nil
	}
	var lines []string
	rest := strings.TrimSpace(s)
	for rest != "" {
		if len(lines) == maxLines-1 {
			return append(lines, fit(strings.Join(strings.Fields(rest), " "), w))
		}
		head := cutCells(rest, w)
		if len(head) == len(rest) {
			return append(lines, head)
		}
		// Break at the last space that keeps the line within w cells,
		// or inside the word when it alone is wider than a line.
		if i := strings.LastIndexByte(head, ' '); i > 0 && rest[len(head)] != ' ' {
			head = head[:i]
		} else if head == "" {
			// A grapheme wider than the whole line.
			return append(lines, fit(rest, w))
		}
		lines = append(lines, strings.TrimRight(head, " "))
		rest = strings.TrimLeft(rest[len(head):], " ")
	}
	return lines
}

// cutCells returns the longest prefix of s, whole grapheme clusters, that
// fits in w cells.
func cutCells(s string, w int) string { return cond.Truncate(s, w, "") }
