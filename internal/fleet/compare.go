package fleet

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tolerance is how far apart two readings of one fleet's figures may be,
// relative to the larger: the pushdown's sums and the rebuild's add the
// same numbers in another order, and nothing extrapolates.
const Tolerance = 1e-9

// Differences lists where two readings of one store over one window
// disagree on the table, figure by figure: each instance's state, KV use
// (or its largest), every rate, ratio and percentile of the table (a
// percentile's statement too: exact, estimated or a bound), its trends
// step by step, and the set of note ids its notes column shows; the
// totals' figures and trends, and the fleet's
// own notes (but the one that lists the instances a pushdown read whole).
// It is the proof that the pushdown reads what the rebuild does (this
// package's tests and internal/surfaces run every fleet both ways); none
// is the answer.
func Differences(a, b *Fleet) []string {
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ai, bi := byInstance(a), byInstance(b)
	for _, id := range union(ai, bi) {
		x, y := ai[id], bi[id]
		if x == nil || y == nil {
			say("%s: in one reading only", id)
			continue
		}
		if x.State != y.State {
			say("%s: state %s and %s", id, x.State, y.State)
		}
		if n, m := noteSet(x), noteSet(y); n != m {
			say("%s: notes %q and %q", id, n, m)
		}
		out = append(out, figureDifferences(id, x.Figures, y.Figures)...)
		out = append(out, trendDifferences(id, x, y)...)
	}
	if (a.Totals == nil) != (b.Totals == nil) {
		say("totals in one reading only")
	} else if a.Totals != nil {
		out = append(out, figureDifferences("totals", a.Totals.Figures, b.Totals.Figures)...)
		out = append(out, trendDifferences("totals", a.Totals, b.Totals)...)
	}
	if n, m := fleetNotes(a), fleetNotes(b); n != m {
		say("fleet notes %q and %q", n, m)
	}
	return out
}

func byInstance(f *Fleet) map[string]*Instance {
	out := map[string]*Instance{}
	for _, in := range f.Instances {
		out[in.ID] = in
	}
	return out
}

func union(a, b map[string]*Instance) []string {
	var ids []string
	for id := range a {
		ids = append(ids, id)
	}
	for id := range b {
		if a[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// trendDifferences compares two rows' trends, step by step.
func trendDifferences(id string, x, y *Instance) []string {
	var out []string
	for _, t := range []string{TrendRequests, TrendKV} {
		a, b := x.Trends[t], y.Trends[t]
		switch {
		case (a == nil) != (b == nil):
			out = append(out, fmt.Sprintf("%s: the %s trend in one reading only", id, t))
		case a == nil:
		case len(a.Values) != len(b.Values) || a.StepSeconds != b.StepSeconds:
			out = append(out, fmt.Sprintf("%s: the %s trend in %d and %d steps", id, t, len(a.Values), len(b.Values)))
		default:
			for k := range a.Values {
				u, v := float64(a.Values[k]), float64(b.Values[k])
				if math.IsNaN(u) != math.IsNaN(v) || !math.IsNaN(u) && !same(&u, &v) {
					out = append(out, fmt.Sprintf("%s: the %s trend at step %d: %v and %v", id, t, k+1, u, v))
				}
			}
		}
	}
	return out
}

// figureDifferences compares the table's figures of one row.
func figureDifferences(id string, x, y Figures) []string {
	var out []string
	if !same(x.KV, y.KV) {
		out = append(out, fmt.Sprintf("%s: KV %v and %v", id, show(x.KV), show(y.KV)))
	}
	if (x.GPU == nil) != (y.GPU == nil) {
		out = append(out, fmt.Sprintf("%s: GPUs in one reading only", id))
	} else if x.GPU != nil {
		if x.GPU.GPUs != y.GPU.GPUs {
			out = append(out, fmt.Sprintf("%s: %d and %d GPUs", id, x.GPU.GPUs, y.GPU.GPUs))
		}
		for _, c := range gpuColumns {
			if a, b := gpuValue(x, c.id), gpuValue(y, c.id); !same(a, b) {
				out = append(out, fmt.Sprintf("%s: %s %v and %v", id, c.header, show(a), show(b)))
			}
		}
		if !same(x.GPU.Energy, y.GPU.Energy) {
			out = append(out, fmt.Sprintf("%s: GPU energy %v and %v", id, show(x.GPU.Energy), show(y.GPU.Energy)))
		}
	}
	for _, c := range tableRates {
		rx, fx, okx := x.Rate(c.id)
		ry, fy, oky := y.Rate(c.id)
		switch {
		case okx != oky:
			out = append(out, fmt.Sprintf("%s: %s in one reading only", id, c.header))
		case !okx:
		case fx.Idle != fy.Idle || !same(fx.Value, fy.Value) || fx.Estimate.Kind != fy.Estimate.Kind:
			out = append(out, fmt.Sprintf("%s: %s %q (%v) and %q (%v)", id, c.header, rx.Cell(fx), show(fx.Value), ry.Cell(fy), show(fy.Value)))
		}
	}
	return out
}

func same(a, b *float64) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case *a == *b:
		return true
	}
	return math.Abs(*a-*b) <= Tolerance*math.Max(math.Abs(*a), math.Abs(*b))
}

func show(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// noteSet is an instance's notes column as a sorted set.
func noteSet(in *Instance) string {
	ids := strings.Fields(noteIDs(in))
	slices.Sort(ids)
	return strings.Join(ids, " ")
}

// fleetNotes are the fleet's note ids, sorted, but NoteReadWhole's.
func fleetNotes(f *Fleet) string {
	var ids []string
	for _, n := range f.Notes {
		if n.ID != NoteReadWhole {
			ids = append(ids, n.ID)
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, " ")
}
