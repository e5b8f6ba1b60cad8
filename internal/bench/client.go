package bench

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/report"
)

// The client figures: what the generator measured of each measured
// request (warm-up excluded), defined point by point in docs/bench.md.
// Percentiles are exact, from every request's value: each figure is kept
// as a column of every request's value (8 bytes a request and figure, in
// chunks, so a run of a million requests holds tens of megabytes and
// never a copy of its growth), sorted once at the end.

// Dist is one per-request figure over the measured requests.
type Dist struct {
	// Count is how many requests have the figure.
	Count int           `json:"count"`
	Mean  report.Number `json:"mean"`
	Min   report.Number `json:"min"`
	P50   report.Number `json:"p50"`
	P90   report.Number `json:"p90"`
	P95   report.Number `json:"p95"`
	P99   report.Number `json:"p99"`
	Max   report.Number `json:"max"`
}

// column is one figure of every request, in chunks: growing it never
// copies what it holds.
type column[T float64 | int32 | int64] struct {
	chunks [][]T
	n      int
}

const chunkLen = 1 << 14

func (c *column[T]) add(v T) {
	if c.n%chunkLen == 0 {
		c.chunks = append(c.chunks, make([]T, 0, chunkLen))
	}
	last := len(c.chunks) - 1
	c.chunks[last] = append(c.chunks[last], v)
	c.n++
}

// at is the i-th value.
func (c *column[T]) at(i int) T { return c.chunks[i/chunkLen][i%chunkLen] }

// distOf states values (NaN ones left out; the slice is sorted in place):
// percentiles by the nearest rank (the smallest value with at least that
// share of the requests at or below it), so each is a value some request
// had.
func distOf(all []float64) Dist {
	all = slices.DeleteFunc(all, math.IsNaN)
	nan := report.Number(math.NaN())
	n := len(all)
	if n == 0 {
		return Dist{Mean: nan, Min: nan, P50: nan, P90: nan, P95: nan, P99: nan, Max: nan}
	}
	slices.Sort(all)
	sum := 0.0
	for _, v := range all {
		sum += v
	}
	return Dist{
		Count: n, Mean: report.Number(sum / float64(n)), Min: report.Number(all[0]), Max: report.Number(all[n-1]),
		P50: report.Number(rank(all, 0.50)), P90: report.Number(rank(all, 0.90)),
		P95: report.Number(rank(all, 0.95)), P99: report.Number(rank(all, 0.99)),
	}
}

// rank is the nearest-rank percentile q of sorted values.
func rank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Client is what the generator measured of the measured requests.
type Client struct {
	// Sent counts the measured requests sent; Completed those answered
	// whole; Failed those that were not, by kind (ErrorKinds); Warmup
	// the warm-up's requests, left out of every figure here.
	Sent      int            `json:"sent"`
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`
	Errors    map[string]int `json:"errors"`
	Warmup    int            `json:"warmup"`
	// Dropped counts the arrivals due before sending stopped that were
	// never sent (the pacer behind, or waiting for a slot at the end).
	Dropped int `json:"dropped"`
	// WindowSeconds is what the throughputs divide by: from the first
	// measured request's send to the end of the last one's answer.
	WindowSeconds report.Number `json:"window_seconds"`
	// RequestRate and OutputRate are completed requests and their output
	// tokens over WindowSeconds; PromptRate their prompt tokens.
	RequestRate report.Number `json:"request_rate"`
	OutputRate  report.Number `json:"output_token_rate"`
	PromptRate  report.Number `json:"prompt_token_rate"`
	// TokenSource says where output tokens come from: "usage" (the
	// server's own count), "events" (content events counted: no usage
	// sent), or "mixed".
	TokenSource string `json:"token_source"`
	// OutputTokens, PromptTokens and CachedTokens are the completed
	// requests' sums (cached: where reported; null where no request
	// reported it).
	OutputTokens int           `json:"output_tokens"`
	PromptTokens *int          `json:"prompt_tokens"`
	CachedTokens *int          `json:"cached_tokens"`
	Lengths      Lengths       `json:"lengths"`
	TTFB         Dist          `json:"ttfb_seconds"`
	TTFT         Dist          `json:"ttft_seconds"`
	E2E          Dist          `json:"e2e_seconds"`
	TPOT         Dist          `json:"tpot_seconds"`
	RequestRates Dist          `json:"output_tokens_per_second"`
	ITL          ITL           `json:"itl_seconds"`
	Lateness     Lateness      `json:"lateness_seconds"`
	SlotWait     *Lateness     `json:"slot_wait_seconds"`
	CPUSeconds   report.Number `json:"cpu_seconds"`
	CPUShare     report.Number `json:"cpu_share"`
	Split        *Split        `json:"server_split"`
	Goodput      *Goodput      `json:"goodput"`
	// Short counts completed requests that ended before the output length
	// asked at the model's own end (Stopped) or at the server's length
	// limit (Cut: the context).
	Stopped int `json:"stopped_short"`
	Cut     int `json:"cut_by_length"`

	// TTFTHistogram bins the TTFTs of the requests in TTFT, for a chart
	// of them (the HTML report); nil where none has one.
	TTFTHistogram *Histogram `json:"ttft_histogram"`
}

// Lengths are the prompt and output lengths asked and achieved.
type Lengths struct {
	// PromptAsked and OutputAsked are the workload's mean lengths (null
	// where it set none); Prompt and Output what the server's usage says
	// the completed requests had.
	PromptAsked report.Number `json:"prompt_asked"`
	OutputAsked report.Number `json:"output_asked"`
	Prompt      Dist          `json:"prompt"`
	Output      Dist          `json:"output"`
}

// ITL is the gaps between content events, pooled over every measured
// request (vLLM's ITL, AIPerf's inter-chunk latency), from a streaming
// histogram: each value within RelativeError of the true one.
type ITL struct {
	Count         int64         `json:"count"`
	Mean          report.Number `json:"mean"`
	P50           report.Number `json:"p50"`
	P90           report.Number `json:"p90"`
	P99           report.Number `json:"p99"`
	Max           report.Number `json:"max"`
	RelativeError report.Number `json:"relative_error"`
}

// Lateness is how late requests were sent against their schedule (or
// waited for a slot), over the measured requests.
type Lateness struct {
	Count int           `json:"count"`
	Mean  report.Number `json:"mean"`
	P50   report.Number `json:"p50"`
	P99   report.Number `json:"p99"`
	Max   report.Number `json:"max"`
	// Late counts sends more than a millisecond late.
	Late int `json:"late"`
}

// Split is the server's own per-request account of the completed
// requests, where its answers carry one (Ollama's durations, llama.cpp's
// timings): mean seconds per request, null where not said.
type Split struct {
	Source   string        `json:"source"`
	Requests int           `json:"requests"`
	Load     report.Number `json:"load"`
	Prefill  report.Number `json:"prefill"`
	Decode   report.Number `json:"decode"`
	// Beyond is the client's mean TTFT beyond the server's load and
	// prefill: queueing and all that lies outside the engine, which these
	// accounts do not tell apart.
	Beyond report.Number `json:"ttft_beyond"`
}

// clientTally takes the measured requests' Records one at a time. Each
// completed request adds one row to the aligned columns (NaN or -1 where
// a figure is unknown); TPOT and per-request output rates are derived
// from them at the end.
type clientTally struct {
	c                     Client
	ttfb, ttft, e2e       column[float64]
	prompt, output        column[int32]
	firstSent, lastEnd    time.Duration
	promptSum, cachedSum  int
	promptSeen, cacheSeen bool
	usage, events         int
	askedPrompt           sum
	askedOutput           sum
	split                 splitTally
	slo                   SLO
	good                  int
}

type sum struct {
	total float64
	n     int
}

func (s *sum) add(v float64) { s.total += v; s.n++ }

func (s sum) mean() report.Number {
	if s.n == 0 {
		return report.Number(math.NaN())
	}
	return report.Number(s.total / float64(s.n))
}

type splitTally struct {
	source                string
	n                     int
	load, prefill, decode sum
	beyond                sum // client TTFT beyond the load and prefill
}

func newClientTally(slo SLO) *clientTally {
	return &clientTally{c: Client{Errors: map[string]int{}}, firstSent: -1, lastEnd: -1, slo: slo}
}

// secondsOr is d in seconds, NaN for a time not reached (-1).
func secondsOr(d time.Duration) float64 {
	if d < 0 {
		return math.NaN()
	}
	return d.Seconds()
}

// tpotOf is (E2E − TTFT)/(tokens − 1), NaN where a request has fewer
// than two tokens or a time is unknown.
func tpotOf(e2e, ttft float64, tokens int32) float64 {
	if tokens < 2 {
		return math.NaN()
	}
	return (e2e - ttft) / float64(tokens-1)
}

// add counts one measured request.
func (t *clientTally) add(r load.Record) {
	t.c.Sent++
	if t.firstSent < 0 || r.Sent < t.firstSent {
		t.firstSent = r.Sent
	}
	if r.RequestedPrompt > 0 {
		t.askedPrompt.add(float64(r.RequestedPrompt))
	}
	if r.RequestedOutput > 0 {
		t.askedOutput.add(float64(r.RequestedOutput))
	}
	if r.Error != "" {
		t.c.Failed++
		t.c.Errors[errorKind(r)]++
		return
	}
	t.c.Completed++
	if r.RequestedOutput > 0 && r.OutputTokens >= 0 && r.OutputTokens < r.RequestedOutput {
		if r.Finish == "length" {
			t.c.Cut++
		} else {
			t.c.Stopped++
		}
	}
	if end := r.Sent + max(r.Done, r.E2E); end > t.lastEnd {
		t.lastEnd = end
	}
	ttft, e2e := secondsOr(r.TTFT), secondsOr(r.E2E)
	t.ttfb.add(secondsOr(r.TTFB))
	t.ttft.add(ttft)
	t.e2e.add(e2e)
	t.output.add(int32(max(r.OutputTokens, -1)))
	t.prompt.add(int32(max(r.PromptTokens, -1)))
	if r.OutputTokens >= 0 {
		t.c.OutputTokens += r.OutputTokens
	}
	switch r.TokenSource {
	case "usage":
		t.usage++
	case "events":
		t.events++
	}
	if r.PromptTokens >= 0 {
		t.promptSum += r.PromptTokens
		t.promptSeen = true
	}
	if r.CachedTokens >= 0 {
		t.cachedSum += r.CachedTokens
		t.cacheSeen = true
	}
	t.addSplit(r)
	if t.slo.good(r, tpotOf(e2e, ttft, int32(r.OutputTokens))) {
		t.good++
	}
}

func (t *clientTally) addSplit(r load.Record) {
	s := r.Split
	if s == nil {
		return
	}
	t.split.source = s.Source
	t.split.n++
	if s.Load >= 0 {
		t.split.load.add(s.Load.Seconds())
	}
	if s.Prefill >= 0 {
		t.split.prefill.add(s.Prefill.Seconds())
	}
	if s.Decode >= 0 {
		t.split.decode.add(s.Decode.Seconds())
	}
	if r.TTFT >= 0 && s.Prefill >= 0 {
		t.split.beyond.add((r.TTFT - s.Prefill - max(s.Load, 0)).Seconds())
	}
}

// errorKind names a failure as the report counts it: an HTTP status by
// its number.
func errorKind(r load.Record) string {
	if r.Error == load.ErrHTTP && r.Status > 0 {
		return "HTTP " + strconv.Itoa(r.Status)
	}
	return string(r.Error)
}

// finishUp states the figures once the run has ended.
func (t *clientTally) finishUp(s load.Summary, cores int) Client {
	c := t.c
	nan := report.Number(math.NaN())
	c.WindowSeconds, c.RequestRate, c.OutputRate, c.PromptRate = nan, nan, nan, nan
	if t.firstSent >= 0 && t.lastEnd > t.firstSent {
		w := (t.lastEnd - t.firstSent).Seconds()
		c.WindowSeconds = report.Number(w)
		c.RequestRate = report.Number(float64(c.Completed) / w)
		c.OutputRate = report.Number(float64(c.OutputTokens) / w)
		if t.promptSeen {
			c.PromptRate = report.Number(float64(t.promptSum) / w)
		}
	}
	switch {
	case t.usage > 0 && t.events > 0:
		c.TokenSource = "mixed"
	case t.events > 0:
		c.TokenSource = "events"
	case t.usage > 0:
		c.TokenSource = "usage"
	}
	if t.promptSeen {
		c.PromptTokens = &t.promptSum
	}
	if t.cacheSeen {
		c.CachedTokens = &t.cachedSum
	}
	ttft := t.ttft.values()
	c.TTFTHistogram = histogramOf(ttft)
	c.TTFB, c.TTFT, c.E2E = distOf(t.ttfb.values()), distOf(ttft), distOf(t.e2e.values())
	n := t.e2e.n
	derived := make([]float64, n)
	for i := range n {
		derived[i] = tpotOf(t.e2e.at(i), t.ttft.at(i), t.output.at(i))
	}
	c.TPOT = distOf(derived)
	derived = derived[:n]
	for i := range n {
		derived[i] = math.NaN()
		if e2e, out := t.e2e.at(i), t.output.at(i); e2e > 0 && out >= 0 {
			derived[i] = float64(out) / e2e
		}
	}
	c.RequestRates = distOf(derived)
	c.Lengths = Lengths{PromptAsked: t.askedPrompt.mean(), OutputAsked: t.askedOutput.mean(), Prompt: distOf(t.prompt.values()), Output: distOf(t.output.values())}
	c.ITL = itlOf(s)
	c.Lateness = latenessOf(s.Lateness)
	if s.SlotWait.Count > 0 {
		w := latenessOf(s.SlotWait)
		c.SlotWait = &w
	}
	c.CPUSeconds, c.CPUShare = nan, nan
	if s.CPU > 0 {
		c.CPUSeconds = report.Number(s.CPU.Seconds())
		if wall := max(s.MeasuredTo, s.SendEnd).Seconds(); wall > 0 && cores > 0 {
			c.CPUShare = report.Number(s.CPU.Seconds() / (wall * float64(cores)))
		}
	}
	if t.split.n > 0 {
		c.Split = &Split{Source: t.split.source, Requests: t.split.n, Load: t.split.load.mean(),
			Prefill: t.split.prefill.mean(), Decode: t.split.decode.mean(), Beyond: t.split.beyond.mean()}
	}
	if t.slo.Set() {
		c.Goodput = t.slo.goodput(t.good, c.Completed, c.Failed, float64(c.WindowSeconds))
	}
	return c
}

// values copies the column as float64, an unknown count (-1) as NaN.
func (c *column[T]) values() []float64 {
	out := make([]float64, 0, c.n)
	for _, ch := range c.chunks {
		for _, v := range ch {
			f := float64(v)
			if _, isCount := any(v).(int32); isCount && v < 0 {
				f = math.NaN()
			}
			out = append(out, f)
		}
	}
	return out
}

// itlOf states the summary's pooled gaps (microseconds) in seconds.
func itlOf(s load.Summary) ITL {
	nan := report.Number(math.NaN())
	out := ITL{Mean: nan, P50: nan, P90: nan, P99: nan, Max: nan, RelativeError: 0.001}
	h := s.ITL
	if h == nil || h.TotalCount() == 0 {
		return out
	}
	us := func(v int64) report.Number { return report.Number(float64(v) / 1e6) }
	out.Count = h.TotalCount()
	out.Mean = report.Number(h.Mean() / 1e6)
	out.P50, out.P90, out.P99, out.Max = us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(90)), us(h.ValueAtQuantile(99)), us(h.Max())
	return out
}

func latenessOf(l load.Lateness) Lateness {
	s := func(d time.Duration) report.Number { return report.Number(d.Seconds()) }
	if l.Count == 0 {
		nan := report.Number(math.NaN())
		return Lateness{Mean: nan, P50: nan, P99: nan, Max: nan}
	}
	return Lateness{Count: l.Count, Mean: s(l.Mean), P50: s(l.P50), P99: s(l.P99), Max: s(l.Max), Late: l.Late}
}
