package dialect

import (
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// aphrodite reads Aphrodite Engine's series: vLLM's V1 metrics under the
// prefix aphrodite: (aphrodite/v1/metrics/loggers.py @b42eeec, April
// 2026), from an engine that tracks vLLM's main branch (synced to vLLM
// f768b447 in aphrodite #1632). They are renamed to vLLM's and read by
// vLLM's reader, so every trap vllm.go handles is handled the same way,
// and reported as Aphrodite. What that vLLM lacks Aphrodite lacks too:
// no admission limit or its refusals (vLLM v0.29), and the KV offloading
// connector's deprecated transfer_type names only.
var aphrodite = dialect{
	name:  "aphrodite",
	title: "Aphrodite",
	match: isAphrodite,
	read: func(fams []*dto.MetricFamily, o Options, s *snapshot.Snapshot) error {
		return readVLLMAs("Aphrodite", aphroditeNames(fams), o, s)
	},
	// Aphrodite's engine arguments are vLLM's.
	advice:    vllm.advice,
	partLabel: "engine",
}

const aphroditePrefix = "aphrodite:"

func isAphrodite(name string) bool { return strings.HasPrefix(name, aphroditePrefix) }

// aphroditeNames renames Aphrodite's families to vLLM's names; a vllm:
// family of the same name, if a scrape mixed the two, is read instead.
func aphroditeNames(fams []*dto.MetricFamily) []*dto.MetricFamily {
	native := map[string]bool{}
	for _, mf := range fams {
		if strings.HasPrefix(mf.GetName(), "vllm:") {
			native[mf.GetName()] = true
		}
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		base, ok := strings.CutPrefix(mf.GetName(), aphroditePrefix)
		if !ok {
			out = append(out, mf)
			continue
		}
		name := "vllm:" + base
		if native[name] {
			continue
		}
		native[name] = true
		out = append(out, &dto.MetricFamily{Name: &name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: mf.Metric})
	}
	return out
}
