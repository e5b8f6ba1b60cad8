package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// A seg is a run of tokens with one identity: the same id and offset always
// stand for the same tokens, so two prompts share a page exactly when they
// share the segments behind and inside it.
type seg struct {
	id uint64
	n  int
}

// Segment ids: the system prompt, then one per document, then fresh content.
const (
	systemID    = 1
	documentID0 = 2
	freshID0    = 1 << 40
)

// request is one generation as the workload produced it.
type request struct {
	segs    []seg // the prompt's segments, then the answer as the last one
	prompt  int   // P
	output  int   // G
	arrival time.Duration
	user    int  // closed-loop user, -1 for an open-loop request
	ext     *Job // the caller's handle on a request given to Submit; nil for the workload's own
}

// user is one closed-loop client and the conversation it is in.
type user struct {
	conv      []seg // the conversation so far (prompt and answer of every turn)
	tokens    int
	turnsLeft int
}

// event is a closed-loop user's next request time.
type event struct {
	at   time.Duration
	user int
}

// workload draws requests and their arrival times.
type workload struct {
	w        *Workload
	maxSeq   int
	rng      *rand.Rand
	nextID   uint64
	users    []user
	events   []event // min-heap on (at, user)
	nextOpen time.Duration
}

func newWorkload(c *Config, rng *rand.Rand) *workload {
	wl := &workload{w: &c.Workload, maxSeq: c.MaxSeqLen, rng: rng, nextID: freshID0}
	if c.Workload.Users > 0 {
		wl.users = make([]user, c.Workload.Users)
		for u := range wl.users {
			wl.push(event{at: wl.think(), user: u})
		}
	} else {
		wl.nextOpen = wl.interArrival()
	}
	return wl
}

// maxDraw bounds one drawn interval (36 years), so that sums of them cannot
// overflow a Duration.
const maxDraw = time.Duration(1) << 60

// seconds converts a float number of seconds to a Duration.
func seconds(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	if !(ns < float64(maxDraw)) { // also catches NaN
		return maxDraw
	}
	return time.Duration(ns)
}

func (wl *workload) think() time.Duration {
	return seconds(wl.rng.ExpFloat64() * wl.w.ThinkTime.Seconds())
}

func (wl *workload) interArrival() time.Duration {
	return seconds(wl.rng.ExpFloat64() / wl.w.Rate)
}

// draw picks a length log-uniformly from s.
func (wl *workload) draw(s Span) int {
	if s.Min == s.Max {
		return s.Min
	}
	lo, hi := math.Log(float64(s.Min)), math.Log(float64(s.Max)+1)
	n := int(math.Exp(lo + wl.rng.Float64()*(hi-lo)))
	return min(max(n, s.Min), s.Max)
}

// turns draws a conversation's length: geometric with mean Turns.
func (wl *workload) turns() int {
	p := 1 - 1/wl.w.Turns // probability of one more turn
	n := 1
	for n < 1<<20 && wl.rng.Float64() < p {
		n++
	}
	return n
}

func (wl *workload) fresh(n int) seg {
	wl.nextID++
	return seg{id: wl.nextID, n: n}
}

// next is when the next request arrives.
func (wl *workload) next() time.Duration {
	if wl.w.Off {
		return math.MaxInt64
	}
	if wl.users != nil {
		if len(wl.events) == 0 {
			return math.MaxInt64 // every user is waiting for an answer
		}
		return wl.events[0].at
	}
	return wl.nextOpen
}

// pop produces the request arriving at next().
func (wl *workload) pop() *request {
	if wl.users == nil {
		r := wl.open()
		r.arrival = wl.nextOpen
		wl.nextOpen += wl.interArrival()
		return r
	}
	e := wl.popEvent()
	r := wl.turn(e.user)
	r.arrival = e.at
	return r
}

// open builds a single-turn request: system prefix, maybe a document, a
// fresh question.
func (wl *workload) open() *request {
	w := wl.w
	segs := make([]seg, 0, 4)
	if w.SystemTokens > 0 {
		segs = append(segs, seg{id: systemID, n: w.SystemTokens})
	}
	if w.Documents > 0 {
		segs = append(segs, seg{id: documentID0 + uint64(wl.rng.IntN(w.Documents)), n: w.DocumentTokens})
	}
	u, g := wl.draw(w.UserTokens), wl.draw(w.OutputTokens)
	p := w.SystemTokens + u
	if w.Documents > 0 {
		p += w.DocumentTokens
	}
	segs = append(segs, wl.fresh(u), wl.fresh(g))
	return &request{segs: segs, prompt: p, output: g, user: -1}
}

// turn builds user u's next turn: the conversation so far plus a new
// message, or the first turn of a new conversation.
func (wl *workload) turn(u int) *request {
	us := &wl.users[u]
	mu, g := wl.draw(wl.w.UserTokens), wl.draw(wl.w.OutputTokens)
	if us.turnsLeft == 0 || us.tokens+mu+g > wl.maxSeq {
		us.conv = us.conv[:0]
		us.tokens = 0
		if wl.w.SystemTokens > 0 {
			us.conv = append(us.conv, seg{id: systemID, n: wl.w.SystemTokens})
			us.tokens = wl.w.SystemTokens
		}
		us.turnsLeft = wl.turns()
	}
	us.turnsLeft--
	segs := make([]seg, 0, len(us.conv)+2)
	segs = append(segs, us.conv...)
	segs = append(segs, wl.fresh(mu), wl.fresh(g))
	return &request{segs: segs, prompt: us.tokens + mu, output: g, user: u}
}

// done records a finished turn in its conversation and schedules the user's
// next request after a think time.
func (wl *workload) done(r *request, at time.Duration) {
	if r.user < 0 {
		return
	}
	us := &wl.users[r.user]
	us.conv = append(us.conv[:0], r.segs...)
	us.tokens = r.prompt + r.output
	wl.push(event{at: at + wl.think(), user: r.user})
}

func (wl *workload) less(i, j int) bool {
	a, b := wl.events[i], wl.events[j]
	return a.at < b.at || (a.at == b.at && a.user < b.user)
}

func (wl *workload) push(e event) {
	wl.events = append(wl.events, e)
	for i := len(wl.events) - 1; i > 0; {
		p := (i - 1) / 2
		if !wl.less(i, p) {
			break
		}
		wl.events[i], wl.events[p] = wl.events[p], wl.events[i]
		i = p
	}
}

func (wl *workload) popEvent() event {
	h := wl.events
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	wl.events = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && wl.less(l, m) {
			m = l
		}
		if r < n && wl.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		wl.events[i], wl.events[m] = wl.events[m], wl.events[i]
		i = m
	}
	return e
}
