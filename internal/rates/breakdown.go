package rates

import (
	"github.com/inferscope/inferscope/internal/snapshot"
)

// partRows are the windowed figures a breakdown gives each unit, by rates
// row id: the rows' own definitions, over the unit's own counters.
var partRows = []string{"requests", "generation"}

// Breakdown sets the windowed figures of cur's units over the interval
// since prev, the previous good scrape of the same server: each part's
// partRows, where prev has the part (by model and label value) and it did
// not restart between the two (Between), over seconds; and each slot's
// speed, where both readings are of the same request running, over the
// time between the two /slots answers. Figures of an interval that has
// none are left unset, never 0.
func Breakdown(prev, cur *snapshot.Snapshot, seconds float64) {
	if prev == nil || cur == nil {
		return
	}
	if seconds > 0 {
		for i := range cur.Parts {
			p := &cur.Parts[i]
			if before := findPart(prev.Parts, p); before != nil {
				p.Rates = partRates(before.Snapshot, p.Snapshot, seconds)
			}
		}
	}
	if prev.Slots != nil && cur.Slots != nil && prev.Slots.Status == snapshot.SlotsRead && cur.Slots.Status == snapshot.SlotsRead {
		slotSpeeds(prev.Slots, cur.Slots)
	}
}

func findPart(parts []snapshot.Part, p *snapshot.Part) *snapshot.Part {
	for i := range parts {
		q := &parts[i]
		if q.Label == p.Label && q.Value == p.Value && q.Model == p.Model {
			return q
		}
	}
	return nil
}

// partRates is a unit's partRows over the interval from a to b.
func partRates(a, b *snapshot.Snapshot, seconds float64) map[string]float64 {
	d, ok := Between(a, b)
	if !ok {
		return nil
	}
	d.Seconds = seconds
	var rows []Row
	for _, r := range RowsFor(b) {
		for _, id := range partRows {
			if r.ID == id {
				rows = append(rows, r)
			}
		}
	}
	var out map[string]float64
	for i, f := range Compute(d, rows) {
		if f.Value == nil {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[rows[i].ID] = *f.Value
	}
	return out
}

// slotSpeeds sets each slot's tokens generated per second between two
// /slots answers, where both are of the same request running: a request
// that ended or began between them ran for an unknown part of the
// interval.
func slotSpeeds(prev, cur *snapshot.Slots) {
	dt := cur.At.Sub(prev.At).Seconds()
	if !(dt > 0) {
		return
	}
	before := make(map[int]snapshot.Slot, len(prev.Slots))
	for _, s := range prev.Slots {
		before[s.ID] = s
	}
	for i := range cur.Slots {
		s := &cur.Slots[i]
		b, ok := before[s.ID]
		if !ok || !b.Processing || !s.Processing || !b.HasTask || !s.HasTask || b.Task != s.Task || s.Decoded < b.Decoded {
			continue
		}
		v := float64(s.Decoded-b.Decoded) / dt
		s.Speed = &v
	}
}
