package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Via is what a server report made from the bench's own metric set says
// measured it.
const Via = "inferscope bench"

// own is the proxy's metric set measured in the bench itself, for a
// server that publishes no /metrics: an exporter fed each completed
// request as the proxy feeds it (the answer's usage, counts and timings,
// TTFT and E2E as the generator timed them), read back through the
// tabbyAPI dialect like any scrape, so that its window is read by the same
// rates and notes as a server's. What no answer says (queue time, the
// engine's state) is unknown, never 0.
type own struct {
	m        *exporter.Metrics
	inflight atomic.Int64
	now      func() time.Time
}

func newOwn(start time.Time, now func() time.Time) *own {
	o := &own{now: now}
	o.m = exporter.New(exporter.Options{
		PerModel:  true,
		StartTime: start,
		Engine:    ownEngine{o},
		Unknown: exporter.UnknownWaiting | exporter.UnknownKVCache | exporter.UnknownOffload |
			exporter.UnknownRecurrent | exporter.UnknownDraft,
	})
	return o
}

type ownEngine struct{ o *own }

func (e ownEngine) Live() exporter.Live { return exporter.Live{ActiveJobs: int(e.o.inflight.Load())} }

// record counts one request that ended, as the proxy would have: a
// completed one as a generation, a failed one not at all.
func (o *own) record(r load.Record, model string) {
	if r.Error != "" {
		return
	}
	o.m.RecordGeneration(generation(r, model))
}

// generation is what a completed request tells of its generation.
func generation(r load.Record, model string) exporter.Generation {
	g := exporter.Generation{Model: model, Unknown: exporter.UnknownQueue}
	if r.TTFT >= 0 {
		g.TTFT = max(r.TTFT, 1)
	} else {
		g.Unknown |= exporter.UnknownTTFT
	}
	end := r.E2E
	if end < 0 {
		end = r.Done
	}
	if end >= 0 {
		g.E2E = max(end, 1)
	} else {
		g.Unknown |= exporter.UnknownE2E
	}
	said := func(n int, q exporter.Quantity) int {
		if n < 0 {
			g.Unknown |= q
			return 0
		}
		return n
	}
	g.PromptTokens = said(r.PromptTokens, exporter.UnknownPrompt)
	g.CachedTokens = said(r.CachedTokens, exporter.UnknownCached)
	if r.TokenSource == "usage" {
		g.GeneratedTokens = said(r.OutputTokens, exporter.UnknownGenerated)
	} else {
		// Counted events are not the server's tokens.
		g.Unknown |= exporter.UnknownGenerated
	}
	g.Unknown |= exporter.UnknownPrefill | exporter.UnknownDecode
	if s := r.Split; s != nil && s.Prefill >= 0 && s.Decode >= 0 {
		g.Prefill, g.Decode = s.Prefill, s.Decode
		g.Unknown &^= exporter.UnknownPrefill | exporter.UnknownDecode
	}
	return g
}

// scrape reads the exporter as a scrape of it would: its text exposition,
// parsed and read by the tabbyAPI dialect, said to be measured by the
// bench.
func (o *own) scrape(ctx context.Context) (*snapshot.Snapshot, error) {
	var b bytes.Buffer
	if err := o.m.WriteText(&b); err != nil {
		return nil, fmt.Errorf("the bench's own metrics: %w", err)
	}
	fams, err := exposition.ParseContext(ctx, b.Bytes(), exposition.Text)
	if err != nil {
		return nil, fmt.Errorf("the bench's own metrics: %w", err)
	}
	s, err := dialect.Map(fams, dialect.Options{Dialect: "tabbyapi"})
	if err != nil {
		return nil, fmt.Errorf("the bench's own metrics: %w", err)
	}
	s.Source = "the bench's own measurements"
	s.ScrapedAt = o.now()
	s.TimeSource = "scrape"
	s.Via = Via
	s.Advice = snapshot.Advice{}
	return s, nil
}
