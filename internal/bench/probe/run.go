package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Config is one probe run.
type Config struct {
	Target load.Target
	// Probes are the probes to run, in order: Prefill, Decode or both.
	Probes []string
	// Lengths are the prefill probe's prompt lengths, in tokens.
	Lengths []int
	// Batches are the decode probe's batch sizes.
	Batches []int
	// Repeat is the measured requests per length and rounds per batch
	// size, beside the cold one set aside; 0 is DefaultRepeat.
	Repeat int
	// PromptTokens and OutputTokens are the decode probe's lengths: a
	// short prompt, a fixed output of at least two tokens.
	PromptTokens, OutputTokens int
	// Calibration says how the server counts a synthetic prompt
	// (workload.Calibrate).
	Calibration workload.Calibration
	// Seed seeds the prompts' words. A probe of the same server with the
	// same seed sends the same prompts, which its cache may then hold:
	// the command line seeds each probe afresh unless told.
	Seed uint64
	// Scrape reads the server's /metrics into a snapshot; nil where it
	// publishes none. Metrics names where.
	Scrape  func(context.Context) (*snapshot.Snapshot, error)
	Metrics string
	// Record is given every request's Record as it ends; nil keeps none.
	Record func(load.Record)
	// Progress is told each request's step as it starts; nil for none.
	Progress func(Step)
	Describe Describe
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// one sends one request and round sends a round (stand-ins in
	// tests); nil are load.Probe and load.Run.
	one   func(context.Context, load.Target, workload.Request) (load.Record, error)
	round func(context.Context, load.Plan, func(load.Record), func(load.Progress)) (load.Summary, error)
}

// DefaultRepeat is the measured requests per length, and rounds per
// batch size, where Config.Repeat is 0.
const DefaultRepeat = 3

// Describe is what a probe is of, as the result names it.
type Describe struct {
	Target, API, Model string
	// Made says how the prompts' lengths were made.
	Made    string
	Version string
}

// Step is where a probe is, for a progress line: the Point-th of Points
// (a length, or a batch size, as What says), request or round Done of Of
// (the cold one first).
type Step struct {
	Probe         string
	Point, Points int
	What          string
	Done, Of      int
}

// Preflight is the request a caller may send before the probe, to check
// the server answers as the probe needs: its prompt is unique among the
// probe's (its index is one the probe never sends).
func Preflight(c Config) workload.Request {
	return c.source(max(c.PromptTokens, 1), 2, false).Next(0)
}

// Run runs c's probes and returns what they measured. It returns an
// error before sending anything when the configuration cannot run, or
// the server's metrics cannot be read; a cancelled ctx (Ctrl-C) stops it
// after the request in flight, and the result is of what completed,
// marked partial.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r := &runner{c: c, next: 1}
	if r.c.Now == nil {
		r.c.Now = time.Now
	}
	if r.c.Repeat <= 0 {
		r.c.Repeat = DefaultRepeat
	}
	if r.c.one == nil {
		r.c.one = load.Probe
	}
	if r.c.round == nil {
		r.c.round = load.Run
	}
	d := c.Describe
	res := &Result{Schema: Schema, Kind: "probe", Version: d.Version, Target: d.Target, API: d.API, Model: d.Model,
		StartedAt: report.Time{Time: r.c.Now()}, Metrics: c.Metrics, Made: d.Made, Seed: c.Seed, Repeat: r.c.Repeat}
	if c.Scrape != nil {
		s, err := c.Scrape(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the server's metrics before the probe: %w", err)
		}
		res.Dialect = s.Dialect
		r.last = s
	}
	for _, p := range c.Probes {
		if ctx.Err() != nil {
			break
		}
		switch p {
		case Prefill:
			res.Prefill = r.prefill(ctx)
		case Decode:
			res.Decode = r.decode(ctx)
		}
	}
	res.Partial = ctx.Err() != nil
	res.Notes = judge(res, r.busy)
	return res, nil
}

func (c *Config) check() error {
	switch {
	case len(c.Probes) == 0:
		return errors.New("probe: no probe asked")
	case slices.Contains(c.Probes, Prefill) && len(c.Lengths) == 0:
		return errors.New("probe: no prompt lengths to probe prefill at")
	case slices.Contains(c.Probes, Decode) && len(c.Batches) == 0:
		return errors.New("probe: no batch sizes to probe decode at")
	case slices.Contains(c.Probes, Decode) && (c.OutputTokens < 2 || c.PromptTokens < 1):
		return errors.New("probe: decode needs prompts of a token or more and answers of two or more (the first token is prefill's)")
	}
	for _, p := range c.Probes {
		if p != Prefill && p != Decode {
			return fmt.Errorf("probe: no probe %q (prefill or decode)", p)
		}
	}
	for _, n := range c.Lengths {
		if n < 1 {
			return fmt.Errorf("probe: a prompt of %d tokens", n)
		}
	}
	for _, b := range c.Batches {
		if b < 1 {
			return fmt.Errorf("probe: a batch of %d", b)
		}
	}
	return nil
}

// runner is a probe in progress.
type runner struct {
	c Config
	// next is the index of the next prompt: every request of a probe has
	// its own, so that no two share their first words (index 0 is the
	// preflight's).
	next int
	// last is the server's last reading: the "before" of the next
	// request or round.
	last *snapshot.Snapshot
	// busy counts the readings over which the server counted work that
	// was not the probe's: no server figure from them.
	busy int
}

// source makes prompts of prompt tokens asking for output tokens, each
// beginning with words of its own.
func (c *Config) source(prompt, output int, fixed bool) *workload.Synthetic {
	return &workload.Synthetic{Shape: workload.Shape{API: c.Target.API, Model: c.Target.Model},
		Prompt:      workload.Dist{Kind: workload.Fixed, Mean: prompt, Min: prompt, Max: prompt},
		Output:      workload.Dist{Kind: workload.Fixed, Mean: output, Min: output, Max: output},
		FixedOutput: fixed && workload.FixedOutput(c.Target.API), UniqueFirst: true, Seed: c.Seed, Calibration: c.Calibration}
}

// offset is a source whose request i is another's request base+i.
type offset struct {
	s    workload.Source
	base int
}

func (o offset) Next(i int) workload.Request { return o.s.Next(o.base + i) }

// reading is the server's account over one request or round: the
// increases of its counters, nil where it publishes no metrics, the
// reading failed, it restarted, or it counted other work too.
type reading = map[string]float64

// settleTries bound how long the probe waits for the server's counters
// to count what it answered (vLLM records a request's figures after its
// last output is on its way).
var settleTries = []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}

// measure reads the server after a request or round that generated
// generated tokens (finished requests), and returns the increases since
// the last reading where they are the probe's alone. Where the answers
// said no token count (generated < 0: counted from events), the
// increases are taken as they come, with nothing to tell another
// client's work from the probe's.
func (r *runner) measure(ctx context.Context, generated, finished int) reading {
	if r.c.Scrape == nil {
		return nil
	}
	before := r.last
	for _, wait := range settleTries {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		s, err := r.c.Scrape(context.WithoutCancel(ctx))
		if err != nil {
			continue
		}
		r.last = s
		if before == nil {
			return nil
		}
		d, ok := rates.Between(before, s)
		if !ok || d.Reset {
			return nil
		}
		g, okG := d.Counters[snapshot.TokensPredictedTotal]
		n, okN := d.Counters[snapshot.RequestsTotal]
		switch {
		case generated < 0:
			return d.Counters
		case !okG:
			return nil // no generated count: nothing tells the probe's work from another's
		case g < float64(generated) || (okN && n < float64(finished)):
			continue // not counted yet
		case g > float64(generated) || (okN && n > float64(finished)):
			r.busy++
			return nil
		}
		return d.Counters
	}
	return nil
}

// progress tells the caller where the probe is.
func (r *runner) progress(s Step) {
	if r.c.Progress != nil {
		r.c.Progress(s)
	}
}

func (r *runner) record(rec load.Record) {
	if r.c.Record != nil {
		r.c.Record(rec)
	}
}

// usageTokens is a request's output tokens as the server counted them,
// -1 where its answer said none (counted from events), 0 where it failed
// before any.
func usageTokens(rec load.Record) int {
	switch {
	case rec.TokenSource == "usage":
		return max(rec.OutputTokens, 0)
	case rec.Error == "" && rec.OutputTokens > 0:
		return -1
	}
	return 0
}

// computed is the prompt tokens a request's prefill computed: the
// server's count less what it served from a cache; the length asked
// where the server said none.
func computed(rec load.Record) float64 {
	if rec.PromptTokens < 0 {
		return float64(rec.RequestedPrompt)
	}
	return float64(rec.PromptTokens - max(rec.CachedTokens, 0))
}

// --- prefill ---------------------------------------------------------------

// prefillOutput is the answer a prefill request asks for: a few tokens,
// so that one carries text (a token can decode to nothing, and the client
// times the first event with text); the first comes from the prefill.
const prefillOutput = 4

// prefillSample is one prefill request's figures.
type prefillSample struct {
	ok                   bool
	ttft, client, server float64
	serverFrom           string
	prompt, cached       float64
}

func (r *runner) prefill(ctx context.Context) *PrefillProbe {
	out := &PrefillProbe{}
	for i, length := range r.c.Lengths {
		src := r.c.source(length, prefillOutput, false)
		var samples []prefillSample
		var cold *prefillSample
		failed := 0
		for k := 0; k <= r.c.Repeat && ctx.Err() == nil; k++ {
			r.progress(Step{Probe: Prefill, Point: i + 1, Points: len(r.c.Lengths), What: fmt.Sprintf("%d tokens", length), Done: k, Of: r.c.Repeat + 1})
			s := r.prefillOne(ctx, src)
			switch {
			case k == 0:
				if s.ok {
					cold = &s
				}
			case s.ok:
				samples = append(samples, s)
			case ctx.Err() == nil:
				failed++
			}
		}
		if ctx.Err() != nil && len(samples) == 0 {
			break
		}
		out.Points = append(out.Points, prefillPoint(length, samples, cold, failed))
	}
	return out
}

// prefillOne sends one prefill request and reads the server after it.
func (r *runner) prefillOne(ctx context.Context, src workload.Source) prefillSample {
	w := src.Next(r.next)
	r.next++
	rec, err := r.c.one(ctx, r.c.Target, w)
	if err != nil || rec.Sent < 0 {
		return prefillSample{}
	}
	rec.Index = r.next - 1
	r.record(rec)
	if rec.Error != "" || rec.TTFT <= 0 {
		r.measure(ctx, usageTokens(rec), 1) // a new "before" all the same
		return prefillSample{}
	}
	tokens := computed(rec)
	s := prefillSample{ok: true, ttft: rec.TTFT.Seconds(), server: math.NaN(), prompt: math.NaN(), cached: math.NaN()}
	s.client = tokens / s.ttft
	if rec.PromptTokens >= 0 {
		s.prompt = float64(rec.PromptTokens)
	}
	if rec.CachedTokens >= 0 {
		s.cached = float64(rec.CachedTokens)
	}
	d := r.measure(ctx, usageTokens(rec), 1)
	switch sp := rec.Split; {
	case sp != nil && sp.Prefill > 0 && sp.PromptTokens >= 0:
		s.server, s.serverFrom = float64(sp.PromptTokens-max(sp.CachedTokens, 0))/sp.Prefill.Seconds(), FromTimings
	case d != nil:
		secs, ok := d[snapshot.PromptSecondsTotal]
		if !ok {
			// One request at a time: the engine's prefill time is its.
			secs, ok = d[snapshot.EnginePrefillSecondsTotal]
		}
		if ok && secs > 0 {
			s.server, s.serverFrom = tokens/secs, FromMetrics
		}
	}
	return s
}

func prefillPoint(length int, samples []prefillSample, cold *prefillSample, failed int) PrefillPoint {
	p := PrefillPoint{Length: length, Requests: len(samples), Failed: failed}
	col := func(f func(prefillSample) float64) []float64 {
		out := make([]float64, len(samples))
		for i, s := range samples {
			out[i] = f(s)
		}
		return out
	}
	p.PromptTokens = report.Number(meanKnown(col(func(s prefillSample) float64 { return s.prompt })))
	p.CachedTokens = report.Number(meanKnown(col(func(s prefillSample) float64 { return s.cached })))
	p.TTFT = spreadOf(col(func(s prefillSample) float64 { return s.ttft }))
	p.Client = spreadOf(col(func(s prefillSample) float64 { return s.client }))
	if srv := spreadOf(col(func(s prefillSample) float64 { return s.server })); srv.N > 0 {
		p.Server = &srv
		p.ServerFrom = samples[0].serverFrom
		for _, s := range samples {
			if s.serverFrom != "" {
				p.ServerFrom = s.serverFrom
				break
			}
		}
	}
	if cold != nil {
		p.Cold = &PrefillSample{TTFT: report.Number(cold.ttft), Client: report.Number(cold.client), Server: report.Number(cold.server)}
	}
	return p
}

// meanKnown is the mean of the known values, NaN where none is.
func meanKnown(vs []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// --- decode ----------------------------------------------------------------

// roundResult is one decode round's figures.
type roundResult struct {
	speeds  []float64 // each completed request's client decode speed
	servers []float64 // each request's server decode speed (timings), or the round's (metrics)
	from    string
	failed  int
	short   int // requests that ended before the output asked
	total   float64
	overlap float64
}

func (r *runner) decode(ctx context.Context) *DecodeProbe {
	out := &DecodeProbe{PromptTokens: r.c.PromptTokens, OutputTokens: r.c.OutputTokens}
	src := r.c.source(r.c.PromptTokens, r.c.OutputTokens, true)
	for i, b := range r.c.Batches {
		var rounds []roundResult
		var cold *roundResult
		for k := 0; k <= r.c.Repeat && ctx.Err() == nil; k++ {
			r.progress(Step{Probe: Decode, Point: i + 1, Points: len(r.c.Batches), What: fmt.Sprintf("batch %d", b), Done: k, Of: r.c.Repeat + 1})
			rr, ok := r.round(ctx, src, b)
			if !ok || ctx.Err() != nil {
				break // a round cut by Ctrl-C is no round
			}
			if k == 0 {
				if rr.failed == 0 {
					cold = &rr
				}
				continue
			}
			rounds = append(rounds, rr)
		}
		if len(rounds) == 0 && ctx.Err() != nil {
			break
		}
		out.Points = append(out.Points, decodePoint(b, rounds, cold))
	}
	return out
}

// round starts b requests together and reads the server after them; ok
// is false where it could not be sent.
func (r *runner) round(ctx context.Context, src workload.Source, b int) (roundResult, bool) {
	base := r.next
	r.next += b
	plan := load.Plan{Target: r.c.Target, Concurrency: b, Requests: b, Source: offset{src, base}}
	var recs []load.Record
	_, err := r.c.round(ctx, plan, func(rec load.Record) {
		rec.Index += base
		recs = append(recs, rec)
		r.record(rec)
	}, nil)
	if err != nil || len(recs) == 0 {
		return roundResult{}, false
	}
	rr := roundResult{total: math.NaN(), overlap: math.NaN()}
	generated, finished := 0, 0
	firstMax, lastMin := time.Duration(math.MinInt64), time.Duration(math.MaxInt64)
	firstMin, lastMax := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, rec := range recs {
		switch n := usageTokens(rec); {
		case n < 0:
			generated = math.MinInt / 2 // no count: none for the round
		case rec.Sent >= 0 && n > 0:
			generated += n
			finished++
		}
		if rec.Error != "" || rec.OutputTokens < 2 || rec.E2E <= rec.TTFT || rec.TTFT < 0 {
			rr.failed++
			continue
		}
		if rec.OutputTokens < r.c.OutputTokens {
			rr.short++
		}
		rr.speeds = append(rr.speeds, float64(rec.OutputTokens-1)/(rec.E2E-rec.TTFT).Seconds())
		first, last := rec.Sent+rec.TTFT, rec.Sent+rec.E2E
		firstMax, lastMin = max(firstMax, first), min(lastMin, last)
		firstMin, lastMax = min(firstMin, first), max(lastMax, last)
		if sp := rec.Split; sp != nil && sp.Decode > 0 && sp.GeneratedTokens >= 2 {
			rr.servers = append(rr.servers, float64(sp.GeneratedTokens-1)/sp.Decode.Seconds())
			rr.from = FromTimings
		}
	}
	if rr.failed == 0 && len(rr.speeds) == b {
		rr.total = 0
		for _, v := range rr.speeds {
			rr.total += v
		}
		if span := lastMax - firstMin; span > 0 {
			rr.overlap = max(0, float64(lastMin-firstMax)/float64(span))
		}
	}
	d := r.measure(ctx, max(generated, -1), finished)
	if rr.from == "" && d != nil && rr.failed == 0 {
		if secs, ok := d[snapshot.TokensPredictedSecondsTotal]; ok && secs > 0 {
			rr.servers = []float64{(d[snapshot.TokensPredictedTotal] - float64(finished)) / secs}
			rr.from = FromMetrics
		}
	}
	if len(rr.servers) != len(rr.speeds) && rr.from == FromTimings {
		rr.servers, rr.from = nil, "" // some answers said no timings: none of them counts
	}
	return rr, true
}

func decodePoint(b int, rounds []roundResult, cold *roundResult) DecodePoint {
	p := DecodePoint{Batch: b, Overlap: report.Number(math.NaN())}
	var speeds, totals, servers []float64
	from := ""
	for _, rr := range rounds {
		p.Requests += len(rr.speeds)
		p.Failed += rr.failed
		p.EarlyStops += rr.short
		speeds = append(speeds, rr.speeds...)
		if !math.IsNaN(rr.total) {
			p.Rounds++
			totals = append(totals, rr.total)
			if !known(p.Overlap) || rr.overlap < float64(p.Overlap) {
				p.Overlap = report.Number(rr.overlap)
			}
		}
		if rr.from != "" {
			servers = append(servers, rr.servers...)
			from = rr.from
		}
	}
	p.PerRequest, p.Total = spreadOf(speeds), spreadOf(totals)
	if s := spreadOf(servers); s.N > 0 {
		p.Server, p.ServerFrom = &s, from
	}
	if cold != nil {
		c := spreadOf(cold.speeds)
		p.Cold = &DecodeSample{PerRequest: c.Median, Total: report.Number(cold.total), Server: spreadOf(cold.servers).Median}
	}
	return p
}
