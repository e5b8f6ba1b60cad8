package fleet

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/storetest"
)

// At 80 cells the table keeps its notes column, the column that says what
// is wrong: other columns are left out and the instance cut first, and a
// notes cell too long for it keeps the ids that fit whole and counts the
// rest.
func TestNarrowTableKeepsNotes(t *testing.T) {
	api := recordedAPI(t, "range")
	push, _ := both(t, api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s})
	push.Store = "http://prometheus:9090"
	got := byInstance(push)
	warn := func(id string, ids ...string) {
		for _, n := range ids {
			got[id].Report.Notes = append(got[id].Report.Notes, report.Note{ID: n, Severity: report.Warn})
		}
	}
	warn("llm/vllm-a", "kv_cache_pressure", "preemptions", "queue_pressure")
	got["llm/sglang-a"].Report.Notes = append(got["llm/sglang-a"].Report.Notes, report.Note{ID: "requests_errored", Severity: report.Bad})
	for _, w := range []int{80, 60} {
		var b bytes.Buffer
		if err := push.Text(&b, TextOptions{Width: w}); err != nil {
			t.Fatal(err)
		}
		top := push.HeaderLines(w) - 1 // the table's header
		table := strings.Split(b.String(), "\n")[top : top+7]
		for _, l := range table {
			if n := cells(l); n > w {
				t.Errorf("width %d: a line of %d cells: %s", w, n, l)
			}
		}
		if !strings.Contains(table[0], "notes") || !strings.Contains(b.String(), "requests_errored") {
			t.Errorf("width %d: the notes column is gone:\n%s", w, b.String())
		}
		if w == 80 {
			golden.Check(t, "notes-80.txt", b.String())
		}
	}
}

func TestFitIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"requests_errored preemptions", 40, "requests_errored preemptions"},
		{"requests_errored preemptions queue_pressure", 31, "requests_errored preemptions +1"},
		{"requests_errored preemptions queue_pressure", 30, "requests_errored +2"},
		{"requests_errored preemptions queue_pressure", 20, "requests_errored +2"},
		// An id is never cut: where none fits whole, how many there are.
		{"requests_errored preemptions", 14, "+2"},
		{"kv_cache_pressure", 12, "+1"},
		{"kv_cache_pressure preemptions", 20, "kv_cache_pressure +1"},
	} {
		if got := fitIDs(tc.in, tc.w); got != tc.want || cells(got) > tc.w {
			t.Errorf("fitIDs(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}

// A Kubernetes fleet's scrape jobs are long (prometheus-operator names
// them serviceMonitor/NAMESPACE/NAME/ENDPOINT): with the default --by
// (job, instance), what every row shares is said once above the table,
// and each row keeps what sets it apart, at 80, 100 and 160 columns.
func TestKubernetesJobFrames(t *testing.T) {
	t.Parallel()
	pods := fixPods()
	for i := range pods {
		pods[i].job = "serviceMonitor/llm/" + pods[i].dialect + "-engine/0"
	}
	s := storetest.Prometheus(t, storetest.Config{Backfill: writeFixtureOf(t, t.TempDir(), pods)})
	push, _ := both(t, client(t, s), Options{From: fixFrom, To: fixTo, Range: true, Trend: true})
	push.Store = "http://prometheus:9090"
	push.Backend.Version = "2.42.0" // the test's store's, not the test's business
	frames(t, push, "frames-k8s")
}

// frames writes f's text at 80, 100 and 160 columns to golden files
// name-WIDTH.txt, and checks that no line is wider and that every row
// reads apart.
func frames(t *testing.T, f *Fleet, name string) {
	t.Helper()
	for _, w := range []int{80, 100, 160} {
		var b bytes.Buffer
		if err := f.Text(&b, TextOptions{Width: w}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for _, l := range lines {
			if n := cells(l); n > w {
				t.Errorf("%s at %d: a line of %d cells: %s", name, w, n, l)
			}
		}
		top := f.HeaderLines(w)
		seen := map[string]bool{}
		for _, l := range lines[top : top+len(f.Instances)] {
			cell := strings.Fields(l)[0]
			if seen[cell] {
				t.Errorf("%s at %d: two rows read %q", name, w, cell)
			}
			seen[cell] = true
		}
		golden.Check(t, fmt.Sprintf("%s-%d.txt", name, w), b.String())
	}
}

// The demo fleet (inferscope demo --servers 4, scraped by a real
// Prometheus as its prometheus.yml says) read with the default --by (job,
// instance): its rows differ only in their ports, which the table keeps,
// the rest said once above it; the one row with a note shows its id
// whole, at 80, 100 and 160 columns. Replayed from what Prometheus
// answered (record again with -record: a minute of the demo).
func TestDemoFleetFrames(t *testing.T) {
	api, at := demoAPI(t)
	push, _ := both(t, api, Options{From: at.Add(-DefaultWindow), To: at})
	push.Store = "http://127.0.0.1:9090"
	push.Backend.Version = "2.42.0"
	frames(t, push, "frames-demo")
}

// demoAPI is a replay of the demo fleet's store, and the time read as
// "now"; under -record, a live demo fleet scraped by a real Prometheus.
func demoAPI(t *testing.T) (promapi.API, time.Time) {
	t.Helper()
	if !*record {
		p := newReplayer(t, recordedPath("demo"))
		return p, time.UnixMilli(p.rec.At).UTC()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	servers, err := demo.StartFleet(ctx, 4, demo.Options{Speed: demo.DefaultSpeed, Seed: demo.DefaultSeed})
	if err != nil {
		t.Fatal(err)
	}
	var targets []storetest.Target
	for _, s := range servers {
		targets = append(targets, storetest.Target{Addr: s.Addr(), Job: "inferscope-demo", Labels: map[string]string{"namespace": "demo", "pod": s.Pod()}},
			// Its simulated dcgm-exporter, as the demo's prometheus.yml
			// scrapes it (demo.FleetConfig).
			storetest.Target{Addr: s.Addr(), Path: demo.GPUPath, Job: "inferscope-demo-gpu"})
	}
	s := storetest.Prometheus(t, storetest.Config{Targets: targets, ScrapeInterval: 2 * time.Second})
	s.WaitFor(t, `count(tabbyapi:requests_total)`, 20*time.Second, func(b []byte) bool { return strings.Contains(string(b), `"4"`) })
	time.Sleep(time.Minute)
	at := time.Now().UTC().Truncate(time.Second)
	return recordingOf(t, "demo", client(t, s), at), at
}
