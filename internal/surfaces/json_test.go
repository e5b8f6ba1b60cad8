package surfaces_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/fleet"
	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// checkJSONRows holds the table and -o json, each read as the command
// reads it (the store's sums, two reads), to each other row by row and
// figure by figure: every cell the text shows is what the JSON row's
// figure says, written as the table writes it.
func checkJSONRows(t *testing.T, c *promapi.Client, o fleet.Options) {
	t.Helper()
	o.Read = fleet.Pushdown
	text, err := fleet.Run(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := text.Text(&b, fleet.TextOptions{Width: 1000}); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, b.String(), text.HeaderLines(1000), len(text.Instances))
	if _, ok := rows[0]["GPU W"]; o.GPUJoin != fleet.GPUJoinOff && !ok {
		t.Fatalf("no GPU column in the table of a fleet with GPUs:\n%s", b.String())
	}
	for _, h := range []string{"instance", "state", "req/s", "gen tok/s", "TTFT p99"} {
		if _, ok := rows[0][h]; !ok {
			t.Fatalf("no column %q read from the table:\n%s", h, b.String())
		}
	}
	asJSON, err := fleet.Run(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	doc := asJSON.Document()
	if len(doc.Instances) != len(rows)-1 {
		t.Fatalf("%d rows in the JSON, %d in the table", len(doc.Instances), len(rows)-1)
	}
	kv := "KV"
	if o.Range {
		kv = "KV max"
	}
	columns := map[string]string{"requests": "req/s", "prompt_computed": "prompt tok/s", "generation": "gen tok/s",
		"ttft_p50": "TTFT p50", "ttft_p99": "TTFT p99", "prefix_hit_ratio": "prefix hit", "prefill_share": "prefill"}
	check := func(what string, r fleet.Row, cells map[string]string) {
		if r.State != "" && cells["state"] != string(r.State) {
			t.Errorf("%s: state %q in the table, %q in the JSON", what, cells["state"], r.State)
		}
		if got, want := cells[kv], percent(r.KV); got != want {
			t.Errorf("%s: %s %q in the table, %s in the JSON", what, kv, got, want)
		}
		for id, header := range columns {
			got, shown := cells[header]
			v, has := r.Rates[id]
			switch {
			case !shown:
				continue // a column no instance fills
			case !has || v == nil:
				if got != units.Missing && got != "idle" {
					t.Errorf("%s: %s %q in the table, none in the JSON", what, header, got)
				}
			case got != cell(id, float64(*v), r.Stated[id]):
				t.Errorf("%s: %s %q in the table, %v (%s) in the JSON", what, header, got, *v, r.Stated[id])
			}
		}
		// The GPUs' columns, where some row has GPUs.
		for _, gc := range []struct {
			header string
			v      func(*fleet.RowGPU) *report.Number
			say    func(float64) string
		}{
			{"GPU W", func(g *fleet.RowGPU) *report.Number { return g.Watts }, analysis.Watts},
			{"J/tok", func(g *fleet.RowGPU) *report.Number { return g.JoulesPerToken }, analysis.Joules},
			{"GPU util", func(g *fleet.RowGPU) *report.Number { return g.Utilization }, units.Percent},
		} {
			got, shown := cells[gc.header]
			want := units.Missing
			if r.GPU != nil && gc.v(r.GPU) != nil {
				want = gc.say(float64(*gc.v(r.GPU)))
			}
			if shown && got != want {
				t.Errorf("%s: %s %q in the table, %s in the JSON", what, gc.header, got, want)
			}
		}
		var ids []string
		for _, n := range r.Notes {
			ids = append(ids, n.ID)
		}
		if got := cells["notes"]; got != strings.Join(ids, " ") {
			t.Errorf("%s: notes %q in the table, %q in the JSON", what, got, ids)
		}
	}
	for i, r := range doc.Instances {
		check(r.ID, r, rows[i])
	}
	check("totals", *doc.Totals, rows[len(rows)-1])
}

// cell writes a figure of a rates row as the table does.
func cell(id string, v float64, stated string) string {
	switch id {
	case "prefix_hit_ratio", "prefill_share":
		return units.Percent(v)
	case "ttft_p50", "ttft_p99":
		e := histogram.Estimate{Value: v}
		for k := histogram.Unknown; k.String() != "" && k < 16; k++ {
			if k.String() == stated {
				e.Kind = k
			}
		}
		return e.Say(units.Seconds)
	}
	return units.Count(v)
}

func percent(p *report.Number) string {
	if p == nil {
		return units.Missing
	}
	return units.Percent(float64(*p))
}

// tableRows reads a table the fleet wrote with every column (wide enough
// for all): each row's cells by the header of its column, the instances'
// n rows and then the totals'. Columns lie between the positions at which
// every line of the table is blank, two or more in a row.
func tableRows(t *testing.T, text string, top, n int) []map[string]string {
	t.Helper()
	all := strings.Split(text, "\n")
	lines := append(append([]string{}, all[top-1:top+n]...), all[top+n+1]) // the header, the rows, the totals (past the rule)
	rs := make([][]rune, len(lines))
	width := 0
	for i, l := range lines {
		rs[i] = []rune(l)
		width = max(width, len(rs[i]))
	}
	blank := func(p int) bool {
		for _, r := range rs {
			if p < len(r) && r[p] != ' ' {
				return false
			}
		}
		return true
	}
	type span struct{ from, to int }
	var spans []span
	for p := 0; p < width; {
		if blank(p) && (p+1 >= width || blank(p+1)) {
			p++
			continue
		}
		start := p
		for p < width && !(blank(p) && (p+1 >= width || blank(p+1))) {
			p++
		}
		spans = append(spans, span{start, p})
	}
	at := func(r []rune, s span) string {
		if s.from >= len(r) {
			return ""
		}
		return strings.TrimSpace(string(r[s.from:min(s.to, len(r))]))
	}
	var out []map[string]string
	for _, r := range rs[1:] {
		cells := map[string]string{}
		for _, s := range spans {
			if h := at(rs[0], s); h != "" {
				cells[h] = at(r, s)
			}
		}
		out = append(out, cells)
	}
	return out
}

// checkGPU holds each row's GPUs over "now" to the simulator's own
// account: the energy its GPU used between the window's two scrapes
// (sim.GPUConfig.EnergyJoules), per token it generated between them; a
// row born inside the window has no energy at its start, and no figure.
func checkGPU(t *testing.T, servers []*server, f *fleet.Fleet) {
	got := byID(f)
	for _, s := range servers {
		in := got[s.id()]
		if in == nil || in.Figures.GPU == nil || in.GPUs == nil || in.GPUs.Join != "pod" {
			t.Errorf("%s: no GPU joined by pod", s.id())
			continue
		}
		g := in.Figures.GPU
		first, last := s.at(nowFrom), s.last()
		if first == nil {
			if g.Energy != nil || g.JoulesPerToken != nil {
				t.Errorf("%s: born inside the window, yet energy %v", s.id(), *g.Energy)
			}
			continue
		}
		if first.process != last.process {
			continue // restarted inside the window: read from raw samples, counted from zero
		}
		energy := last.energy - first.energy
		gen := float64(last.totals.GeneratedTokens - first.totals.GeneratedTokens)
		if g.Energy == nil || math.Abs(*g.Energy-energy) > 1e-6*energy {
			t.Errorf("%s: energy %v J, the simulator's %v J", s.id(), deref(g.Energy), energy)
		}
		if gen > 0 && (g.JoulesPerToken == nil || math.Abs(*g.JoulesPerToken-energy/gen) > 1e-6*energy/gen) {
			t.Errorf("%s: %v J/token, the simulator's %v", s.id(), deref(g.JoulesPerToken), energy/gen)
		}
		if w := energy / last.at.Sub(first.at).Seconds(); g.Watts == nil || math.Abs(*g.Watts-w) > 1e-6*w {
			t.Errorf("%s: %v W, the simulator's %v W", s.id(), deref(g.Watts), w)
		}
		// The same window as the other surfaces read it: --since between
		// its two scrapes' GPU readings, the watch over every reading in
		// it (the utilization, a mean of the readings after the first).
		var readings []*snapshot.GPUs
		for _, sc := range s.scrapes {
			if sc.at.Before(nowFrom) || sc.at.After(last.at) {
				continue
			}
			r, err := gpu.FromFamilies(sc.gpu)
			if err != nil {
				t.Fatalf("%s at %v: %v", s.id(), sc.at, err)
			}
			r.At, r.Status = sc.at, snapshot.GPUsRead
			readings = append(readings, r)
		}
		sinceW := rates.GPUWindowOf([]*snapshot.GPUs{readings[0], readings[len(readings)-1]}, "since")
		watchW := rates.GPUWindowOf(readings, "watch")
		d, ok := rates.Between(first.snap, last.snap)
		if !ok {
			t.Fatalf("%s: no --since window", s.id())
		}
		j, _, okJ := analysis.EnergyPerToken(rates.EngineWindow(&d, nil, last.snap), sinceW)
		for _, c := range []struct {
			what        string
			fleet, them *float64
		}{
			{"energy, --since", g.Energy, sinceW.Energy},
			{"watts, --since", g.Watts, sinceW.Power},
			{"J/token, --since", g.JoulesPerToken, map[bool]*float64{true: &j}[okJ]},
			{"utilization, the watch", g.Utilization, watchW.Utilization},
		} {
			if c.fleet == nil || c.them == nil || math.Abs(*c.fleet-*c.them) > 1e-9*math.Max(1, math.Abs(*c.them)) {
				t.Errorf("%s: %s: the fleet's %v, the surface's %v", s.id(), c.what, deref(c.fleet), deref(c.them))
			}
		}
	}
}
