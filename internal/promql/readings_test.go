package promql_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// The model labels name the models the dialect reads on every fixture: a
// reader that knows only the labels' values (the fleet's discovery) lists
// the models the report lists. SGLang's first metrics, whose name= label
// later names a function, are the one exception, and are told apart.
func TestModelLabels(t *testing.T) {
	checked := 0
	for _, fx := range fixtures(t) {
		d := fx.snap.Dialect
		labels := promql.ModelLabels(d)
		seen := map[string]bool{}
		for _, mf := range fx.fams {
			if dialect.Owner(mf.GetName()) != d {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if slices.Contains(labels, lp.GetName()) && lp.GetValue() != "" {
						seen[lp.GetValue()] = true
					}
				}
			}
		}
		got := dialect.ServedModels(d, slices.Sorted(maps.Keys(seen)))
		if strings.Join(got, "\x00") == strings.Join(fx.snap.Models, "\x00") {
			checked++
			continue
		}
		if d == "sglang" && len(got) == 0 {
			continue // the first metrics: name= labels
		}
		t.Errorf("%s: models %q by the labels %v, the dialect reads %q", fx.path, got, labels, fx.snap.Models)
	}
	if checked < 30 {
		t.Errorf("only %d fixtures checked", checked)
	}
}

// vLLM's block or token prefix counters told apart by their size make a
// library that holds for its own server only; by HELP, for any.
func TestReadByValue(t *testing.T) {
	body := "# TYPE vllm:gpu_prefix_cache_queries_total counter\nvllm:gpu_prefix_cache_queries_total 100\n" +
		"# TYPE vllm:gpu_prefix_cache_hits_total counter\nvllm:gpu_prefix_cache_hits_total 10\n" +
		"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 1000\n"
	l, err := promql.New(parse(t, body), "vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !l.ReadByValue() {
		t.Error("prefix counters judged by size: ReadByValue false")
	}
	withHelp := "# HELP vllm:gpu_prefix_cache_queries_total GPU prefix cache queries, in terms of number of queried tokens.\n" + body
	l, err = promql.New(parse(t, withHelp), "vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ReadByValue() {
		t.Error("prefix counters judged by HELP: ReadByValue true")
	}
}

// vLLM's request counter is read once for every request and the errors
// (the errors' Reading adds "or 0 *" of every request's series, a second
// read of the family); a counter of a family no other quantity reads, a
// histogram and a gauge keep their own Readings.
func TestSplits(t *testing.T) {
	lib, err := promql.New(fromFile(t, "../../testdata/dialects/vllm-new.prom"), "vllm", promql.Options{By: []string{"job", "instance"}})
	if err != nil {
		t.Fatal(err)
	}
	errs := snapshot.ExtraFinishedReason + "error"
	splits, rest := lib.Splits([]string{snapshot.RequestsTotal, errs, snapshot.TokensPredictedTotal, snapshot.TimeToFirstTokenSeconds, snapshot.KVCacheUsageRatio})
	if len(splits) != 1 {
		t.Fatalf("%d splits, want 1: %+v", len(splits), splits)
	}
	sp := splits[0]
	if want := `sum by (finished_reason, job, instance) (vllm:request_success_total)`; sp.Expr != want || sp.Label != "finished_reason" {
		t.Errorf("split %q by %q, want %q by finished_reason", sp.Expr, sp.Label, want)
	}
	want := map[string]promql.SplitPart{snapshot.RequestsTotal: {All: true}, errs: {Value: "error", ZeroIfAbsent: true}}
	if !maps.Equal(sp.Parts, want) {
		t.Errorf("parts %+v, want %+v", sp.Parts, want)
	}
	if want := []string{snapshot.KVCacheUsageRatio, snapshot.TimeToFirstTokenSeconds, snapshot.TokensPredictedTotal}; !slices.Equal(rest, want) {
		t.Errorf("rest %q, want %q", rest, want)
	}
	// One quantity of a family shares nothing.
	if splits, rest := lib.Splits([]string{errs}); len(splits) != 0 || !slices.Equal(rest, []string{errs}) {
		t.Errorf("one quantity: splits %+v, rest %q", splits, rest)
	}
}

// A library says which values of its scrape it was written by: vLLM's
// prompt tokens by source (computed tokens are local_compute's), and the
// label its request counter names reasons by. A scrape without the source
// split asks nothing of it.
func TestFacts(t *testing.T) {
	lib, err := promql.New(fromFile(t, "../../testdata/dialects/vllm-new.prom"), "vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	facts := lib.Facts()
	for _, want := range []promql.Fact{
		{Family: "vllm:prompt_tokens_by_source_total", Label: "source", Value: "local_compute", Has: true},
		{Family: "vllm:request_success_total", Label: "finished_reason", Has: true},
	} {
		if !slices.Contains(facts, want) {
			t.Errorf("facts %+v lack %+v", facts, want)
		}
	}
	old, err := promql.New(fromFile(t, "../../testdata/dialects/vllm-0.8.prom"), "vllm", promql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old.Facts() {
		if f.Label == "source" {
			t.Errorf("vLLM 0.8 has no prompt tokens by source, yet the library asked %+v", f)
		}
	}
}

// Every fact a library asks of a scrape is of a label the fleet's
// discovery keeps the values of (DecidingLabels): a fact of another label
// could not be told of an instance listed in part, which is then read
// whole (internal/fleet's census).
func TestFactsAreDeciding(t *testing.T) {
	checked := 0
	for _, fx := range fixtures(t) {
		l, err := promql.New(fx.fams, fx.snap.Dialect, promql.Options{})
		if err != nil {
			continue
		}
		for _, f := range l.Facts() {
			if !slices.Contains(promql.DecidingLabels(), f.Label) {
				t.Errorf("%s: fact %+v is of a label not among DecidingLabels", fx.path, f)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no fixture's library asked a fact")
	}
}
