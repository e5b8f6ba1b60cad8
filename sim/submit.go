package sim

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// Segment is a run of prompt tokens with one identity: two prompts that
// start with the same segments share those pages of the prefix cache, as
// on a real server. A caller derives ID from the content (a hash of a
// message); IDs are kept apart from the workload's own.
type Segment struct {
	ID     uint64
	Tokens int
}

// submittedID marks the segment IDs of submitted prompts, so that they
// never collide with the workload's own (system prompt, documents, fresh
// text below 2^41).
const submittedID = 1 << 63

// Job is a request given to [Sim.Submit]: its progress, readable from any
// goroutine while the simulation runs it.
type Job struct {
	s       *Sim
	r       *request
	changed chan struct{} // signalled (never blocking) on every change

	mu        sync.Mutex
	generated int
	done      bool
	cancelled bool
	g         exporter.Generation
}

// Progress is a job's state.
type Progress struct {
	// Generated is how many answer tokens exist so far (the first comes at
	// the end of prefill).
	Generated int
	// Done is true once the answer is complete; Generation then holds the
	// request's figures exactly as the simulator recorded them.
	Done       bool
	Generation exporter.Generation
	// Cancelled is true once Cancel took the request out.
	Cancelled bool
}

// Submit adds a request from outside the workload, arriving now (at the
// virtual clock's present): a prompt of the given segments and an answer
// of output tokens. It is queued, admitted, prefilled and decoded like any
// other request, recorded into the Recorder when it finishes, and counted
// in Totals. A request that cannot fit the model's context is an error.
func (s *Sim) Submit(prompt []Segment, output int) (*Job, error) {
	n := 0
	segs := make([]seg, 0, len(prompt)+1)
	for _, p := range prompt {
		if p.Tokens < 1 {
			continue
		}
		if p.Tokens > math.MaxInt32 || n > math.MaxInt32 {
			return nil, errors.New("sim: the prompt is too long")
		}
		n += p.Tokens
		segs = append(segs, seg{id: p.ID | submittedID, n: p.Tokens})
	}
	if n < 1 {
		return nil, errors.New("sim: the prompt is empty")
	}
	if output < 1 {
		return nil, fmt.Errorf("sim: a request must generate at least one token, got %d", output)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n+output > s.cfg.MaxSeqLen {
		return nil, fmt.Errorf("sim: %d prompt tokens and %d to generate exceed the model's context of %d", n, output, s.cfg.MaxSeqLen)
	}
	s.wl.nextID++
	segs = append(segs, seg{id: s.wl.nextID, n: output}) // the answer: new text
	j := &Job{s: s, changed: make(chan struct{}, 1)}
	j.r = &request{segs: segs, prompt: n, output: output, arrival: s.clock, user: -1, ext: j}
	s.submitted = append(s.submitted, j.r)
	return j, nil
}

// Changed is signalled after the job's progress changes; read Progress
// then. Changes between two reads are signalled once.
func (j *Job) Changed() <-chan struct{} { return j.changed }

// Progress is the job's state now.
func (j *Job) Progress() Progress {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Progress{Generated: j.generated, Done: j.done, Generation: j.g, Cancelled: j.cancelled}
}

// Cancel takes the request out of the simulation, wherever it is (not yet
// arrived, queued, or running, whose pages are released): a client that
// went away. It is not recorded as a generation; Totals.Cancelled counts
// it. A finished job is left as it is.
func (j *Job) Cancel() {
	s := j.s
	s.mu.Lock()
	defer s.mu.Unlock()
	j.mu.Lock()
	if j.done || j.cancelled {
		j.mu.Unlock()
		return
	}
	j.cancelled = true
	j.mu.Unlock()
	j.signal()
	s.cancel(j.r)
}

func (j *Job) signal() {
	select {
	case j.changed <- struct{}{}:
	default:
	}
}

// progress and finish are called by the simulation (with its lock held);
// they do nothing for the workload's own requests.
func (j *Job) progress(generated int) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.generated = generated
	j.mu.Unlock()
	j.signal()
}

func (j *Job) finish(g exporter.Generation) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.generated, j.done, j.g = g.GeneratedTokens, true, g
	j.mu.Unlock()
	j.signal()
}

// cancel removes r from wherever it is.
func (s *Sim) cancel(r *request) {
	s.t.Cancelled++
	for i, x := range s.submitted {
		if x == r {
			s.submitted = append(s.submitted[:i], s.submitted[i+1:]...)
			return
		}
	}
	for i := s.qhead; i < len(s.queue); i++ {
		if s.queue[i] == r {
			copy(s.queue[i:], s.queue[i+1:])
			s.queue[len(s.queue)-1] = nil
			s.queue = s.queue[:len(s.queue)-1]
			return
		}
	}
	for i, j := range s.active {
		if j.req != r {
			continue
		}
		if j.pos < r.prompt {
			s.prefilling--
		}
		for k := len(j.pages) - 1; k >= 0; k-- {
			s.kv.unref(j.pages[k])
		}
		last := len(s.active) - 1
		copy(s.active[i:], s.active[i+1:])
		s.active[last] = nil
		s.active = s.active[:last]
		return
	}
}

// nextArrival is when the next request arrives, the workload's or a
// submitted one.
func (s *Sim) nextArrival() time.Duration {
	next := s.wl.next()
	if len(s.submitted) > 0 {
		next = min(next, s.submitted[0].arrival)
	}
	return next
}
