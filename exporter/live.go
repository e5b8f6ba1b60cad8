package exporter

import (
	"sync"
	"time"
)

// liveState is the last good reading of the engine and the call in flight.
// At most one Engine.Live call runs at a time: a scrape that finds one still
// running (hung behind a prefill, say) waits on it instead of starting
// another, so a stuck engine costs one goroutine, not one per scrape.
type liveState struct {
	mu       sync.Mutex
	pending  *liveCall
	last     Live      // sanitized
	at       time.Time // when last was read; New's time before any reading
	failures uint64    // scrapes that served a stale reading
}

type liveCall struct {
	done chan struct{} // closed when the call returned or panicked
	v    Live          // valid after done when ok
	ok   bool
}

// readLive returns the live state for one scrape and the age of that
// reading in seconds (0 when it was read during this scrape). A call that
// does not return within the timeout, or panics, leaves the last good
// reading in place, and the age says how old it is.
func (m *Metrics) readLive() (Live, float64, uint64) {
	if m.engine == nil {
		return Live{}, 0, 0
	}
	m.live.mu.Lock()
	c := m.live.pending
	if c == nil {
		c = &liveCall{done: make(chan struct{})}
		m.live.pending = c
		go m.callLive(c)
	}
	m.live.mu.Unlock()

	t := time.NewTimer(m.timeout)
	fresh := false
	select {
	case <-c.done:
		fresh = c.ok
	case <-t.C:
	}
	t.Stop()

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

// sanitize makes a reading safe to publish: negative figures become 0 and
// used amounts are held to their capacity, so gauges stay in range and
// ratios within [0, 1]. The nested structs are copied, so the engine may
// reuse its own afterwards.
func sanitize(l Live) Live {
	out := Live{
		ActiveJobs:   max(l.ActiveJobs, 0),
		PendingJobs:  max(l.PendingJobs, 0),
		PageSize:     max(l.PageSize, 0),
		KVPages:      max(l.KVPages, 0),
		KVOnlyPages:  l.KVOnlyPages,
		StrandedByKV: l.StrandedByKV,
	}
	out.KVReferencedPages = min(max(l.KVReferencedPages, 0), out.KVPages)
	if o := l.Offload; o != nil {
		s := *o
		s.MaxSlots = max(s.MaxSlots, 0)
		s.Slots = min(max(s.Slots, 0), s.MaxSlots)
		s.SlotBytes = max(s.SlotBytes, 0)
		out.Offload = &s
	}
	if r := l.Recurrent; r != nil {
		s := *r
		s.Checkpoints = max(s.Checkpoints, 0)
		s.MaxBytes = max(s.MaxBytes, 0)
		s.Bytes = min(max(s.Bytes, 0), s.MaxBytes)
		out.Recurrent = &s
	}
	return out
}
