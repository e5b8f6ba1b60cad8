package sweep

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// spread is a figure over runs given by hand.
func spread(vs ...float64) Spread { return spreadOf(vs) }

// hand is a result of one closed loop of 4 with the figures given.
func hand(rate, ttft Spread, notes ...string) *Result {
	nan := spread()
	s := Step{Index: 1, Phase: PhaseList, Mode: "closed", Concurrency: 4, Rate: report.Number(math.NaN()),
		Summary: Summary{Runs: rate.N, RequestRate: rate, TTFTP50: ttft, OutputRate: nan, GoodputRate: nan, GoodShare: nan, TTFTP99: nan,
			TPOTP50: nan, TPOTP99: nan, E2EP50: nan, E2EP99: nan, ITLP99: nan, Waiting: nan, KVPeak: nan, Queue: nan, Prefill: nan, Notes: notes}}
	return &Result{Schema: Schema, Kind: Kind, Profile: ProfileConcurrency, Axis: AxisConcurrency, Repeat: rate.N, Steps: []Step{s}}
}

// Moves judged against the runs' own spread, by hand: B's runs all above
// A's is a move up (for the request rate, better; for TTFT, worse);
// ranges that overlap are no move; one run a side has no spread to judge
// by.
func TestCompareMoves(t *testing.T) {
	tests := []struct {
		name              string
		a, b              *Result
		rate, ttft        string // moved
		better, worse     int
		appeared, cleared []string
	}{
		{"faster", hand(spread(10, 11, 12), spread(0.10, 0.11, 0.12)), hand(spread(12.5, 13, 14), spread(0.05, 0.06, 0.07)),
			MovedUp, MovedDown, 2, 0, nil, nil},
		{"slower latency", hand(spread(10, 11, 12), spread(0.10, 0.11, 0.12)), hand(spread(11, 12, 13), spread(0.13, 0.2, 0.3), "bench_saturated"),
			MovedWithin, MovedUp, 0, 1, []string{"bench_saturated"}, nil},
		{"one run", hand(spread(10), spread(0.1), "bench_errors"), hand(spread(20), spread(0.05)), MovedNoSpread, MovedNoSpread, 0, 0, nil, []string{"bench_errors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b, "a.json", "b.json")
			if len(c.Steps) != 1 {
				t.Fatalf("%d steps matched", len(c.Steps))
			}
			s := c.Steps[0]
			got := map[string]string{}
			for _, f := range s.Figures {
				got[f.Figure] = f.Moved
			}
			if got["request_rate"] != tt.rate || got["ttft_p50"] != tt.ttft || len(s.Figures) != 2 {
				t.Errorf("moved %v, want rate %s ttft %s", got, tt.rate, tt.ttft)
			}
			if c.Better != tt.better || c.Worse != tt.worse {
				t.Errorf("better %d worse %d, want %d %d", c.Better, c.Worse, tt.better, tt.worse)
			}
			if !slices.Equal(s.Appeared, append([]string{}, tt.appeared...)) || !slices.Equal(s.Cleared, append([]string{}, tt.cleared...)) {
				t.Errorf("appeared %v cleared %v", s.Appeared, s.Cleared)
			}
		})
	}
}

// Steps pair by load: a load one side ran alone is said so.
func TestCompareMatching(t *testing.T) {
	m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 5}
	cfg := modelConfig(m, bench.SLO{})
	cfg.Base.Plan.Requests = 20
	cfg.Profile, cfg.Loads = ProfileRate, []float64{2, 4, 8}
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Loads = []float64{8, 4, 6}
	b, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(a, b, "a", "b")
	if len(c.Steps) != 2 || c.Steps[0].StepA != 2 || c.Steps[0].StepB != 2 || c.Steps[1].StepA != 3 || c.Steps[1].StepB != 1 {
		t.Errorf("matched %+v", c.Steps)
	}
	if !slices.Equal(c.OnlyA, []int{1}) || !slices.Equal(c.OnlyB, []int{3}) {
		t.Errorf("only A %v, only B %v", c.OnlyA, c.OnlyB)
	}
}

// The knees' brackets: apart is a move, overlapping is not.
func TestKneeMoved(t *testing.T) {
	k := func(lo, hi float64) *Knee { return &Knee{Load: report.Number(lo), Broke: report.Number(hi)} }
	for _, tt := range []struct {
		a, b *Knee
		want string
	}{
		{k(10, 11), k(11, 12), MovedUp},
		{k(10, 11), k(9, 10), MovedDown},
		{k(10, 12), k(11, 13), MovedWithin},
		{k(10, math.NaN()), k(11, 12), ""},
	} {
		if got := kneeMoved(tt.a, tt.b); got != tt.want {
			t.Errorf("%v–%v against %v–%v: %q, want %q", tt.a.Load, tt.a.Broke, tt.b.Load, tt.b.Broke, got, tt.want)
		}
	}
}

// What bench -o json writes reads back whole: a sweep's figures (null as
// not known, never 0), and one run as a sweep of one step.
func TestRead(t *testing.T) {
	m := &model{capacity: 10, service: 200 * time.Millisecond, tokens: 5}
	cfg := modelConfig(m, bench.SLO{TTFT: 100 * time.Millisecond})
	cfg.Base.Plan.Requests = 20
	cfg.Profile, cfg.Loads, cfg.Repeat = ProfileConcurrency, []float64{1, 3}, 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := JSON(&b, res); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	if err := JSON(&b2, back); err != nil {
		t.Fatal(err)
	}
	var b1 bytes.Buffer
	JSON(&b1, res)
	if b1.String() != b2.String() {
		t.Errorf("read back differs:\n%s", firstDiff(b1.String(), b2.String()))
	}
	if !math.IsNaN(float64(back.Steps[0].Summary.Queue.Mean)) {
		t.Errorf("a null read as %v", back.Steps[0].Summary.Queue.Mean)
	}

	f, err := os.Open("../testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	one, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if one.Profile != ProfileRepeat || len(one.Steps) != 1 || len(one.Steps[0].Runs) != 1 || one.Steps[0].Summary.RequestRate.N != 1 {
		t.Errorf("one run read as %+v", one)
	}
	for _, bad := range []string{`{"kind":"something"}`, `not json`, `{"kind":"bench_sweep","schema":99}`} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%q read", bad)
		} else if bad != `{"kind":"bench_sweep","schema":99}` && !errors.Is(err, ErrNotBench) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return la[i] + "\n" + lb[i]
		}
	}
	return "lengths differ"
}

// The comparison as text; go test ./internal/bench/sweep -update rewrites
// the golden (read the diff).
func TestCompareGolden(t *testing.T) {
	a := hand(spread(10, 11, 12), spread(0.10, 0.11, 0.12), "bench_decode_bound")
	b := hand(spread(12.5, 13, 14), spread(0.13, 0.2, 0.3), "bench_saturated")
	a.Steps[0].Summary.Verdict, b.Steps[0].Summary.Verdict = "bench_decode_bound", "bench_saturated"
	a.Knee = &Knee{Axis: AxisConcurrency, Load: 4, Step: 1, Broke: 8, BrokeStep: 2}
	b.Knee = &Knee{Axis: AxisConcurrency, Load: 8, Step: 1, Broke: 16, BrokeStep: 2}
	c := Compare(a, b, "before.json", "after.json")
	var out bytes.Buffer
	if err := CompareText(&out, c, TextOptions{Render: render.Options{Width: 100}}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "compare-100.txt", out.String())
}
