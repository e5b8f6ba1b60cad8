package dialect

import (
	"os"
	"testing"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

func readFixture(t *testing.T, path string, o Options) *snapshot.Snapshot {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(body, exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Map(fams, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPartsAddUp: each unit is read on its own by the same dialect, and the
// units' counters and request gauges add up to the whole's; figures a unit
// does not publish on its own (SGLang's tokenizer-side counters) are
// absent from it, never 0.
func TestPartsAddUp(t *testing.T) {
	for _, tc := range []struct {
		path, model string
		label       string
		values      []string
		sums        []string
		absent      []string
	}{
		{path: "../../testdata/dialects/vllm-dp2.prom", label: "engine", values: []string{"0", "1"},
			sums: []string{snapshot.RequestsProcessing, snapshot.RequestsDeferred, snapshot.RequestsTotal, snapshot.TokensPredictedTotal, snapshot.PromptTokensTotal}},
		{path: "../../testdata/dialects/vllm-new.prom", model: "meta-llama/Llama-3.3-70B-Instruct", label: "engine", values: []string{"0", "1"},
			sums: []string{snapshot.RequestsProcessing, snapshot.RequestsDeferred, snapshot.RequestsTotal, snapshot.TokensPredictedTotal}},
		{path: "../../testdata/dialects/sglang-new.prom", label: "dp_rank", values: []string{"0", "1"},
			sums: []string{snapshot.RequestsProcessing, snapshot.RequestsDeferred}, absent: []string{snapshot.RequestsTotal, snapshot.TokensPredictedTotal}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			s := readFixture(t, tc.path, Options{Model: tc.model, Parts: true})
			if len(s.Parts) != len(tc.values) {
				t.Fatalf("%d parts, want %d", len(s.Parts), len(tc.values))
			}
			for i, p := range s.Parts {
				if p.Label != tc.label || p.Value != tc.values[i] {
					t.Errorf("part %d is %s=%s", i, p.Label, p.Value)
				}
				for _, name := range tc.absent {
					if _, ok := p.Scalar(name); ok {
						t.Errorf("part %s has %s, which it does not publish", p.Value, name)
					}
				}
			}
			for _, name := range tc.sums {
				whole, ok := s.Scalar(name)
				if !ok {
					t.Fatalf("the whole has no %s", name)
				}
				sum := 0.0
				for _, p := range s.Parts {
					v, ok := p.Scalar(name)
					if !ok {
						t.Fatalf("part %s has no %s", p.Value, name)
					}
					sum += v
				}
				if sum != whole {
					t.Errorf("%s: parts add to %v, the whole is %v", name, sum, whole)
				}
			}
		})
	}
}

// TestPartsPerModel: an endpoint serving two models, read whole, has one
// part per model's engine; a server of one engine, or re-exported by Ray
// Serve with replica labels, has none.
func TestPartsPerModel(t *testing.T) {
	if s := readFixture(t, "../../testdata/dialects/vllm-new.prom", Options{}); s.Parts != nil {
		t.Errorf("parts read unasked: %d", len(s.Parts))
	}
	s := readFixture(t, "../../testdata/dialects/vllm-new.prom", Options{Parts: true})
	if len(s.Parts) != 4 {
		t.Fatalf("%d parts, want 2 models × 2 engines", len(s.Parts))
	}
	for _, p := range s.Parts {
		if p.Model == "" {
			t.Errorf("engine %s of no model", p.Value)
		}
	}
	for _, path := range []string{"../../testdata/dialects/vllm-prefix-off.prom", "../../testdata/dialects/ray-vllm.prom", "../../testdata/dialects/llamacpp-new.prom"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if s := readFixture(t, path, Options{Parts: true}); s.Parts != nil {
			t.Errorf("%s: %d parts", path, len(s.Parts))
		}
	}
}
