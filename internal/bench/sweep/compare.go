package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// CompareKind is the JSON's kind of a comparison.
const CompareKind = "bench_compare"

// maxSaved bounds a saved report Read takes: a sweep of a hundred steps of
// runs with their server reports is some megabytes.
const maxSaved = 256 << 20

// ErrNotBench is a file that is not a report `bench -o json` wrote.
var ErrNotBench = errors.New("not a report of inferscope bench (its JSON has kind bench or bench_sweep)")

// Read reads a report `bench -o json` wrote: a sweep, or one run, which
// it makes a sweep of one step run once.
func Read(r io.Reader) (*Result, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSaved+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSaved {
		return nil, fmt.Errorf("larger than %d MiB", maxSaved>>20)
	}
	var head struct {
		Kind   string `json:"kind"`
		Schema int    `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotBench, err)
	}
	switch {
	case head.Kind == Kind && head.Schema > Schema, head.Kind == "bench" && head.Schema > bench.Schema:
		return nil, fmt.Errorf("schema %d of %s, newer than this inferscope reads", head.Schema, head.Kind)
	case head.Kind == Kind:
		var res Result
		if err := decode(b, &res); err != nil {
			return nil, err
		}
		return &res, nil
	case head.Kind == "bench":
		var rep bench.Report
		if err := decode(b, &rep); err != nil {
			return nil, err
		}
		return ofRun(&rep), nil
	}
	return nil, ErrNotBench
}

func decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotBench, err)
	}
	return nil
}

// ofRun is one run as a sweep of one step: what a comparison reads.
func ofRun(rep *bench.Report) *Result {
	res := &Result{Schema: Schema, Kind: Kind, Version: rep.Version, Target: rep.Target, API: rep.API, Model: rep.Model,
		StartedAt: rep.StartedAt, Profile: ProfileRepeat, Axis: AxisRate, Repeat: 1, Partial: rep.Partial}
	st := Step{Index: 1, Phase: PhaseList, Mode: rep.Load.Mode, Concurrency: rep.Load.Concurrency, Rate: rep.Load.Rate,
		Drains: []Drain{}, Runs: []*bench.Report{rep}}
	if st.Mode == "closed" {
		res.Axis = AxisConcurrency
	}
	st.Summary = summarize(st.Runs, nil)
	if g := rep.Client.Goodput; g != nil {
		st.SLO = &StepSLO{Good: g.Good, Of: g.Of, Share: g.Share, Missed: map[string]int{}}
		res.SLO = &Target{Limits: g.SLO, Share: report.Number(math.NaN())}
	}
	res.Steps = []Step{st}
	return res
}

// Comparison is two reports of the bench compared, B against A: each
// step of one matched with the step of the other at the same load, every
// figure's move judged against the runs' own spread, the notes that
// appeared or cleared, and the knees.
type Comparison struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"` // "bench_compare"
	A      Side   `json:"a"`
	B      Side   `json:"b"`
	// Steps are the steps of A with a step of B at the same load, in A's
	// order of load.
	Steps []StepChange `json:"steps"`
	// OnlyA and OnlyB are the steps of each with no step of the other at
	// their load (a knee search's rates are its own).
	OnlyA []int `json:"only_a"`
	OnlyB []int `json:"only_b"`
	// Knee is the two knees, where both searched for one.
	Knee *KneeChange `json:"knee"`
	// Moved counts the figures that moved beyond the spread, Better and
	// Worse of them by the figure's good direction.
	Moved  int `json:"moved"`
	Better int `json:"better"`
	Worse  int `json:"worse"`
}

// Side is what one report is.
type Side struct {
	// Name is the file it was read from.
	Name      string      `json:"name"`
	Target    string      `json:"target"`
	Model     string      `json:"model"`
	StartedAt report.Time `json:"started_at"`
	Profile   string      `json:"profile"`
	Repeat    int         `json:"repeat"`
}

// StepChange is one load in both reports.
type StepChange struct {
	// StepA and StepB are the steps' indices in their reports; Load says
	// the load.
	StepA int    `json:"step_a"`
	StepB int    `json:"step_b"`
	Load  string `json:"load"`
	// Figures are every figure known on both sides.
	Figures []FigureChange `json:"figures"`
	// VerdictA and VerdictB are the steps' verdicts.
	VerdictA string `json:"verdict_a"`
	VerdictB string `json:"verdict_b"`
	// Appeared and Cleared are the ids of notes B's runs had that A's did
	// not, and A's that B's did not.
	Appeared []string `json:"appeared"`
	Cleared  []string `json:"cleared"`
}

// The ways a figure moved from A to B.
const (
	// MovedUp and MovedDown: every run of B is above (below) every run
	// of A.
	MovedUp   = "up"
	MovedDown = "down"
	// MovedWithin: the runs' ranges overlap: no move beyond the spread.
	MovedWithin = "within"
	// MovedNoSpread: a side has one run, whose figure has no spread to
	// judge a move by.
	MovedNoSpread = "no_spread"
)

// FigureChange is one figure of a step in both reports.
type FigureChange struct {
	Figure string `json:"figure"`
	A      Spread `json:"a"`
	B      Spread `json:"b"`
	// Change is B's mean less A's; Ratio B's over A's (null where A's is
	// 0).
	Change report.Number `json:"change"`
	Ratio  report.Number `json:"ratio"`
	// Moved is how it moved (Moved*); Better says whether a move beyond
	// the spread was for the better ("better", "worse"; "" for none, or
	// a figure with no good direction).
	Moved  string `json:"moved"`
	Better string `json:"better"`
}

// KneeChange is the knees of two searches.
type KneeChange struct {
	A *Knee `json:"a"`
	B *Knee `json:"b"`
	// Moved is "up" where B met the target at a load A missed it,
	// "down" where B missed it at a load A met it, "within" where their
	// brackets overlap, "" where either has no bracket.
	Moved string `json:"moved"`
}

// figure is one figure a comparison reads, and which way is better: +1
// higher, −1 lower, 0 neither.
type figure struct {
	name   string
	get    func(Summary) Spread
	better int
}

var figures = []figure{
	{"request_rate", func(s Summary) Spread { return s.RequestRate }, +1},
	{"output_token_rate", func(s Summary) Spread { return s.OutputRate }, +1},
	{"goodput_rate", func(s Summary) Spread { return s.GoodputRate }, +1},
	{"good_share", func(s Summary) Spread { return s.GoodShare }, +1},
	{"ttft_p50", func(s Summary) Spread { return s.TTFTP50 }, -1},
	{"ttft_p99", func(s Summary) Spread { return s.TTFTP99 }, -1},
	{"tpot_p50", func(s Summary) Spread { return s.TPOTP50 }, -1},
	{"tpot_p99", func(s Summary) Spread { return s.TPOTP99 }, -1},
	{"e2e_p50", func(s Summary) Spread { return s.E2EP50 }, -1},
	{"e2e_p99", func(s Summary) Spread { return s.E2EP99 }, -1},
	{"itl_p99", func(s Summary) Spread { return s.ITLP99 }, -1},
	{"server_waiting", func(s Summary) Spread { return s.Waiting }, -1},
	{"server_kv_peak", func(s Summary) Spread { return s.KVPeak }, 0},
	{"server_queue", func(s Summary) Spread { return s.Queue }, -1},
	{"server_prefill", func(s Summary) Spread { return s.Prefill }, -1},
}

// Compare compares b against a, read from the files named nameA and
// nameB.
func Compare(a, b *Result, nameA, nameB string) *Comparison {
	c := &Comparison{Schema: Schema, Kind: CompareKind, A: sideOf(a, nameA), B: sideOf(b, nameB), Steps: []StepChange{}, OnlyA: []int{}, OnlyB: []int{}}
	used := map[int]bool{}
	for _, sa := range a.byLoad() {
		kb := -1
		for j := range b.Steps {
			if !used[j] && sameLoad(&b.Steps[j], sa) {
				kb = j
				break
			}
		}
		if kb < 0 {
			c.OnlyA = append(c.OnlyA, sa.Index)
			continue
		}
		used[kb] = true
		c.Steps = append(c.Steps, c.step(sa, &b.Steps[kb]))
	}
	for j := range b.Steps {
		if !used[j] {
			c.OnlyB = append(c.OnlyB, b.Steps[j].Index)
		}
	}
	if a.Knee != nil && b.Knee != nil && a.Axis == b.Axis {
		c.Knee = &KneeChange{A: a.Knee, B: b.Knee, Moved: kneeMoved(a.Knee, b.Knee)}
	}
	return c
}

func sideOf(r *Result, name string) Side {
	return Side{Name: name, Target: r.Target, Model: r.Model, StartedAt: r.StartedAt, Profile: r.Profile, Repeat: r.Repeat}
}

// sameLoad says two steps ran the same load: the same loop, concurrency
// and rate (to a part in a million), the synchronous and throughput steps
// by what they are.
func sameLoad(a, b *Step) bool {
	if a.Mode != b.Mode || a.Concurrency != b.Concurrency {
		return false
	}
	if (a.Phase == PhaseSynchronous) != (b.Phase == PhaseSynchronous) || (a.Phase == PhaseThroughput) != (b.Phase == PhaseThroughput) {
		return false
	}
	if a.Mode == "closed" {
		return true
	}
	x, y := float64(a.Rate), float64(b.Rate)
	return math.Abs(x-y) <= 1e-6*math.Max(math.Abs(x), math.Abs(y))
}

func (c *Comparison) step(a, b *Step) StepChange {
	sc := StepChange{StepA: a.Index, StepB: b.Index, Load: stepLabelLoad(a), Figures: []FigureChange{},
		VerdictA: a.Summary.Verdict, VerdictB: b.Summary.Verdict, Appeared: []string{}, Cleared: []string{}}
	for _, f := range figures {
		x, y := f.get(a.Summary), f.get(b.Summary)
		if x.N == 0 || y.N == 0 {
			continue
		}
		fc := FigureChange{Figure: f.name, A: x, B: y, Change: y.Mean - x.Mean, Ratio: report.Number(math.NaN()), Moved: MovedWithin}
		if x.Mean != 0 {
			fc.Ratio = y.Mean / x.Mean
		}
		switch {
		case x.N < 2 || y.N < 2:
			fc.Moved = MovedNoSpread
		case y.Min > x.Max:
			fc.Moved = MovedUp
		case y.Max < x.Min:
			fc.Moved = MovedDown
		}
		if fc.Moved == MovedUp || fc.Moved == MovedDown {
			c.Moved++
			dir := 1
			if fc.Moved == MovedDown {
				dir = -1
			}
			switch dir * f.better {
			case 1:
				fc.Better = "better"
				c.Better++
			case -1:
				fc.Better = "worse"
				c.Worse++
			}
		}
		sc.Figures = append(sc.Figures, fc)
	}
	for _, n := range b.Summary.Notes {
		if !slices.Contains(a.Summary.Notes, n) {
			sc.Appeared = append(sc.Appeared, n)
		}
	}
	for _, n := range a.Summary.Notes {
		if !slices.Contains(b.Summary.Notes, n) {
			sc.Cleared = append(sc.Cleared, n)
		}
	}
	return sc
}

// stepLabelLoad says a step's load as the steps' table does, the two
// steps of the automatic profile by what they are.
func stepLabelLoad(s *Step) string {
	l := stepLoad(s)
	switch s.Phase {
	case PhaseSynchronous:
		l += " (sync)"
	case PhaseThroughput:
		l += " (ceiling)"
	}
	return l
}

// kneeMoved compares two knees' brackets: a knee lies between the load
// that met the target and the one that missed it.
func kneeMoved(a, b *Knee) string {
	if !known(a.Load) || !known(a.Broke) || !known(b.Load) || !known(b.Broke) {
		return ""
	}
	switch {
	case b.Load >= a.Broke:
		return MovedUp
	case b.Broke <= a.Load:
		return MovedDown
	}
	return MovedWithin
}

// CompareJSON writes c as one indented JSON object (docs/json.md).
func CompareJSON(w io.Writer, c *Comparison) error {
	return render.JSONValue(w, c, render.JSONOptions{})
}

// figureWords name a figure in a row, with how its values are written.
var figureWords = map[string]struct {
	label string
	say   func(report.Number) string
}{
	"request_rate":      {"completed req/s", sayCount},
	"output_token_rate": {"output tok/s", sayCount},
	"goodput_rate":      {"goodput /s", sayCount},
	"good_share":        {"good share", sayPercent},
	"ttft_p50":          {"TTFT p50", say},
	"ttft_p99":          {"TTFT p99", say},
	"tpot_p50":          {"TPOT p50", say},
	"tpot_p99":          {"TPOT p99", say},
	"e2e_p50":           {"E2E p50", say},
	"e2e_p99":           {"E2E p99", say},
	"itl_p99":           {"ITL p99", say},
	"server_waiting":    {"server waiting", sayCount},
	"server_kv_peak":    {"server KV peak", sayPercent},
	"server_queue":      {"server queue", say},
	"server_prefill":    {"server prefill", say},
}

// changeWords says a change: "+12.0%", or the difference where the
// ratio is not known.
func changeWords(f FigureChange, sayV func(report.Number) string) string {
	if known(f.Ratio) {
		d := (float64(f.Ratio) - 1) * 100
		sign := "+"
		if d < 0 {
			sign = ""
		}
		return sign + strconv.FormatFloat(d, 'f', 1, 64) + "%"
	}
	return sayV(f.Change)
}
