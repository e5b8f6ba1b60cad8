package sim

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// Recorder receives every finished generation; *exporter.Metrics is one.
type Recorder interface {
	RecordGeneration(exporter.Generation)
}

// Independent random streams, so that turning the drafter on does not change
// the requests a seed produces.
const (
	streamWorkload = 0x776f726b6c6f6164
	streamDraft    = 0x6472616674
)

// Sim is a simulated inference engine. It implements [exporter.Engine] and
// is safe to read (Live, Totals, Now) while another goroutine runs it.
type Sim struct {
	mu    sync.Mutex
	cfg   Config
	rec   Recorder
	epoch time.Time
	now   time.Duration // time of the last event (step end, arrival)
	clock time.Duration // how far the clock was run; ≥ now

	wl    *workload
	draft *rand.Rand

	queue      []*request
	qhead      int
	active     []*job // admission order
	prefilling int
	lastFill   bool       // the last step was a prefill chunk
	stall      float64    // transfer and pinning time owed by the next step, seconds
	idlePruned bool       // checkpoints already pruned in this idle period
	hashes     []uint64   // scratch for page hashes
	finished   []*job     // scratch for a step's finished jobs
	kv         *kvCache   // VRAM pages
	ram        *ramCache  // nil without offload
	ck         *ckptCache // nil on a pure transformer
	kvOnly     uint64     // pages with valid K/V re-prefilled for lack of a checkpoint
	t          Totals     // ground truth
	submitted  []*request // requests given to Submit that have not arrived yet, in arrival order
}

// job is a request admitted to the batch.
type job struct {
	req        *request
	hashes     []uint64 // full pages of prompt + answer
	pages      []int32  // pages held, in sequence order
	cached     int      // prompt tokens served from cache (C)
	pos        int      // prompt tokens present so far (cached or computed)
	nextReg    int      // pages below this are registered or were tried
	generated  int
	start      time.Duration
	firstToken time.Duration
	steps      int // decode steps this job took part in
	drafted    int
	accepted   int
}

// New builds a simulator for cfg; it starts at virtual time 0 with an empty
// cache and no requests.
func New(cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone() // the caller's feature configs may change after New
	s := &Sim{cfg: cfg, epoch: cfg.Epoch}
	if s.epoch.IsZero() {
		s.epoch = DefaultEpoch
	}
	s.wl = newWorkload(&s.cfg, rand.New(rand.NewPCG(cfg.Seed, streamWorkload)))
	s.draft = rand.New(rand.NewPCG(cfg.Seed, streamDraft))
	s.kv = newKV(cfg.KVPages, s.kvEvicted)
	if cfg.Offload != nil {
		s.ram = newRAM(*cfg.Offload, s.ramDropped)
	}
	if cfg.Recurrent != nil {
		s.ck = newCkpt(*cfg.Recurrent)
	}
	return s, nil
}

// SetRecorder sends every generation finished from now on to r (nil stops
// recording). It is separate from New because the exporter needs the Sim
// as its Engine before the Sim can record into it.
func (s *Sim) SetRecorder(r Recorder) {
	s.mu.Lock()
	s.rec = r
	s.mu.Unlock()
}

// Config returns a copy of the configuration the simulator runs.
func (s *Sim) Config() Config { return s.cfg.clone() }

// Elapsed is how far the virtual clock has run.
func (s *Sim) Elapsed() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

// Now is the virtual clock as wall time: the epoch plus Elapsed.
func (s *Sim) Now() time.Time { return s.epoch.Add(s.Elapsed()) }

// Epoch is the wall time virtual time 0 stands for: the simulated process's
// start.
func (s *Sim) Epoch() time.Time { return s.epoch }

// Run advances the virtual clock by d.
func (s *Sim) Run(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runUntil(s.clock + d)
}

// RunUntil advances the virtual clock to t (time since the epoch); an
// earlier t does nothing. The outcome does not depend on how a span is
// split into calls: running to 10m once or in a thousand steps is the same
// run.
func (s *Sim) RunUntil(t time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runUntil(t)
}

func (s *Sim) runUntil(t time.Duration) {
	if t <= s.clock {
		return
	}
	s.clock = t
	for {
		s.arrive()
		s.admit()
		if len(s.active) == 0 {
			if s.ck != nil && !s.idlePruned {
				s.ck.prune()
				s.idlePruned = true
			}
			next := s.nextArrival()
			if next > t {
				s.now = t
				return
			}
			s.now = next
			continue
		}
		d, fill := s.plan()
		// A step that would end past t has not happened yet; it is planned
		// again from the same state on the next call.
		if s.now+d > t {
			return
		}
		s.now += d
		s.stall = 0
		s.t.Busy += d
		if fill != nil {
			s.t.PrefillBusy += d
		} else {
			s.t.DecodeBusy += d
		}
		if fill != nil {
			s.prefill(fill)
		} else {
			s.decode()
		}
		s.lastFill = fill != nil
	}
}

// arrive moves requests that have arrived by now into the queue.
func (s *Sim) arrive() {
	for {
		if len(s.submitted) > 0 && s.submitted[0].arrival <= s.now && s.submitted[0].arrival <= s.wl.next() {
			s.queue = append(s.queue, s.submitted[0])
			s.submitted[0] = nil
			s.submitted = s.submitted[1:]
		} else if s.wl.next() <= s.now {
			s.queue = append(s.queue, s.wl.pop())
		} else {
			break
		}
		s.t.Arrived++
	}
	s.t.PeakPending = max(s.t.PeakPending, len(s.queue)-s.qhead)
}

// admit starts queued requests in FIFO order while the batch and the KV
// cache have room; the head of the queue blocks the rest.
func (s *Sim) admit() {
	for len(s.active) < s.cfg.MaxBatch && s.qhead < len(s.queue) {
		if !s.tryAdmit(s.queue[s.qhead]) {
			break
		}
		s.queue[s.qhead] = nil
		s.qhead++
		s.idlePruned = false
	}
	if s.qhead == len(s.queue) {
		s.queue, s.qhead = s.queue[:0], 0
	} else if s.qhead > 1024 && s.qhead*2 > len(s.queue) {
		n := copy(s.queue, s.queue[s.qhead:])
		clear(s.queue[n:])
		s.queue, s.qhead = s.queue[:n], 0
	}
	s.t.PeakActive = max(s.t.PeakActive, len(s.active))
	s.t.PeakReferencedPages = max(s.t.PeakReferencedPages, s.kv.referenced)
}

// present reports whether a page is cached anywhere it could be reused from.
func (s *Sim) present(h uint64) bool {
	if _, ok := s.kv.table[h]; ok {
		return true
	}
	return s.ram != nil && s.ram.has(h)
}

func (s *Sim) kvEvicted(h uint64) {
	s.t.KVEvictions++
	if s.ram != nil {
		s.stall += s.ram.store(h, s.now.Seconds())
	}
	if s.ck != nil && !s.present(h) {
		s.ck.anchorLost(h)
	}
}

func (s *Sim) ramDropped(h uint64) {
	if s.ck == nil {
		return
	}
	if _, ok := s.kv.table[h]; !ok {
		s.ck.anchorLost(h)
	}
}

// tryAdmit looks the request's prompt up in the caches and reserves every
// page it will need (prompt and answer); it reports false, changing nothing,
// when the KV cache cannot hold it yet.
func (s *Sim) tryAdmit(r *request) bool {
	ps := s.cfg.PageSize
	n := s.cfg.pages(r.prompt + r.output)
	hashes := s.hashPages(r)
	chain, reuse := s.reusable(hashes, r.prompt)
	if !s.fits(hashes[:chain], n) {
		return false
	}
	pages := s.refCached(hashes[:chain], n)
	cached := s.restore(hashes[:reuse], pages)
	for i := range pages {
		if pages[i] == none {
			p := s.kv.alloc()
			s.kv.ref(p)
			pages[i] = p
		}
	}
	s.kvOnly += uint64(chain - reuse)

	j := &job{
		req:     r,
		hashes:  append([]uint64(nil), hashes...),
		pages:   pages,
		cached:  cached * ps,
		pos:     cached * ps,
		nextReg: cached,
		start:   s.now,
	}
	s.active = append(s.active, j)
	s.prefilling++
	return true
}

// hashPages hashes the request's full pages (prompt and answer) into the
// scratch slice s.hashes.
func (s *Sim) hashPages(r *request) []uint64 {
	full := (r.prompt + r.output) / s.cfg.PageSize
	if cap(s.hashes) < full {
		s.hashes = make([]uint64, full, full*2)
	}
	hashes := s.hashes[:full]
	pageHashes(r.segs, s.cfg.PageSize, hashes)
	return hashes
}

// reusable is the longest chain of prompt pages held in VRAM or RAM, and
// how much of it can be resumed from: all of it, or on a hybrid model only
// up to the last page with a checkpoint. At least one prompt token is
// always computed, to produce the first token's logits.
func (s *Sim) reusable(hashes []uint64, prompt int) (chain, reuse int) {
	maxReuse := (prompt - 1) / s.cfg.PageSize
	for chain < maxReuse && s.present(hashes[chain]) {
		chain++
	}
	reuse = chain
	if s.ck != nil {
		for reuse > 0 && !s.ck.has(hashes[reuse-1]) {
			reuse--
		}
	}
	return chain, reuse
}

// fits reports whether the KV cache can give a request of n pages what the
// chain of cached pages does not already hold in VRAM; idle pages of the
// chain count once, as held, not as free.
func (s *Sim) fits(chain []uint64, n int) bool {
	inVRAM, idle := 0, 0
	for _, h := range chain {
		if i, ok := s.kv.table[h]; ok {
			inVRAM++
			if s.kv.refs[i] == 0 {
				idle++
			}
		}
	}
	return n-inVRAM <= s.kv.available()-idle
}

// refCached returns n page slots with the chain's pages that are in VRAM
// referenced in place, and none elsewhere.
func (s *Sim) refCached(chain []uint64, n int) []int32 {
	pages := make([]int32, n)
	for i := range pages {
		pages[i] = none
	}
	for i, h := range chain {
		if p, ok := s.kv.table[h]; ok {
			s.kv.ref(p)
			pages[i] = p
		}
	}
	return pages
}

// restore copies the resumable pages held only in RAM back into VRAM, and
// returns how many leading pages are cached: fewer than len(reuse) when a
// store made to make room pushed a needed page out of RAM.
func (s *Sim) restore(reuse []uint64, pages []int32) (cached int) {
	if s.ram != nil {
		// Restores come first and their pages are freshened, so that the
		// stores this admission causes evict other pages from RAM.
		for i, h := range reuse {
			if pages[i] == none {
				s.ram.touch(h)
			}
		}
	}
	for i, h := range reuse {
		if pages[i] != none {
			continue
		}
		if !s.ram.has(h) { // pushed out by a store made room for this one
			return i
		}
		s.stall += s.ram.restore(h)
		p := s.kv.alloc()
		s.kv.ref(p)
		s.kv.register(p, h)
		if s.ck != nil {
			s.ck.anchorBack(h)
		}
		pages[i] = p
	}
	return len(reuse)
}

// plan picks the next step and its duration: a prefill chunk of the returned
// job, or a decode step when that is nil. Prefill chunks and decode steps
// alternate while both kinds of work wait, so neither starves.
func (s *Sim) plan() (time.Duration, *job) {
	decoding := len(s.active) - s.prefilling
	var d float64
	var fill *job
	if s.prefilling > 0 && (decoding == 0 || !s.lastFill) {
		fill = s.nextFill()
	}
	if fill != nil {
		tokens := min(s.cfg.ChunkSize, fill.req.prompt-fill.pos)
		d = s.cfg.ChunkOverhead.Seconds() + float64(tokens)/s.cfg.PrefillRate
	} else {
		d = s.cfg.DecodeBase.Seconds() + s.cfg.DecodePerJob.Seconds()*float64(decoding)
		if s.cfg.Draft != nil {
			d += s.cfg.Draft.TokenTime.Seconds() * float64(s.cfg.Draft.K)
		}
	}
	// Time must move, or a closed loop with no think time would spin.
	return max(seconds(d+s.stall), 1), fill
}

// nextFill is the oldest job still prefilling, nil when there is none.
func (s *Sim) nextFill() *job {
	for _, j := range s.active {
		if j.pos < j.req.prompt {
			return j
		}
	}
	return nil
}

// prefill computes one chunk of j's prompt.
func (s *Sim) prefill(j *job) {
	tokens := min(s.cfg.ChunkSize, j.req.prompt-j.pos)
	j.pos += tokens
	s.t.PrefillSteps++
	s.register(j, j.pos/s.cfg.PageSize)
	if j.pos < j.req.prompt {
		return
	}
	// The last chunk's logits give the first token.
	s.prefilling--
	j.generated = 1
	j.firstToken = s.now
	j.req.ext.progress(j.generated)
	if s.ck != nil {
		s.checkpoint(j, j.req.prompt)
	}
	if j.generated >= j.req.output {
		s.finishAll([]*job{j})
	}
}

// register makes the job's full pages below upTo findable by later prompts.
func (s *Sim) register(j *job, upTo int) {
	for ; j.nextReg < upTo; j.nextReg++ {
		p := j.pages[j.nextReg]
		if s.kv.registered[p] {
			continue
		}
		h := j.hashes[j.nextReg]
		if s.kv.register(p, h) && s.ck != nil {
			s.ck.anchorBack(h)
		}
	}
}

// checkpoint saves the recurrent state at the last page boundary at or
// before token n.
func (s *Sim) checkpoint(j *job, n int) {
	if b := n / s.cfg.PageSize; b > 0 {
		s.ck.take(j.hashes[b-1], s.present)
	}
}

// decode runs one decode step for every job past prefill: each emits one
// token, plus the drafter's accepted proposals.
func (s *Sim) decode() {
	s.t.DecodeSteps++
	dr := s.cfg.Draft
	done := s.finished[:0]
	for _, j := range s.active {
		if j.pos < j.req.prompt {
			continue
		}
		emit := 1
		if dr != nil {
			// Never propose past the answer's end.
			k := min(dr.K, j.req.output-j.generated-1)
			a := 0
			for a < k && s.draft.Float64() < dr.Alpha {
				a++
			}
			j.drafted += k
			j.accepted += a
			emit += a
		}
		j.steps++
		j.generated += emit
		j.req.ext.progress(min(j.generated, j.req.output))
		if j.generated >= j.req.output {
			done = append(done, j)
		}
	}
	s.finished = done
	if len(done) > 0 {
		s.finishAll(done)
	}
}

// finishAll retires finished jobs: their pages become cached, the recurrent
// state is checkpointed, and the generation is recorded.
func (s *Sim) finishAll(done []*job) {
	for _, j := range done {
		r := j.req
		total := r.prompt + r.output
		s.register(j, total/s.cfg.PageSize)
		if s.ck != nil {
			s.checkpoint(j, total)
		}
		// Release from the end, so a prefix outlives what follows it in the
		// LRU: a tail page is useless once the page before it is gone.
		for i := len(j.pages) - 1; i >= 0; i-- {
			s.kv.unref(j.pages[i])
		}
		s.record(j)
		s.wl.done(r, s.now)
	}
	k := 0
	for _, j := range s.active {
		if j.generated < j.req.output {
			s.active[k] = j
			k++
		}
	}
	clear(s.active[k:])
	s.active = s.active[:k]
}

func (s *Sim) record(j *job) {
	r := j.req
	g := exporter.Generation{
		PromptTokens:    r.prompt,
		CachedTokens:    j.cached,
		GeneratedTokens: r.output,
		Queue:           j.start - r.arrival,
		Prefill:         j.firstToken - j.start,
		Decode:          s.now - j.firstToken,
	}
	t := &s.t
	t.Requests++
	t.PromptTokens += int64(r.prompt)
	t.CachedTokens += int64(j.cached)
	t.GeneratedTokens += int64(r.output)
	t.Queue += g.Queue
	t.Prefill += g.Prefill
	t.Decode += g.Decode
	t.MaxPrompt = max(t.MaxPrompt, r.prompt)
	t.MaxGenerated = max(t.MaxGenerated, r.output)
	if s.cfg.Draft != nil {
		g.Draft = &exporter.DraftTally{Accepted: j.accepted, Rejected: j.drafted - j.accepted}
		t.DraftedRequests++
		t.Drafted += int64(j.drafted)
		t.Accepted += int64(j.accepted)
		t.JobDecodeSteps += int64(j.steps)
	}
	if s.rec != nil {
		s.rec.RecordGeneration(g)
	}
	r.ext.finish(g)
}

// Live reports the engine's state now, for the exporter's scrape.
func (s *Sim) Live() exporter.Live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live()
}

func (s *Sim) live() exporter.Live {
	l := exporter.Live{
		ActiveJobs:        len(s.active),
		PendingJobs:       len(s.queue) - s.qhead,
		PageSize:          s.cfg.PageSize,
		KVPages:           s.cfg.KVPages,
		KVReferencedPages: s.kv.referenced,
		KVOnlyPages:       s.kvOnly,
	}
	if s.ram != nil {
		r := s.ram
		l.Offload = &exporter.OffloadStats{
			Slots: r.lru.n, MaxSlots: r.cfg.MaxSlots, SlotBytes: r.cfg.SlotBytes,
			Stores: r.stores, DedupedStores: r.deduped, Restores: r.restores,
			Evictions: r.evictions, ColdAllocs: r.cold,
		}
	}
	if s.ck != nil {
		c := s.ck
		l.StrandedByKV = c.strandedByKV
		l.Recurrent = &exporter.RecurrentStats{
			Checkpoints: c.lru.n, Bytes: c.bytes, MaxBytes: c.cfg.MaxBytes,
			Evictions: c.evictions, StrandedEvictions: c.strandedEv,
			LiveKVEvictions: c.liveKV, Pruned: c.pruned,
		}
	}
	return l
}

// Totals is the simulator's own exact account of a run: the ground truth a
// report read from its metrics is checked against.
type Totals struct {
	Arrived   int64 // requests that arrived
	Requests  int64 // generations finished (and recorded)
	Cancelled int64 // submitted requests taken out by Job.Cancel before they finished

	PromptTokens    int64 // Σ prompt length P
	CachedTokens    int64 // Σ tokens served from the prefix cache C (VRAM hits and RAM restores)
	GeneratedTokens int64 // Σ answer length G

	Queue, Prefill, Decode  time.Duration // Σ per-request phase times
	MaxPrompt, MaxGenerated int           // largest P and G finished

	DraftedRequests int64 // requests served with the drafter
	Drafted         int64 // Σ proposed draft tokens
	Accepted        int64 // Σ accepted draft tokens
	JobDecodeSteps  int64 // Σ decode steps each drafted request took part in

	PrefillSteps, DecodeSteps int64         // engine steps of each kind
	Busy                      time.Duration // engine time spent in steps
	// PrefillBusy and DecodeBusy split Busy by the kind of step: what the
	// simulated GPU's power and activity follow (GPU).
	PrefillBusy, DecodeBusy time.Duration

	PeakActive, PeakPending, PeakReferencedPages int
	KVEvictions                                  int64 // cached pages evicted from VRAM

	KVOnlyPages, StrandedByKV uint64

	Offload   exporter.OffloadStats   // zero without offload
	Recurrent exporter.RecurrentStats // zero on a pure transformer
	// CheckpointsTaken counts checkpoints stored (not refreshes of one
	// already held).
	CheckpointsTaken uint64
}

// Totals returns the run's exact totals so far.
func (s *Sim) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.live()
	t := s.t
	t.KVOnlyPages = l.KVOnlyPages
	t.StrandedByKV = l.StrandedByKV
	if l.Offload != nil {
		t.Offload = *l.Offload
	}
	if l.Recurrent != nil {
		t.Recurrent = *l.Recurrent
		t.CheckpointsTaken = s.ck.taken
	}
	return t
}
