package page

import (
	"bytes"
	"io"
	"testing"

	"github.com/inferscope/inferscope/internal/bench"
	"github.com/inferscope/inferscope/internal/bench/probe"
	"github.com/inferscope/inferscope/internal/bench/sweep"
)

// written is what write wrote.
func written(t *testing.T, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// buildPages makes every kind of page from real runs against the
// simulator, each with the JSON of the same value.
func buildPages(t *testing.T) []testPage {
	t.Helper()
	rep := saturatedRun(t)
	sw := rateSweep(t)
	pr := bothProbes(t)
	return []testPage{
		{name: "run", charts: []string{"ttft", "queue", "kv"},
			html: written(t, func(w io.Writer) error { return Run(w, rep) }),
			json: written(t, func(w io.Writer) error { return bench.JSON(w, rep) })},
		{name: "sweep", charts: []string{"ttft", "tpot", "throughput", "ttft_steps", "waiting", "kvpeak"},
			html: written(t, func(w io.Writer) error { return Sweep(w, sw) }),
			json: written(t, func(w io.Writer) error { return sweep.JSON(w, sw) })},
		{name: "probe", charts: []string{"prefill", "prefill_ttft", "decode", "decode_total"},
			html: written(t, func(w io.Writer) error { return Probe(w, pr) }),
			json: written(t, func(w io.Writer) error { return probe.JSON(w, pr) })},
	}
}
