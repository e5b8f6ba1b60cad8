package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/fixtures"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// fakeStore answers the few calls a unit test makes of a store: the
// label values it is given, and each query by its text (query waits,
// where set, before answering).
type fakeStore struct {
	promapi.API
	backend promapi.Backend
	values  []string
	listErr error
	mu      sync.Mutex
	asked   []string
	answers map[string]model.Vector
	wait    map[string]chan struct{}
	done    map[string]chan struct{}
}

func (f *fakeStore) Backend() promapi.Backend { return f.backend }

func (f *fakeStore) LabelValues(_ context.Context, label string, matches []string, _, _ time.Time) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, label+" of "+strings.Join(matches, " "))
	return f.values, f.listErr
}

func (f *fakeStore) Query(_ context.Context, query string, _ time.Time) (model.Value, error) {
	if w := f.wait[query]; w != nil {
		<-w
		time.Sleep(20 * time.Millisecond) // the other's answer read first
	}
	defer func() {
		if d := f.done[query]; d != nil {
			close(d)
		}
	}()
	v, ok := f.answers[query]
	if !ok {
		return nil, fmt.Errorf("not expected: %s", query)
	}
	return v, nil
}

// quantitiesOn is what a shape of lib asks store at the window's end and
// start, its bounds asked first as a report asks them.
func quantitiesOn(t *testing.T, store *fakeStore, lib *promql.Library) (q *querier, end, start []tagged) {
	t.Helper()
	q = newQuerier(store, Options{By: DefaultBy()})
	sh := &shape{lib: lib}
	les, err := bounds(context.Background(), q, sh)
	if err != nil {
		t.Fatal(err)
	}
	end, start, _ = quantities(q, sh, les)
	return q, end, start
}

// On VictoriaMetrics the table's histogram buckets are read one bound at a
// time, each bound the store lists (promql.Library.Bucket: it sums many
// groups far slower than it reads their series), and the rest in one more
// query (promql.Library.BucketsBut: a bound the list missed is still
// read); in one query past maxBounds or where the store will not list
// them; on Prometheus in one query, with no bounds asked.
func TestBounds(t *testing.T) {
	fx := fixtures.All(t, 1, "testdata/dialects/vllm-new.prom")[0]
	lib, err := promql.New(fx.Fams, fx.Snap.Dialect, promql.Options{By: DefaultBy(), AllSections: true})
	if err != nil {
		t.Fatal(err)
	}
	les := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i + 1)
		}
		return append(out[:n-1], "+Inf")
	}
	for _, tc := range []struct {
		name    string
		backend promapi.BackendKind
		les     []string
		listErr error
		reads   int // bucket reads at each end
		asks    bool
	}{
		{"VictoriaMetrics", promapi.VictoriaMetrics, les(18), nil, 18 + 1, true},
		{"VictoriaMetrics, as many bounds as read one at a time", promapi.VictoriaMetrics, les(maxBounds), nil, maxBounds + 1, true},
		{"VictoriaMetrics, more bounds than read one at a time", promapi.VictoriaMetrics, les(maxBounds + 1), nil, 1, true},
		{"VictoriaMetrics, no bounds listed", promapi.VictoriaMetrics, nil, nil, 1, true},
		{"VictoriaMetrics, the listing refused", promapi.VictoriaMetrics, les(18), errors.New("422: too many series"), 1, true},
		{"Prometheus", promapi.Prometheus, les(18), nil, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{backend: promapi.Backend{Kind: tc.backend}, values: tc.les, listErr: tc.listErr}
			_, end, start := quantitiesOn(t, store, lib)
			for _, at := range [][]tagged{end, start} {
				var reads []string
				for _, e := range at {
					if e.tag == tagBucket+snapshot.TimeToFirstTokenSeconds {
						reads = append(reads, e.expr)
					}
				}
				if len(reads) != tc.reads {
					t.Fatalf("%d bucket reads, want %d: %q", len(reads), tc.reads, reads)
				}
				if tc.reads > 1 {
					for i, e := range reads[:len(reads)-1] {
						if want := fmt.Sprintf("le=%q", tc.les[i]); !strings.Contains(e, want) || !strings.HasPrefix(e, "sum by (le, job, instance) (") {
							t.Errorf("read %d is %s, want the bound %s summed by le and instance", i, e, want)
						}
					}
					rest := reads[len(reads)-1]
					if !strings.Contains(rest, `le!~"1|2|`) || !strings.Contains(rest, `|\\+Inf"`) {
						t.Errorf("the last read is %s, want every bound but those listed", rest)
					}
				}
			}
			if asked := len(store.asked) > 0; asked != tc.asks {
				t.Errorf("bounds asked: %q", store.asked)
			}
		})
	}
}

// A sum that cannot be names the first such in the expressions' order,
// whichever answer the store gave first (tagged hands answers over as
// they come): here the second expression's answer comes first.
func TestSumsNameTheFirstInvalid(t *testing.T) {
	inst := model.Metric{"job": "j", "instance": "i"}
	first, second := "sum by (job, instance) (a)", "sum by (job, instance) (b)"
	store := &fakeStore{
		answers: map[string]model.Vector{
			first:  {{Metric: inst, Value: model.SampleValue(-1)}},
			second: {{Metric: inst, Value: model.SampleValue(math.NaN())}},
		},
		wait: map[string]chan struct{}{first: make(chan struct{})},
	}
	store.done = map[string]chan struct{}{second: store.wait[first]}
	q := newQuerier(store, Options{By: DefaultBy()})
	exprs := []tagged{
		{tag: tagValue + snapshot.TokensPredictedTotal, expr: first},
		{tag: tagValue + snapshot.PromptTokensTotal, expr: second},
	}
	sums, err := sums(context.Background(), q, "test", exprs, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	v := sums[groupKey(inst, DefaultBy())]
	if want := snapshot.TokensPredictedTotal + " below zero"; v == nil || v.invalid != want {
		t.Errorf("invalid = %+v, want %q", v, want)
	}
}

// A bound the store's list missed is read all the same, by the query of
// every bound but those listed, and takes its place in the ladder.
func TestBucketsButReadsWhatTheListMissed(t *testing.T) {
	fx := fixtures.All(t, 1, "testdata/dialects/vllm-new.prom")[0]
	lib, err := promql.New(fx.Fams, fx.Snap.Dialect, promql.Options{By: DefaultBy(), AllSections: true})
	if err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{backend: promapi.Backend{Kind: promapi.VictoriaMetrics}, values: []string{"1", "+Inf"}, answers: map[string]model.Vector{}}
	q, end, _ := quantitiesOn(t, store, lib)
	var reads []tagged
	for _, e := range end {
		if e.tag == tagBucket+snapshot.TimeToFirstTokenSeconds {
			reads = append(reads, e)
		}
	}
	if len(reads) != 3 {
		t.Fatalf("%d bucket reads, want two bounds and the rest", len(reads))
	}
	inst := model.Metric{"job": "j", "instance": "i"}
	bucket := func(le string, n float64) *model.Sample {
		m := inst.Clone()
		m["le"] = model.LabelValue(le)
		return &model.Sample{Metric: m, Value: model.SampleValue(n)}
	}
	store.answers[reads[0].expr] = model.Vector{bucket("1", 3)}
	store.answers[reads[1].expr] = model.Vector{bucket("+Inf", 10)}
	store.answers[reads[2].expr] = model.Vector{bucket("2", 7)} // not listed
	sums, err := sums(context.Background(), q, "test", reads, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	v := sums[groupKey(inst, DefaultBy())]
	if v == nil || v.hists[snapshot.TimeToFirstTokenSeconds] == nil {
		t.Fatalf("no histogram read: %+v", v)
	}
	var got []string
	for _, b := range v.hists[snapshot.TimeToFirstTokenSeconds].Buckets {
		got = append(got, fmt.Sprintf("%g:%g", b.UpperBound, b.Count))
	}
	if want := "1:3 2:7 +Inf:10"; strings.Join(got, " ") != want {
		t.Errorf("buckets %s, want %s", strings.Join(got, " "), want)
	}
}
