package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// queueSize bounds the arrivals waiting for a slot (a rate with a cap):
// past it the pacer itself waits, and its lateness says so.
const queueSize = 1 << 16

// Run sends p's requests until its end or ctx's cancellation, calling rec
// with each request's Record as it ends (from one goroutine, in the order
// they end) and prog about every 250 ms (either may be nil). It returns
// an error only for a plan it cannot run, before sending anything.
func Run(ctx context.Context, p Plan, rec func(Record), prog func(Progress)) (Summary, error) {
	if err := p.check(); err != nil {
		return Summary{}, err
	}
	r := newRunner(p)
	return r.run(ctx, rec, prog), nil
}

// check refuses a plan that cannot run.
func (p *Plan) check() error {
	t := p.Target
	switch {
	case t.Base == nil || t.Base.Host == "" || (t.Base.Scheme != "http" && t.Base.Scheme != "https"):
		return errors.New("load: the target must be an http:// or https:// URL with a host")
	case t.API < ChatCompletions || t.API > OllamaGenerate:
		return fmt.Errorf("load: no such API %d", t.API)
	case p.Source == nil:
		return errors.New("load: no source of requests")
	case p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0):
		return fmt.Errorf("load: a rate of %v requests/s cannot be sent: it must be a positive number (or 0 for a closed loop)", p.Rate)
	case p.Concurrency < 0:
		return fmt.Errorf("load: a concurrency of %d: it must be 1 or more", p.Concurrency)
	case p.Rate == 0 && p.Concurrency == 0:
		return errors.New("load: a closed loop needs a concurrency of 1 or more (or give a rate)")
	case p.Requests < 0 || p.Duration < 0:
		return errors.New("load: the requests and the duration cannot be negative")
	case p.Requests == 0 && p.Duration == 0:
		return errors.New("load: say how many requests to send or for how long")
	case p.Burstiness < 0 || math.IsNaN(p.Burstiness) || math.IsInf(p.Burstiness, 0):
		return fmt.Errorf("load: a burstiness of %v: it must be positive", p.Burstiness)
	case p.Warmup.Requests < 0 || p.Warmup.Duration < 0 || p.Drain < 0 || t.Timeout < 0:
		return errors.New("load: the warm-up, the drain and the timeout cannot be negative")
	}
	return nil
}

// runner is one run in progress.
type runner struct {
	p          Plan
	client     *http.Client
	tr         *http.Transport
	url        string
	t0         time.Time
	reqCtx     context.Context // the requests' own: canceled when the drain is over
	cancelReqs context.CancelFunc
	g          gate
	wg         sync.WaitGroup // goroutines sending requests
	records    chan Record
	queue      chan arrival // a rate with a cap: arrivals waiting for a slot

	// Live counts, for Progress.
	nSent, nInflight, nDone, nErrors, nEvents atomic.Int64

	itlMu sync.Mutex
	itl   *hdrhistogram.Histogram

	dropMu     sync.Mutex
	dropped    int // measured arrivals never sent
	lateByPace int // of those, due before the end but not reached by the pacer
}

func newRunner(p Plan) *runner {
	idle := p.Concurrency
	if idle == 0 {
		idle = 4096 // an open loop without a cap: as many as it takes
	}
	r := &runner{p: p, url: Endpoint(p.Target).String(), records: make(chan Record, 1024),
		itl: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
	r.client, r.tr = newClient(p.Target, idle)
	if p.dial != nil {
		r.tr.DialContext = p.dial
	}
	r.reqCtx, r.cancelReqs = context.WithCancel(context.Background())
	r.g = gate{p: &r.p, from: -1, stopped: make(chan struct{}), measuring: make(chan struct{})}
	return r
}

func (r *runner) since() time.Duration { return time.Since(r.t0) }

func (r *runner) run(ctx context.Context, recFn func(Record), prog func(Progress)) Summary {
	cpu0 := cpuTime()
	r.t0 = time.Now()
	s := Summary{Start: r.t0, MeasuredFrom: -1, MeasuredTo: -1}
	defer r.tr.CloseIdleConnections()
	defer r.cancelReqs()

	emitted := make(chan struct{})
	lat, slot := newStats(), newStats()
	go func() {
		defer close(emitted)
		for rec := range r.records {
			if rec.Warmup {
				s.Warmup++
			} else if rec.Sent >= 0 {
				s.Sent++
				if rec.Error == "" {
					s.Completed++
				} else {
					s.Errors++
				}
				if rec.Done >= 0 {
					s.MeasuredTo = max(s.MeasuredTo, rec.Sent+rec.Done)
				}
				if r.p.Rate > 0 {
					lat.add(rec.Sent - rec.Scheduled - rec.SlotWait)
					if r.p.Concurrency > 0 {
						slot.add(rec.SlotWait)
					}
				}
			}
			if recFn != nil {
				recFn(rec)
			}
		}
	}()

	// Sending stops at ctx's cancellation or the measured time's end.
	go func() {
		select {
		case <-ctx.Done():
			r.g.halt(r.since(), true)
		case <-r.g.stopped:
			return
		}
	}()
	if r.p.Duration > 0 {
		go func() {
			select {
			case <-r.g.measuring:
				from := r.g.measuredFrom()
				if d := from + r.p.Duration - r.since(); d > 0 {
					t := time.NewTimer(d)
					defer t.Stop()
					select {
					case <-t.C:
					case <-r.g.stopped:
						return
					}
				}
				r.g.halt(from+r.p.Duration, false)
			case <-r.g.stopped:
			}
		}()
	}
	progDone := make(chan struct{})
	if prog != nil {
		go r.progress(prog, progDone)
	}

	var paced sync.WaitGroup
	switch {
	case r.p.Rate == 0:
		for range r.p.Concurrency {
			r.wg.Add(1)
			go r.closedWorker()
		}
	default:
		if r.p.Concurrency > 0 {
			r.queue = make(chan arrival, queueSize)
			for range r.p.Concurrency {
				r.wg.Add(1)
				go r.slotWorker()
			}
		}
		paced.Add(1)
		go func() {
			defer paced.Done()
			r.pace(ctx)
		}()
	}

	<-r.g.stopped
	s.SendEnd = r.g.stopAt
	paced.Wait()
	r.drain(ctx)
	close(r.records)
	<-emitted
	close(progDone)

	s.MeasuredFrom = r.g.measuredFrom()
	s.Partial = r.g.wasInterrupted()
	r.dropMu.Lock()
	s.Dropped = r.dropped
	r.dropMu.Unlock()
	s.Scheduled = s.Sent + s.Dropped
	s.Lateness, s.SlotWait = lat.lateness(), slot.lateness()
	s.ITL = r.itl
	s.CPU = cpuTime() - cpu0
	return s
}

// drain lets the requests in flight finish: as long as they take at the
// end of a run without a Drain, Drain at most otherwise; after an
// interruption, Drain at most (0: none).
func (r *runner) drain(ctx context.Context) {
	if r.queue != nil {
		close(r.queue)
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	limit := r.p.Drain
	if limit == 0 && ctx.Err() == nil {
		<-done
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.cancelReqs()
		<-done
	}
}

// do sends one request and hands on its record.
func (r *runner) do(tk ticket, w workload.Request) {
	rec, a := r.send(tk, w)
	if a != nil {
		if !tk.warm && rec.Error == "" && len(a.gaps) > 0 {
			r.itlMu.Lock()
			for _, g := range a.gaps {
				r.itl.RecordValue(max(g, 1))
			}
			r.itlMu.Unlock()
		}
		if cap(a.gaps) <= 1<<12 {
			a.live = nil
			answers.Put(a)
		}
	}
	if rec.Sent >= 0 {
		r.nInflight.Add(-1)
	}
	r.nDone.Add(1)
	if rec.Error != "" {
		r.nErrors.Add(1)
	}
	r.records <- rec
}

// sent counts a request as it is sent.
func (r *runner) sent(ticket) {
	r.nSent.Add(1)
	r.nInflight.Add(1)
}

// event counts a content event as it arrives.
func (r *runner) event() { r.nEvents.Add(1) }

// closedWorker is one of a closed loop's: a request, then the next.
func (r *runner) closedWorker() {
	defer r.wg.Done()
	for {
		i, warm, ok := r.g.take(r.since())
		if !ok {
			return
		}
		r.do(ticket{i: i, warm: warm, scheduled: -1}, r.p.Source.Next(i))
	}
}

// arrival is an arrival waiting for a slot.
type arrival struct {
	tk ticket
	at time.Duration // when the pacer let it in
}

// slotWorker is one of a capped open loop's slots: it sends the arrivals
// in the order they came, each when the slot is free.
func (r *runner) slotWorker() {
	defer r.wg.Done()
	free := r.since()
	for a := range r.queue {
		now := r.since()
		if r.g.over(now) {
			if !a.tk.warm {
				r.drop(false)
			}
			continue
		}
		if free > a.at {
			a.tk.slotWait = now - a.at // every slot was busy when it came
		}
		r.do(a.tk, r.p.Source.Next(a.tk.i))
		free = r.since()
	}
}

// pace is the open loop's pacer: each arrival at its time from the
// start, however late the last was sent.
func (r *runner) pace(ctx context.Context) {
	sched := NewSchedule(r.p.Arrival, r.p.Rate, r.p.Burstiness, r.p.Seed)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		due := sched.Next()
		if r.g.over(r.since()) {
			r.behind(sched, due)
			return
		}
		i, warm, ok := r.g.take(due)
		if !ok {
			return
		}
		var w workload.Request
		if r.queue == nil {
			w = r.p.Source.Next(i) // made before its time, not after
		}
		if !r.waitUntil(ctx, timer, due) {
			r.g.untake(warm)
			return
		}
		tk := ticket{i: i, warm: warm, scheduled: due}
		if r.queue != nil {
			select {
			case r.queue <- arrival{tk: tk, at: r.since()}:
			case <-ctx.Done():
				r.g.untake(warm)
				return
			}
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.do(tk, w)
		}()
	}
}

// waitUntil waits for due (from the start): on a timer, which ctx can
// interrupt, to within a few milliseconds, then the rest on a nap, whose
// grain is finer than a timer's. It is false if ctx ended first.
func (r *runner) waitUntil(ctx context.Context, timer *time.Timer, due time.Duration) bool {
	const fine = 3 * time.Millisecond
	for {
		d := due - r.since()
		switch {
		case d <= 0:
			return ctx.Err() == nil
		case d <= fine:
			nap(d)
			return ctx.Err() == nil
		}
		timer.Reset(d - fine)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
}

// behind counts the measured arrivals due before the end that the pacer
// did not reach: scheduled, never sent.
func (r *runner) behind(sched *Schedule, due time.Duration) {
	end, ok := r.g.end()
	if !ok || r.g.wasInterrupted() {
		return
	}
	for ; due < end; due = sched.Next() {
		r.drop(true)
	}
}

func (r *runner) drop(pacer bool) {
	r.dropMu.Lock()
	r.dropped++
	if pacer {
		r.lateByPace++
	}
	r.dropMu.Unlock()
}

// progress calls prog every 250 ms until done, with the rates over the
// last second.
func (r *runner) progress(prog func(Progress), done <-chan struct{}) {
	type sample struct {
		at           time.Duration
		done, events int64
	}
	var ring [5]sample
	n := 0
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		now := sample{r.since(), r.nDone.Load(), r.nEvents.Load()}
		old := ring[n%len(ring)]
		if n < len(ring) {
			old = ring[0]
		}
		ring[n%len(ring)] = now
		n++
		p := Progress{Sent: int(r.nSent.Load()), InFlight: int(r.nInflight.Load()), Done: int(now.done),
			Errors: int(r.nErrors.Load()), Elapsed: now.at, Warmup: r.g.measuredFrom() < 0}
		if dt := (now.at - old.at).Seconds(); dt > 0 {
			p.ReqRate = float64(now.done-old.done) / dt
			p.TokRate = float64(now.events-old.events) / dt
		}
		prog(p)
	}
}
