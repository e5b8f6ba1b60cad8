package rates

import (
	"math"
	"sort"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Resolution of the history: every sample for the last FullResolution, then
// one per Thinned, and nothing older than Retention × the longest window.
const (
	FullResolution = 90 * time.Second
	Thinned        = 30 * time.Second
	Retention      = 1.1
)

// Sample is what the history keeps of one good scrape: its time and the
// counters as running totals with resets already folded in, so that the
// increase between any two samples is a subtraction even after thinning has
// dropped the samples where a reset showed.
type Sample struct {
	At    time.Time
	Start float64 // process start, Unix seconds; 0 when unknown
	// StartToken is the raw start header, compared when Start is unknown.
	StartToken string

	// c[i] is the counter the history knows as names[i]: c is as long as
	// the names known when the sample was taken, a later name being absent
	// from it and every sample before.
	c []count

	// hists are the histograms as last scraped, carried over a scrape that
	// lacked one (shared with the previous sample when unchanged); hhas[h]
	// says this scrape carried it.
	hists [nHists]*histogram.Histogram
	hhas  [nHists]bool
	// resets counts the counter resets since the history began, so that
	// a window knows whether it spans one (a histogram's increase is not
	// kept as a running total, so its windows may not).
	resets int
	// sampled counts the scrapes since the history began that read the
	// running gauge, and those that found a request running.
	sampled Sampling
	// gpu is the GPU reading taken beside the scrape (nil for none), and
	// waiting the requests it found waiting (hasWaiting where published):
	// what a window's GPU joins read (gpu.go).
	gpu        *snapshot.GPUs
	waiting    float64
	hasWaiting bool
}

// count is one counter in a Sample: total is its increase since the
// history began, counting a decrease as a restart from zero (as PromQL's
// rate() does) and its first value, where an earlier sample lacked it, as
// counted from zero; raw is the value last scraped (0 before the counter
// was ever seen); has says this scrape carried it.
type count struct {
	total, raw float64
	has        bool
}

// History is the samples of one server's scrapes over a session, thinned
// as they age: what each window's baseline is found in.
type History struct {
	// old holds the samples older than FullResolution, at least Thinned
	// apart; recent holds every sample since. Both are in time order and old
	// comes first.
	old, recent []*Sample
	retain      time.Duration // drop samples older than this; 0 keeps all
	longest     time.Duration
	// rows are the rows the newest sample supports.
	rows rowSet
	// names are the counters seen, in the order first seen: a Sample's
	// index; index finds a name's.
	names []string
	index map[string]int

	// RestartedAt is when the server last restarted within this session
	// (its new process start time); zero when it has not. Where the new
	// process has no start time that can be one (a changed start header
	// that is no clock, as llama.cpp's), RestartUnknown is set and
	// RestartedAt is only the scrape that saw it.
	RestartedAt    time.Time
	RestartUnknown bool
	// ResetAt is when counters last fell without a restart (a model reload
	// recreates the engine's counters); zero when they have not.
	ResetAt time.Time

	// trend is the session's figures interval by interval (trend.go),
	// kept across restarts, which are gaps in it.
	trend trends
}

// NewHistory returns an empty history sized for windows up to longest.
func NewHistory(longest time.Duration) *History {
	h := &History{}
	h.SetLongest(longest)
	return h
}

// SetLongest changes the longest window kept for; samples beyond
// Retention × longest are dropped at the next Add.
func (h *History) SetLongest(longest time.Duration) {
	h.longest = longest
	h.retain = time.Duration(float64(longest) * Retention)
}

// Len is the number of samples held.
func (h *History) Len() int { return len(h.old) + len(h.recent) }

// At returns the i-th sample, oldest first.
func (h *History) At(i int) *Sample {
	if i < len(h.old) {
		return h.old[i]
	}
	return h.recent[i-len(h.old)]
}

// Newest is the latest sample, nil when empty.
func (h *History) Newest() *Sample {
	if n := h.Len(); n > 0 {
		return h.At(n - 1)
	}
	return nil
}

// Reset forgets everything but the newest sample, which becomes the start
// of a fresh history (the `r` key).
func (h *History) Reset() {
	n := h.Newest()
	h.old, h.recent = nil, nil
	h.RestartedAt, h.ResetAt, h.RestartUnknown = time.Time{}, time.Time{}, false
	// The trends start over too, their next interval from the sample kept.
	h.trend = trends{step: h.trend.step, linked: n != nil}
	if n != nil {
		h.recent = []*Sample{n}
	}
}

// Event says what Add found besides a new sample.
type Event int

const (
	Appended  Event = iota
	Restarted       // the process start time changed: history restarted
	Reset           // a counter fell without a restart: counted from zero
	Skipped         // at was not after the newest sample: nothing kept
)

// Add records a scrape taken at at. A changed process start time means the
// server restarted: the history starts over from this sample, since no
// window may compare across a restart.
func (h *History) Add(s *snapshot.Snapshot, at time.Time) Event {
	prev := h.Newest()
	if prev != nil && !at.After(prev.At) {
		return Skipped
	}
	smp := &Sample{At: at, Start: s.StartTime(), StartToken: s.StartToken, gpu: s.GPU}
	if w := waitingOf(s); w != nil {
		smp.waiting, smp.hasWaiting = *w, true
	}
	ev := Appended
	if prev != nil && (restarted(prev.Start, smp.Start) || tokenChanged(prev, smp)) {
		h.old, h.recent = nil, nil
		h.ResetAt = time.Time{}
		// When it restarted is the new start, where that is a time this
		// process can have started at (llama.cpp's header is no clock).
		start, _ := s.Start()
		h.RestartedAt = time.Unix(0, int64(start*1e9))
		h.RestartUnknown = start <= 0
		if start <= 0 || h.RestartedAt.After(at) {
			// No start time (a changed start token), or the server's clock
			// runs ahead of ours: it restarted at the latest by now.
			h.RestartedAt = at
		}
		prev, ev = nil, Restarted
	}
	if h.fold(smp, prev, s) && ev == Appended {
		h.ResetAt, ev = at, Reset
	}
	smp.sample(prev, s)
	h.addPoint(prev, smp, s)
	h.rows = supported(s)
	if h.Len()+1 < MinSampled {
		h.rows &^= sampledRows // no window can hold enough scrapes yet
	}
	h.recent = append(h.recent, smp)
	h.thin(at)
	return ev
}

// sample counts the scrape s in the running tallies of scrapes that read
// the running gauge and found a request running.
func (smp *Sample) sample(prev *Sample, s *snapshot.Snapshot) {
	if prev != nil {
		smp.sampled = prev.sampled
	}
	if v, ok := s.Scalar(snapshot.RequestsProcessing); ok {
		smp.sampled.Scrapes++
		if v > 0 {
			smp.sampled.Busy++
		}
	}
}

// tokenChanged reports a restart seen only in the start header's raw value,
// when neither sample has a real start time (llama.cpp's header is a
// monotonic clock: useless as a time, but new after every restart).
func tokenChanged(prev, cur *Sample) bool {
	return prev.Start <= 0 && cur.Start <= 0 && prev.StartToken != "" && cur.StartToken != "" && prev.StartToken != cur.StartToken
}

// restarted compares two process start times; unknown (0) never counts, and
// sub-second differences are float noise of one process's own start.
func restarted(a, b float64) bool {
	return a > 0 && b > 0 && math.Abs(a-b) >= 1
}

// fold fills smp from the scrape s, carrying running totals on from prev;
// it reports whether the server's counters were reset.
//
// A server's counters live and die together: when any of them falls (a
// counter, or a histogram's buckets), the engine that kept them started
// again, and every counter counts from zero, its increase since prev being
// its new value. Folding each counter on its own would subtract the old
// process's totals from the new one's wherever the new process has already
// passed them (a restarted llama.cpp's token counters rising past the old
// values while its seconds counters fell).
func (h *History) fold(smp, prev *Sample, s *snapshot.Snapshot) (reset bool) {
	sc := h.scrapeOf(s)
	if prev != nil {
		reset = sc.fellSince(prev)
		smp.resets = prev.resets
		if reset {
			smp.resets++
		}
	}
	smp.foldCounters(prev, &sc, reset)
	smp.foldHists(prev, &sc, reset)
	return reset
}

// scraped is what one scrape says of the counters and histograms a Sample
// keeps: val and ok indexed as the history's names (ok false for a
// counter absent or negative), hist[i] nil for a histogram absent.
type scraped struct {
	val  []float64
	ok   []bool
	hist [nHists]*histogram.Histogram
}

// scrapeOf reads every counter a window holds (analysis.IsWindowCounter:
// the rows' and those the windowed notes read) and the rows' histograms
// from s, giving a name first seen its index.
func (h *History) scrapeOf(s *snapshot.Snapshot) scraped {
	var sc scraped
	read := func(m map[string]float64) {
		for name, v := range m {
			if !analysis.IsWindowCounter(name) {
				continue
			}
			i, known := h.index[name]
			if !known {
				if h.index == nil {
					h.index = map[string]int{}
				}
				i = len(h.names)
				h.index[name] = i
				h.names = append(h.names, name)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				continue
			}
			for len(sc.val) <= i {
				sc.val, sc.ok = append(sc.val, 0), append(sc.ok, false)
			}
			sc.val[i], sc.ok[i] = v, true
		}
	}
	read(s.Scalars)
	read(s.Extra)
	for len(sc.val) < len(h.names) {
		sc.val, sc.ok = append(sc.val, 0), append(sc.ok, false)
	}
	for i := range nHists {
		sc.hist[i] = s.Hist(histNames[i])
	}
	return sc
}

// fellSince reports whether any counter or histogram fell since prev:
// the server's counters were reset.
func (sc *scraped) fellSince(prev *Sample) bool {
	for i, c := range prev.c {
		// c.raw holds the last value seen, carried over scrapes that
		// lacked the counter.
		if sc.ok[i] && sc.val[i] < c.raw {
			return true
		}
	}
	for i := range nHists {
		if p, cur := prev.hists[i], sc.hist[i]; p != nil && cur != nil && !sameHist(p, cur) {
			if _, grew := cur.Sub(*p); !grew {
				return true
			}
		}
	}
	return false
}

// foldCounters sets each counter's running total: carried over when the
// scrape lacks it, else increased by what it rose since prev (from 0
// where prev never saw it: a counter a server creates at its first
// request), or by its whole value after a reset.
func (smp *Sample) foldCounters(prev *Sample, sc *scraped, reset bool) {
	smp.c = make([]count, len(sc.val))
	for i := range smp.c {
		var p count
		if prev != nil && i < len(prev.c) {
			p = prev.c[i]
		}
		if !sc.ok[i] {
			// Carry the total so the next present value continues it.
			smp.c[i] = count{total: p.total, raw: p.raw}
			continue
		}
		c := count{total: p.total, raw: sc.val[i], has: true}
		switch {
		case prev == nil:
			// The history begins here.
		case reset:
			c.total += sc.val[i]
		default:
			c.total += sc.val[i] - p.raw
		}
		smp.c[i] = c
	}
}

// foldHists keeps each histogram as scraped, or carries the last one over
// a scrape that lacked it; a reset starts a new epoch (smp.resets), which
// no window may reach across.
func (smp *Sample) foldHists(prev *Sample, sc *scraped, reset bool) {
	for i, cur := range sc.hist {
		switch {
		case cur == nil:
			if prev != nil {
				smp.hists[i] = prev.hists[i]
			}
			continue
		case prev != nil && !reset && prev.hists[i] != nil && sameHist(prev.hists[i], cur):
			// Idle: share the previous copy instead of storing another.
			smp.hists[i] = prev.hists[i]
		default:
			smp.hists[i] = cloneHist(cur)
		}
		smp.hhas[i] = true
	}
}

func cloneHist(h *histogram.Histogram) *histogram.Histogram {
	c := *h
	c.Buckets = append([]histogram.Bucket(nil), h.Buckets...)
	return &c
}

func sameHist(a, b *histogram.Histogram) bool {
	if a.Count != b.Count || a.Sum != b.Sum || len(a.Buckets) != len(b.Buckets) {
		return false
	}
	for i := range a.Buckets {
		if a.Buckets[i] != b.Buckets[i] {
			return false
		}
	}
	return true
}

// thin moves samples older than FullResolution into the thinned part,
// keeping one per Thinned, and drops what no window can reach.
func (h *History) thin(now time.Time) {
	for len(h.recent) > 1 && now.Sub(h.recent[0].At) > FullResolution {
		s := h.recent[0]
		h.recent[0] = nil
		h.recent = h.recent[1:]
		if n := len(h.old); n == 0 || s.At.Sub(h.old[n-1].At) >= Thinned {
			h.old = append(h.old, s)
		}
	}
	if h.retain <= 0 {
		return
	}
	// Drop beyond the retention, but keep the newest sample at least the
	// longest window old: with a coarse or jittery interval it can sit just
	// past the cut, and the longest window needs it as its baseline.
	for h.Len() > 1 && now.Sub(h.At(0).At) > h.retain && now.Sub(h.At(1).At) >= h.longest {
		if len(h.old) > 0 {
			h.old[0] = nil
			h.old = h.old[1:]
		} else {
			h.recent[0] = nil
			h.recent = h.recent[1:]
		}
	}
}

// baseline returns the index of the newest sample at least d older than
// the newest one, or -1.
func (h *History) baseline(d time.Duration) int {
	n := h.Len()
	if n < 2 {
		return -1
	}
	t := h.At(n - 1).At.Add(-d)
	// First index whose time is after t; the one before it is the answer.
	i := sort.Search(n-1, func(i int) bool { return h.At(i).At.After(t) })
	return i - 1
}

// delta is the increase from sample b to sample n, a later one, of every
// counter and histogram n carries: a counter b did not have counts from
// zero (it was created after b: vLLM's at the first request), as does a
// histogram b never saw; one n lacks has no increase.
func (h *History) delta(b, n *Sample) Delta {
	d := Delta{
		Seconds:  n.At.Sub(b.At).Seconds(),
		Counters: make(map[string]float64, len(n.c)),
		Reset:    n.resets != b.resets,
		Sampled:  Sampling{Busy: n.sampled.Busy - b.sampled.Busy, Scrapes: n.sampled.Scrapes - b.sampled.Scrapes},
	}
	for i, c := range n.c {
		if !c.has {
			continue
		}
		base := 0.0
		if i < len(b.c) {
			base = b.c[i].total
		}
		d.Counters[h.names[i]] = c.total - base
	}
	for i, name := range histNames {
		cur, prev := n.hists[i], b.hists[i]
		if !n.hhas[i] || n.resets != b.resets {
			continue
		}
		inc := *cur
		if prev != nil {
			var ok bool
			if inc, ok = cur.Sub(*prev); !ok {
				continue
			}
		}
		if d.Hists == nil {
			d.Hists = make(map[string]histogram.Histogram, nHists)
		}
		d.Hists[name] = inc
	}
	return d
}
