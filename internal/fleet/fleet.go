// Package fleet reads every inference server a Prometheus-compatible store
// scrapes and reports on each the way inferscope reports on one scrape:
// the same dialects, the same analysis, the same notes, for now or for any
// past window.
//
// # How
//
//  1. Discovery: one series query for every family under every dialect's
//     prefixes finds the instances, grouped by labels (namespace and pod
//     where a series has both, else job and instance). Series that
//     vLLM production-stack's router re-publishes (they carry server=) are
//     skipped and counted.
//  2. State: one instant query per dialect returns every raw series of
//     every instance, at the window's end and at its start; each
//     instance's series are written back into the exposition its server
//     served (see rebuild) and read by the dialect and the analysis
//     unchanged.
//  3. Window: counters' increases are the difference of the canonical
//     snapshots at the two ends, as --since computes them, where resets()
//     and the start time say the instance ran through the window; where it
//     restarted, was born or went away inside it, the instance's raw
//     samples (F[range]) give the readings around each restart, every
//     counter counting from zero there. Quantiles come from the
//     histograms' bucket increases. The rates package turns the increase
//     into the same figures as --since.
//  4. The fleet: a row per instance, totals that add numerators and
//     denominators (counters, buckets) before dividing, and notes about
//     the fleet as a whole.
//
// docs/fleet.md lists every query sent and why.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Defaults.
const (
	// DefaultWindow is the window of "now": rates over the last five
	// minutes, as dashboards' rate(x[5m]).
	DefaultWindow = 5 * time.Minute
	// Lookback is how far before a time an instant query finds a sample
	// (Prometheus' default lookback delta); discovery reaches as far
	// before the window.
	Lookback = 5 * time.Minute
)

// Options say what to read.
type Options struct {
	// Selector narrows every query (--selector, --instance).
	Selector Selector
	// By groups series into instances; nil: namespace,pod where a series
	// has both, else job,instance.
	By []string
	// From and To are the window. For "now", To is now and From To
	// minus the window.
	From, To time.Time
	// Range says the window is a past range (--last, --from/--to), not
	// the rates window of "now".
	Range bool
	// Hist adds distributions to each report; Raw keeps each server's
	// own families in its report (for JSON).
	Hist, Raw bool
	// Model reports one served model (dialect.Options.Model).
	Model string
	// ReplicaLabels are labels that tell HA replicas' copies of a series
	// apart: dropped, and one copy kept.
	ReplicaLabels []string
	// MaxInstances bounds the instances read (DefaultMaxInstances when
	// 0), and MaxSeries(MaxInstances) the series discovery lists: past
	// either, Run fails with a *LimitError.
	MaxInstances int
}

// Fleet is what the store said about every instance.
type Fleet struct {
	// Version is the inferscope build that read the fleet, for the JSON
	// document (set by the command line; empty leaves it out).
	Version string
	Backend promapi.Backend
	Store   string // the store's URL
	From    time.Time
	To      time.Time
	Range   bool
	By      []string
	// Instances in the order of their ids.
	Instances []*Instance
	// Totals is the fleet as one server: counters and histograms summed,
	// ratios divided after summing.
	Totals *Instance
	Notes  []report.Note
	// Queries are the requests sent, in order.
	Queries []Query
}

// Window is To − From.
func (f *Fleet) Window() time.Duration { return f.To.Sub(f.From) }

// State is what the store says of an instance.
type State string

const (
	Up        State = "up"
	Down      State = "down"      // up == 0 at the end of the window
	Gone      State = "gone"      // no sample at the end of the window
	New       State = "new"       // first seen inside the window
	Restarted State = "restarted" // counters restarted inside the window
	// Unreadable: its series do not make an exposition a dialect reads.
	Unreadable State = "unreadable"
)

// Instance is one server of the fleet.
type Instance struct {
	ID      string            // the grouping labels' values, "llm/vllm-7"
	Labels  map[string]string // the grouping labels
	Dialect string
	Targets []Target
	State   State
	// Report is the single-server report, with the window's rates.
	Report *report.Report
	// Figures are the table's numbers.
	Figures Figures
	// Err says why an unreadable instance could not be read.
	Err error

	snap   *snapshot.Snapshot // at the end of the window
	peak   *snapshot.Snapshot // each gauge's largest value in a past range
	delta  windowDelta
	native int // histograms read from native values
	raw    bool
	lastAt time.Time
	bornAt time.Time
}

// NoSeriesError is a store (within the selector) holding no series of any
// dialect.
type NoSeriesError struct {
	Selector Selector
	// Prefixes are the name prefixes the store does have (within the
	// selector), at most 20.
	Prefixes []string
}

func (e *NoSeriesError) Error() string {
	what := "the store has no inference-server series"
	if len(e.Selector) > 0 {
		what += " matching " + e.Selector.Short()
	}
	if len(e.Prefixes) == 0 {
		return what + " (and no series at all in the window)"
	}
	return what + " (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
}

// Run reads the fleet from the store behind api.
func Run(ctx context.Context, api promapi.API, o Options) (*Fleet, error) {
	if !o.To.After(o.From) {
		return nil, fmt.Errorf("the window must end after it starts (%s to %s)", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	q := newQuerier(api)
	f := &Fleet{Backend: api.Backend(), From: o.From, To: o.To, Range: o.Range, By: o.By}
	if c, ok := api.(interface{ URL() string }); ok {
		f.Store = c.URL()
	}
	r := &run{q: q, o: o, f: f, replicaDups: map[string]map[string]bool{}}
	// The end of the window is read while discovery runs: the longest
	// query need not wait for the first.
	var disc *discovery
	var end *fetched
	var derr, eerr error
	var wg sync.WaitGroup
	wg.Add(1)
	endCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer wg.Done()
		end, eerr = r.fetchState(endCtx, o.To, true, nil)
	}()
	disc, derr = discover(ctx, q, o.Selector, o.By, o.From.Add(-Lookback), o.To, o.MaxInstances)
	if derr != nil {
		stop() // a fleet past its bounds is not read
	}
	wg.Wait()
	switch {
	case derr != nil:
		return nil, derr
	case eerr != nil:
		return nil, eerr
	}
	if len(disc.groups) == 0 {
		if len(disc.routerSeries) > 0 {
			return nil, fmt.Errorf("only router copies found (%d series with a %s label): no engine's own series are in the store", sum(disc.routerSeries), routerLabel)
		}
		return nil, noSeries(ctx, q, o)
	}
	r.disc, r.endFetched = disc, end
	if err := r.gather(ctx); err != nil {
		return nil, err
	}
	r.build(ctx)
	f.Queries = q.Log()
	return f, nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// noSeries says what the store has instead.
func noSeries(ctx context.Context, q *querier, o Options) error {
	match := []string{o.Selector.With(Matcher{Name: model.MetricNameLabel, Op: "=~", Value: ".+"}).braces()}
	names, err := q.api.LabelValues(ctx, model.MetricNameLabel, match, o.From.Add(-Lookback), o.To)
	q.record("no series: the names the store has instead", match[0], o.To, time.Now())
	if err != nil {
		var e *promapi.Error
		if errors.As(err, &e) && e.Kind == promapi.Canceled {
			return err
		}
		names = nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		p := n
		if i := strings.IndexByte(n, ':'); i > 0 {
			p = n[:i+1]
		} else if i := strings.IndexByte(n, '_'); i > 0 {
			p = n[:i+1]
		}
		seen[p] = true
	}
	ps := make([]string, 0, len(seen))
	for p := range seen {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	if len(ps) > 20 {
		ps = append(ps[:20], fmt.Sprintf("and %d more", len(ps)-20))
	}
	return &NoSeriesError{Selector: o.Selector, Prefixes: ps}
}

// run is one report's work.
type run struct {
	q    *querier
	o    Options
	disc *discovery
	f    *Fleet
	meta *metadata

	end, start *state
	endFetched *fetched        // the end's state, read with discovery
	resets     map[string]bool // group ids whose counters restarted
	peaks      map[string][]point
	raw        map[string]model.Matrix
	// ends are the instances read at the window's end; how says where
	// each one's window is read from (plan).
	ends map[string]*reading
	how  map[string]how
	// replicaDups holds, by label, the instances whose series repeat
	// under it.
	replicaDups map[string]map[string]bool
}

// state is every instance's series at one time.
type state struct {
	at     time.Time
	points map[string][]point    // by group id
	up     map[Target]float64    // up, by target
	waited map[Target]float64    // scrape_duration_seconds, by target
	ts     map[string]model.Time // newest sample time, by group id
}

// gather sends every query: discovery has run; the rest run in parallel
// where they do not depend on one another.
func (r *run) gather(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	do := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	var start *fetched
	var tsEnd, tsStart map[string]model.Time
	do(func(ctx context.Context) (err error) { r.meta, err = loadMetadata(ctx, r.q, r.disc); return })
	do(func(ctx context.Context) (err error) {
		start, err = r.fetchState(ctx, r.o.From, false, r.dialects())
		return
	})
	do(func(ctx context.Context) (err error) { tsEnd, err = r.timestamps(ctx, r.o.To); return })
	do(func(ctx context.Context) (err error) { tsStart, err = r.timestamps(ctx, r.o.From); return })
	do(func(ctx context.Context) (err error) { r.resets, err = r.restarts(ctx); return })
	if r.o.Range {
		do(func(ctx context.Context) (err error) { r.peaks, err = r.gaugePeaks(ctx); return })
	}
	wg.Wait()
	if first != nil {
		return first
	}
	r.end, r.start = r.routed(r.endFetched, tsEnd), r.routed(start, tsStart)
	r.endFetched = nil
	r.plan()
	return r.fetchRaw(ctx)
}

// route returns the group a series belongs to, or nil (another dialect's
// router copy, a series of no group).
func (r *run) route(m model.Metric) *group {
	name := string(m[model.MetricNameLabel])
	if dialect.Owner(name) == "vllm" && m[routerLabel] != "" {
		return nil
	}
	if id, ok := r.disc.byKey[groupKey(m, r.disc.by)]; ok {
		return r.disc.byID[id]
	}
	return nil
}
