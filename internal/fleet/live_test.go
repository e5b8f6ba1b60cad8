package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/storetest"
	"github.com/inferscope/inferscope/sim"
)

// TestLiveFleet: three simulated servers (different scenarios) scraped
// every second by a real Prometheus and a real VictoriaMetrics, one
// restarted halfway. Once every simulation is frozen and scraped again,
// each instance's lifetime counters are the simulator's own totals, and
// the window from before they started counts each process's totals in
// full, the restarted one's two processes added.
func TestLiveFleet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now().Add(-2 * time.Second)
	servers, err := demo.StartFleet(ctx, 4, demo.Options{Speed: 50, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var targets []storetest.Target
	for _, s := range servers {
		targets = append(targets, storetest.Target{Addr: s.Addr(), Job: "demo", Labels: map[string]string{"namespace": "demo", "pod": s.Pod()}})
	}
	cfg := storetest.Config{Targets: targets, ScrapeInterval: time.Second}
	var stores []*storetest.Store
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, start := range []func(testing.TB, storetest.Config) *storetest.Store{storetest.Prometheus, storetest.VictoriaMetrics} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := start(t, cfg)
			s.WaitFor(t, `count(tabbyapi:requests_total)`, 20*time.Second, func(b []byte) bool { return strings.Contains(string(b), `"4"`) })
			mu.Lock()
			stores = append(stores, s)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	time.Sleep(time.Second)

	// Restart the second server: frozen and scraped first, so that the
	// stores hold its old process's final counts.
	r := servers[1]
	r.Freeze()
	time.Sleep(1600 * time.Millisecond)
	old := r.Totals()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	r.Resume()
	time.Sleep(2 * time.Second)
	for _, s := range servers {
		s.Freeze()
	}
	// The fourth goes down: its scrapes fail from now on.
	down := servers[3]
	down.Stop()
	servers = servers[:3]
	time.Sleep(1600 * time.Millisecond)
	end := time.Now()
	final := make([]sim.Totals, len(servers))
	for i, s := range servers {
		final[i] = s.Totals()
		if final[i].Requests == 0 {
			t.Fatalf("%s finished no request", s.Pod())
		}
	}
	if old.Requests == 0 {
		t.Fatal("the restarted server finished no request before its restart")
	}

	for _, st := range stores {
		st.Flush()
		c := client(t, st)
		t.Run(st.Kind+"/now", func(t *testing.T) {
			// Every server started inside the last 5 minutes: read whole.
			push, whole := both(t, c, Options{From: end.Add(-DefaultWindow), To: end, By: k8s})
			if p := pushed(push); len(p) != 0 {
				t.Errorf("pushed down: %v, want none", p)
			}
			for _, f := range []*Fleet{push, whole} {
				checkLiveNow(t, f, servers, final, down)
			}
			// The last second and a half, frozen and scraped: those that
			// ran through it from the store's sums, the stopped one whole.
			// (The stopped one's last sample may lie before it.)
			push, whole = both(t, c, Options{From: end.Add(-1500 * time.Millisecond), To: end, By: k8s})
			if p := pushed(push); len(p) != 3 || p["demo/"+down.Pod()] {
				t.Errorf("pushed down: %v, want the three up", p)
			}
			for _, f := range []*Fleet{push, whole} {
				checkLiveNow(t, f, servers, final, nil)
			}
		})
		t.Run(st.Kind+"/range", func(t *testing.T) {
			push, whole := both(t, c, Options{From: t0, To: end, Range: true, By: k8s})
			if p := pushed(push); len(p) != 0 {
				t.Errorf("pushed down: %v, want none (every instance was born inside the range)", p)
			}
			for _, f := range []*Fleet{push, whole} {
				checkLiveRange(t, f, servers, final, old, r, down)
			}
		})
	}
}

// checkLiveNow checks the last minutes: the stopped server down, each
// other's lifetime counters the simulator's own totals.
func checkLiveNow(t *testing.T, f *Fleet, servers []*demo.FleetServer, final []sim.Totals, down *demo.FleetServer) {
	t.Helper()
	got := byInstance(f)
	if down != nil {
		if in := got["demo/"+down.Pod()]; in == nil || in.State != Down {
			t.Errorf("the stopped server: %+v, want state down", in)
		}
		checkNotes(t, f, NoteDown)
	}
	for i, s := range servers {
		in := got["demo/"+s.Pod()]
		if in == nil {
			t.Fatalf("no instance demo/%s among %v", s.Pod(), keys(got))
		}
		tt := final[i]
		want := map[string]int64{
			snapshot.RequestsTotal:        tt.Requests,
			snapshot.TokensPredictedTotal: tt.GeneratedTokens,
			snapshot.PromptTokensTotal:    tt.PromptTokens - tt.CachedTokens,
		}
		if in.Read == Rebuild {
			// The pushdown reads what the table needs, not cached tokens.
			want[snapshot.CachedTokensTotal] = tt.CachedTokens
		}
		for name, want := range want {
			if v, ok := in.snap.Scalar(name); !ok || v != float64(want) {
				t.Errorf("%s: %s = %v, want the simulator's %d", s.Pod(), name, v, want)
			}
		}
	}
}

// checkLiveRange checks the whole run: each instance born inside it, the
// restarted one's two processes added, the totals the rows' sum.
func checkLiveRange(t *testing.T, f *Fleet, servers []*demo.FleetServer, final []sim.Totals, old sim.Totals, r, down *demo.FleetServer) {
	t.Helper()
	got := byInstance(f)
	// The totals' rate is the sum of the rows' (each the
	// simulator's count over the instance's own time there).
	var sum float64
	for i, s := range servers {
		in := got["demo/"+s.Pod()]
		if in == nil {
			t.Fatalf("no instance demo/%s", s.Pod())
		}
		want := float64(final[i].Requests)
		wantState := New
		if s == r {
			// Both processes, each from zero.
			want += float64(old.Requests)
			wantState = Restarted
		}
		sum += want / in.Figures.Seconds
		if v := in.delta.Counters[snapshot.RequestsTotal]; v != want {
			t.Errorf("%s: %v requests in the window, want %v", s.Pod(), v, want)
		}
		if in.State != wantState {
			t.Errorf("%s: state %s, want %s", s.Pod(), in.State, wantState)
		}
	}
	// The stopped server's requests up to its last good scrape.
	if in := got["demo/"+down.Pod()]; in == nil || in.State != Down || in.delta.Counters[snapshot.RequestsTotal] <= 0 {
		t.Errorf("the stopped server: %+v, want state down with requests", in)
	} else {
		sum += in.delta.Counters[snapshot.RequestsTotal] / in.Figures.Seconds
	}
	if v := f.Totals.Figures.value("requests"); v == nil || !approx(*v, sum) {
		t.Errorf("totals: %v requests/s, want the rows' sum %v", deref(v), sum)
	}
}
