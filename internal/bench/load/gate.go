package load

import (
	"sync"
	"time"
)

// gate hands out the run's requests, one ticket each, and says which part
// of the run each belongs to: the warm-up until all its conditions are
// met, then the measured part until its requests are out or its time is
// up; then sending is over.
type gate struct {
	p *Plan

	mu        sync.Mutex
	next      int // the next request's index
	warmSent  int // tickets of the warm-up
	measured  int // tickets of the measured part
	from      time.Duration
	measuring chan struct{} // closed as the measured part starts
	once      sync.Once

	stopped     chan struct{} // closed as sending stops
	stopAt      time.Duration
	halted      bool
	interrupted bool
}

// warmedUp reports the warm-up's conditions all met at now.
func (g *gate) warmedUp(now time.Duration) bool {
	w := g.p.Warmup
	if w.Requests > 0 && g.warmSent < w.Requests || w.Duration > 0 && now < w.Duration {
		return false
	}
	if w.Until != nil {
		select {
		case <-w.Until:
		default:
			return false
		}
	}
	return true
}

// take hands out the ticket of a request due at now (from the run's
// start): its index and whether it is the warm-up's; ok is false once
// sending is over.
func (g *gate) take(now time.Duration) (i int, warm, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.halted {
		return 0, false, false
	}
	if g.from < 0 && g.warmedUp(now) {
		g.from = now
		if g.p.OnMeasure != nil {
			g.p.OnMeasure(now)
		}
		g.measuringStarted()
	}
	i = g.next
	if g.from < 0 {
		g.next++
		g.warmSent++
		return i, true, true
	}
	if g.p.Duration > 0 && now >= g.from+g.p.Duration {
		g.haltLocked(now, false)
		return 0, false, false
	}
	g.next++
	g.measured++
	if g.p.Requests > 0 && g.measured >= g.p.Requests {
		g.haltLocked(now, false) // the last one: sending is over once it is out
	}
	return i, false, true
}

// untake returns a ticket that was never used (the run was interrupted
// before its time).
func (g *gate) untake(warm bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if warm {
		g.warmSent--
	} else {
		g.measured--
	}
}

func (g *gate) measuringStarted() {
	g.once.Do(func() { close(g.measuring) })
}

// halt stops sending at now; interrupted says the run was canceled.
func (g *gate) halt(now time.Duration, interrupted bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.haltLocked(now, interrupted)
}

func (g *gate) haltLocked(now time.Duration, interrupted bool) {
	if interrupted {
		g.interrupted = true
	}
	if g.halted {
		return
	}
	g.halted, g.stopAt = true, now
	close(g.stopped)
}

// over reports sending over at now: halted, or the measured time up.
func (g *gate) over(now time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.halted && (g.interrupted || g.p.Duration > 0) || g.from >= 0 && g.p.Duration > 0 && now >= g.from+g.p.Duration
}

// end is when the measured time ends, if the run is by duration and the
// measured part has started.
func (g *gate) end() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.from + g.p.Duration, g.from >= 0 && g.p.Duration > 0
}

func (g *gate) measuredFrom() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.from
}

func (g *gate) wasInterrupted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.interrupted
}
