// Package fleet reads every inference server a Prometheus-compatible store
// scrapes and reports on each the way inferscope reports on one scrape:
// the same dialects, the same analysis, the same notes, for now or for any
// past window.
//
// # The flow
//
// A report follows one instance through the files in this order:
//
//  1. discover.go: one series query lists every family of every dialect
//     and groups the series into instances by --by (job and instance, one
//     scrape target, unless told). vLLM production-stack's router copies
//     (server=) are skipped and counted. A pushdown discovers by census
//     (census.go): each dialect's first instance read whole (pushdown.go's
//     speculation), the few series that tell each instance and whether
//     that first instance's library reads it as the first's; the others
//     are discovered as discover.go does, for them alone.
//  2. window.go: what the window needs before anything is read: each
//     instance's newest sample at the window's two ends, its restarts,
//     its targets' up, the store's metadata; then each instance's path.
//  3. pushdown.go or rebuild.go, the two ways an instance is read:
//     pushdown (the table, the watch): the store sums each quantity the
//     table and its notes read, per instance, at the window's two ends
//     (internal/promql's readings, the expressions the rules are made
//     of); rebuild (--json, --instance, and every instance whose window
//     the two ends cannot give: restarted, born or gone inside it, down,
//     with invalid values, native histograms or replica copies): its
//     series are rebuilt into the families its scrape would have parsed
//     (families.go) and read by its dialect, from raw samples around a
//     restart. Either way the instance is canonical snapshots at times.
//  4. figures.go: the window's increases are the difference of those
//     readings, as --since computes them (rates.Delta), counters created
//     inside the window counted from zero, every counter from zero at a
//     restart; the table's figures are the rates rows' (rates.Compute).
//  5. notes.go: each instance's report, its notes on what happened judged
//     on the window (rates.Judge), and the notes on the fleet as a whole.
//  6. totals.go and table.go: totals that are the rows' arithmetic
//     (rates.Totals), and the table; json.go, the document.
//  7. trend.go, over a past range and in a watch: each row's requests per
//     second and KV use step by step (query_range of the same library's
//     readings, per shape), and the totals' as the rows' arithmetic.
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
	// By groups series into instances, and every sum the store computes
	// for the pushdown; nil: DefaultBy (job, instance: one scrape
	// target), as rules and dashboards aggregate.
	By []string
	// Read says how the instances are read: Pushdown (the table) or
	// Rebuild (every figure of every report).
	Read Read
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
	// Trend adds each instance's and the totals' requests per second and
	// KV use over the window, step by step (a past range, a watch).
	Trend bool
	// MaxBytes is the cap on one answer the store's client enforces
	// (DefaultMaxBytes when 0): the rebuild reads many instances' series
	// in batches that keep each answer well under it.
	MaxBytes int64
}

// DefaultMaxBytes is the cap on one answer assumed when Options.MaxBytes
// is 0: the command line's default, shared with the scrape.
const DefaultMaxBytes = 64 << 20

// Read is how a report reads its instances.
type Read int

const (
	// Pushdown reads the table's figures from sums the store computes per
	// instance: each quantity the table and its notes read, at the
	// window's two ends (pushdown.go). Instances whose window those cannot
	// give are read whole, as Rebuild reads them, and said so.
	Pushdown Read = iota
	// Rebuild reads every instance whole: its series, rebuilt into the
	// families its scrape would have parsed, read by its dialect, for a
	// report that holds every figure (--json, --instance).
	Rebuild
)

func (r Read) String() string {
	if r == Rebuild {
		return "rebuild"
	}
	return "pushdown"
}

// MarshalText writes the path as JSON names it.
func (r Read) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

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
	// Read is how the instance was read; Why, for one read whole in a
	// pushdown, why the store's sums could not give its window.
	Read Read
	Why  string
	// Trends are its requests per second and KV use over the window,
	// step by step (Options.Trend), by TrendRequests and TrendKV.
	Trends map[string]*report.Trend

	snap   *snapshot.Snapshot // at the end of the window
	peak   *snapshot.Snapshot // each gauge's largest value in a past range
	delta  windowDelta
	native int // histograms read from native values
	lastAt time.Time
	bornAt time.Time
}

// MinWindow is the shortest window a store reads: PromQL writes a range in
// whole milliseconds, and [0ms] is refused.
const MinWindow = time.Millisecond

// NoSeriesError is a store (within the selector) holding no series of any
// dialect.
type NoSeriesError struct {
	Selector Selector
	// Prefixes are the name prefixes the store does have (within the
	// selector), at most 20.
	Prefixes []string
	// From and To are the window looked in.
	From, To time.Time
}

func (e *NoSeriesError) Error() string {
	what := "the store has no inference-server series"
	if len(e.Selector) > 0 {
		what += " matching " + e.Selector.Short()
	}
	if len(e.Prefixes) == 0 {
		return what + " (and no series at all in the window, " + e.From.UTC().Format(time.RFC3339) + " to " + e.To.UTC().Format(time.RFC3339) + ")"
	}
	return what + " (saw prefixes: " + strings.Join(e.Prefixes, ", ") + ")"
}

// Run reads the fleet from the store behind api: discover its instances,
// learn what the window needs, read each instance (pushdown or rebuild),
// then its figures and report, the totals and the fleet's notes.
func Run(ctx context.Context, api promapi.API, o Options) (*Fleet, error) {
	if !o.To.After(o.From) {
		return nil, fmt.Errorf("the window must end after it starts (%s to %s)", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	if w := o.To.Sub(o.From); w < MinWindow {
		return nil, fmt.Errorf("the window of %s is shorter than a store reads (%s)", w, MinWindow)
	}
	if o.By == nil {
		o.By = DefaultBy()
	}
	if o.Model != "" {
		// The dialect picks one model's series, which sums by instance
		// cannot.
		o.Read = Rebuild
	}
	q := newQuerier(api)
	f := &Fleet{Backend: api.Backend(), From: o.From, To: o.To, Range: o.Range, By: o.By}
	if c, ok := api.(interface{ URL() string }); ok {
		f.Store = c.URL()
	}
	r := &run{q: q, o: o, f: f, replicaDups: map[string]map[string]bool{}, reads: map[string]*read{}}
	spec, err := r.start(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.survey(ctx); err != nil {
		return nil, err
	}
	if o.Read == Pushdown {
		if err := r.pushdown(ctx, spec); err != nil {
			return nil, err
		}
	}
	if err := r.rebuild(ctx); err != nil {
		return nil, err
	}
	if err := r.trends(ctx); err != nil {
		return nil, err
	}
	if err := r.build(ctx); err != nil {
		return nil, err
	}
	f.Queries = q.Log()
	return f, nil
}

// start discovers the fleet. A pushdown reads each dialect's first
// instance first, and from it discovers the fleet by the census
// (census.go) while the store sums the first instances' libraries: the
// two are the store's longest work.
func (r *run) start(ctx context.Context) (*speculation, error) {
	if r.o.Read != Pushdown {
		var err error
		r.disc, err = discover(ctx, r.q, "discovery: every series of every dialect", r.o, r.o.From.Add(-Lookback), r.o.To)
		if err != nil {
			return nil, err
		}
		if len(r.disc.groups) == 0 {
			return nil, r.noFleet(ctx)
		}
		return nil, nil
	}
	spec, err := r.speculate(ctx)
	if err != nil {
		return nil, err
	}
	if r.disc, r.members, err = r.settle(ctx, spec); err != nil {
		return nil, err
	}
	if len(r.disc.groups) == 0 {
		return nil, r.noFleet(ctx)
	}
	return spec, nil
}

// noFleet is the error of a discovery that found nothing to read.
func (r *run) noFleet(ctx context.Context) error {
	if len(r.disc.routerSeries) > 0 {
		return fmt.Errorf("only router copies found (%d series with a %s label): no engine's own series are in the store", sum(r.disc.routerSeries), routerLabel)
	}
	return noSeries(ctx, r.q, r.o)
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
	names, err := q.labelValues(ctx, "no series: the names the store has instead", model.MetricNameLabel, match, o.From.Add(-Lookback), o.To)
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
	return &NoSeriesError{Selector: o.Selector, Prefixes: ps, From: o.From, To: o.To}
}

// run is one report's work.
type run struct {
	q    *querier
	o    Options
	disc *discovery
	f    *Fleet
	meta *metadata

	// What the window needs (window.go): each instance's newest sample at
	// the window's end and start, its targets' up and scrape time at the
	// end, the instances whose counters restarted, and each instance's
	// path.
	tsEnd, tsStart map[string]model.Time
	targets        *targetState
	resets         map[string]bool
	paths          map[string]path

	// members are the instances the census listed in part, each read by
	// its dialect's first instance's library: their dialect, by group id.
	members map[string]string
	// shaped are the pushdown's shapes, with their libraries; trendsOf
	// each instance's trends, by group id.
	shaped   []*shape
	trendsOf map[string]map[string]*report.Trend
	// firsts are each pushdown shape's first instance's series at the
	// window's end (pushdown.go); lateRestarts the restarts asked of the
	// counters of the shapes discovery found beyond the speculation's.
	firsts       map[string][]point
	lateRestarts restarts
	// reads are the instances read, by group id; unread says, by group
	// id, why the pushdown's sums of one cannot stand for it.
	reads  map[string]*read
	unread map[string]string
	// buckets are, by dialect, the bucket series the window's
	// percentiles read (bucketsFor).
	buckets map[string][]string
	mu      sync.Mutex
	// replicaDups holds, by label, the instances whose series repeat
	// under it (dupMu: the two ends are read at once).
	replicaDups map[string]map[string]bool
	dupMu       sync.Mutex
}

// on lists the instances planned to be read the way read says.
func (r *run) on(read Read) []*group {
	var out []*group
	for _, g := range r.disc.groups {
		if r.paths[g.id].read == read {
			out = append(out, g)
		}
	}
	return out
}

// read is one instance as its path read it: its reading at the window's
// end, the readings its window is counted over, and in a past range each
// gauge's largest value.
type read struct {
	end    *reading
	w      readings
	peak   *snapshot.Snapshot
	native int // histograms read from native values
	bornAt time.Time
	err    error
}

// route returns the group a series belongs to, or nil (another dialect's
// router copy, a series of no group).
func (r *run) route(m model.Metric) *group {
	if routerCopy(m) {
		return nil
	}
	// Looked up without a string of its own: route runs for every series.
	var key [128]byte
	if id, ok := r.disc.byKey[string(appendKey(key[:0], m, r.disc.by))]; ok {
		return r.disc.byID[id]
	}
	return nil
}
