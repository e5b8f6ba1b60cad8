package fleet

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/storetest"
)

// backfilled starts both stores on the range fixture.
func backfilled(t *testing.T) map[string]*storetest.Store {
	t.Helper()
	path := writeFixture(t, t.TempDir())
	return map[string]*storetest.Store{
		"prometheus":      storetest.Prometheus(t, storetest.Config{Backfill: path}),
		"victoriametrics": storetest.VictoriaMetrics(t, storetest.Config{Backfill: path}),
	}
}

func client(t testing.TB, s *storetest.Store) *promapi.Client {
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

// want is one instance's expected window, worked out by hand from the
// fixture's rates.
type want struct {
	state              State
	seconds            float64 // what the rates divide by
	requests, gen      float64 // per second
	computed, hitRatio float64
	prefill            float64 // prefill share; NaN where the server has none
	ttft               []float64
}

// TestRangeBackfilled reads the fixture's window T0+30m…T0+90m from both
// stores; every figure is checked against the fixture's rates.
func TestRangeBackfilled(t *testing.T) {
	t.Parallel()
	stores := backfilled(t)
	const w = 3600.0
	wants := map[string]want{
		// Two engines: 2 + 1 requests/s; computed (1000−400) + (500−100);
		// hits 500 of 1500; prefill 0.3 of 3.0 s/s; TTFT counts × 3600.
		"llm/vllm-a": {state: Up, seconds: w, requests: 3, gen: 300, computed: 1000, hitRatio: 500.0 / 1500, prefill: 0.1,
			ttft: []float64{1.2 * w, 2.3 * w, 2.9 * w, 3 * w}},
		// Restarted at T0+60m−7.5s: 1785 s of the old process (its last
		// sample 15 s before the first new one), 1807.5 s of the new, from
		// zero: 3592.5 s of each rate over the window's 3600 s.
		"llm/vllm-b": {state: Restarted, seconds: w, requests: 3592.5 / w, gen: 100 * 3592.5 / w, computed: 200 * 3592.5 / w,
			hitRatio: 1.0 / 3, prefill: 0.1, ttft: []float64{3592.5, 3592.5, 3592.5, 3592.5}},
		// Born at T0+45m−10s: all it counted is the window's, over the
		// 2710 s from its start to the window's end.
		"llm/vllm-c": {state: New, seconds: 2710, requests: 0.5, gen: 50, computed: 200, hitRatio: 0, prefill: 0.1,
			ttft: []float64{0, 0.5 * 2710, 0.5 * 2710, 0.5 * 2710}},
		// Gone after T0+75m: 2700 s of the window.
		"llm/vllm-d": {state: Gone, seconds: 2700, requests: 1, gen: 100, computed: 300, hitRatio: 0, prefill: 0.1,
			ttft: []float64{0.5 * 2700, 2700, 2700, 2700}},
		// SGLang: computed 800 − 200 cached; hits = cached, queries = all.
		"llm/sglang-a": {state: Up, seconds: w, requests: 2, gen: 150, computed: 600, hitRatio: 0.25, prefill: -1,
			ttft: []float64{w, 2 * w, 2 * w, 2 * w}},
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			push, whole := both(t, client(t, s), Options{From: fixFrom, To: fixTo, Range: true, By: k8s, Trend: true})
			// The steady instances from the store's sums; the one that
			// restarted, the one born and the one gone, read whole.
			if p := pushed(push); len(p) != 2 || !p["llm/vllm-a"] || !p["llm/sglang-a"] {
				t.Errorf("pushed down: %v, want vllm-a and sglang-a", p)
			}
			checkNotes(t, push, NoteReadWhole)
			for _, f := range []*Fleet{push, whole} {
				checkRange(t, f, wants)
			}
		})
		t.Run(name+"/now", func(t *testing.T) { checkNow(t, s) })
	}
}

// checkRange checks a reading of the fixture's window against the
// hand-worked wants.
func checkRange(t *testing.T, f *Fleet, wants map[string]want) {
	t.Helper()
	got := byInstance(f)
	if len(got) != len(wants) {
		t.Errorf("instances %v, want %d", keys(got), len(wants))
	}
	for id, w := range wants {
		in := got[id]
		if in == nil {
			t.Errorf("%s missing", id)
			continue
		}
		checkInstance(t, in, w)
	}
	// vllm-a's KV use: engine 0's largest 0.9 (one sample), engine
	// 1's 0.3, averaged over the engines as the dialect does.
	if kv := got["llm/vllm-a"].Figures.KV; kv == nil || !approx(*kv, 0.6) {
		t.Errorf("vllm-a KV max = %v, want 0.6", kv)
	}
	if rs := got["llm/vllm-b"].delta.resets; len(rs) != 1 || !rs[0].Equal(fixT0.Add(60*time.Minute)) {
		t.Errorf("vllm-b restarts at %v, want the T0+60m sample", rs)
	}
	if b := got["llm/vllm-c"].bornAt; !b.Equal(fixBorn) {
		t.Errorf("vllm-c born %v, want %v", b, fixBorn)
	}
	checkTotals(t, f)
	checkNotes(t, f, NoteRestarts, NoteNew, NoteGone, NoteRouter, NoteNoMetadata, NoteCoverage)
	checkTrends(t, f)
}

// The trends over the hour, in 16 steps of 225 s: each instance's
// requests per second its fixture's rate where it ran through a step; a
// gap where it did not (born, restarted or gone inside or before it);
// the totals the sum of the rows' step by step.
func checkTrends(t *testing.T, f *Fleet) {
	t.Helper()
	const step = 225.0
	rate := map[string]float64{"llm/vllm-a": 3, "llm/vllm-b": 1, "llm/vllm-c": 0.5, "llm/vllm-d": 1, "llm/sglang-a": 2}
	ran := func(id string, k int) bool { // the instance ran through step k, from fixFrom+(k-1)×225 s
		from, to := fixFrom.Add(time.Duration(float64(k-1)*step)*time.Second), fixFrom.Add(time.Duration(float64(k)*step)*time.Second)
		switch id {
		case "llm/vllm-b":
			return !(from.Before(fixRestart) && !to.Before(fixRestart))
		case "llm/vllm-c":
			return !from.Before(fixBorn.Add(10 * time.Second))
		case "llm/vllm-d":
			return !to.After(fixGone)
		}
		return true
	}
	totals := make([]float64, 16)
	for id, want := range rate {
		tr := byInstance(f)[id].Trends[TrendRequests]
		if tr == nil || len(tr.Values) != 16 || tr.StepSeconds != step {
			t.Fatalf("%s: requests trend %+v, want 16 steps of %v s", id, tr, step)
		}
		for k, v := range tr.Values {
			switch {
			case ran(id, k+1) && !approx(float64(v), want):
				t.Errorf("%s: step %d: %v requests/s, want %v", id, k+1, v, want)
			case !ran(id, k+1) && !math.IsNaN(float64(v)):
				t.Errorf("%s: step %d: %v requests/s, want a gap", id, k+1, v)
			case ran(id, k+1):
				totals[k] += want
			}
		}
	}
	for k, v := range f.Totals.Trends[TrendRequests].Values {
		if !approx(float64(v), totals[k]) {
			t.Errorf("totals: step %d: %v requests/s, want the rows' %v", k+1, v, totals[k])
		}
	}
	if kv := byInstance(f)["llm/vllm-a"].Trends[TrendKV]; kv == nil || !approx(float64(kv.Values[15]), 0.4) {
		t.Errorf("vllm-a KV trend %+v, want 40%% at the end", kv)
	}
}

// "Now" at the window's end: the last 5 minutes, in which every instance
// but the gone one ran steadily.
func checkNow(t *testing.T, s *storetest.Store) {
	push, whole := both(t, client(t, s), Options{From: fixTo.Add(-5 * time.Minute), To: fixTo, By: k8s})
	if p := pushed(push); len(p) != 4 {
		t.Errorf("pushed down: %v, want every instance", p)
	}
	for _, f := range []*Fleet{push, whole} {
		checkNowFleet(t, f)
	}
}

func checkNowFleet(t *testing.T, f *Fleet) {
	t.Helper()
	got := byInstance(f)
	if len(got) != 4 || got["llm/vllm-d"] != nil {
		t.Errorf("instances %v, want the four alive", keys(got))
	}
	for id, in := range got {
		if in.State != Up || !approx(in.Figures.Seconds, 300) {
			t.Errorf("%s: %s over %v s, want up over 300 s", id, in.State, in.Figures.Seconds)
		}
	}
	// 900 + 300 + 150 + 600 requests in 300 s.
	if v := f.Totals.Figures.value("requests"); v == nil || !approx(*v, 6.5) {
		t.Errorf("totals requests/s = %v, want 6.5", deref(v))
	}
	// KV in use over capacity, both summed: vllm-a 0.4 × 2×16,000,
	// vllm-b 0.2 × 16,000, vllm-c 0.1 × 16,000, sglang-a 0.7 × 100,000.
	if kv := f.Totals.Figures.KV; kv == nil || !approx(*kv, 87600.0/164000) {
		t.Errorf("totals KV = %v, want %v", deref(kv), 87600.0/164000)
	}
	if kv := got["llm/vllm-a"].Figures.KV; kv == nil || !approx(*kv, 0.4) {
		t.Errorf("vllm-a KV = %v, want 0.4", deref(kv))
	}
}

func keys(m map[string]*Instance) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func checkInstance(t *testing.T, in *Instance, w want) {
	t.Helper()
	if in.State != w.state {
		t.Errorf("%s: state %s, want %s", in.ID, in.State, w.state)
	}
	if !approx(in.Figures.Seconds, w.seconds) {
		t.Errorf("%s: over %v s, want %v", in.ID, in.Figures.Seconds, w.seconds)
	}
	for _, c := range []struct {
		id   string
		want float64
	}{{"requests", w.requests}, {"generation", w.gen}, {"prompt_computed", w.computed}, {"prefix_hit_ratio", w.hitRatio}, {"prefill_share", w.prefill}} {
		v := in.Figures.value(c.id)
		switch {
		case c.want < 0 && v != nil:
			t.Errorf("%s: %s = %v, want none", in.ID, c.id, *v)
		case c.want >= 0 && (v == nil || !approx(*v, c.want)):
			t.Errorf("%s: %s = %v, want %v", in.ID, c.id, deref(v), c.want)
		}
	}
	h, ok := in.delta.Hists[snapshot.TimeToFirstTokenSeconds]
	if !ok {
		t.Errorf("%s: no TTFT increase", in.ID)
		return
	}
	for i, c := range w.ttft {
		if i >= len(h.Buckets) || !approx(h.Buckets[i].Count, c) {
			t.Errorf("%s: TTFT buckets %v, want cumulative %v", in.ID, h.Buckets, w.ttft)
			break
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The totals are the rows' arithmetic: each rate the sum of the rows'
// rates as shown (vllm-c's over the 2710 s since its start, vllm-d's over
// the 2700 s it was there, the rest over the window's 3600 s); each ratio
// the sums of its counters over the window, divided.
func checkTotals(t *testing.T, f *Fleet) {
	t.Helper()
	tot := f.Totals.Figures
	// Requests: 3 + 3592.5/3600 + 0.5 + 1 + 2.
	if v, want := tot.value("requests"), 3+3592.5/3600+0.5+1+2; v == nil || !approx(*v, want) {
		t.Errorf("totals requests/s = %v, want %v", deref(v), want)
	}
	// Generated: 300 + 100×3592.5/3600 + 50 + 100 + 150.
	if v, want := tot.value("generation"), 300+100*3592.5/3600+50+100+150; v == nil || !approx(*v, want) {
		t.Errorf("totals generation = %v, want %v", deref(v), want)
	}
	// Computed prompt tokens: 1000 + 200×3592.5/3600 + 200 + 300 + 600.
	if v, want := tot.value("prompt_computed"), 1000+200*3592.5/3600+200+300+600; v == nil || !approx(*v, want) {
		t.Errorf("totals computed prompt = %v, want %v", deref(v), want)
	}
	// Hits over queries, each summed: (1.8M + 359,250 + 0 + 0 + 720,000)
	// over (5.4M + 1,077,750 + 542,000 + 810,000 + 2.88M).
	if v := tot.value("prefix_hit_ratio"); v == nil || !approx(*v, 2879250.0/10709750) {
		t.Errorf("totals prefix hit = %v, want %v", deref(v), 2879250.0/10709750)
	}
	// Prefill share over the vLLM instances only (SGLang publishes no
	// phase seconds): (0.3×3600 + 0.1×3592.5 + 0.05×2710 + 0.1×2700)
	// over the same plus the decode seconds, nine times as many.
	if v := tot.value("prefill_share"); v == nil || !approx(*v, 0.1) {
		t.Errorf("totals prefill share = %v, want 0.1", deref(v))
	}
	for i, r := range tot.Rows {
		if want := map[string]int{"prefill_share": 4}[r.ID]; want > 0 && tot.Totals[i].Over != want {
			t.Errorf("totals %s over %d of %d, want %d", r.ID, tot.Totals[i].Over, tot.Totals[i].Of, want)
		}
	}
}

func checkNotes(t *testing.T, f *Fleet, ids ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, n := range f.Notes {
		have[n.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			t.Errorf("no %s note; notes: %v", id, f.Notes)
		}
	}
}
