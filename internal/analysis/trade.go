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
	t.prefillSeconds = computed / t.prefill
	if b, ok := a.s.Extra[snapshot.ExtraBusySlotsPerDecode]; ok && b > 0 {
		// llama.cpp counts the batch itself: its busy slots a decode call.
		t.batch, t.decode, t.batchWhere = decodeAtBatch(p.Decode, b)
	} else {
		t.batch, t.decode, t.batchWhere = decodeMatching(p.Decode, t.perRequest, t.prefillSeconds, generated)
	}
	t.decodeSeconds = generated / t.decode
	return t, ""
}

// meanPrompt is the mean prompt tokens a request computed (its cached
// ones left out: a prompt partly served from the cache computes only the
// rest, at the cost of a prompt that long), over the requests finished,
// or the prompt-length histogram's count of them; NaN where the server
// counts neither.
func (a *analyzer) meanPrompt(computed float64) float64 {
	n, ok := a.s.Scalar(snapshot.RequestsTotal)
	if h := a.hist(snapshot.RequestPromptTokens); !ok && h != nil && !h.NoTop {
		n, ok = h.Total(), true
	}
	if !ok || !(n > 0) {
		return math.NaN()
	}
	return computed / n
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
		return tokens / secs, "over all its lengths: the server's mean prompt is unknown"
	}
	first, last := ps[0], ps[len(ps)-1]
	switch {
	case length <= first.Length:
		if length < first.Length*0.99 {
			return first.TokensPerSecond, "at " + units.Integer(first.Length) + " tokens, its shortest (the server's mean prompt computed is " + units.Integer(length) + ")"
		}
		return first.TokensPerSecond, "at " + units.Integer(first.Length) + " tokens"
	case length >= last.Length:
		if length > last.Length*1.01 {
			return last.TokensPerSecond, "at " + units.Integer(last.Length) + " tokens, its longest (the server's mean prompt computed is " + units.Integer(length) + ")"
		}
		return last.TokensPerSecond, "at " + units.Integer(last.Length) + " tokens"
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].Length >= length })
	lo, hi := ps[i-1], ps[i]
	f := (length - lo.Length) / (hi.Length - lo.Length)
	perToken := (1-f)/lo.TokensPerSecond + f/hi.TokensPerSecond
	return 1 / perToken, "at the server's mean prompt computed, " + units.Integer(length) + " tokens"
}

// decodeMatching finds the batch size at which the probe's requests
// decoded one by one as fast as the server's did, once the server's are
// rid of the prefill that paused them: an engine runs other requests'
// prefill between its decode steps, and a request's decode time counts
// those pauses. Taking every prefill second (prefillSeconds, Tp) to have
// paused the requests decoding (so under load; at one request at a time
// the batch found is the probe's smallest anyway), a batch of b decoding
// at r(b) each between pauses takes Td = G/(b·r(b)) of engine time for
// the G tokens generated, and its requests' speed, pauses included, is
// r(b)·Td/(Td + Tp): the server's own (perRequest, g) where r(b)·(1 −
// g·Tp·b/G) = g. That side falls as b grows, so the batch is found by
// halving the probed range; a request's time a token is read on the line
// between two probed batch sizes (a decode step's time grows about
// linearly with its batch). Where the server's requests were faster than
// the probe's smallest batch, or slower than its largest, that end's
// batch is taken, and where says so.
func decodeMatching(ds []DecodeSpeed, perRequest, prefillSeconds, generated float64) (batch, total float64, where string) {
	f := func(b float64) float64 {
		return perRequestAt(ds, b)*(1-perRequest*prefillSeconds*b/generated) - perRequest
	}
	// between is the server's requests' speed between pauses at batch b.
	between := func(b float64) float64 {
		return perRequest * (1 + prefillSeconds*b*perRequestAt(ds, b)/generated)
	}
	lo, hi := ds[0].Batch, ds[len(ds)-1].Batch
	switch {
	case f(lo) <= 0:
		batch = lo
		where = "at batch " + units.Integer(lo) + ": between prefill's pauses the server's requests decoded at " + units.Count(between(lo)) + " tok/s each, no slower than the probe's there"
	case f(hi) >= 0:
		batch = hi
		where = "at batch " + units.Integer(hi) + ", its largest: between prefill's pauses the server's requests decoded at " + units.Count(between(hi)) + " tok/s each, slower than the probe's there, so decode may be faster than this"
	default:
		for range 64 {
			mid := (lo + hi) / 2
			if f(mid) > 0 {
				lo = mid
			} else {
				hi = mid
			}
		}
		batch = (lo + hi) / 2
		where = "at batch " + inFlight(batch) + ", where the probe's requests decoded as the server's did between prefill's pauses, " + units.Count(perRequestAt(ds, batch)) + " tok/s each"
	}
	return batch, batch * perRequestAt(ds, batch), where
}

// perRequestAt is the probe's speed of one request at batch size b: its
// time a token read on the line between the two probed batch sizes
// around b, beyond them the nearest's.
func perRequestAt(ds []DecodeSpeed, b float64) float64 {
	first, last := ds[0], ds[len(ds)-1]
	switch {
	case b <= first.Batch:
		return first.PerRequest
	case b >= last.Batch:
		return last.PerRequest
	}
	i := sort.Search(len(ds), func(i int) bool { return ds[i].Batch >= b })
	lo, hi := ds[i-1], ds[i]
	f := (b - lo.Batch) / (hi.Batch - lo.Batch)
	return 1 / ((1-f)/lo.PerRequest + f/hi.PerRequest)
}

// decodeAtBatch is the probe's total at a batch size the server says it
// ran (llama.cpp's busy slots a decode call), within the probed sizes.
func decodeAtBatch(ds []DecodeSpeed, b float64) (batch, total float64, where string) {
	first, last := ds[0], ds[len(ds)-1]
	where = "at batch " + inFlight(b) + ", the server's mean busy slots a decode call"
	switch {
	case b < first.Batch:
		b, where = first.Batch, where+" (the probe's smallest, "+units.Integer(first.Batch)+", taken)"
	case b > last.Batch:
		b, where = last.Batch, where+" (the probe's largest, "+units.Integer(last.Batch)+", taken)"
	}
	return b, b * perRequestAt(ds, b), where
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
	a.r.Figures.ProbeTrade = &report.ProbeTrade{Source: p.Source,
		PromptTokens: report.Number(t.prefillTokens), PromptLength: report.Number(t.length), PrefillTokensPerSecond: report.Number(t.prefill),
		GeneratedTokens: report.Number(t.generated), ServerPerRequest: report.Number(t.perRequest), DecodeBatch: report.Number(t.batch),
		DecodeTokensPerSecond: report.Number(t.decode), PrefillSeconds: report.Number(t.prefillSeconds), DecodeSeconds: report.Number(t.decodeSeconds),
		PrefillShare: report.Number(ps), DecodeShare: report.Number(ds)}
	row.Value, row.Bar = "prefill "+units.Percent(ps)+" · decode "+units.Percent(ds), bar(ps)
	row.Note = p.Source + ": the server's work at the probe's speeds"
	rows = append(rows, row,
		report.Row{ID: "probe_prefill", Label: "prefill, by the probe", Value: units.Count(t.prefill) + " tok/s",
			Note: fmt.Sprintf("%s prompt tokens take %s, %s; %s", units.Count(t.prefillTokens), units.Seconds(t.prefillSeconds), t.prefillWhere, p.PrefillFrom)},
		report.Row{ID: "probe_decode", Label: "decode, by the probe", Value: units.Count(t.decode) + " tok/s",
			Note: fmt.Sprintf("%s generated take %s, %s; %s", units.Count(t.generated), units.Seconds(t.decodeSeconds), t.batchWhere, p.DecodeFrom)})
	return append(rows, a.tradeRows(ps, ds, "engine time at the probe's speeds", "by the probe: ", TradeProbe)...)
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = termsafe.Quote(s)
	}
	return out
}
