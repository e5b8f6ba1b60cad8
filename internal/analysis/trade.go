package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// PhaseSpeeds are a server's prefill and decode speeds measured under
// control (`inferscope bench --probe`, read back by --probe-file): the
// phase trade's rows (exchange rate, break-even) weigh them in place of
// the server's own phase times where they are given.
type PhaseSpeeds struct {
	// Source names the probe in the rows ("the probe of 2026-12-06 08:07").
	Source string
	// Model is the model probed, "" where unknown: a report of a server
	// that does not serve it says so.
	Model string
	// Prefill is tokens a second by prompt length, lengths ascending;
	// PrefillFrom says what they were timed by ("the server's prefill
	// time", "client TTFT").
	Prefill     []PrefillSpeed
	PrefillFrom string
	// Decode is one request's decode tokens a second by batch size,
	// batches ascending (the batch's total is Batch × PerRequest);
	// DecodeFrom as PrefillFrom.
	Decode     []DecodeSpeed
	DecodeFrom string
}

// PrefillSpeed is prefill at one prompt length.
type PrefillSpeed struct {
	Length          float64
	TokensPerSecond float64
}

// DecodeSpeed is decode at one batch size: each request's tokens a second.
type DecodeSpeed struct {
	Batch      float64
	PerRequest float64
}

// trade is the phase trade weighed with a probe's speeds: the engine time
// each phase would take for the work the server did, at the speeds the
// probe measured.
type trade struct {
	prefillTokens, generated float64
	// length is the mean prompt length the prefill speed is read at; NaN
	// where the server says none (the speed is then the probe's over all
	// its lengths).
	length float64
	// prefill is the speed read; prefillWhere says where on the probe's
	// curve ("at 1,500 tokens", "beyond its longest, 8,192 tokens").
	prefill      float64
	prefillWhere string
	// perRequest is the server's own decode speed of one request; batch
	// the batch size at which the probe's requests decoded as fast, and
	// decode the probe's total there.
	perRequest, batch, decode float64
	batchWhere                string
	// prefillSeconds and decodeSeconds are the engine time each phase
	// takes at those speeds.
	prefillSeconds, decodeSeconds float64
}

// weigh works out the trade from the server's counters and the probe;
// why says what is missing where it cannot.
func (a *analyzer) weigh(p *PhaseSpeeds) (t trade, why string) {
	computed, ok := a.s.Scalar(snapshot.PromptTokensTotal)
	if !ok {
		return t, "the server publishes no count of the prompt tokens it computed"
	}
	generated, okG := a.s.Scalar(snapshot.TokensPredictedTotal)
	decodeSecs, okD := a.s.Scalar(snapshot.TokensPredictedSecondsTotal)
	switch {
	case !okG:
		return t, "the server publishes no count of the tokens it generated"
	case !okD:
		return t, "the server publishes no decode time, so the batch it decodes at is unknown"
	case len(p.Prefill) == 0:
		return t, "the probe has no prefill speed"
	case len(p.Decode) == 0:
		return t, "the probe has no decode speed"
	case !(computed+generated > 0) || !(decodeSecs > 0) || !(generated > 0):
		return t, "the server has done no prefill and decode work to weigh yet"
	}
	t.prefillTokens, t.generated = computed, generated
	t.length = a.meanPrompt(computed)
	t.prefill, t.prefillWhere = prefillAt(p.Prefill, t.length)
	t.perRequest = generated / decodeSecs
	t.batch, t.decode, t.batchWhere = decodeMatching(p.Decode, t.perRequest)
	t.prefillSeconds, t.decodeSeconds = computed/t.prefill, generated/t.decode
	return t, ""
}

// meanPrompt is the mean prompt length, cached tokens included: the
// prompt-length histogram's mean, else the tokens looked up over the
// requests finished; NaN where the server says neither.
func (a *analyzer) meanPrompt(computed float64) float64 {
	if h := a.hist(snapshot.RequestPromptTokens); h != nil && h.Total() > 0 && !h.NoSum {
		return h.Sum / h.Total()
	}
	n, ok := a.s.Scalar(snapshot.RequestsTotal)
	if !ok || !(n > 0) {
		return math.NaN()
	}
	cached, _ := a.s.Scalar(snapshot.CachedTokensTotal)
	return (computed + max(cached, 0)) / n
}

// prefillAt is the probe's prefill speed at a prompt of length tokens:
// between two probed lengths, the time a token takes read on the line
// between theirs; beyond the probed lengths, the nearest one's; with no
// length, the probe's over all its lengths (every length's tokens over
// their time).
func prefillAt(ps []PrefillSpeed, length float64) (float64, string) {
	if math.IsNaN(length) {
		tokens, secs := 0.0, 0.0
		for _, p := range ps {
			tokens += p.Length
			secs += p.Length / p.TokensPerSecond
		}
		return tokens / secs, "over its lengths, the server's mean prompt being unknown"
	}
	first, last := ps[0], ps[len(ps)-1]
	switch {
	case length <= first.Length:
		if length < first.Length*0.99 {
			return first.TokensPerSecond, "at its shortest prompt, " + units.Integer(first.Length) + " tokens, beyond the server's mean of " + units.Integer(length)
		}
		return first.TokensPerSecond, "at " + units.Integer(first.Length) + " tokens"
	case length >= last.Length:
		if length > last.Length*1.01 {
			return last.TokensPerSecond, "at its longest prompt, " + units.Integer(last.Length) + " tokens, short of the server's mean of " + units.Integer(length)
		}
		return last.TokensPerSecond, "at " + units.Integer(last.Length) + " tokens"
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].Length >= length })
	lo, hi := ps[i-1], ps[i]
	f := (length - lo.Length) / (hi.Length - lo.Length)
	perToken := (1-f)/lo.TokensPerSecond + f/hi.TokensPerSecond
	return 1 / perToken, "at the server's mean prompt of " + units.Integer(length) + " tokens"
}

// decodeMatching finds the batch size at which the probe's requests
// decoded one by one as fast as the server's did (perRequest): a
// request's time a token is read on the line between two probed batch
// sizes (a decode step's time grows about linearly with its batch). Its
// total there is batch × perRequest. Faster than the probe's smallest
// batch, or slower than its largest, the end's batch and total are
// taken, and where says so.
func decodeMatching(ds []DecodeSpeed, perRequest float64) (batch, total float64, where string) {
	first, last := ds[0], ds[len(ds)-1]
	switch {
	case perRequest >= first.PerRequest:
		return first.Batch, first.Batch * first.PerRequest, "its requests decoding at " + units.Count(perRequest) + " tok/s each on the server, no slower than the probe's at batch " + units.Integer(first.Batch)
	case perRequest <= last.PerRequest:
		return last.Batch, last.Batch * last.PerRequest, "its requests decoding at " + units.Count(perRequest) + " tok/s each on the server, slower than the probe's at its largest batch, " + units.Integer(last.Batch) + ": decode may be faster than this"
	}
	for i := 1; i < len(ds); i++ {
		lo, hi := ds[i-1], ds[i]
		if perRequest <= lo.PerRequest && perRequest >= hi.PerRequest {
			f := (1/perRequest - 1/lo.PerRequest) / (1/hi.PerRequest - 1/lo.PerRequest)
			batch = lo.Batch + f*(hi.Batch-lo.Batch)
			return batch, batch * perRequest, "batch " + inFlight(batch) + ", where the probe's requests decoded at the server's " + units.Count(perRequest) + " tok/s each"
		}
	}
	// The probe's speeds do not fall with the batch: the nearest.
	best := ds[0]
	for _, d := range ds {
		if math.Abs(d.PerRequest-perRequest) < math.Abs(best.PerRequest-perRequest) {
			best = d
		}
	}
	return best.Batch, best.Batch * best.PerRequest, "batch " + units.Integer(best.Batch) + ", the probe's nearest to the server's " + units.Count(perRequest) + " tok/s a request"
}

// The bases of the phase trade ([report.Figures.TradeBasis]).
const (
	TradeRequestTime = "request_time"
	TradeProbe       = "probe"
)

// probeRows are the phase trade weighed with a probe's speeds: the engine
// time each phase takes for the server's work at those speeds, then the
// exchange rate and break-even of that split. Where the probe cannot be
// weighed (the server publishes too little), a row says why, and the
// trade is the request time's as without a probe.
func (a *analyzer) probeRows(p *PhaseSpeeds, split bool, pre, dec float64) []report.Row {
	var rows []report.Row
	row := report.Row{ID: "probe_trade", Label: "engine time, by the probe"}
	if p.Model != "" && len(a.s.Models) > 0 && !slices.Contains(a.s.Models, p.Model) {
		a.judge(nil, tradeOtherModel, "%s is of the model %s, which this server does not serve (%s): its speeds are another model's, and the trade weighed with them is only as good as the likeness",
			p.Source, termsafe.Quote(p.Model), strings.Join(quoted(a.s.Models), ", "))
	}
	t, why := a.weigh(p)
	if why != "" {
		row.Value, row.Note = "not weighed", p.Source+": "+why
		rows = append(rows, row)
		if split {
			rows = append(rows, a.tradeRows(pre/(pre+dec), dec/(pre+dec), "request time", "", TradeRequestTime)...)
		}
		return rows
	}
	e := t.prefillSeconds + t.decodeSeconds
	ps, ds := t.prefillSeconds/e, t.decodeSeconds/e
	length := math.NaN()
	if !math.IsNaN(t.length) {
		length = t.length
	}
	a.r.Figures.ProbeTrade = &report.ProbeTrade{Source: p.Source,
		PromptTokens: report.Number(t.prefillTokens), PromptLength: report.Number(length), PrefillTokensPerSecond: report.Number(t.prefill),
		GeneratedTokens: report.Number(t.generated), ServerPerRequest: report.Number(t.perRequest), DecodeBatch: report.Number(t.batch),
		DecodeTokensPerSecond: report.Number(t.decode), PrefillSeconds: report.Number(t.prefillSeconds), DecodeSeconds: report.Number(t.decodeSeconds),
		PrefillShare: report.Number(ps), DecodeShare: report.Number(ds)}
	row.Value, row.Bar = "prefill "+units.Percent(ps)+" · decode "+units.Percent(ds), bar(ps)
	row.Note = fmt.Sprintf("%s: %s prompt tokens at %s tok/s (%s, by %s), %s generated at %s tok/s (%s, by %s)",
		p.Source, units.Count(t.prefillTokens), units.Count(t.prefill), t.prefillWhere, p.PrefillFrom,
		units.Count(t.generated), units.Count(t.decode), t.batchWhere, p.DecodeFrom)
	rows = append(rows, row)
	return append(rows, a.tradeRows(ps, ds, "engine time at the probe's speeds", "by the probe: ", TradeProbe)...)
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = termsafe.Quote(s)
	}
	return out
}
