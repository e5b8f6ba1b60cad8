package sim

import (
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
)

// offBench is bench with the workload switched off: only submitted
// requests arrive.
func offBench(t *testing.T) (*Sim, *collect) {
	return bench(t, func(c *Config) { c.Workload.Off = true })
}

// TestSubmit: a submitted request runs like the workload's own, with its
// figures by hand: prefill 1100 tokens at 1000 tok/s in chunks of 512
// (1.1 s), then 9 decode steps of 10 ms for the 10 answer tokens (the
// first comes with the last prefill chunk).
func TestSubmit(t *testing.T) {
	s, rec := offBench(t)
	s.Run(time.Second) // the clock need not start at zero
	j, err := s.Submit([]Segment{{ID: 1, Tokens: 1000}, {ID: 2, Tokens: 100}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	s.Run(1100 * time.Millisecond)
	if p := j.Progress(); p.Generated != 1 || p.Done {
		t.Errorf("after prefill: %+v, want the first token only", p)
	}
	s.Run(90 * time.Millisecond)
	p := j.Progress()
	if !p.Done || p.Generated != 10 {
		t.Fatalf("after 9 decode steps: %+v, want done with 10 tokens", p)
	}
	g := p.Generation
	want := exporter.Generation{PromptTokens: 1100, GeneratedTokens: 10, Prefill: 1100 * time.Millisecond, Decode: 90 * time.Millisecond}
	if g != want {
		t.Errorf("generation %+v, want %+v", g, want)
	}
	if len(rec.gens) != 1 || rec.gens[0] != g {
		t.Errorf("recorded %+v, want the job's generation", rec.gens)
	}
	if tot := s.Totals(); tot.Requests != 1 || tot.Arrived != 1 || tot.GeneratedTokens != 10 {
		t.Errorf("totals %+v", tot)
	}
}

// TestSubmitPrefixReuse: a second prompt that starts with the first's
// 1000-token segment reuses its three full pages (768 tokens): the fourth
// page mixes in other tokens.
func TestSubmitPrefixReuse(t *testing.T) {
	s, _ := offBench(t)
	a, _ := s.Submit([]Segment{{ID: 7, Tokens: 1000}, {ID: 8, Tokens: 50}}, 5)
	s.Run(5 * time.Second)
	b, _ := s.Submit([]Segment{{ID: 7, Tokens: 1000}, {ID: 9, Tokens: 100}}, 5)
	s.Run(5 * time.Second)
	if got := a.Progress().Generation.CachedTokens; got != 0 {
		t.Errorf("first request cached %d, want 0", got)
	}
	if got := b.Progress().Generation.CachedTokens; got != 768 {
		t.Errorf("second request cached %d, want 768", got)
	}
}

// TestSubmitCancel: a cancelled request leaves, queued or running, is not
// recorded, and gives its pages back.
func TestSubmitCancel(t *testing.T) {
	s, rec := offBench(t)
	running, _ := s.Submit([]Segment{{ID: 1, Tokens: 600}}, 2000)
	s.Run(700 * time.Millisecond) // prefilled, decoding
	if s.Live().KVReferencedPages == 0 {
		t.Fatal("the running request holds no pages")
	}
	pending, _ := s.Submit([]Segment{{ID: 2, Tokens: 600}}, 5)
	running.Cancel()
	pending.Cancel()
	running.Cancel() // twice is once
	s.Run(10 * time.Second)
	if len(rec.gens) != 0 {
		t.Errorf("recorded %d generations of cancelled requests", len(rec.gens))
	}
	if l := s.Live(); l.KVReferencedPages != 0 || l.ActiveJobs != 0 || l.PendingJobs != 0 {
		t.Errorf("live state after cancelling everything: %+v", l)
	}
	if tot := s.Totals(); tot.Cancelled != 2 || tot.Requests != 0 {
		t.Errorf("totals %+v, want 2 cancelled and no requests", tot)
	}
	if p := running.Progress(); !p.Cancelled || p.Done {
		t.Errorf("progress %+v", p)
	}
	select {
	case <-running.Changed():
	default:
		t.Error("cancelling did not signal a change")
	}
}

// TestSubmitRefuses: a prompt that is empty, or with its answer longer
// than the context, is an error.
func TestSubmitRefuses(t *testing.T) {
	s, _ := offBench(t)
	for _, c := range []struct {
		segs []Segment
		out  int
	}{{nil, 5}, {[]Segment{{1, 4000}}, 97}, {[]Segment{{1, 5}}, 0}} {
		if _, err := s.Submit(c.segs, c.out); err == nil {
			t.Errorf("Submit(%v, %d) accepted", c.segs, c.out)
		}
	}
}
