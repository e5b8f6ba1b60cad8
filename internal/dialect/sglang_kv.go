package dialect

import (
	"math"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// SGLang's KV cache: its pools, pages and the prefix cache's tiers.

// sglangKV sets the KV cache figures, which are the full-attention pool's:
// its use as full_token_usage (where published, else token_usage, said to
// be the fullest pool's for a hybrid model), the tokens running requests
// hold (kv_used_tokens; num_used_tokens only where it cannot be another
// pool's), the cached prefixes that can be freed and the free tokens, and
// its capacity; and, beside them, a hybrid model's other pools. haveMax
// reports whether the capacity was among them.
func sglangKV(p rankMapper) (haveMax bool) {
	pools := sglangHybridPools(p)
	full := p.fam(sgNames("full_token_usage")...)
	switch {
	case full != nil:
		p.kvRatio(full)
	default:
		if mf := p.fam(sgNames("token_usage")...); mf != nil {
			p.kvRatio(mf)
			if len(pools) > 0 {
				p.missing("full-attention KV use: this SGLang publishes only token_usage, the fuller of this hybrid model's pools (full-attention, SWA, mamba), which the KV cache figures are")
			}
		}
	}
	if !p.scalar(snapshot.KVCacheTokens, sgNames("kv_used_tokens")...) {
		// The larger of the full-attention and SWA pools' use: against the
		// full-attention pool's capacity only where there is no SWA pool.
		if _, swa := pools["swa"]; !swa {
			p.scalar(snapshot.KVCacheTokens, sgNames("num_used_tokens")...)
		}
	}
	p.scalar(snapshot.KVCacheEvictableTokens, sgNames("kv_evictable_tokens")...)
	p.scalar(snapshot.KVCacheFreeTokens, sgNames("kv_available_tokens")...)
	if full != nil {
		// Only where the KV cache figures are the full-attention pool's are
		// the other pools beside them.
		for pool, v := range pools {
			p.extra(snapshot.ExtraKVPoolUsage+pool, v)
		}
	}
	return p.scalar(snapshot.KVCacheMaxTokens, sgNames("max_total_num_tokens")...)
}

// kvRatio sets the KV usage ratio from a fraction gauge, each data-parallel
// rank's own cache averaged.
func (p rankMapper) kvRatio(mf *dto.MetricFamily) {
	if p.ratioOK(mf, p.keep, 1, "fraction") {
		if v, ok := rankMean(mf, p.keep); ok {
			p.s.Scalars[snapshot.KVCacheUsageRatio] = v
		}
	}
}

// sglangHybridPools are the pools besides the full-attention one that the
// model has, with their use averaged over data-parallel ranks: the SWA
// pool where its capacity is published (max_total_num_tokens_swa) or its
// use is above 0, the mamba pool where its use is (a model without the
// pool publishes 0).
func sglangHybridPools(p rankMapper) map[string]float64 {
	pools := map[string]float64{}
	for _, g := range []struct{ pool, usage, capacity string }{
		{"swa", "swa_token_usage", "max_total_num_tokens_swa"},
		{"mamba", "mamba_usage", ""},
	} {
		mf := p.fam(sgNames(g.usage)...)
		if mf == nil || !p.ratioOK(mf, p.keep, 1, "fraction") {
			continue
		}
		v, ok := rankMean(mf, p.keep)
		if !ok {
			continue
		}
		has := v > 0
		if g.capacity != "" && p.fam(sgNames(g.capacity)...) != nil {
			has = true
		}
		if has {
			pools[g.pool] = v
		}
	}
	return pools
}

// sglangPages sets the KV page size and count and the context length: from
// the page_size, num_pages and context_len gauges (2026, and context_len
// in the first metrics), else from cache_config_info's labels.
func sglangPages(p rankMapper, fams []*dto.MetricFamily) {
	if v, ok := rankLargest(p, "context_len"); ok && v > 0 {
		p.extra(snapshot.ExtraContextLength, v)
	}
	size, okSize := rankLargest(p, "page_size")
	if okSize && size > 0 {
		p.extra(snapshot.ExtraKVBlockSize, size)
	}
	pages, okPages := p.sum(sgNames("num_pages")...)
	if okPages && pages > 0 {
		p.extra(snapshot.ExtraKVNumBlocks, pages)
	}
	if okSize || okPages {
		return
	}
	sglangCacheConfig(p.mapper, sglangDPRanks(fams, p.keep))
}

// rankLargest is the largest of a gauge's rank groups' values.
func rankLargest(p rankMapper, base string) (float64, bool) {
	mf := p.fam(sgNames(base)...)
	if mf == nil {
		return 0, false
	}
	vs := rankValues(mf, p.keep)
	if len(vs) == 0 {
		return 0, false
	}
	best := math.Inf(-1)
	for _, v := range vs {
		best = math.Max(best, v)
	}
	return best, true
}

// sglangDPRanks counts the data-parallel ranks the scrape's series name.
func sglangDPRanks(fams []*dto.MetricFamily, keep func(*dto.Metric) bool) int {
	ranks := map[string]bool{}
	for _, mf := range fams {
		if !isSGLang(mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			if v, ok := labelValue(m, "dp_rank"); ok {
				ranks[v] = true
			}
		}
	}
	return len(ranks)
}

// sglangCacheConfig reads page size and page count from cache_config_info.
// Upstream gives the info series no rank label: where it has none and the
// scrape has several data-parallel ranks, its pages are one scheduler's
// and the total is not known.
func sglangCacheConfig(p *mapper, dpRanks int) {
	mf := p.fam(sgNames("cache_config_info")...)
	if mf == nil {
		return
	}
	var pageSize, pages float64
	allPages, ranked := true, false
	for _, ms := range rankGroups(mf, p.keep) {
		groupPages, ok := 0.0, false
		for _, m := range ms {
			if _, ok := labelValue(m, "dp_rank"); ok {
				ranked = true
			}
			if v, okPS := labelNumber(m, "page_size"); okPS && v > pageSize {
				pageSize = v
			}
			if v, okNP := labelNumber(m, "num_pages"); okNP {
				groupPages, ok = math.Max(groupPages, v), true
			}
		}
		if ok {
			pages += groupPages
		} else {
			allPages = false
		}
	}
	if pageSize > 0 {
		p.extra(snapshot.ExtraKVBlockSize, pageSize)
	}
	switch {
	case !ranked && dpRanks > 1 && pages > 0:
		p.missing("KV page count: cache_config_info is one scheduler's (it has no rank label) and this server has %d data-parallel ranks", dpRanks)
	case allPages && pages > 0:
		p.extra(snapshot.ExtraKVNumBlocks, pages)
	}
}

// sglangEffectiveTokens sets computed and cached prompt tokens, the
// prefix cache's queries and hits, and the hits from host memory and
// storage, from prefill_effective_tokens_total (2026): mode "input" is
// computed, the *_hit modes cached, a retracted request's second count
// left out. Every mode is published from the start (at 0); a hit mode
// absent beside "input" is 0, and a tier absent is not set. false where
// the scrape has no such counter.
func sglangEffectiveTokens(p rankMapper) bool {
	mf := p.fam(sgCounter("prefill_effective_tokens")...)
	if mf == nil {
		return false
	}
	mode := func(m string) (float64, bool) { return rankSum(mf, both(p.keep, withLabel("mode", m))) }
	computed, ok := mode("input")
	if !ok || math.IsNaN(computed) {
		return false
	}
	cached := 0.0
	for canon, m := range map[string]string{"": "device_hit", snapshot.PrefixCacheHostHits: "host_hit", snapshot.PrefixCacheStorageHits: "storage_hit"} {
		v, ok := mode(m)
		if !ok || math.IsNaN(v) {
			continue
		}
		cached += v
		if canon != "" {
			p.s.Scalars[canon] = v
		}
	}
	p.s.Scalars[snapshot.PromptTokensTotal] = computed
	p.s.Scalars[snapshot.CachedTokensTotal] = cached
	p.s.Scalars[snapshot.PrefixCacheQueries] = computed + cached
	p.s.Scalars[snapshot.PrefixCacheHits] = cached
	return true
}
