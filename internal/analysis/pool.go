package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// --- The live state's parts ---------------------------------------------------
//
// What some servers say of their live state beyond the running and waiting
// totals and the KV cache in use (SGLang's, in 2026): the requests of each
// priority, those paused for a weight update, the KV cache held by cached
// prefixes no request uses and the free part, a hybrid model's other
// pools, and the context length against the cache. Each row is the
// scrape's, as the Live section is; none is judged.

// priorityRows are the running and waiting requests of each priority
// (priority scheduling), parts of the state row's totals.
func (a *analyzer) priorityRows() []report.Row {
	x := a.s.Extra
	running, queued := byPrefix(x, snapshot.ExtraRunningByPriority), byPrefix(x, snapshot.ExtraQueuedByPriority)
	keys := slices.Collect(maps.Keys(running))
	for k := range queued {
		if _, ok := running[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, comparePriorities)
	rows := make([]report.Row, 0, len(keys))
	for _, k := range keys {
		r, okR := running[k]
		w, okW := queued[k]
		rows = append(rows, report.Row{ID: "priority_" + k, Label: "priority " + k, Value: stateText(r, w, okR, okW),
			Note: "of the state above"})
	}
	return rows
}

// byPrefix is the Extra figures under a key prefix, by what follows it.
func byPrefix(x map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range x {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// comparePriorities orders priorities as numbers where they are ("2"
// before "10"), others after them by name.
func comparePriorities(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// pausedRow is the requests paused for a weight update, where any were.
func (a *analyzer) pausedRow() (report.Row, bool) {
	n, ok := a.s.Extra[snapshot.ExtraPausedRequests]
	if !ok || !(n > 0) {
		return report.Row{}, false
	}
	return report.Row{ID: "paused", Label: "paused", Value: units.Plural(n, "request"),
		Note: "for a weight update, in the server's last log interval"}, true
}

// kvCachedRow is the KV cache that cached prefixes hold with no request
// using them, which the server frees for new requests as it needs the
// room, and the free part.
func (a *analyzer) kvCachedRow() (report.Row, bool) {
	held, ok := a.s.Scalar(snapshot.KVCacheEvictableTokens)
	if !ok {
		return report.Row{}, false
	}
	row := report.Row{ID: "kv_cached", Label: "cached prefixes", Value: units.Count(held) + " tokens",
		Note: "no running request holds them: freed for new requests as needed"}
	if mx := a.get(snapshot.KVCacheMaxTokens); mx > 0 {
		share := held / mx
		row.Value, row.Bar = units.Percent(share), bar(share)
		row.Note = units.Count(held) + " tokens no running request holds: freed for new requests as needed"
	}
	if free, ok := a.s.Scalar(snapshot.KVCacheFreeTokens); ok {
		row.Note += "; " + units.Count(free) + " free"
	}
	return row, true
}

// poolRows are a hybrid model's pools besides the full-attention one,
// which the KV cache row is.
func (a *analyzer) poolRows() []report.Row {
	pools := byPrefix(a.s.Extra, snapshot.ExtraKVPoolUsage)
	var rows []report.Row
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		v := pools[name]
		rows = append(rows, report.Row{ID: "kv_pool_" + name, Label: poolLabel(name) + " pool", Value: units.Percent(v), Bar: bar(v),
			Note: "the hybrid model's other pool: the KV cache row is the full-attention pool"})
	}
	return rows
}

// poolLabel spells a pool's name for a row: "SWA", "mamba".
func poolLabel(name string) string {
	if name == "swa" {
		return "SWA"
	}
	return name
}

// contextRow is the longest a request may be, and how many of that
// length the KV cache holds at once.
func (a *analyzer) contextRow() (report.Row, bool) {
	n, ok := a.s.Extra[snapshot.ExtraContextLength]
	if !ok || !(n > 0) {
		return report.Row{}, false
	}
	row := report.Row{ID: "context_length", Label: "context length", Value: units.Count(n) + " tokens",
		Note: "the most one request may hold, prompt and generation"}
	if mx := a.get(snapshot.KVCacheMaxTokens); mx > 0 {
		row.Note = fmt.Sprintf("the KV cache holds %s requests of that length at once", strconv.FormatFloat(mx/n, 'f', 1, 64))
	}
	return row, true
}
