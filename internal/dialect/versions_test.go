package dialect

import (
	"math"
	"testing"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// One server read as each version publishes it (vllm-0.32.prom,
// vllm-0.15.prom and Aphrodite's aphrodite.prom carry the same workload):
// every canonical figure is the same number, or absent where that version
// does not publish it, for the reason given; where a version counts
// differently, the difference is worked out.
func TestVersionsSideBySide(t *testing.T) {
	files := []string{"vllm-0.32.prom", "vllm-0.15.prom", "aphrodite.prom"}
	snaps := map[string]*snapshot.Snapshot{}
	for _, f := range files {
		s, err := Map(parse(t, fixture(t, f)), Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		snaps[f] = s
	}
	const absent = -1.0
	same := func(v float64) [3]float64 { return [3]float64{v, v, v} }
	for _, tt := range []struct {
		name string
		want [3]float64 // in the order of files; absent: not published
		why  string
	}{
		{snapshot.RequestsTotal, same(1000), ""},
		{snapshot.TokensPredictedTotal, same(380000), ""},
		{snapshot.RequestsProcessing, same(64), ""},
		{snapshot.RequestsDeferred, same(16), ""},
		{snapshot.PrefixCacheQueries, same(2600000), ""},
		{snapshot.PrefixCacheHits, same(830000), ""},
		{snapshot.KVOffloadReadBytesTotal, same(120000 * bytesPerToken), "flat load_bytes (0.32), transfer_type CPU_to_GPU (0.15, Aphrodite)"},
		{snapshot.KVOffloadWrittenBytesTotal, same(1000000 * bytesPerToken), ""},
		{snapshot.ExtraKVOffloadLoadSeconds, same(1.42), ""},
		{snapshot.ExtraStepTokens, same(2930000), ""},
		{snapshot.ExtraEngineSteps, same(45000), ""},
		{snapshot.ExtraSleepState + "awake", same(1), ""},
		// By source where published; 0.15's finished requests' kv-computed
		// sum lacks the 64 running requests' prefills, which the counters
		// count as each prefill ends: 150,000 − 50,000 cached.
		{snapshot.PromptTokensTotal, [3]float64{1600000, 1600000 - (150000 - 50000), 1600000},
			"0.15: request_prefill_kv_computed_tokens counts a request when it finishes"},
		{snapshot.CachedTokensTotal, [3]float64{950000, absent, 950000}, "0.15 has no cached-token counter"},
		{snapshot.ExtraWaitingDeferred, [3]float64{4, absent, 4}, "num_requests_waiting_by_reason is newer than 0.15"},
		{snapshot.ExtraAdmissionRejections, [3]float64{312, absent, absent}, "the admission limit is v0.29's; Aphrodite tracks an earlier vLLM"},
	} {
		for i, f := range files {
			s := snaps[f]
			v, ok := s.Scalar(tt.name)
			if !ok {
				v, ok = s.Extra[tt.name]
			}
			want := tt.want[i]
			switch {
			case want == absent && ok:
				t.Errorf("%s: %s = %v, want absent (%s)", f, tt.name, v, tt.why)
			case want != absent && !ok:
				t.Errorf("%s: %s absent, want %v", f, tt.name, want)
			case want != absent && math.Abs(v-want) > 1e-9*math.Max(1, want):
				t.Errorf("%s: %s = %v, want %v %s", f, tt.name, v, want, tt.why)
			}
		}
	}
	for f, want := range map[string]string{"vllm-0.32.prom": "vllm", "vllm-0.15.prom": "vllm", "aphrodite.prom": "aphrodite"} {
		if snaps[f].Dialect != want {
			t.Errorf("%s read as %s, want %s", f, snaps[f].Dialect, want)
		}
	}
}
