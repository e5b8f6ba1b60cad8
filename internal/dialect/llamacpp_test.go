package dialect

import (
	"os"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// absent marks a figure a version must not have.
const absent = -1.0

// TestLlamaCppVersions reads one workload as two builds counted it
// (testdata/real/llama.cpp-workload: six requests of 128 prompt tokens,
// 16 generated each, C repeating B and E beside F), b10309 before
// ggml-org/llama.cpp #26920 and b10470 after it, against figures worked
// out from the requests and each answer's timings, never from the code.
// A canonical figure means the same on both or is absent on the one that
// cannot give it, with a Missing line saying why.
func TestLlamaCppVersions(t *testing.T) {
	const (
		computed  = 128 + 32 + 1 + 128 + 32 + 32 // A, B after the 96-token prefix, C's last token, D, E, F: 353
		cached    = 0 + 96 + 127 + 0 + 96 + 96   // 415
		generated = 6 * 16                       // 96
		// Each request is in one prompt batch and 15 decode batches.
		busySlotSteps = 6 * (1 + 15)
	)
	// b10309 adds each request's milliseconds as whole ones: the answers'
	// prompt_ms 8.469, 7.247, 0.536, 7.098, 8.613, 7.882 and predicted_ms
	// 8.003, 7.486, 8.022, 7.802, 19.554, 12.826.
	const (
		oldPrompt = (8 + 7 + 0 + 7 + 8 + 7) / 1000.0   // 0.037
		oldDecode = (8 + 7 + 8 + 7 + 19 + 12) / 1000.0 // 0.061
	)
	// b10470 keeps microseconds: predicted_ms 75.872 + 47.738 + 14.265 +
	// 8.231 + 43.557 + 43.523. Its prefill is the batches' wall time,
	// 0.664555 s as published: less than the answers' prompt_ms sum
	// (0.706674 s), since E and F were prefilled in one batch.
	const (
		newDecode  = (75.872 + 47.738 + 14.265 + 8.231 + 43.557 + 43.523) / 1000 // 0.233186
		newPrefill = 0.664555
	)
	tests := []struct {
		name           string
		b10309, b10470 float64
	}{
		{snapshot.PromptTokensTotal, computed, computed},
		{snapshot.CachedTokensTotal, absent, cached},
		{snapshot.PrefixCacheQueries, absent, computed + cached}, // 768 = 6 × 128
		{snapshot.PrefixCacheHits, absent, cached},
		{snapshot.PromptSecondsTotal, oldPrompt, absent},
		{snapshot.EnginePrefillSecondsTotal, absent, newPrefill},
		{snapshot.TokensPredictedTotal, generated, generated},
		{snapshot.TokensPredictedSecondsTotal, oldDecode, newDecode},
		{snapshot.RequestsProcessing, 0, 0},
		{snapshot.RequestsDeferred, 0, 0},
		{snapshot.SpecDecodeNumDraftTokensTotal, 0, 0},
		{snapshot.SpecDecodeNumAcceptedTokensTotal, 0, 0},
		{snapshot.ExtraSpecDecodeDrafts, 0, 0},
		// E and F shared their batches on b10470 only: 81 and 80 calls.
		{snapshot.ExtraDecodeCalls, 81, 80},
		{snapshot.ExtraBusySlotsPerDecode, 1.18519, float64(busySlotSteps) / 80}, // 96/81 printed to 6 digits; 1.2
		{snapshot.ExtraLargestSequence, 128 + 16 - 1, 128 + 16 - 1},              // the last token sampled is not in the context
		{snapshot.ExtraSlotPrefillSpeed, computed / oldPrompt, absent},
		{snapshot.ExtraBatchPrefillSpeed, absent, computed / newPrefill},
		{snapshot.ExtraSlotDecodeSpeed, generated / oldDecode, generated / newDecode},
	}
	read := func(build string) *snapshot.Snapshot {
		body, err := os.ReadFile("../../testdata/real/llama.cpp-" + build + "-workload.prom")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Map(parse(t, string(body)), Options{})
		if err != nil || s.Dialect != "llamacpp" {
			t.Fatalf("%s: %v, dialect %q", build, err, s.Dialect)
		}
		return s
	}
	old, cur := read("b10309"), read("b10470")
	for _, tt := range tests {
		for _, v := range []struct {
			build string
			s     *snapshot.Snapshot
			want  float64
		}{{"b10309", old, tt.b10309}, {"b10470", cur, tt.b10470}} {
			got, ok := v.s.Scalar(tt.name)
			if x, isExtra := v.s.Extra[tt.name]; isExtra {
				got, ok = x, true
			}
			switch {
			case v.want == absent && ok:
				t.Errorf("%s: %s = %v, want absent", v.build, tt.name, got)
			case v.want != absent && !ok:
				t.Errorf("%s: %s absent, want %v", v.build, tt.name, v.want)
			case v.want != absent && !near(got, v.want):
				t.Errorf("%s: %s = %v, want %v", v.build, tt.name, got, v.want)
			}
		}
	}
	// What is absent is said, each on the build that lacks it.
	for _, m := range []struct {
		s          *snapshot.Snapshot
		has, lacks string
	}{
		{old, "prompt cache reuse: ", "prefill time per request: "},
		{cur, "prefill time per request: from b10406", "prompt cache reuse: "},
	} {
		joined := strings.Join(m.s.Missing, "\n")
		if !strings.Contains(joined, m.has) || strings.Contains(joined, m.lacks) {
			t.Errorf("Missing %q: want %q, not %q", m.s.Missing, m.has, m.lacks)
		}
	}
}
