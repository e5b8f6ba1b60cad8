package analysis

import (
	"math"
	"strconv"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// --- Breakdowns --------------------------------------------------------------
//
// What the totals add up from: llama.cpp's slots (its /slots answer) and
// the units a server's series carry a label for (vLLM's data-parallel
// engines, SGLang's DP ranks), each read on its own by the same dialect
// (snapshot.Part), so that a unit's figure is defined as the whole's. Each
// is a section whose rows sum the units up (the spread a mean hides) and
// whose table, folded unless asked for, has a row per unit; Breakdowns
// carries every unit for a program. No band judges a unit: the notes judge
// the server as its totals say.

// partKinds name a breakdown by its label: its key in Breakdowns, the
// section's title and a unit's name.
var partKinds = map[string]struct{ key, title, unit string }{
	"engine":  {"engines", "Data-parallel engines", "engine"},
	"dp_rank": {"dp_ranks", "Data-parallel ranks", "DP rank"},
}

func (a *analyzer) breakdowns() {
	if a.s.Slots != nil {
		a.slots(a.s.Slots)
	}
	if len(a.s.Parts) > 0 {
		a.parts(a.s.Parts)
	}
}

func (a *analyzer) addBreakdown(key string, b *report.Breakdown) {
	if a.r.Breakdowns == nil {
		a.r.Breakdowns = report.Map[*report.Breakdown]{}
	}
	a.r.Breakdowns[key] = b
}

// slotWhy says why there are no slots, by the reading's status.
var slotWhy = map[string]string{
	snapshot.SlotsOff:      "/slots not read (--no-slots)",
	snapshot.SlotsDisabled: "/slots is disabled on this server (start it without --no-slots to see each slot)",
	snapshot.SlotsAbsent:   "this server has no /slots",
	snapshot.SlotsFailed:   "/slots could not be read",
}

// slots is llama.cpp's slots section, or a line saying why there is none.
func (a *analyzer) slots(sl *snapshot.Slots) {
	b := &report.Breakdown{Unit: "slot", Status: sl.Status, Why: sl.Why}
	a.addBreakdown("slots", b)
	if sl.Status != snapshot.SlotsRead {
		note := slotWhy[sl.Status]
		if sl.Why != "" {
			note += ": " + sl.Why
		}
		a.r.Sections = append(a.r.Sections, report.Section{ID: "slots", Title: "Slots", Rows: []report.Row{{ID: "slots_unread", Note: note, Severity: report.Dim}}})
		return
	}
	t := &report.Table{Header: []string{"slot", "state", "context", "prompt", "cached", "generated", "left", "tok/s"}}
	busy := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sl.Slots {
		u := slotUnit(s)
		b.Units = append(b.Units, u)
		if s.Processing {
			busy++
		}
		if s.HasTask && s.Ctx > 0 {
			share := float64(s.ContextTokens) / float64(s.Ctx)
			lo, hi = math.Min(lo, share), math.Max(hi, share)
		}
		t.Rows = append(t.Rows, slotRow(s, u.State))
	}
	if !speeds(sl.Slots) {
		// One reading gives no speed: the column waits for a watch.
		t.Header = t.Header[:len(t.Header)-1]
		for i := range t.Rows {
			t.Rows[i].Cells = t.Rows[i].Cells[:len(t.Rows[i].Cells)-1]
		}
	}
	n := len(sl.Slots)
	rows := []report.Row{{ID: "slots_busy", Label: "slots busy", Value: units.Integer(float64(busy)) + " of " + units.Integer(float64(n))}}
	if n > 0 {
		rows[0].Bar = num(float64(busy) / float64(n))
	}
	if !math.IsInf(lo, 0) {
		rows = append(rows, report.Row{ID: "slots_context", Label: "context per slot", Value: spread(lo, hi, units.Percent),
			Note: "of " + units.Count(float64(sl.Slots[0].Ctx)) + " tokens; an idle slot counts its last request"})
	}
	a.r.Sections = append(a.r.Sections, report.Section{ID: "slots", Title: "Slots", Rows: rows, Table: t, Fold: true})
}

// speeds reports whether any slot has a speed.
func speeds(ss []snapshot.Slot) bool {
	for _, s := range ss {
		if s.Speed != nil {
			return true
		}
	}
	return false
}

// slotUnit is a slot for the JSON: its state and its figures.
func slotUnit(s snapshot.Slot) report.Unit {
	u := report.Unit{ID: strconv.Itoa(s.ID), State: "idle", Figures: report.Map[report.Number]{"n_ctx": report.Number(s.Ctx)}}
	switch {
	case s.Processing && s.Decoded == 0:
		u.State = "prompt"
	case s.Processing:
		u.State = "generating"
	}
	if !s.HasTask {
		return u
	}
	f := u.Figures
	f["task"] = report.Number(s.Task)
	f["context_tokens"] = report.Number(s.ContextTokens)
	if s.Cleared {
		return u
	}
	f["prompt_tokens_computed"] = report.Number(s.PromptComputed)
	if s.Processing {
		f["prompt_tokens_cached"] = report.Number(s.PromptCached)
	}
	f["tokens_generated"] = report.Number(s.Decoded)
	if s.Remaining >= 0 {
		f["tokens_remaining"] = report.Number(s.Remaining)
	}
	if s.Speed != nil {
		f["tokens_per_second"] = report.Number(*s.Speed)
	}
	return u
}

// slotRow is a slot's line of the table.
func slotRow(s snapshot.Slot, state string) report.TableRow {
	row := report.TableRow{ID: "slot_" + strconv.Itoa(s.ID), Label: strconv.Itoa(s.ID), Cells: make([]string, 7)}
	row.Cells[0] = state
	if !s.HasTask {
		row.Cells[0] = "idle, unused"
		return row
	}
	row.Cells[1] = units.Count(float64(s.ContextTokens))
	if s.Ctx > 0 {
		row.Cells[1] += " (" + units.Percent(float64(s.ContextTokens)/float64(s.Ctx)) + ")"
	}
	if s.Cleared {
		// The server reset the request's counts when it ended: unknown.
		row.Cells[2], row.Cells[3], row.Cells[4], row.Cells[5] = "—", "—", "—", "—"
		return row
	}
	row.Cells[2] = units.Count(float64(s.PromptComputed))
	// Every build clears the cached count when the request ends.
	row.Cells[3] = "—"
	if s.Processing {
		row.Cells[3] = units.Count(float64(s.PromptCached))
	}
	row.Cells[4] = units.Count(float64(s.Decoded))
	row.Cells[5] = "no limit"
	if s.Remaining >= 0 {
		row.Cells[5] = units.Count(float64(s.Remaining))
	}
	if s.Speed != nil {
		row.Cells[6] = units.Count(*s.Speed)
	}
	return row
}

// partColumn is one figure a part has in the table and the JSON: its key
// in the unit's figures, its header, how a cell writes it, and how it is
// read from the part.
type partColumn struct {
	key, header string
	say         func(float64) string
	of          func(p snapshot.Part) (float64, bool)
}

func scalarOf(name string) func(snapshot.Part) (float64, bool) {
	return func(p snapshot.Part) (float64, bool) { return p.Scalar(name) }
}

func rateOf(id string) func(snapshot.Part) (float64, bool) {
	return func(p snapshot.Part) (float64, bool) { v, ok := p.Rates[id]; return v, ok }
}

// partColumns are the figures a unit can have; a column is shown where
// some unit has its figure.
var partColumns = []partColumn{
	{snapshot.RequestsProcessing, "running", units.Integer, scalarOf(snapshot.RequestsProcessing)},
	{snapshot.RequestsDeferred, "waiting", units.Integer, scalarOf(snapshot.RequestsDeferred)},
	{"kv_cache_usage", "KV cache", units.Percent, func(p snapshot.Part) (float64, bool) { return KVUsage(p.Snapshot) }},
	{snapshot.RequestsTotal, "finished", units.Count, scalarOf(snapshot.RequestsTotal)},
	{snapshot.TokensPredictedTotal, "generated", units.Count, scalarOf(snapshot.TokensPredictedTotal)},
	{snapshot.ExtraGenThroughputGauge, "gen tok/s, own", units.Count, func(p snapshot.Part) (float64, bool) {
		v, ok := p.Extra[snapshot.ExtraGenThroughputGauge]
		return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
	}},
	{"requests_per_second", "req/s", units.Count, rateOf("requests")},
	{"generation_tokens_per_second", "tok/s", units.Count, rateOf("generation")},
}

// parts is the section of a server's data-parallel units.
func (a *analyzer) parts(parts []snapshot.Part) {
	kind, ok := partKinds[parts[0].Label]
	if !ok {
		kind.key, kind.title, kind.unit = parts[0].Label, parts[0].Label, parts[0].Label
	}
	b := &report.Breakdown{Unit: parts[0].Label, Status: snapshot.SlotsRead}
	a.addBreakdown(kind.key, b)
	multiModel := a.s.Model == "" && len(a.s.Models) > 1
	var shown []partColumn
	for _, c := range partColumns {
		for _, p := range parts {
			if _, ok := c.of(p); ok {
				shown = append(shown, c)
				break
			}
		}
	}
	t := &report.Table{Header: []string{kind.unit}}
	for _, c := range shown {
		t.Header = append(t.Header, c.header)
	}
	for _, p := range parts {
		u := report.Unit{ID: p.Value, Figures: report.Map[report.Number]{}}
		row := report.TableRow{ID: kind.unit + "_" + p.Value, Label: p.Value}
		if multiModel {
			u.Model = p.Model
			row.Label = p.Value + " · " + p.Model
		}
		for _, c := range shown {
			cell := units.Missing
			if v, ok := c.of(p); ok {
				u.Figures[c.key] = report.Number(v)
				cell = c.say(v)
			}
			row.Cells = append(row.Cells, cell)
		}
		b.Units = append(b.Units, u)
		t.Rows = append(t.Rows, row)
	}
	a.r.Sections = append(a.r.Sections, report.Section{ID: kind.key, Title: kind.title, Rows: a.partRows(parts, kind.unit), Table: t, Fold: true})
}

// partRows sum the units up: the spread of what each holds, which the
// totals (a sum, the KV cache's mean) hide.
func (a *analyzer) partRows(parts []snapshot.Part, unit string) []report.Row {
	n := units.Integer(float64(len(parts))) + " " + unit + "s"
	var rows []report.Row
	if lo, hi, ok := partSpread(parts, partColumns[2].of); ok {
		note := n
		if whole, ok := KVUsage(a.s); ok {
			note += "; the KV cache row shows their mean, " + units.Percent(whole)
		}
		rows = append(rows, report.Row{ID: "parts_kv_cache", Label: "KV cache, each", Value: spread(lo, hi, units.Percent), Note: note})
	}
	if lo, hi, ok := partSpread(parts, scalarOf(snapshot.RequestsProcessing)); ok {
		note := n
		if wlo, whi, ok := partSpread(parts, scalarOf(snapshot.RequestsDeferred)); ok {
			note = "waiting " + spread(wlo, whi, units.Integer) + " each"
		}
		rows = append(rows, report.Row{ID: "parts_running", Label: "running, each", Value: spread(lo, hi, units.Integer), Note: note})
	}
	if len(rows) == 0 {
		rows = append(rows, report.Row{ID: "parts_count", Label: unit + "s", Value: units.Integer(float64(len(parts)))})
	}
	return rows
}

// partSpread is the least and most of a figure over the parts that have it.
func partSpread(parts []snapshot.Part, of func(snapshot.Part) (float64, bool)) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range parts {
		if v, has := of(p); has {
			lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
		}
	}
	return lo, hi, ok
}

// spread writes a range of values, one value where they agree.
func spread(lo, hi float64, say func(float64) string) string {
	if say(lo) == say(hi) {
		return say(lo)
	}
	return say(lo) + "–" + say(hi)
}
