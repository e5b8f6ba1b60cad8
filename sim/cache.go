package sim

// This file holds the three caches: VRAM KV pages, the RAM offload cache and
// the recurrent checkpoints. Each keeps an LRU as an intrusive doubly linked
// list over a slice (indices, not pointers: no allocation per operation).

const none = -1

// lru is a list of node indices, least recently used at head.
type lru struct {
	prev, next []int32
	head, tail int32
	n          int
}

func newLRU(size int) lru {
	l := lru{prev: make([]int32, size), next: make([]int32, size), head: none, tail: none}
	return l
}

func (l *lru) pushTail(i int32) {
	l.prev[i], l.next[i] = l.tail, none
	if l.tail != none {
		l.next[l.tail] = i
	} else {
		l.head = i
	}
	l.tail = i
	l.n++
}

func (l *lru) remove(i int32) {
	p, n := l.prev[i], l.next[i]
	if p != none {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n != none {
		l.prev[n] = p
	} else {
		l.tail = p
	}
	l.n--
}

func (l *lru) touch(i int32) {
	if l.tail != i {
		l.remove(i)
		l.pushTail(i)
	}
}

// hashing: pages are identified by a hash chained over every token before
// and inside them, computed from segment identities (see seg).

func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// pageHashes fills dst with the chained hash of each full page of segs.
func pageHashes(segs []seg, pageSize int, dst []uint64) {
	h := uint64(0x5eed)
	si, off := 0, 0
	for p := range dst {
		for need := pageSize; need > 0; {
			s := segs[si]
			take := min(need, s.n-off)
			h = mix(h, s.id)
			h = mix(h, uint64(off)<<32|uint64(take))
			off += take
			need -= take
			if off == s.n {
				si, off = si+1, 0
			}
		}
		h = mix(h, 0x9a6e) // page boundary
		dst[p] = h
	}
}

// kvCache is the paged VRAM KV cache. A page is free (no content),
// referenced by running jobs, or cached: registered under its hash, held by
// nobody, kept in the LRU until evicted.
type kvCache struct {
	hash       []uint64
	refs       []int32
	registered []bool
	table      map[uint64]int32
	free       []int32
	lru        lru
	referenced int
	// evicted is called with the hash of a registered page leaving VRAM.
	evicted func(h uint64)
}

func newKV(pages int, evicted func(uint64)) *kvCache {
	kv := &kvCache{
		hash:       make([]uint64, pages),
		refs:       make([]int32, pages),
		registered: make([]bool, pages),
		table:      make(map[uint64]int32, pages),
		free:       make([]int32, pages),
		lru:        newLRU(pages),
		evicted:    evicted,
	}
	for i := range kv.free {
		kv.free[i] = int32(pages - 1 - i) // pop from the end: page 0 first
	}
	return kv
}

// available is how many pages an allocation could get: free ones plus
// cached ones it may evict.
func (kv *kvCache) available() int { return len(kv.free) + kv.lru.n }

func (kv *kvCache) ref(i int32) {
	if kv.refs[i] == 0 {
		if kv.registered[i] {
			kv.lru.remove(i)
		}
		kv.referenced++
	}
	kv.refs[i]++
}

func (kv *kvCache) unref(i int32) {
	kv.refs[i]--
	if kv.refs[i] > 0 {
		return
	}
	kv.referenced--
	if kv.registered[i] {
		kv.lru.pushTail(i)
	} else {
		kv.free = append(kv.free, i)
	}
}

// alloc returns an unreferenced page with no content, evicting the least
// recently used cached page when none is free. The caller checks available.
func (kv *kvCache) alloc() int32 {
	if n := len(kv.free); n > 0 {
		i := kv.free[n-1]
		kv.free = kv.free[:n-1]
		return i
	}
	i := kv.lru.head
	kv.lru.remove(i)
	h := kv.hash[i]
	delete(kv.table, h)
	kv.registered[i] = false
	kv.evicted(h)
	return i
}

// register makes page i findable under h, unless another page already holds
// h (two jobs computed the same prefix at once); then i stays private.
func (kv *kvCache) register(i int32, h uint64) bool {
	if _, dup := kv.table[h]; dup {
		return false
	}
	kv.table[h] = i
	kv.hash[i] = h
	kv.registered[i] = true
	return true
}

// ramCache is the system-RAM offload cache: page images keyed by hash.
type ramCache struct {
	cfg   OffloadConfig
	hash  []uint64
	table map[uint64]int32
	lru   lru
	fresh int // slots used at least once; slot fresh is the next never-used one
	// dropped is called with the hash of a page evicted from RAM.
	dropped func(h uint64)

	stores, deduped, restores, evictions, cold uint64
}

func newRAM(c OffloadConfig, dropped func(uint64)) *ramCache {
	return &ramCache{
		cfg:     c,
		hash:    make([]uint64, c.MaxSlots),
		table:   make(map[uint64]int32, c.MaxSlots),
		lru:     newLRU(c.MaxSlots),
		dropped: dropped,
	}
}

func (r *ramCache) has(h uint64) bool { _, ok := r.table[h]; return ok }

func (r *ramCache) touch(h uint64) {
	if i, ok := r.table[h]; ok {
		r.lru.touch(i)
	}
}

// store copies a page evicted from VRAM into RAM at virtual time t (seconds)
// and returns the engine time it cost: the copy, plus synchronous pinning
// when the slot it needs has not been pinned in the background yet.
func (r *ramCache) store(h uint64, t float64) float64 {
	if i, ok := r.table[h]; ok {
		r.deduped++
		r.lru.touch(i)
		return 0
	}
	var i int32
	cost := float64(r.cfg.SlotBytes) / r.cfg.Bandwidth
	if r.lru.n == r.cfg.MaxSlots {
		i = r.lru.head
		r.lru.remove(i)
		old := r.hash[i]
		delete(r.table, old)
		r.evictions++
		r.dropped(old)
	} else {
		i = int32(r.fresh)
		r.fresh++
		// The background pinner pins slots in order, PinRate per second
		// from process start; a slot it has not reached is pinned now.
		if pinned := r.cfg.PinRate * t; float64(i) >= pinned {
			r.cold++
			cost += float64(r.cfg.SlotBytes) / r.cfg.PinBandwidth
		}
	}
	r.hash[i] = h
	r.table[h] = i
	r.lru.pushTail(i)
	r.stores++
	return cost
}

// restore copies a held page back to VRAM and returns the copy's cost.
func (r *ramCache) restore(h uint64) float64 {
	r.restores++
	r.lru.touch(r.table[h])
	return float64(r.cfg.SlotBytes) / r.cfg.Bandwidth
}

// ckptCache holds recurrent-state checkpoints, each anchored to the page
// ending the prefix it was taken after.
type ckptCache struct {
	cfg      RecurrentConfig
	hash     []uint64
	stranded []bool // anchor page gone from VRAM and RAM
	table    map[uint64]int32
	lru      lru
	free     []int32
	bytes    int64

	taken, evictions, strandedEv, liveKV, pruned, strandedByKV uint64
}

func newCkpt(c RecurrentConfig) *ckptCache {
	n := int(c.MaxBytes / c.CheckpointBytes)
	ck := &ckptCache{
		cfg:      c,
		hash:     make([]uint64, n),
		stranded: make([]bool, n),
		table:    make(map[uint64]int32, n),
		lru:      newLRU(n),
		free:     make([]int32, n),
	}
	for i := range ck.free {
		ck.free[i] = int32(n - 1 - i)
	}
	return ck
}

func (ck *ckptCache) has(h uint64) bool { _, ok := ck.table[h]; return ok }

// take stores a checkpoint anchored at h, evicting the least recently used
// ones beyond the budget; present says whether an anchor page is still
// cached anywhere, which decides what an eviction cost.
func (ck *ckptCache) take(h uint64, present func(uint64) bool) {
	if i, ok := ck.table[h]; ok {
		ck.stranded[i] = false
		ck.lru.touch(i)
		return
	}
	for len(ck.free) == 0 {
		i := ck.lru.head
		ck.evictions++
		if present(ck.hash[i]) {
			ck.liveKV++
		} else {
			ck.strandedEv++
		}
		ck.drop(i)
	}
	i := ck.free[len(ck.free)-1]
	ck.free = ck.free[:len(ck.free)-1]
	ck.hash[i] = h
	ck.stranded[i] = false
	ck.table[h] = i
	ck.lru.pushTail(i)
	ck.bytes += ck.cfg.CheckpointBytes
	ck.taken++
}

func (ck *ckptCache) drop(i int32) {
	ck.lru.remove(i)
	delete(ck.table, ck.hash[i])
	ck.free = append(ck.free, i)
	ck.bytes -= ck.cfg.CheckpointBytes
}

// anchorLost marks the checkpoint at h unresumable: its anchor page left the
// last cache that held it.
func (ck *ckptCache) anchorLost(h uint64) {
	if i, ok := ck.table[h]; ok && !ck.stranded[i] {
		ck.stranded[i] = true
		ck.strandedByKV++
	}
}

// anchorBack clears the mark when the anchor page is computed again.
func (ck *ckptCache) anchorBack(h uint64) {
	if i, ok := ck.table[h]; ok {
		ck.stranded[i] = false
	}
}

// prune reclaims every unresumable checkpoint; the engine does it while idle.
func (ck *ckptCache) prune() {
	for i := ck.lru.head; i != none; {
		next := ck.lru.next[i]
		if ck.stranded[i] {
			ck.pruned++
			ck.drop(i)
		}
		i = next
	}
}
