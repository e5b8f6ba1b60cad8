package fleet

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/promql"
)

// The store client: every request of a report goes through one querier,
// which bounds how many run at once, logs each with its purpose, shares
// an answer between askers of the same request in flight, and knows the
// report's selector, grouping and window, so that every stage writes its
// queries the same way. inParallel is the one way work is run at once.

// maxBatchBytes bounds one batched query: VictoriaMetrics refuses queries
// longer than -search.maxQueryLen (16 KiB by default).
const maxBatchBytes = 8 << 10

// inFlight is how many queries run at once.
const inFlight = 4

// Query is one request the fleet view sent: what it was for, and the
// query or matchers.
type Query struct {
	Purpose string
	Text    string
	At      time.Time
	Took    time.Duration
}

// querier sends the fleet view's queries and keeps a log of them.
type querier struct {
	api promapi.API
	// o is the report's options: the selector every query is narrowed
	// by, the grouping, the window.
	o Options
	// replicas removes HA replicas' copies from every answer of series
	// (replicas.go), and finds them where no label was named.
	replicas *replicas
	mu       sync.Mutex
	log      []Query
	// slots are the requests in flight, at most inFlight.
	slots *slots
	// answers are the queries in flight whose readers only read their
	// answers (tagged, rangeQuery), by text and times: shapes whose
	// libraries write the same expression (the expressions say no
	// instance), read at once, ask the store once. An answer is not
	// kept past its flight: a report would hold every one to its end.
	answers map[string]*answer
}

// answer is one shared request's answer, there once done is closed.
type answer struct {
	done chan struct{}
	v    any
	err  error
}

func newQuerier(api promapi.API, o Options) *querier {
	return &querier{api: api, o: o, replicas: newReplicas(o.ReplicaLabels), slots: newSlots(inFlight), answers: map[string]*answer{}}
}

// backend is the store that answers.
func (q *querier) backend() promapi.Backend {
	if q.api == nil {
		return promapi.Backend{}
	}
	return q.api.Backend()
}

// by writes the grouping of the store's aggregations: " by (job, instance)".
func (q *querier) by() string { return " by (" + strings.Join(q.o.By, ", ") + ")" }

// window is the window's length as PromQL writes a range.
func (q *querier) window() string { return promDuration(q.o.To.Sub(q.o.From)) }

// listed is the span a listing of series or label values covers: the
// window, and the lookback before it (an instant query at its start finds
// a sample that far back).
func (q *querier) listed() (start, end time.Time) { return q.o.From.Add(-Lookback), q.o.To }

// familySel is the selector a query of family f uses: the user's, and for
// vLLM's families no router copy.
func (q *querier) familySel(f string) Selector { return familySel(q.o.Selector, f) }

func familySel(sel Selector, f string) Selector {
	if dialect.Owner(f) == "vllm" {
		return sel.With(Matcher{Name: routerLabel, Op: "=", Value: ""})
	}
	return sel
}

func nameIs(f string) Matcher { return Matcher{Name: model.MetricNameLabel, Op: "=", Value: f} }

// shared runs ask for key once while it is in flight: a second asker
// meanwhile waits for the first's answer, which both only read.
func (q *querier) shared(ctx context.Context, key string, ask func() (any, error)) (any, error) {
	q.mu.Lock()
	a, asked := q.answers[key]
	if !asked {
		a = &answer{done: make(chan struct{})}
		q.answers[key] = a
	}
	q.mu.Unlock()
	if asked {
		select {
		case <-a.done:
			return a.v, a.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	a.v, a.err = ask()
	close(a.done)
	q.mu.Lock()
	delete(q.answers, key)
	q.mu.Unlock()
	return a.v, a.err
}

func (q *querier) record(purpose, text string, at time.Time, start time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.log = append(q.log, Query{Purpose: purpose, Text: text, At: at, Took: time.Since(start)})
}

// Log returns the queries sent so far.
func (q *querier) Log() []Query {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Query(nil), q.log...)
}

func (q *querier) acquire(ctx context.Context) error {
	return q.slots.acquire(ctx, ctx.Value(urgentKey{}) != nil)
}

func (q *querier) release() { q.slots.release() }

// urgentKey marks a context whose requests go before the others waiting
// for a slot: a few quick requests (the window's) that would otherwise
// wait behind the many long sums sent beside them.
type urgentKey struct{}

// urgent is ctx whose requests go first.
func urgent(ctx context.Context) context.Context { return context.WithValue(ctx, urgentKey{}, true) }

// slots bound the requests in flight, the urgent waiters served first,
// each kind in the order it came.
type slots struct {
	mu     sync.Mutex
	free   int
	urgent []chan struct{}
	other  []chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n} }

func (s *slots) acquire(ctx context.Context, urgent bool) error {
	s.mu.Lock()
	if s.free > 0 && (urgent || len(s.urgent) == 0) {
		s.free--
		s.mu.Unlock()
		return nil
	}
	c := make(chan struct{})
	if urgent {
		s.urgent = append(s.urgent, c)
	} else {
		s.other = append(s.other, c)
	}
	s.mu.Unlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, q := range []*[]chan struct{}{&s.urgent, &s.other} {
			if i := slices.Index(*q, c); i >= 0 {
				*q = slices.Delete(*q, i, i+1)
				return ctx.Err()
			}
		}
		// Handed a slot as ctx ended: give it on.
		s.handOn()
		return ctx.Err()
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handOn()
}

// handOn gives a freed slot to the first waiter, urgent first.
func (s *slots) handOn() {
	for _, q := range []*[]chan struct{}{&s.urgent, &s.other} {
		if len(*q) > 0 {
			c := (*q)[0]
			*q = (*q)[1:]
			close(c)
			return
		}
	}
	s.free++
}

// eachSeries is what promapi.Client offers beyond promapi.API: each
// series' labels handed over as the answer is read, none kept.
type eachSeries interface {
	EachSeries(ctx context.Context, matches []string, start, end time.Time, fn func(model.Metric) error) error
}

// series calls each with the labels of every series matching matches
// (not to be kept), as they are read where the API can, else from its
// list.
func (q *querier) series(ctx context.Context, purpose string, matches []string, start, end time.Time, each func(model.Metric) error) error {
	if err := q.acquire(ctx); err != nil {
		return err
	}
	defer q.release()
	t := time.Now()
	defer q.record(purpose, strings.Join(matches, " "), end, t)
	if e, ok := q.api.(eachSeries); ok {
		return e.EachSeries(ctx, matches, start, end, each)
	}
	sets, err := q.api.Series(ctx, matches, start, end)
	if err != nil {
		return err
	}
	for _, ls := range sets {
		if err := each(model.Metric(ls)); err != nil {
			return err
		}
	}
	return nil
}

// instant runs an instant query and returns its vector (a matrix for a
// range selector is returned by raw).
func (q *querier) instant(ctx context.Context, purpose, query string, at time.Time) (model.Vector, error) {
	v, err := q.query(ctx, purpose, query, at)
	return vectorOf(purpose, v, err)
}

// sharedInstant is instant, once for every asker of the same query at the
// same time: its answer is only read.
func (q *querier) sharedInstant(ctx context.Context, purpose, query string, at time.Time) (model.Vector, error) {
	v, err := q.shared(ctx, fmt.Sprintf("instant\x00%s\x00%d", query, at.UnixNano()), func() (any, error) {
		return q.query(ctx, purpose, query, at)
	})
	mv, _ := v.(model.Value)
	return vectorOf(purpose, mv, err)
}

// vectorOf is an instant query's answer as a vector.
func vectorOf(purpose string, v model.Value, err error) (model.Vector, error) {
	if err != nil {
		return nil, err
	}
	switch r := v.(type) {
	case model.Vector:
		return r, nil
	case *model.Scalar, nil:
		return nil, nil
	}
	return nil, fmt.Errorf("%s: the store answered a %s, not an instant vector", purpose, v.Type())
}

// raw runs an instant query of a range selector and returns its samples.
func (q *querier) raw(ctx context.Context, purpose, query string, at time.Time) (model.Matrix, error) {
	v, err := q.query(ctx, purpose, query, at)
	if err != nil {
		return nil, err
	}
	switch r := v.(type) {
	case model.Matrix:
		return r, nil
	case model.Vector:
		if len(r) == 0 {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("%s: the store answered a %s, not a range of samples", purpose, v.Type())
}

// rangeQuery evaluates a query at every step from start to end (once for
// every asker of the same: its answer is only read).
func (q *querier) rangeQuery(ctx context.Context, purpose, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	key := fmt.Sprintf("range\x00%s\x00%d\x00%d\x00%d", query, start.UnixNano(), end.UnixNano(), step)
	v, err := q.shared(ctx, key, func() (any, error) {
		if err := q.acquire(ctx); err != nil {
			return nil, err
		}
		defer q.release()
		t := time.Now()
		defer q.record(purpose, query, end, t)
		return q.api.QueryRange(ctx, query, start, end, step)
	})
	m, _ := v.(model.Matrix)
	return m, err
}

// labelValues lists a label's values among the series matching matches
// between start and end, once for every asker of the same while it is in
// flight (shapes of one dialect ask the same bounds); each asker gets a
// copy of its own.
func (q *querier) labelValues(ctx context.Context, purpose, label string, matches []string, start, end time.Time) ([]string, error) {
	key := fmt.Sprintf("labels\x00%s\x00%s\x00%d\x00%d", label, strings.Join(matches, "\x00"), start.UnixNano(), end.UnixNano())
	v, err := q.shared(ctx, key, func() (any, error) {
		t := time.Now()
		defer q.record(purpose, strings.Join(matches, " "), end, t)
		return q.api.LabelValues(ctx, label, matches, start, end)
	})
	vs, _ := v.([]string)
	return slices.Clone(vs), err
}

func (q *querier) query(ctx context.Context, purpose, query string, at time.Time) (model.Value, error) {
	if err := q.acquire(ctx); err != nil {
		return nil, err
	}
	defer q.release()
	t := time.Now()
	defer q.record(purpose, query, at, t)
	return q.api.Query(ctx, query, at)
}

// familyLabel carries a family's name through a batched query: functions
// drop __name__, and or matches series on every other label, so two
// families' results would otherwise be taken for one.
const familyLabel = "inferscope_family"

// batch evaluates expr(family) for every family, joined with or into as
// few queries as fit maxBatchBytes and run in parallel, each result
// labelled with its family (familyLabel, made its __name__ again here). It
// returns every series found.
func (q *querier) batch(ctx context.Context, purpose string, families []string, expr func(family string) string, at time.Time) (model.Vector, error) {
	parts := make([]string, len(families))
	for i, f := range families {
		parts[i] = fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr(f), familyLabel, f)
	}
	out, err := q.joined(ctx, purpose, parts, at)
	for _, s := range out {
		if f, ok := s.Metric[familyLabel]; ok {
			s.Metric[model.MetricNameLabel] = f
			delete(s.Metric, familyLabel)
		}
	}
	return out, err
}

// tagged is an expression and the tag its results carry.
type tagged struct {
	tag, expr string
	// split is the split the expression reads, if it is one (no tag: its
	// quantities are taken from its answer once every sample is in).
	split *promql.Split
	// slow says the store takes longest over it (a histogram's buckets,
	// many series to a group): it is sent first.
	slow bool
}

// tagged evaluates each expression as a query of its own, in parallel
// (as many at once as the querier allows), and hands each sample of the
// i-th expression's answer to each, one call at a time, as soon as that
// answer is in: an answer is let go once read, not held until the last
// is in (two ends' bucket answers of 2,000 pods were a third of the
// report's heap). Calls come in the order answers arrive. Not joined
// with or as batch joins: each or re-hashes every series before it, and
// the store evaluates separate queries on separate cores; the count
// stays that of the expressions, whatever the number of instances. (The
// tag is not put in the result's labels: a fourth label grew each of
// 70,000 maps a report.) The error is the first in the expressions'
// order, if any. The slow expressions are sent first, so that the rest
// fill the other requests in flight meanwhile.
func (q *querier) tagged(ctx context.Context, purpose string, exprs []tagged, at time.Time, each func(i int, s *model.Sample)) error {
	order := make([]int, 0, len(exprs))
	for _, slow := range []bool{true, false} {
		for i, e := range exprs {
			if e.slow == slow {
				order = append(order, i)
			}
		}
	}
	errs := make([]error, len(exprs))
	var mu sync.Mutex
	err := inParallel(ctx, len(order), 0, func(ctx context.Context, j int) error {
		i := order[j]
		vec, err := q.sharedInstant(ctx, purpose, exprs[i].expr, at)
		if err != nil {
			errs[i] = err
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range vec {
			each(i, s)
		}
		return nil
	})
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return err
}

// joined evaluates parts joined with or into as few queries as fit
// maxBatchBytes (VictoriaMetrics refuses longer ones), run in parallel,
// and returns every series they found.
func (q *querier) joined(ctx context.Context, purpose string, parts []string, at time.Time) (model.Vector, error) {
	var queries []string
	var cur strings.Builder
	for _, part := range parts {
		if cur.Len() > 0 && cur.Len()+len(part)+4 > maxBatchBytes {
			queries = append(queries, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString(" or ")
		}
		cur.WriteString(part)
	}
	if cur.Len() > 0 {
		queries = append(queries, cur.String())
	}
	results := make([]model.Vector, len(queries))
	err := inParallel(ctx, len(queries), 0, func(ctx context.Context, i int) (err error) {
		results[i], err = q.instant(ctx, purpose, queries[i], at)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out model.Vector
	for _, r := range results {
		out = append(out, r...)
	}
	return out, nil
}

// promDuration writes d as PromQL reads a range: whole milliseconds.
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// onCores is inParallel's width for work on this machine's cores (no
// request to the store): one goroutine a core.
var onCores = -1

// inParallel calls fn for each of 0..n-1 and returns once all are done:
// at most width at once (0: all at once, for requests, which the querier
// bounds itself; onCores: one a core, for work that only computes). It
// returns the first error in that order, or ctx's error where ctx ended
// before every call was made (the rest are not made). It is the one way
// the fleet runs work at once.
func inParallel(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	switch {
	case width == onCores:
		width = min(runtime.GOMAXPROCS(0), n)
	case width <= 0 || width > n:
		width = n
	}
	errs := make([]error, n)
	var next, made atomic.Int64
	var wg sync.WaitGroup
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				made.Add(1)
				errs[i] = fn(ctx, i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if int(made.Load()) < n {
		return ctx.Err()
	}
	return nil
}

// alongside runs stages at once (inParallel), each with its own inputs
// and results: the first error in their order.
func alongside(ctx context.Context, stages ...func(ctx context.Context) error) error {
	return inParallel(ctx, len(stages), 0, func(ctx context.Context, i int) error { return stages[i](ctx) })
}
