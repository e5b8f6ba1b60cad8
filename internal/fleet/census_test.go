package fleet

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/storetest"
)

// The census (census.go) leaves in part only the instances its dialect's
// first instance's library reads as it reads the first; every other one
// is discovered whole and read by its own shape, and none is missed. A
// fleet of vLLM servers, every counter growing: a and b publish the same
// families (a, first by name, is the first instance); old is another
// vLLM version; off has prefix caching off (a value of a label that
// decides how a library reads it: its cached tokens are none); extra publishes a family a does not; missing lacks one a
// quantity of the table reads; gauges publishes only two gauges, none of
// the families the census lists every instance by (the walk of the
// grouping labels' values finds it); reason names its requests' reasons
// by another label (a fact the first's library asked: promql.Fact).
func TestCensus(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)
	newest := fixtures.All(t, 1, "testdata/dialects/vllm-new.prom")[0]
	old := fixtures.All(t, 1, "testdata/dialects/vllm-0.10.prom")[0]
	off := fixtures.All(t, 1, "testdata/dialects/vllm-prefix-off.prom")[0]
	w := newOM()
	write := func(instance string, pts []promtool.Point, keep func(name string) bool) {
		for at := end.Add(-10 * time.Minute); !at.After(end); at = at.Add(time.Minute) {
			grow := 2 - end.Sub(at).Minutes()/10 // 1 at the start, 2 at the end
			for _, p := range pts {
				n := p.Labels["__name__"]
				if !keep(n) {
					continue
				}
				v := p.Value
				if p.Counter {
					v *= grow
				}
				w.add(n, "unknown", n, labelsOf(p, "job", "fx", "instance", instance), v, at)
			}
		}
	}
	all := func(string) bool { return true }
	pts := promtool.Points(newest.Fams, promtool.Labels{})
	write("a", pts, all)
	write("b", pts, all)
	write("old", promtool.Points(old.Fams, promtool.Labels{}), all)
	write("off", promtool.Points(off.Fams, promtool.Labels{}), all)
	write("extra", append(slices.Clone(pts), promtool.Point{Labels: promtool.Labels{"__name__": "vllm:made_up_total"}, Value: 7, Counter: true}), all)
	write("missing", pts, func(n string) bool { return n != "vllm:num_preemptions_total" })
	write("gauges", pts, func(n string) bool { return n == "vllm:num_requests_running" || n == "vllm:kv_cache_usage_perc" })
	// llm-d's simulator names the reason finish_reason: the first's
	// library would count none of its errors.
	var renamed []promtool.Point
	for _, p := range pts {
		if v, ok := p.Labels["finished_reason"]; ok {
			p.Labels = maps.Clone(p.Labels)
			delete(p.Labels, "finished_reason")
			p.Labels["finish_reason"] = v
		}
		renamed = append(renamed, p)
	}
	write("reason", renamed, all)
	path := filepath.Join(t.TempDir(), "census.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: path}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: path})} {
		c := client(t, s)
		o := Options{From: end.Add(-DefaultWindow), To: end}
		push, _ := both(t, c, o)
		var ids []string
		for _, in := range push.Instances {
			ids = append(ids, in.ID)
		}
		if want := []string{"fx/a", "fx/b", "fx/extra", "fx/gauges", "fx/missing", "fx/off", "fx/old", "fx/reason"}; !slices.Equal(ids, want) {
			t.Errorf("%s: instances %q, want %q", s.Kind, ids, want)
		}
		// Discovered whole: every instance but those the first's library
		// reads.
		var whole []string
		re := regexp.MustCompile(`instance=~"([^"]*)"`)
		for _, q := range push.Queries {
			if strings.Contains(q.Purpose, "the census cannot leave in part") {
				for _, m := range re.FindAllStringSubmatch(q.Text, -1) {
					whole = append(whole, strings.Split(m[1], "|")...)
				}
			}
		}
		sort.Strings(whole)
		if want := []string{"extra", "gauges", "missing", "off", "old", "reason"}; !slices.Equal(whole, want) {
			t.Errorf("%s: discovered whole %q, want %q", s.Kind, whole, want)
		}
		// --max-instances bounds what is read whole, not what the store
		// sums: the eight instances with three allowed (one read whole,
		// "missing"); the rebuild, reading every one whole, is refused.
		o.MaxInstances = 3
		if f, err := Run(context.Background(), c, o); err != nil || len(f.Instances) != 8 {
			t.Errorf("%s: the pushdown with --max-instances 3: %v", s.Kind, err)
		}
		o.Read = Rebuild
		_, err := Run(context.Background(), c, o)
		var le *LimitError
		if !errors.As(err, &le) || le.What != "instances" || len(le.Selector) != 0 {
			t.Errorf("%s: the rebuild past --max-instances: %v, want a LimitError on instances", s.Kind, err)
		}
		o.MaxInstances, o.Read = 0, Pushdown
	}
}

// labelsOf writes a point's labels but its name, and more, in order.
func labelsOf(p promtool.Point, more ...string) string {
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, k, p.Labels[k])
	}
	return labelStr(append(more, pairs...)...)
}

// The store's list of names (asked for without a match, from its index)
// may hold families with no series in the window: a vLLM family that
// sorts before every other, published by a server gone an hour and a
// half before it. The first instance is looked for by the next family,
// and the fleet is read by its sums, as the rebuild reads it; the names
// the first instance lacks are listed by name, nothing else.
func TestProbePassesStaleNames(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)
	newest := fixtures.All(t, 1, "testdata/dialects/vllm-new.prom")[0]
	pts := promtool.Points(newest.Fams, promtool.Labels{})
	w := newOM()
	for at := end.Add(-10 * time.Minute); !at.After(end); at = at.Add(time.Minute) {
		grow := 2 - end.Sub(at).Minutes()/10
		for _, instance := range []string{"a", "b"} {
			for _, p := range pts {
				v := p.Value
				if p.Counter {
					v *= grow
				}
				w.add(p.Labels["__name__"], "unknown", p.Labels["__name__"], labelsOf(p, "job", "fx", "instance", instance), v, at)
			}
		}
	}
	w.add("vllm:aaa_gone_total", "counter", "vllm:aaa_gone_total", labelStr("job", "fx", "instance", "gone"), 3, end.Add(-90*time.Minute))
	path := filepath.Join(t.TempDir(), "stale.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storetest.Store{storetest.Prometheus(t, storetest.Config{Backfill: path}), storetest.VictoriaMetrics(t, storetest.Config{Backfill: path})} {
		push, _ := both(t, client(t, s), Options{From: end.Add(-DefaultWindow), To: end})
		if got := pushed(push); !got["fx/a"] || !got["fx/b"] || len(push.Instances) != 2 {
			t.Errorf("%s: %d instances, read by their sums: %v; want fx/a and fx/b", s.Kind, len(push.Instances), got)
		}
		var probes []string
		for _, q := range push.Queries {
			if strings.HasPrefix(q.Purpose, "pushdown: one instance of") {
				probes = append(probes, q.Text)
			}
		}
		if len(probes) < 2 || !strings.Contains(probes[0], "vllm:aaa_gone_total") {
			t.Errorf("%s: the first instance looked for by %q; want the stale family first, then another", s.Kind, probes)
		}
	}
}

// The families a first instance lacks are asked for by name where the
// store's list of names can be taken for all of them; where the store may
// have cut it (trustedNames), by every family of the dialect but the
// first's, as the list cannot say.
func TestCensusLackingFamilies(t *testing.T) {
	fams := fixtures.All(t, 1, "testdata/dialects/vllm-new.prom")[0].Fams
	lib, err := promql.New(fams, "vllm", promql.Options{By: DefaultBy()})
	if err != nil {
		t.Fatal(err)
	}
	first := &group{dialect: "vllm", families: map[string]bool{"vllm:num_requests_running": true, "vllm:e2e_request_latency_seconds_count": true}}
	libs := map[string]*shape{"vllm": {groups: []*group{first}, first: first, lib: lib, probe: "vllm:e2e_request_latency_seconds_count"}}
	q := newQuerier(nil, Options{By: DefaultBy()})
	names := []string{"vllm:e2e_request_latency_seconds_count", "vllm:made_up_total", "vllm:num_requests_running"}
	has := func(ms []string, part string) bool {
		return slices.ContainsFunc(ms, func(m string) bool { return strings.Contains(m, part) })
	}
	all := censusMatches(q, libs, names, true)
	if !has(all, `__name__=~"vllm:made_up_total"`) || has(all, `__name__!~"vllm:e2e`) {
		t.Errorf("a whole list: %q, want the lacking family by name alone", all)
	}
	cut := censusMatches(q, libs, names, false)
	if !has(cut, `__name__!~"vllm:e2e_request_latency_seconds_count|vllm:num_requests_running|.+_bucket"`) {
		t.Errorf("a list the store may have cut: %q, want every family but the first's", cut)
	}
	if sel := censusMatches(q, libs, names[:1], true); has(sel, "made_up") || has(sel, `__name__!~"vllm:e2e`) {
		t.Errorf("nothing lacking: %q, want no selector for it", sel)
	}
}
