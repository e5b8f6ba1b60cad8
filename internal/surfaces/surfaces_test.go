package surfaces_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/fleet"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/rules"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/storetest"
	"github.com/inferscope/inferscope/internal/units"
)

// figures are a window's figures by rates row id; a row a surface has
// with no figure is nil.
type figures map[string]*float64

func (f figures) String() string {
	var parts []string
	for _, k := range sortedKeys(f) {
		v := "—"
		if f[k] != nil {
			v = fmt.Sprint(*f[k])
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// The kinds of rates rows, for the totals' arithmetic.
var (
	ratioRows    = []string{"prefix_hit_ratio", "draft_acceptance", "prefill_share"}
	quantileRows = []string{"ttft_p50", "ttft_p99", "e2e_p50", "e2e_p99"}
)

// relTol is how far two computations of one figure from the same data may
// differ: float rounding (a watch session adds increases scrape by
// scrape, --since subtracts the ends).
const relTol = 1e-9

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// sessionOnly are rows only a watch session can give: the share of its
// scrapes that found a request running has no counter behind it, so
// --since and the fleet have no such row.
var sessionOnly = map[string]bool{"busy_sampled": true}

// same reports where two surfaces' figures of one window differ.
func same(t *testing.T, what string, a, b figures) {
	t.Helper()
	keys := map[string]bool{}
	for k := range a {
		keys[k] = !sessionOnly[k]
	}
	for k := range b {
		keys[k] = !sessionOnly[k]
	}
	maps.DeleteFunc(keys, func(_ string, keep bool) bool { return !keep })
	for _, k := range sortedKeys(keys) {
		x, okX := a[k]
		y, okY := b[k]
		switch {
		case okX != okY:
			t.Errorf("%s: row %s on one surface only (%v / %v)", what, k, okX, okY)
		case (x == nil) != (y == nil):
			t.Errorf("%s: %s has a figure on one surface only: %v / %v", what, k, deref(x), deref(y))
		case x != nil && !near(*x, *y, relTol):
			t.Errorf("%s: %s = %v / %v", what, k, *x, *y)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// ofFleet are an instance's figures in the fleet view.
func ofFleet(in *fleet.Instance) figures {
	out := figures{}
	for i, r := range in.Figures.Rows {
		out[r.ID] = in.Figures.Rates[i].Value
	}
	return out
}

// ofRates are one column of a report's rates, without its elapsed time.
func ofRates(col map[string]*float64) figures {
	out := figures{}
	for k, v := range col {
		if k != rates.KeyElapsed {
			out[k] = v
		}
	}
	return out
}

// session is a watch session over a server's scrapes: its history, as
// the watch view keeps it.
func session(s *server) *rates.History {
	h := rates.NewHistory(20 * time.Minute)
	for _, sc := range s.scrapes {
		h.Add(sc.snap, sc.at)
	}
	return h
}

// column is the watch table's column for window w: the window's own, or
// the ~span column standing in for it in a younger session.
func column(figs map[string]map[string]*float64, w string) map[string]*float64 {
	if c, ok := figs[rates.KeySession]; ok {
		if _, stands := figs[w]; stands && allNil(figs[w]) {
			return c
		}
	}
	return figs[w]
}

func allNil(m map[string]*float64) bool {
	for _, v := range m {
		if v != nil {
			return false
		}
	}
	return true
}

// watchWindow holds a watch session's column for window w to --since
// over the same two scrapes, and to the fleet's instance where the column
// spans the fleet's window (the watch thins its older samples to one per
// 30 s, so its window may start before the fleet's).
func watchWindow(t *testing.T, s *server, h *rates.History, w time.Duration, in *fleet.Instance) {
	t.Helper()
	_, wf := h.Section([]time.Duration{w})
	col := column(wf, units.Duration(w))
	el := col[rates.KeyElapsed]
	if el == nil {
		t.Errorf("%s: the watch has no %s column", s.pod, units.Duration(w))
		return
	}
	last := s.last()
	base := s.at(last.at.Add(-time.Duration(*el * float64(time.Second))))
	if base == nil {
		t.Fatalf("%s: the watch's baseline %v s back is no scrape", s.pod, *el)
	}
	what := fmt.Sprintf("%s: watch %s (%v s) / --since", s.pod, units.Duration(w), *el)
	same(t, what, ofRates(col), ofRates(since(base, last).Rates[rates.KeySince]))
	if *el == in.Figures.Seconds {
		same(t, what+" / fleet", ofRates(col), ofFleet(in))
	}
}

// sameJSON compares two JSON documents, numbers within relTol: a store
// may keep a float to fewer digits (VictoriaMetrics keeps about 12).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return sameValue(x, y)
}

func sameValue(x, y any) bool {
	switch xv := x.(type) {
	case float64:
		yv, ok := y.(float64)
		return ok && near(xv, yv, relTol)
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for k := range xv {
			if !sameValue(xv[k], yv[k]) {
				return false
			}
		}
		return true
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for i := range xv {
			if !sameValue(xv[i], yv[i]) {
				return false
			}
		}
		return true
	}
	return x == y
}

// noteKeys are a report's notes as id/severity, sorted.
func noteKeys(r *report.Report) []string {
	var out []string
	for _, n := range r.Notes {
		out = append(out, n.ID+"/"+string(n.Severity))
	}
	sort.Strings(out)
	return out
}

func oneShot(sc *reading) *report.Report {
	return analysis.Analyze(sc.snap, analysis.Options{Now: sc.at})
}

// since is the --since report from a to b.
func since(a, b *reading) *report.Report {
	return rates.SinceReport(oneShot(b), a.snap, b.snap)
}

func client(t *testing.T, s *storetest.Store) *promapi.Client {
	t.Helper()
	c, err := promapi.New(promapi.Options{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Detect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// k8s groups the simulated fleet by its pods.
var k8s = []string{"namespace", "pod"}

// readFleet reads the fleet as --json does (the rebuild: every figure of
// every report, which the other surfaces are held to) and as the table
// does (the pushdown), and fails t where the two tables differ.
func readFleet(t *testing.T, c *promapi.Client, o fleet.Options) *fleet.Fleet {
	t.Helper()
	o.Read = fleet.Rebuild
	whole, err := fleet.Run(context.Background(), c, o)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	o.Read = fleet.Pushdown
	push, err := fleet.Run(context.Background(), c, o)
	if err != nil {
		t.Fatalf("pushdown: %v", err)
	}
	for _, d := range fleet.Differences(push, whole) {
		t.Errorf("the pushdown and the rebuild differ: %s", d)
	}
	return whole
}

func byID(f *fleet.Fleet) map[string]*fleet.Instance {
	out := map[string]*fleet.Instance{}
	for _, in := range f.Instances {
		out[in.ID] = in
	}
	return out
}

// TestSurfacesAgree reads one simulated fleet through every surface and
// holds each figure two of them show to each other; fleet totals to their
// rows; each surface's windows to the simulator's own counts.
func TestSurfacesAgree(t *testing.T) {
	t.Parallel()
	servers := simulated()
	for _, s := range servers {
		if err := s.simulate(); err != nil {
			t.Fatal(err)
		}
	}
	preconditions(t, servers)
	path := backfill(t, servers)
	stores := []*storetest.Store{
		storetest.Prometheus(t, storetest.Config{Backfill: path}),
		storetest.VictoriaMetrics(t, storetest.Config{Backfill: path}),
	}
	var nows, ranges []*fleet.Fleet
	for _, st := range stores {
		c := client(t, st)
		// The surfaces held to each other read the engines alone (a
		// one-shot, --since and a watch are given no GPU here); the GPUs
		// beside them are the JSON rows' and checkGPU's.
		now := readFleet(t, c, fleet.Options{From: nowFrom, To: end, By: k8s, GPUJoin: fleet.GPUJoinOff})
		rng := readFleet(t, c, fleet.Options{From: rangeFrom, To: end, Range: true, By: k8s, GPUJoin: fleet.GPUJoinOff})
		nows, ranges = append(nows, now), append(ranges, rng)
		t.Run(st.Kind+"/now", func(t *testing.T) { checkNow(t, servers, now) })
		t.Run(st.Kind+"/range", func(t *testing.T) { checkRange(t, servers, rng) })
		t.Run(st.Kind+"/totals", func(t *testing.T) {
			checkTotals(t, now, len(servers))
			checkTotals(t, rng, len(servers))
		})
		t.Run(st.Kind+"/gpu", func(t *testing.T) {
			checkGPU(t, servers, readFleet(t, c, fleet.Options{From: nowFrom, To: end, By: k8s}))
		})
		t.Run(st.Kind+"/json", func(t *testing.T) {
			checkJSONRows(t, c, fleet.Options{From: nowFrom, To: end, By: k8s})
			checkJSONRows(t, c, fleet.Options{From: rangeFrom, To: end, Range: true, By: k8s})
		})
	}
	t.Run("backends", func(t *testing.T) {
		sameFleets(t, "now", nows[0], nows[1])
		sameFleets(t, "range", ranges[0], ranges[1])
	})
	t.Run("sections", func(t *testing.T) { checkSections(t, servers, nows[0]) })
	t.Run("promtool", func(t *testing.T) { checkRules(t, servers) })
}

// preconditions: the fleet is what the test is about.
func preconditions(t *testing.T, servers []*server) {
	t.Helper()
	late := servers[3]
	if _, ok := late.scrapes[0].snap.Scalar(snapshot.RequestsTotal); ok || !late.scrapes[0].at.After(nowFrom) {
		t.Fatalf("late-d's first scrape (%v) must lie inside now and have no counters", late.scrapes[0].at)
	}
	if _, ok := late.last().snap.Scalar(snapshot.RequestsTotal); !ok || late.last().totals.Requests == 0 {
		t.Fatal("late-d served no request")
	}
	llama := servers[4]
	if _, ok := llama.last().snap.Scalar(snapshot.CachedTokensTotal); ok || llama.last().snap.Dialect != "llamacpp" {
		t.Fatal("llama-e must be llama.cpp without cached tokens")
	}
	if c := servers[2]; c.last().process != 1 {
		t.Fatal("chat-c did not restart")
	}
}

// checkNow holds the fleet's "now" to a watch session's 5m column and to
// --since over the same scrapes, figures and notes; and each instance's
// report's lifetime figures to the one-shot report of its last scrape.
func checkNow(t *testing.T, servers []*server, f *fleet.Fleet) {
	got := byID(f)
	if len(got) != len(servers) {
		t.Fatalf("instances %v", len(got))
	}
	for _, s := range servers {
		in := got[s.id()]
		if in == nil {
			t.Fatalf("no %s", s.id())
		}
		first := s.at(nowFrom)
		if first == nil {
			first = s.scrapes[0] // born inside the window: from its first scrape
		}
		last := s.last()
		sr := since(first, last)
		same(t, s.pod+": fleet now / --since", ofFleet(in), ofRates(sr.Rates[rates.KeySince]))
		if el := sr.Rates[rates.KeySince][rates.KeyElapsed]; el == nil || *el != in.Figures.Seconds {
			t.Errorf("%s: fleet divides by %v s, --since by %v", s.pod, in.Figures.Seconds, deref(el))
		}
		h := session(s)
		watchWindow(t, s, h, 5*time.Minute, in)
		watch := h.Judge(oneShot(last), last.snap, []time.Duration{5 * time.Minute})
		for _, pair := range []struct {
			what string
			r    *report.Report
		}{{"--since", sr}, {"watch", watch}} {
			if a, b := noteKeys(in.Report), noteKeys(pair.r); !slices.Equal(a, b) {
				t.Errorf("%s: notes of fleet now %v, of %s %v", s.pod, a, pair.what, b)
			}
		}
		// Served requests in the window: it has window rates.
		if last.totals.Requests > first.totals.Requests || first == s.scrapes[0] {
			if v := ofFleet(in)["generation"]; v == nil || *v <= 0 {
				t.Errorf("%s served requests in the window, yet no generation rate: %v", s.pod, ofFleet(in))
			}
		}
		// The instance's lifetime figures are the one-shot report's.
		a, _ := json.Marshal(in.Report.Figures)
		b, _ := json.Marshal(oneShot(last).Figures)
		if !sameJSON(a, b) {
			t.Errorf("%s: lifetime figures differ:\nfleet    %s\none-shot %s", s.pod, a, b)
		}
	}
	// thrash-a thrashes in the window: the note is the window's.
	if !slices.Contains(noteKeys(got["sim/thrash-a"].Report), "kv_offload_thrashing/warn") {
		t.Errorf("thrash-a: notes %v", noteKeys(got["sim/thrash-a"].Report))
	}
}

// checkRange holds the fleet over its range to --since and a watch
// session where they read the same window, and to the simulator's own
// counts where only the fleet can read it (a process born with a start
// time inside the range, a restart).
func checkRange(t *testing.T, servers []*server, f *fleet.Fleet) {
	got := byID(f)
	for _, s := range servers {
		in := got[s.id()]
		if in == nil {
			t.Fatalf("no %s", s.id())
		}
		last := s.last()
		switch s.pod {
		case "chat-b":
			// Born at its start time inside the range: all it counted.
			checkCounted(t, s, in, float64(last.totals.Requests), float64(last.totals.GeneratedTokens), end.Sub(s.starts[0]).Seconds())
			continue
		case "chat-c":
			// Restarted: the old process from the range's start to its
			// last scrape, and all of the new one.
			old := lastOf(s, 0)
			from := s.at(rangeFrom)
			req := float64(old.totals.Requests-from.totals.Requests) + float64(last.totals.Requests)
			gen := float64(old.totals.GeneratedTokens-from.totals.GeneratedTokens) + float64(last.totals.GeneratedTokens)
			checkCounted(t, s, in, req, gen, end.Sub(rangeFrom).Seconds())
			if in.State != fleet.Restarted {
				t.Errorf("chat-c: state %s", in.State)
			}
			continue
		}
		first := s.at(rangeFrom)
		if first == nil {
			first = s.scrapes[0]
		}
		sr := since(first, last)
		same(t, s.pod+": fleet range / --since", ofFleet(in), ofRates(sr.Rates[rates.KeySince]))
		h := session(s)
		watchWindow(t, s, h, 20*time.Minute, in)
		watch := h.Judge(oneShot(last), last.snap, []time.Duration{20 * time.Minute})
		if a, b := noteKeys(in.Report), noteKeys(watch); !slices.Equal(a, b) {
			t.Errorf("%s: notes of the fleet's range %v, of the watch %v", s.pod, a, b)
		}
		// And the simulator's own count, where the window holds it whole.
		if s.noStart || s.llamacpp {
			continue
		}
		if v, want := ofFleet(in)["requests"], float64(last.totals.Requests-first.totals.Requests)/last.at.Sub(first.at).Seconds(); v == nil || !near(*v, want, relTol) {
			t.Errorf("%s: %v requests/s, the simulator's %v", s.pod, deref(v), want)
		}
	}
}

// lastOf is a server's last scrape of process k.
func lastOf(s *server, k int) *reading {
	var out *reading
	for _, sc := range s.scrapes {
		if sc.process == k {
			out = sc
		}
	}
	return out
}

// checkCounted holds an instance's rates to counts worked out from the
// simulator's totals over seconds.
func checkCounted(t *testing.T, s *server, in *fleet.Instance, requests, generated, seconds float64) {
	t.Helper()
	if !near(in.Figures.Seconds, seconds, relTol) {
		t.Errorf("%s: over %v s, want %v", s.pod, in.Figures.Seconds, seconds)
	}
	for id, want := range map[string]float64{"requests": requests / seconds, "generation": generated / seconds} {
		if v := ofFleet(in)[id]; v == nil || !near(*v, want, relTol) {
			t.Errorf("%s: %s = %v, the simulator's %v", s.pod, id, deref(v), want)
		}
	}
}

// checkTotals holds the totals to their rows: each rate their sum, each
// ratio and percentile between the rows' own; every figure over the
// instances that give it, saying so.
func checkTotals(t *testing.T, f *fleet.Fleet, n int) {
	t.Helper()
	tot := f.Totals.Figures
	for i, r := range tot.Rows {
		total := tot.Totals[i]
		var vals []float64
		for _, in := range f.Instances {
			if v, ok := ofFleet(in)[r.ID]; ok && v != nil {
				vals = append(vals, *v)
			}
		}
		if total.Of != n {
			t.Errorf("%s: of %d instances, want %d", r.ID, total.Of, n)
		}
		if len(vals) == 0 {
			continue
		}
		if total.Value == nil {
			t.Errorf("%s: no total over %d rows with figures", r.ID, len(vals))
			continue
		}
		v := *total.Value
		switch {
		case slices.Contains(ratioRows, r.ID), slices.Contains(quantileRows, r.ID):
			if lo, hi := slices.Min(vals), slices.Max(vals); v < lo*(1-relTol) || v > hi*(1+relTol) {
				t.Errorf("%s: total %v outside its rows' %v…%v", r.ID, v, lo, hi)
			}
			if total.Over < len(vals) {
				t.Errorf("%s: over %d, yet %d rows have a figure", r.ID, total.Over, len(vals))
			}
		default:
			sum := 0.0
			for _, x := range vals {
				sum += x
			}
			if !near(v, sum, relTol) || v < slices.Max(vals) {
				t.Errorf("%s: total %v, its rows add up to %v (%v)", r.ID, v, sum, vals)
			}
			if total.Over != len(vals) {
				t.Errorf("%s: over %d, %d rows have a figure", r.ID, total.Over, len(vals))
			}
		}
	}
	// The llama.cpp instance's computed prompt tokens are in the total.
	for i, r := range tot.Rows {
		if r.ID == "prompt_computed" && tot.Totals[i].Over != n {
			t.Errorf("computed prompt tok/s totalled over %d of %d", tot.Totals[i].Over, n)
		}
	}
	// The JSON totals carry the coverage.
	doc := f.Document()
	if c, ok := doc.Totals.Coverage["requests"]; !ok || c.Of != n || c.Over != n-1 {
		t.Errorf("JSON coverage of requests %+v: llama.cpp has no request count", c)
	}
}

// sameFleets holds two stores' readings of one window to each other: the
// fleet reads samples, never a backend's extrapolation.
func sameFleets(t *testing.T, what string, a, b *fleet.Fleet) {
	ia, ib := byID(a), byID(b)
	for id, in := range ia {
		if ib[id] == nil {
			t.Errorf("%s: %s on one backend only", what, id)
			continue
		}
		same(t, what+" "+id+": Prometheus / VictoriaMetrics", ofFleet(in), ofFleet(ib[id]))
	}
	same(t, what+" totals: Prometheus / VictoriaMetrics", ofFleet(a.Totals), ofFleet(b.Totals))
}

// checkSections holds the report, the fleet's report, the rules and the
// dashboards' library to one decision of which sections apply.
func checkSections(t *testing.T, servers []*server, now *fleet.Fleet) {
	got := byID(now)
	for _, s := range servers {
		last := s.last()
		d := last.snap.Dialect
		l, err := promql.New(last.fams, d, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := analysis.SectionsOf(last.snap); l.Sections() != want {
			t.Errorf("%s: library sections %+v, the report's %+v", s.pod, l.Sections(), want)
		}
		shown := map[string]bool{}
		for _, sec := range oneShot(last).Sections {
			shown[sec.ID] = true
		}
		for _, sec := range got[s.id()].Report.Sections {
			if sec.ID != "rates" && !shown[sec.ID] {
				t.Errorf("%s: the fleet's report has section %s, the one-shot does not", s.pod, sec.ID)
			}
		}
		for _, fg := range l.Figures() {
			if sec := analysis.RowSection(fg.ID); !l.Sections().Has(sec) || (sec != fg.Section() && !shown[sec]) {
				t.Errorf("%s: figure %s of a section the report leaves out", s.pod, fg.ID)
			}
		}
		for _, left := range l.Sections().Left() {
			if shown[left] {
				t.Errorf("%s: the report has %s, the rules leave it out", s.pod, left)
			}
		}
	}
}

// rowOfFigure maps the rules' figures to the rates rows they record.
var rowOfFigure = map[string]string{
	"throughput/prefill_work": "prompt_computed", "throughput/cached": "prompt_cache_hits",
	"throughput/decode_work": "generation", "throughput/requests": "requests",
	"prefix_cache/hit_rate": "prefix_hit_ratio", "phases/prefill_share": "prefill_share",
	"kv_offload/read": "offload_read", "kv_offload/written": "offload_written",
	"latency/ttft_p50": "ttft_p50", "latency/ttft_p99": "ttft_p99", "latency/e2e_p50": "e2e_p50", "latency/e2e_p99": "e2e_p99",
}

// checkRules runs the rules written from the fleet's scrapes under
// promtool over the same scrapes: at the end, every recorded figure of
// the rates table is the watch's and --since's over the last 5 minutes
// (percentiles are histogram_quantile's own, the estimate's plain
// interpolation), and every note's alert condition holds exactly for the
// instances whose window makes the note. late-d is left out: born inside
// the window, its series start there and rate() extrapolates them.
func checkRules(t *testing.T, servers []*server) {
	tool := promtool.Require(t, "promtool")
	dir := t.TempDir()
	var rec promtool.Recorder
	for at := t0; !at.After(end); at = at.Add(step) {
		var pts []promtool.Point
		for _, s := range servers {
			if sc := s.at(at); sc != nil {
				up := s.labels()
				up["__name__"] = "up"
				pts = append(append(pts, promtool.Points(sc.fams, s.labels())...), promtool.Point{Labels: up, Value: 1})
			}
		}
		rec.Add(pts)
	}
	g := promtool.Group{Name: "surfaces", Interval: "15s", InputSeries: rec.Inputs()}
	evalAt := promtool.Duration(int(end.Sub(t0).Seconds()))
	var files []string
	conds := map[string][]string{} // condition id → instances it must hold for
	checked, alerts := 0, 0
	for _, lead := range []*server{servers[0], servers[4]} {
		l, err := promql.New(lead.last().fams, lead.last().snap.Dialect, promql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Generate(l, rules.Options{Name: "surfaces-" + l.Dialect()})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := set.Write(&b, rules.Prometheus); err != nil {
			t.Fatal(err)
		}
		name := l.Dialect() + ".yml"
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
		record := map[string]string{}
		for i, fg := range l.Figures() {
			record[fg.ID] = set.Records[i].Record
		}
		for _, s := range servers {
			if s.pod == "late-d" || s.last().snap.Dialect != l.Dialect() {
				continue
			}
			exprs := recordedTests(t, s, record, evalAt)
			g.ExprTests = append(g.ExprTests, exprs...)
			checked += len(exprs)
			window := session(s).Judge(oneShot(s.last()), s.last().snap, []time.Duration{5 * time.Minute})
			for _, n := range window.Notes {
				if n.Severity == report.Warn || n.Severity == report.Bad {
					conds[l.Dialect()+"/"+n.ID] = append(conds[l.Dialect()+"/"+n.ID], s.instance)
				}
			}
		}
		for _, a := range set.Alerts {
			if !a.Condition.Note {
				continue
			}
			var want []promtool.Sample
			for _, inst := range conds[l.Dialect()+"/"+a.Condition.ID] {
				want = append(want, promtool.Sample{Labels: fmt.Sprintf("{instance=%q}", inst), Value: 1})
			}
			alerts++
			g.ExprTests = append(g.ExprTests, promtool.ExprTest{
				Expr:     `count by (instance) ((` + a.Condition.Expr + `) and on (instance) up{instance!="10.0.0.4:8000"})`,
				EvalTime: evalAt, Samples: want})
		}
	}
	if checked < 20 {
		t.Errorf("only %d figures held to the rules", checked)
	}
	t.Logf("%d recorded figures and %d alert conditions (%d firing) held to the windowed views", checked, alerts, len(conds))
	// The rules read scraped series, never their own history: evaluated
	// every 5 minutes, the last time at evalAt.
	if _, err := promtool.Write(dir, "test.yml", promtool.File{RuleFiles: files, EvaluationInterval: "5m", Tests: []promtool.Group{g}}); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool.Run(dir, tool, "test", "rules", "test.yml"); err != nil {
		t.Errorf("%v\n%s", err, failures(out))
	}
}

// recordedTests hold each recorded figure of s (record: figure id → the
// rule's series) at evalAt to --since's over the last 5 minutes
// (percentiles histogram_quantile's own, the estimate's plain
// interpolation).
func recordedTests(t *testing.T, s *server, record map[string]string, evalAt string) []promtool.ExprTest {
	t.Helper()
	d, ok := rates.Between(s.at(nowFrom).snap, s.last().snap)
	if !ok {
		t.Fatalf("%s: no window", s.pod)
	}
	d.Seconds = end.Sub(nowFrom).Seconds()
	rows := rates.RowsFor(s.last().snap)
	figs := rates.Compute(d, rows)
	var out []promtool.ExprTest
	for i, r := range rows {
		var id string
		for fid, rid := range rowOfFigure {
			if rid == r.ID {
				id = fid
			}
		}
		rule, ok := record[id]
		if !ok || figs[i].Value == nil {
			continue
		}
		want := *figs[i].Value
		if slices.Contains(quantileRows, r.ID) {
			want = figs[i].Estimate.Plain
		}
		out = append(out, nearTest(fmt.Sprintf("%s{instance=%q}", rule, s.instance), want, evalAt, s.instance))
	}
	return out
}

// nearTest tests that e returns v at a time (within relTol; NaN as NaN).
func nearTest(e string, v float64, at, instance string) promtool.ExprTest {
	one := []promtool.Sample{{Labels: fmt.Sprintf("{instance=%q, job=\"surfaces\"}", instance), Value: 1}}
	if math.IsNaN(v) {
		return promtool.ExprTest{Expr: "(" + e + ") != bool (" + e + ")", EvalTime: at, Samples: one}
	}
	tol := relTol * math.Max(1, math.Abs(v))
	return promtool.ExprTest{Expr: fmt.Sprintf("abs((%s) - %s) <= bool %s", e, promtool.Value(v), promtool.Value(tol)), EvalTime: at, Samples: one}
}

var failureLine = regexp.MustCompile(`(?m)^\s*(FAILED:|expr:|exp:|got:|eval_time:).*$`)

func failures(out string) string {
	return strings.Join(failureLine.FindAllString(out, 60), "\n")
}

// The real llm-d simulator across the moment it created its counters
// (testdata/real/llm-d, facts in its README): --since from a scrape before
// its first request, and the fleet's "now" over a Prometheus's samples
// from before it, both count the counters from zero.
func TestRealLLMD(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "testdata", "real", "llm-d")
	before, after := readSaved(t, filepath.Join(dir, "before.prom")), readSaved(t, filepath.Join(dir, "after.prom"))
	if _, ok := before.Scalar(snapshot.RequestsTotal); ok {
		t.Fatal("before.prom has a request count")
	}
	sr := rates.SinceReport(analysis.Analyze(after, analysis.Options{}), before, after)
	const elapsed = 11.505540103
	for id, want := range map[string]float64{"requests": 60 / elapsed, "generation": 599 / elapsed} {
		if v := sr.Rates[rates.KeySince][id]; v == nil || !near(*v, want, 1e-6) {
			t.Errorf("--since %s = %v, want %v", id, deref(v), want)
		}
	}
	om := gunzip(t, filepath.Join(dir, "prometheus.om.gz"))
	last := time.Unix(1796302818, 333e6).UTC()
	for _, st := range []*storetest.Store{
		storetest.Prometheus(t, storetest.Config{Backfill: om}),
		storetest.VictoriaMetrics(t, storetest.Config{Backfill: om}),
	} {
		f := readFleet(t, client(t, st), fleet.Options{From: last.Add(-fleet.DefaultWindow), To: last})
		if len(f.Instances) != 1 {
			t.Fatalf("%s: %d instances", st.Kind, len(f.Instances))
		}
		in := f.Instances[0]
		if in.State != fleet.New || !near(in.Figures.Seconds, 22, 1e-9) {
			t.Errorf("%s: %s over %v s, want new over 22 s", st.Kind, in.State, in.Figures.Seconds)
		}
		for id, want := range map[string]float64{"requests": 60.0 / 22, "generation": 599.0 / 22} {
			if v := ofFleet(in)[id]; v == nil || !near(*v, want, 1e-9) {
				t.Errorf("%s: %s = %v, want %v", st.Kind, id, deref(v), want)
			}
			if v := ofFleet(f.Totals)[id]; v == nil || !near(*v, want, 1e-9) {
				t.Errorf("%s: totals %s = %v, want the row's %v", st.Kind, id, deref(v), want)
			}
		}
	}
}

// readSaved reads a saved scrape as the command line does.
func readSaved(t *testing.T, path string) *snapshot.Snapshot {
	t.Helper()
	res, err := scrape.Fetch(context.Background(), path, scrape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(res.Body, exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.ScrapedAt, s.TimeSource = res.ScrapedAt, res.TimeSource
	return s
}

// gunzip writes a gzipped file out for a store to load.
func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	if err := os.WriteFile(out, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
