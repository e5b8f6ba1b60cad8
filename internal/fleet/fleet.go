// Package fleet reads every inference server a Prometheus-compatible store
// scrapes and reports on each the way inferscope reports on one scrape:
// the same dialects, the same analysis, the same notes, for now or for any
// past window.
//
// # The flow
//
// Run is the flow in one function: each stage takes what the stages
// before it returned and returns its own result. The files, in the order
// to read them (nothing calls ahead of it but Run and discover, which
// name their stages):
//
//  1. selector.go, router.go, replicas.go, store.go: the store client.
//     The user's matchers; how a series of an answer is told to belong to
//     an instance (its --by values: one router reads every answer into
//     instances); HA replicas' copies, removed from every answer of
//     series in one place; the querier every request goes through (how
//     many run at once, the log --show-queries writes, one answer for
//     every asker of a request in flight), and inParallel, the one way
//     work runs at once.
//  2. series.go and families.go: every series of some instances at one
//     time, in batches under --max-bytes, and turned back into the
//     families their scrape would have parsed, which a dialect reads.
//  3. metadata.go, discover.go, shapes.go, census.go: discovery, finished
//     before anything is read. The store's metadata, then the instances,
//     grouped by --by (job and instance, one scrape target, unless told);
//     vLLM production-stack's router copies (server=) skipped and
//     counted. A rebuild lists every series of every dialect. A pushdown
//     reads each dialect's first instance whole and writes its library
//     (shapes.go), lists by census the few series that tell each
//     instance and whether that library reads it as the first's
//     (census.go), lists the others whole, and sorts them into shapes,
//     each with its library.
//  4. window.go: when each instance was last scraped at the window's two
//     ends, which have no sample in it (not the fleet's), which targets
//     are down, which instances restarted inside it (asked once, for both
//     reads).
//  5. readings.go, sums.go, trend.go, gpus.go, asked beside the window: the
//     store-computed read (a pushdown). The store sums each quantity the
//     table and its notes read, per instance, at the window's two ends,
//     by its shape's library (internal/promql's readings, the
//     expressions the rules are made of); each instance is two readings
//     made from its sums (readings.go: the shape both reads give), or the
//     reason they cannot stand for it. Over a past range and in a watch,
//     each row's requests per second and KV use step by step (query_range
//     of the same libraries' readings, per shape). And the GPUs beside
//     the engines (gpus.go): dcgm-exporter's series in the same store,
//     each GPU joined to one instance by the pod it is given to, else by
//     host (--gpu-join), or named in a fleet note; its window from the
//     store's figures (internal/promql's GPU library) or, in a rebuild,
//     its raw samples, computed alike.
//  6. paths.go: each instance's path, decided there alone: from the sums,
//     or read whole (asked: --instance, --read-whole; restarted, born or gone
//     inside the window, down, replica copies, no library for its shape,
//     values that cannot be), with its reason.
//  7. whole.go: the whole read. An instance's series at the window's ends
//     are read by its dialect, from raw samples around a restart: canonical
//     snapshots at times, as the sums' readings are.
//  8. figures.go, notes.go, totals.go, gpufigures.go, assemble.go: the window's increases
//     are the difference of the readings, as --since computes them
//     (rates.Delta), counters created inside the window counted from
//     zero, every counter from zero at a restart; the table's figures
//     are the rates rows' (rates.Compute); each instance's report, its
//     notes on what happened judged on the window (rates.Judge); the
//     totals as the rows' arithmetic (rates.Totals); the notes on the
//     fleet as a whole.
//  9. names.go, table.go and json.go render the fleet: rows told apart
//     at any width (what they share said once above the table), the
//     table, and -o json's rows of the same figures; compare.go's
//     Differences compares two readings of one store figure by figure
//     (every test reads its fleet both ways).
//
// docs/fleet.md lists every query sent and why.
package fleet

import (
	"context"
	"fmt"
	"time"

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
	// GPUJoin is how the DCGM series in the store join the instances
	// (gpus.go); "" is GPUJoinAuto.
	GPUJoin GPUJoin
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
	// window's two ends (sums.go). Instances whose window those cannot
	// give are read whole, as Rebuild reads them, and said so.
	Pushdown Read = iota
	// Rebuild reads every instance whole: its series, rebuilt into the
	// families its scrape would have parsed, read by its dialect, for a
	// report that holds every figure (--instance, --read-whole).
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
	// Read is how the report read its instances: Rebuild where every one
	// was read whole, as asked (the JSON then holds each full report).
	Read Read
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
	// GPUs are the GPUs joined to it and what they did over the window
	// (nil where none joined).
	GPUs *InstanceGPUs

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

// Run reads the fleet from the store behind api, stage after stage, each
// taking what the ones before it returned:
//
//	discover ─▶ window ─┬▶ paths ─▶ whole read ─▶ assemble
//	          ─▶ sums ──┘       (the rest, from the sums)
//	          ─▶ trends ───────────────────────────▲
//	          ─▶ GPUs ─────────────────────────────┘
//
// discovery finds the instances and how each can be read; the window
// (when each was last scraped at its two ends, which restarted, which
// are down) and the store's sums (a pushdown) are asked at once, with the
// trends; each instance's path is decided once both are in; the
// instances whose window the sums cannot give are read whole; then each
// instance's figures and report, the totals and the fleet's notes.
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
	q := newQuerier(api, o)
	d, err := discover(ctx, q)
	if err != nil {
		return nil, err
	}
	var w *window
	var trends map[string]map[string]*report.Trend
	var gpus *gpuRead
	err = alongside(ctx,
		// The window's few requests go before the sums' many.
		func(ctx context.Context) (err error) { w, err = readWindow(urgent(ctx), q, d); return },
		func(ctx context.Context) error {
			if o.Read != Pushdown {
				return nil
			}
			return readSums(ctx, q, d.shapes)
		},
		func(ctx context.Context) (err error) {
			if o.Trend {
				trends, err = readTrends(urgent(ctx), q, d.shapes)
			}
			return
		},
		func(ctx context.Context) (err error) { gpus, err = readGPUs(ctx, q, d); return })
	if err != nil {
		return nil, err
	}
	reads, unread, err := pushedReadings(ctx, q, d, w)
	if err != nil {
		return nil, err
	}
	paths := choosePaths(o, d, w, unread)
	whole, err := readWhole(ctx, q, d, w, wholly(w, paths))
	if err != nil {
		return nil, err
	}
	for id, rd := range whole {
		reads[id] = rd
	}
	f, err := assemble(ctx, q, d, w, paths, reads, trends, gpus)
	if err != nil {
		return nil, err
	}
	f.Queries = q.Log()
	return f, nil
}
