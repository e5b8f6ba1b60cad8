package cli

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// Each scenario's stated truth, read from `inferscope demo --once --json` as
// a user would run it (the simulator's package tests check the same against
// its own totals).
func TestDemoScenarioTruths(t *testing.T) {
	type doc struct {
		Sections []struct{ ID string }
		Figures  struct {
			PrefixHit *float64 `json:"prefix_cache_hit_ratio"`
			Accept    *float64 `json:"spec_decode_acceptance"`
			TPS       *float64 `json:"spec_decode_tokens_per_step"`
			Payback   *float64 `json:"kv_offload_payback"`
			Capped    *float64 `json:"recurrent_capped_share"`
		}
		Scalars map[string]float64
		Notes   []struct{ ID string }
	}
	run := func(t *testing.T, scenario string) doc {
		out, errOut, code := runCLI(t, "", "demo", "--once", "--sim-time", "10m", "--scenario", scenario, "--json")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	notes := func(d doc) []string {
		var ids []string
		for _, n := range d.Notes {
			ids = append(ids, n.ID)
		}
		return ids
	}
	sections := func(d doc) []string {
		var ids []string
		for _, s := range d.Sections {
			ids = append(ids, s.ID)
		}
		return ids
	}
	near := func(got *float64, want, tol float64) bool { return got != nil && math.Abs(*got-want) <= tol*want }

	t.Run("chat", func(t *testing.T) {
		d := run(t, "chat")
		s := sections(d)
		for _, id := range []string{"live", "throughput", "phases", "prefix_cache", "latency", "size"} {
			if !slices.Contains(s, id) {
				t.Errorf("no %s section: %v", id, s)
			}
		}
		for _, id := range []string{"spec_decode", "kv_offload", "recurrent"} {
			if slices.Contains(s, id) {
				t.Errorf("chat has a %s section", id)
			}
		}
	})
	t.Run("agent", func(t *testing.T) {
		// Lifetime ratio includes the cold first request; the simulator's
		// own test checks the warm window to 2%. Here: within 3% of 30/32.
		if d := run(t, "agent"); !near(d.Figures.PrefixHit, 30000.0/32000, 0.03) {
			t.Errorf("hit ratio %v, want ≈ 0.9375", d.Figures.PrefixHit)
		}
	})
	t.Run("spec", func(t *testing.T) {
		d := run(t, "spec")
		// (α+α²+α³+α⁴)/4 at α = 0.75.
		if want := (0.75 + 0.5625 + 0.421875 + 0.31640625) / 4; !near(d.Figures.Accept, want, 0.03) {
			t.Errorf("acceptance %v, want ≈ %v", d.Figures.Accept, want)
		}
		if !near(d.Figures.TPS, 3.05, 0.03) {
			t.Errorf("tokens/step %v, want ≈ 3.05", d.Figures.TPS)
		}
	})
	t.Run("offload-thrash", func(t *testing.T) {
		d := run(t, "offload-thrash")
		if d.Figures.Payback == nil || *d.Figures.Payback >= 0.25 || !slices.Contains(notes(d), "kv_offload_thrashing") {
			t.Errorf("payback %v, notes %v", d.Figures.Payback, notes(d))
		}
	})
	t.Run("offload-healthy", func(t *testing.T) {
		d := run(t, "offload-healthy")
		if d.Figures.Payback == nil || *d.Figures.Payback <= 1 || slices.Contains(notes(d), "kv_offload_thrashing") {
			t.Errorf("payback %v, notes %v", d.Figures.Payback, notes(d))
		}
	})
	t.Run("hybrid", func(t *testing.T) {
		d := run(t, "hybrid")
		if d.Scalars["recurrent_cache_live_kv_evictions_total"] <= 0 || d.Scalars["recurrent_capped_tokens_total"] <= 0 ||
			!slices.Contains(notes(d), "recurrent_raise_budget") {
			t.Errorf("live-KV %v, capped %v, notes %v", d.Scalars["recurrent_cache_live_kv_evictions_total"], d.Scalars["recurrent_capped_tokens_total"], notes(d))
		}
	})
	t.Run("same seed, same report", func(t *testing.T) {
		a, _, _ := runCLI(t, "", "demo", "--once", "--sim-time", "2m", "--scenario", "spec", "--json", "--seed", "7")
		b, _, _ := runCLI(t, "", "demo", "--once", "--sim-time", "2m", "--scenario", "spec", "--json", "--seed", "7")
		c, _, _ := runCLI(t, "", "demo", "--once", "--sim-time", "2m", "--scenario", "spec", "--json", "--seed", "8")
		if a != b || a == c || !strings.Contains(a, `"dialect": "tabbyapi"`) {
			t.Error("same seed differs, or different seeds agree")
		}
	})
}

// The demo's view reads its simulated server on the server's own clock,
// from the first frame: its start time stands (at the wall clock, the
// first minute at 20x had a request of 40 s within 7 s of uptime, and no
// start), the uptime is the simulated one, and so is the mean in flight.
func TestDemoViewOnItsOwnClock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	io, out, errb := iostreams.Test("", false, 0)
	if code := run(ctx, []string{"demo", "--speed", "200", "--watch", "0.5s", "-o", "json"}, io); code != ExitInterrupted {
		t.Fatalf("exit %d: %s", code, errb)
	}
	uptime := regexp.MustCompile(`over ([0-9.]+) (s|min) up`)
	frames := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var frame struct {
			ScrapedAt time.Time `json:"scraped_at"`
			Sections  []struct {
				Rows []struct{ ID, Value, Note string }
			}
		}
		if json.Unmarshal([]byte(line), &frame) != nil {
			continue // the last, cut by the interrupt
		}
		for _, s := range frame.Sections {
			for _, r := range s.Rows {
				if r.ID != "request_time" {
					continue
				}
				frames++
				m := uptime.FindStringSubmatch(r.Value)
				if strings.Contains(r.Note, "start time unknown") || m == nil || !strings.Contains(r.Note, " in flight") {
					t.Errorf("frame at %v: request time %q: %q", frame.ScrapedAt, r.Value, r.Note)
					continue
				}
				// 200x: half a wall second is 100 simulated seconds.
				if up, _ := strconv.ParseFloat(m[1], 64); m[2] == "s" && up < 50 {
					t.Errorf("uptime %s s: the wall clock's, not the simulated server's", m[1])
				}
			}
		}
	}
	if frames == 0 {
		t.Fatalf("no frame with request time:\n%.2000s", out)
	}
}
