package exporter

import (
	"sync"
	"time"
)

// liveState is the last good reading of the engine and the call in flight.
// At most one Engine.Live call runs at a time, and a stuck engine costs one
// wait, not one per scrape: the scrape that starts a call waits for it at
// most the timeout, scrapes arriving meanwhile share that same deadline, and
// once it has passed every scrape answers at once with the last good
// reading until the call returns.
type liveState struct {
	mu       sync.Mutex
	pending  *liveCall
	last     Live      // sanitized
	at       time.Time // when last was read; New's time before any reading
	failures uint64    // scrapes that served an earlier reading
}

type liveCall struct {
	done     chan struct{} // closed when the call returned or panicked
	deadline time.Time     // when the scrape that started it stops waiting (monotonic clock)
	v        Live          // valid after done when ok
	ok       bool
}

// readLive returns the live state for one scrape, the age of that reading
// in seconds (0 when it was read during this scrape) and the number of
// scrapes so far that served an earlier reading.
func (m *Metrics) readLive() (Live, float64, uint64) {
	if m.engine == nil {
		return Live{}, 0, 0
	}
	now := time.Now()
	m.live.mu.Lock()
	c := m.live.pending
	if c == nil {
		c = &liveCall{done: make(chan struct{}), deadline: now.Add(m.timeout)}
		m.live.pending = c
		go m.callLive(c)
	}
	m.live.mu.Unlock()

	fresh := false
	if wait := c.deadline.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-c.done:
			fresh = c.ok
		case <-t.C:
		}
		t.Stop()
	} else {
		// The call has outlived the wait its own scrape paid: do not wait
		// on it again.
		select {
		case <-c.done:
			fresh = c.ok
		default:
		}
	}

	m.live.mu.Lock()
	defer m.live.mu.Unlock()
	if fresh {
		return c.v, 0, m.live.failures
	}
	m.live.failures++
	age := m.now().Sub(m.live.at).Seconds()
	return m.live.last, max(age, 0), m.live.failures
}

// callLive runs Engine.Live on its own goroutine so that a scrape can give
// up on it. A panic is recovered: it is a failed reading, not a failed
// scrape (or a crashed server).
func (m *Metrics) callLive(c *liveCall) {
	defer func() {
		ok := recover() == nil
		m.live.mu.Lock()
		if ok {
			c.ok = true
			m.live.last, m.live.at = c.v, m.now()
		}
		if m.live.pending == c {
			m.live.pending = nil
		}
		m.live.mu.Unlock()
		close(c.done)
	}()
	c.v = sanitize(m.engine.Live())
}

// sanitize makes a reading safe to keep: a negative count or size, which
// cannot be true, becomes 0. Used amounts are kept as the engine reports
// them, even above their capacity: an overrun is what the operator must see.
// The nested structs are copied, so the engine may reuse its own afterwards.
func sanitize(l Live) Live {
	out := Live{
		ActiveJobs:        max(l.ActiveJobs, 0),
		PendingJobs:       max(l.PendingJobs, 0),
		PageSize:          max(l.PageSize, 0),
		KVPages:           max(l.KVPages, 0),
		KVReferencedPages: max(l.KVReferencedPages, 0),
		KVOnlyPages:       l.KVOnlyPages,
		StrandedByKV:      l.StrandedByKV,
	}
	if o := l.Offload; o != nil {
		s := *o
		s.Slots = max(s.Slots, 0)
		s.MaxSlots = max(s.MaxSlots, 0)
		s.SlotBytes = max(s.SlotBytes, 0)
		out.Offload = &s
	}
	if r := l.Recurrent; r != nil {
		s := *r
		s.Checkpoints = max(s.Checkpoints, 0)
		s.Bytes = max(s.Bytes, 0)
		s.MaxBytes = max(s.MaxBytes, 0)
		out.Recurrent = &s
	}
	return out
}
