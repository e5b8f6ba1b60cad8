package watch

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/internal/report"
)

// Column keys of Report.Rates besides the window labels.
const (
	KeyNow     = "now"     // since the previous good scrape
	KeySession = "session" // the ~span column: all of a young session
	KeySince   = "since"   // --since: between the two scrapes
	// KeyElapsed is the row of every Rates column that holds the seconds its
	// figures divide by (null when the column is blank).
	KeyElapsed = "elapsed_seconds"
)

// CellWidth is the width table headers are padded to, so that columns keep
// their width from one frame to the next whatever their figures.
const CellWidth = 8

type kind int

const (
	kRate     kind = iota // counter increase per second
	kRatio                // Δnum / Δ(sum of den)
	kQuantile             // quantile of a histogram's increase
)

// rowDef is one row of the rates table.
type rowDef struct {
	ID, Label string
	kind      kind
	num       counter
	den       []counter
	scale     float64 // shown = value × scale (bytes to MB); JSON keeps base units
	hist      hist
	q         float64
	offload   bool // only when offload capacity > 0
	drafter   bool // only when a drafter has served requests
}

// rows are the table's rows in order: rates, then windowed ratios and
// percentiles (the one-shot figures are lifetime ones; these say "now").
var rows = []rowDef{
	{ID: "prompt_computed", Label: "prompt computed tok/s", num: cPromptTokens},
	{ID: "prompt_cache_hits", Label: "prompt cache hits tok/s", num: cCachedTokens},
	{ID: "generation", Label: "generation tok/s", num: cGenerated},
	{ID: "requests", Label: "requests /s", num: cRequests},
	{ID: "offload_restored", Label: "offload restored tok/s", num: cOffloadRestored, offload: true},
	{ID: "offload_read", Label: "offload read MB/s", num: cOffloadRead, scale: 1e-6, offload: true},
	{ID: "offload_written", Label: "offload written MB/s", num: cOffloadWritten, scale: 1e-6, offload: true},
	{ID: "prefix_hit_ratio", Label: "prefix hit ratio", kind: kRatio, num: cPrefixHits, den: []counter{cPrefixQueries}},
	{ID: "draft_acceptance", Label: "draft acceptance", kind: kRatio, num: cDraftAccepted, den: []counter{cDrafted}, drafter: true},
	{ID: "prefill_share", Label: "prefill share", kind: kRatio, num: cPrefillSeconds, den: []counter{cPrefillSeconds, cDecodeSeconds}},
	{ID: "ttft_p50", Label: "TTFT p50", kind: kQuantile, hist: hTTFT, q: 0.5},
	{ID: "ttft_p99", Label: "TTFT p99", kind: kQuantile, hist: hTTFT, q: 0.99},
	{ID: "e2e_p50", Label: "e2e p50", kind: kQuantile, hist: hE2E, q: 0.5},
	{ID: "e2e_p99", Label: "e2e p99", kind: kQuantile, hist: hE2E, q: 0.99},
}

// shown reports whether the newest sample n supports the row.
func (r rowDef) shown(n *Sample) bool {
	if (r.offload && !n.offload) || (r.drafter && !n.drafter) {
		return false
	}
	switch r.kind {
	case kQuantile:
		return n.hists[r.hist] != nil
	default:
		if !n.has[r.num] {
			return false
		}
		for _, c := range r.den {
			if !n.has[c] {
				return false
			}
		}
	}
	return true
}

// cell is one figure: v nil and !idle is blank (no figure); idle is a ratio
// or percentile with nothing to divide by.
type cell struct {
	v    *float64
	idle bool
}

// value computes row r between samples b and n.
func (r rowDef) value(b, n *Sample) cell {
	elapsed := n.At.Sub(b.At).Seconds()
	if elapsed <= 0 {
		return cell{}
	}
	delta := func(c counter) (float64, bool) {
		if !b.has[c] || !n.has[c] {
			return 0, false
		}
		return n.total[c] - b.total[c], true
	}
	switch r.kind {
	case kRate:
		d, ok := delta(r.num)
		if !ok {
			return cell{}
		}
		return cell{v: ptr(d / elapsed)}
	case kRatio:
		num, ok := delta(r.num)
		if !ok {
			return cell{}
		}
		den := 0.0
		for _, c := range r.den {
			d, ok := delta(c)
			if !ok {
				return cell{}
			}
			den += d
		}
		if den <= 0 {
			return cell{idle: true}
		}
		return cell{v: ptr(num / den)}
	default:
		cur, prev := n.hists[r.hist], b.hists[r.hist]
		if cur == nil || prev == nil || n.hepoch[r.hist] != b.hepoch[r.hist] {
			return cell{}
		}
		d, ok := cur.Sub(*prev)
		if !ok {
			return cell{}
		}
		if d.Total() <= 0 {
			return cell{idle: true}
		}
		// Held to what the window's sum and count allow, as the report's
		// own quantiles are (no peak is known for a window).
		v, _ := d.QuantileBounded(r.q, math.Inf(1))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return cell{}
		}
		return cell{v: ptr(v)}
	}
}

// text renders a cell for the table.
func (r rowDef) text(c cell) string {
	switch {
	case c.idle:
		return "idle"
	case c.v == nil:
		return ""
	case r.kind == kQuantile:
		return FormatSeconds(*c.v)
	case r.scale != 0:
		return FormatNumber(*c.v * r.scale)
	}
	return FormatNumber(*c.v)
}

func ptr(v float64) *float64 { return &v }

// column is one column of the table: its JSON key, its header and the
// index of its baseline sample (-1: blank). The ~span column also names the
// window it stands in for.
type column struct {
	key, header string
	base        int
	window      string
}

// columns lays out the now column and one column per window over h.
func (h *History) columns(windows []time.Duration) []column {
	n := h.Len()
	cols := make([]column, 0, len(windows)+1)
	now := column{key: KeyNow, header: "now", base: -1}
	var interval time.Duration
	if n >= 2 {
		now.base = n - 2
		interval = h.At(n - 1).At.Sub(h.At(n - 2).At)
		now.header = "now " + Compact(interval)
	}
	cols = append(cols, now)
	overflow := false // the ~span column has been considered
	for i, w := range windows {
		col := column{key: Label(w), header: Label(w), base: h.baseline(w)}
		if col.base >= 0 {
			// A baseline far older than the window (a pause, a long run of
			// failed scrapes) would be mislabelled: leave it blank.
			if h.At(n-1).At.Sub(h.At(col.base).At) > 2*w {
				col.base = -1
			}
			cols = append(cols, col)
			continue
		}
		if !overflow && n >= 2 {
			// The first window longer than the session covers all of it,
			// if that is enough longer than the column before to say more.
			overflow = true
			span := h.At(n - 1).At.Sub(h.At(0).At)
			prev := interval
			if i > 0 {
				prev = windows[i-1]
			}
			if float64(span) >= 1.25*float64(prev) {
				cols = append(cols, column{key: KeySession, header: "~" + Compact(span), base: 0, window: col.key})
				continue
			}
		}
		cols = append(cols, col)
	}
	return cols
}

// Rates builds the rates table over the now column and the given windows
// (see [Effective]), and the figures for Report.Rates: one map per column
// key (the window labels, [KeyNow], and [KeySession] when the ~span column
// shows), each holding every shown row's figure in base units (tokens,
// requests or bytes per second, ratios 0..1, seconds) and [KeyElapsed].
func (h *History) Rates(windows []time.Duration) (report.Section, map[string]map[string]*float64) {
	sec := report.Section{ID: "rates", Title: "Rates over staggered windows", Wide: true}
	if h.Len() == 0 {
		return sec, nil
	}
	t, rates := h.table(h.columns(windows))
	sec.Table = t
	return sec, rates
}

// table builds the grid and its figures over the given columns.
func (h *History) table(cols []column) (*report.Table, map[string]map[string]*float64) {
	n := h.Newest()
	var shown []rowDef
	for _, r := range rows {
		if r.shown(n) {
			shown = append(shown, r)
		}
	}
	blank := func() map[string]*float64 {
		m := make(map[string]*float64, len(shown)+1)
		m[KeyElapsed] = nil
		for _, r := range shown {
			m[r.ID] = nil
		}
		return m
	}
	t := &report.Table{Header: []string{""}}
	rates := make(map[string]map[string]*float64, len(cols)+1)
	for _, c := range cols {
		t.Header = append(t.Header, pad(c.header))
		m := blank()
		if c.base >= 0 {
			m[KeyElapsed] = ptr(n.At.Sub(h.At(c.base).At).Seconds())
		}
		rates[c.key] = m
		if c.window != "" {
			// The window the ~span column stands in for has no figure.
			rates[c.window] = blank()
		}
	}
	for _, r := range shown {
		tr := report.TableRow{ID: r.ID, Label: r.Label, Cells: make([]string, 0, len(cols))}
		for _, c := range cols {
			var v cell
			if c.base >= 0 {
				v = r.value(h.At(c.base), n)
			}
			tr.Cells = append(tr.Cells, r.text(v))
			rates[c.key][r.ID] = v.v
		}
		t.Rows = append(t.Rows, tr)
	}
	return t, rates
}
