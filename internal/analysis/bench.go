package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// BenchRun is what one load run (`inferscope bench`) measured of the
// server and of itself: the inputs of the run's verdict, of its self-check
// of the generator against the server, and of its validity flags, each
// judged through the one table ([JudgeBench]). A figure the run could not
// have is nil (pointers) or NaN (samples), never 0.
type BenchRun struct {
	// Samples are the server's readings at each scrape of the measured
	// window, oldest first, the window's first and last scrapes included.
	Samples []BenchSample
	// Preemptions is the window's increase of the server's preemptions.
	Preemptions *float64
	// PrefillSeconds and DecodeSeconds are the window's increases of the
	// requests' summed time in prefill and in decode.
	PrefillSeconds, DecodeSeconds *float64
	// ServerQueue and ServerPrefill are the server's mean queue and prefill
	// time per request over the window (seconds).
	ServerQueue, ServerPrefill *float64
	// ClientTTFT is the measured requests' mean time to first token as
	// the generator timed it (seconds).
	ClientTTFT *float64
	// LateP99 is how late the generator sent its requests at p99
	// (seconds); nil in a closed loop, where nothing is scheduled.
	LateP99 *float64
	// CPUShare is the generator's CPU time over the run's wall time and
	// the cores it had.
	CPUShare *float64
	// Check is the generator's account against the server's.
	Check BenchCheck
	// PrefixHit is the window's prefix-cache hit ratio; PrefixMeant the
	// share of prompt tokens the workload shares on purpose (nil where
	// it is not known: a dataset).
	PrefixHit, PrefixMeant *float64
	// FixedOutput is the output length asked of every request (0: none);
	// EarlyStops counts the measured requests that ended before it at
	// the model's own end.
	FixedOutput, EarlyStops int
	// ContextCut counts measured requests the server's context cut short.
	ContextCut int
	// Measured counts the measured requests sent; Errors those that failed,
	// by kind.
	Measured int
	Errors   map[string]int
	// Unsettled says the warm-up ended at its limit, WarmupLimit (a
	// duration as written), before the server's gauges settled.
	Unsettled   bool
	WarmupLimit string
	// Partial says the run was interrupted; Completed requests were
	// reported, StoppedAt (as written) is when it stopped sending.
	Partial   bool
	Completed int
	StoppedAt string
	// TokensFromEvents says output tokens were counted from streamed
	// events: the server sent no usage.
	TokensFromEvents bool
	// Advice is the server's wording for its knobs.
	Advice snapshot.Advice
}

// BenchSample is one scrape of a load run's measured window. A gauge or
// counter the server does not publish is NaN.
type BenchSample struct {
	// Seconds is the time since the window's first scrape.
	Seconds float64
	// Running, Waiting and KV are the server's gauges: requests running,
	// requests waiting, KV cache usage (0..1).
	Running, Waiting, KV float64
	// Generated and Finished are the increases since the window's first
	// scrape of the tokens generated and the requests finished.
	Generated, Finished float64
	// InFlight is the generator's requests in flight when the scrape was
	// taken.
	InFlight float64
}

// BenchCheck is the generator's account of a whole run (warm-up
// included) beside the server's counters over the same run.
type BenchCheck struct {
	// Comparable says every request the generator sent has ended, in the
	// generator's account and the server's: the counts can agree exactly.
	// Where it is false (a run interrupted past its drain, a scrape that
	// failed) the rows are shown uncoloured and no note is made.
	Comparable bool
	// ClientRequests counts requests answered whole; ServerRequests the
	// server's finished requests (nil: not published).
	ClientRequests int
	ServerRequests *float64
	// ClientTokens counts the output tokens received, TokensFromUsage
	// says from the server's usage (events counted otherwise: not held to
	// agree); ServerTokens the server's generated tokens.
	ClientTokens    int
	TokensFromUsage bool
	ServerTokens    *float64
}

// The verdicts a run can have, as note ids, and the note of a generator
// that could not keep up.
const (
	VerdictSaturated    = "bench_saturated"
	VerdictKVBound      = "bench_kv_bound"
	VerdictPrefillBound = "bench_prefill_bound"
	VerdictDecodeBound  = "bench_decode_bound"
	NoteClientBound     = "bench_client_bound"
)

// BenchJudgement is what the table says of a run.
type BenchJudgement struct {
	// Verdict is the id of the server's verdict's note, "" where the run
	// had none (nothing published to judge by); ClientBound says the
	// generator could not keep up.
	Verdict     string
	ClientBound bool
	// Notes are the run's notes: the verdict first, then the time outside
	// the engine, the self-check, the validity flags.
	Notes []report.Note
	// Rows colours the self-check's rows by their path
	// ("self_check/requests").
	Rows map[string]report.Severity
}

// JudgeBench judges a load run through the table: the server's verdict
// (the first of KV-bound, saturated, then prefill- or decode-bound that
// holds), a generator that could not keep up (client-bound: beside the
// verdict, which is still the server's account of the load it got), the
// time its requests spent outside the engine, the self-check of the
// generator against the server, and what makes its figures other than
// they seem.
func JudgeBench(in BenchRun) BenchJudgement {
	j := &benchJudge{in: in, out: BenchJudgement{Rows: map[string]report.Severity{}}}
	j.verdict()
	j.clientBound()
	j.outside()
	j.selfCheck()
	j.validity()
	return j.out
}

type benchJudge struct {
	in  BenchRun
	out BenchJudgement
}

// note makes band b's note.
func (j *benchJudge) note(b band, format string, args ...any) {
	jd := judgements[b]
	j.out.Notes = append(j.out.Notes, report.Note{ID: jd.note, Severity: jd.severity(), Text: fmt.Sprintf(format, args...)})
}

// row colours the row band b judges, and makes its note where it has one.
func (j *benchJudge) row(b band, format string, args ...any) {
	jd := judgements[b]
	for _, r := range jd.rows {
		j.out.Rows[r] = jd.colour
	}
	if jd.note != "" {
		j.note(b, format, args...)
	}
}

func (j *benchJudge) verdict() {
	for _, try := range []func() bool{j.kvBound, j.saturated, j.phaseBound} {
		if try() {
			j.out.Verdict = j.out.Notes[len(j.out.Notes)-1].ID
			return
		}
	}
}

func (j *benchJudge) clientBound() bool {
	late := j.in.LateP99 != nil && *j.in.LateP99 >= clientLate
	cpu := j.in.CPUShare != nil && *j.in.CPUShare >= clientCPU
	if !late && !cpu {
		return false
	}
	var why []string
	if j.in.LateP99 != nil {
		why = append(why, "its sends were "+units.Seconds(*j.in.LateP99)+" late at p99")
	}
	if j.in.CPUShare != nil {
		why = append(why, "it used "+units.Percent(*j.in.CPUShare)+" of the cores it had")
	}
	j.note(benchClientBound, "the generator could not keep up: %s; these figures measure the machine that sent the load as much as the server, which got less than was asked. Send from a machine with more room, or lower the load",
		strings.Join(why, ", and "))
	j.out.ClientBound = true
	return true
}

// kvBound: KV usage near full, with preemptions or requests waiting while
// it was.
func (j *benchJudge) kvBound() bool {
	peak, queuedFull := math.NaN(), false
	for _, s := range j.in.Samples {
		if math.IsNaN(s.KV) {
			continue
		}
		if math.IsNaN(peak) || s.KV > peak {
			peak = s.KV
		}
		if s.KV >= kvPressure && s.Waiting > 0 {
			queuedFull = true
		}
	}
	preempted := j.in.Preemptions != nil && *j.in.Preemptions > 0
	if math.IsNaN(peak) || peak < kvPressure || (!preempted && !queuedFull) {
		return false
	}
	var what []string
	if preempted {
		p := j.in.Advice.Preempted
		if p == "" {
			p = "preempted"
		}
		what = append(what, fmt.Sprintf("%s requests %s (their work recomputed)", units.Integer(*j.in.Preemptions), p))
	}
	if queuedFull {
		what = append(what, "requests waiting while it was")
	}
	fix := j.in.Advice.KVFix
	if fix == "" {
		fix = "give the KV cache more memory, or shorten the contexts"
	}
	j.note(benchKVBound, "the KV cache limited this run: its usage reached %s with %s; requests waited for cache pages, not for compute. Fewer requests at once fit; to hold more, %s",
		units.Percent(peak), strings.Join(what, " and "), fix)
	return true
}

// saturated: the queue grew while the throughput stayed flat, or requests
// waited through most of the run.
func (j *benchJudge) saturated() bool {
	n := len(j.in.Samples)
	if n < 4 {
		return false
	}
	first, second := j.in.Samples[:n/2], j.in.Samples[n/2:]
	w1, w2 := meanOf(first, func(s BenchSample) float64 { return s.Waiting }), meanOf(second, func(s BenchSample) float64 { return s.Waiting })
	if math.IsNaN(w1) || math.IsNaN(w2) {
		// Without a waiting gauge the generator's own count stands in.
		w1 = meanOf(first, func(s BenchSample) float64 { return s.InFlight })
		w2 = meanOf(second, func(s BenchSample) float64 { return s.InFlight })
	}
	r1, r2 := rateOver(j.in.Samples[0], first[len(first)-1]), rateOver(first[len(first)-1], j.in.Samples[n-1])
	fix := j.in.Advice.QueueFix
	if fix == "" {
		fix = "admit more requests at once, or add replicas"
	}
	if w2-w1 >= saturatedRise && !math.IsNaN(r1) && r1 > 0 && math.Abs(r2-r1) <= saturatedFlat*r1 {
		j.note(benchSaturated, "the server was past its capacity: requests waiting rose from %s to %s on average from the run's first half to its second while it generated %s tok/s in both; the latency here is queueing, and grows with the run. Send less than it completes, or %s",
			mean2(w1), mean2(w2), units.Count((r1+r2)/2), fix)
		return true
	}
	queued, waiting := 0, 0.0
	for _, s := range j.in.Samples {
		if s.Waiting > 0 {
			queued++
		}
	}
	waiting = meanOf(j.in.Samples, func(s BenchSample) float64 { return s.Waiting })
	running := meanOf(j.in.Samples, func(s BenchSample) float64 { return s.Running })
	if float64(queued) >= saturatedQueued*float64(n) && waiting >= saturatedWaiting {
		j.note(benchSaturated, "the load held more requests than the server runs at once: %s waited on average beside %s running, in %d of %d scrapes; time to first token includes that wait. Lower the concurrency toward what runs, or %s",
			mean2(waiting), mean2(running), queued, n, fix)
		return true
	}
	return false
}

// phaseBound: prefill or decode from the server's phase times.
func (j *benchJudge) phaseBound() bool {
	if j.in.PrefillSeconds == nil || j.in.DecodeSeconds == nil {
		return false
	}
	p, d := *j.in.PrefillSeconds, *j.in.DecodeSeconds
	if !(p+d > 0) {
		return false
	}
	share := p / (p + d)
	if share >= prefillBound {
		j.note(benchPrefillBound, "prefill took %s of the requests' time in prefill or decode: processing prompts bounds this run. Shorter prompts, a prefix the cache can serve, or larger prefill chunks help; a faster decode would not",
			units.Percent(share))
		return true
	}
	j.note(benchDecodeBound, "decode took %s of the requests' time in prefill or decode: generating tokens bounds this run. Fewer output tokens, a faster decode (a quantised model, speculative decoding) or fewer requests at once help; a faster prefill would not",
		units.Percent(1-share))
	return true
}

// outside: client TTFT beyond the server's queue and prefill.
func (j *benchJudge) outside() {
	if j.in.ClientTTFT == nil || j.in.ServerQueue == nil || j.in.ServerPrefill == nil {
		return
	}
	ttft, q, p := *j.in.ClientTTFT, *j.in.ServerQueue, *j.in.ServerPrefill
	out := ttft - q - p
	if out < outsideMin || out < outsideShare*ttft {
		return
	}
	j.note(benchOutsideEngine, "time to first token averaged %s at the client, of which the server counts %s in its queue and %s in prefill: %s (%s) passed outside the engine, in the network, the server's HTTP front end and tokenizer, or a proxy between. Look there before at the engine",
		units.Seconds(ttft), units.Seconds(q), units.Seconds(p), units.Seconds(out), units.Percent(out/ttft))
}

func (j *benchJudge) selfCheck() {
	c := j.in.Check
	if !c.Comparable {
		return
	}
	if c.ServerRequests != nil {
		if float64(c.ClientRequests) == *c.ServerRequests {
			j.row(benchRequestsAgree, "")
		} else {
			j.row(benchRequestsDisagree, "the generator completed %s requests over the run and the server counted %s finished: %s. Another client on the server, or requests the generator lost or counted twice; until they agree these figures cannot be trusted",
				units.Integer(float64(c.ClientRequests)), units.Integer(*c.ServerRequests), difference(float64(c.ClientRequests), *c.ServerRequests))
		}
	}
	if c.ServerTokens != nil && c.TokensFromUsage {
		if float64(c.ClientTokens) == *c.ServerTokens {
			j.row(benchTokensAgree, "")
		} else {
			j.row(benchTokensDisagree, "the generator received %s output tokens by the server's usage and the server counted %s generated: %s. Another client on the server, or answers the generator did not read to their end",
				units.Integer(float64(c.ClientTokens)), units.Integer(*c.ServerTokens), difference(float64(c.ClientTokens), *c.ServerTokens))
		}
	}
	client, server, n := Concurrency(j.in.Samples)
	if n < ConcurrencySamples {
		return
	}
	if off := math.Abs(client - server); off >= concurrencyOff && off >= concurrencyShare*client {
		j.row(benchConcurrencyDisagree, "the generator had %s requests in flight on average at the scrapes and the server %s running or waiting: requests held outside the engine (an HTTP front end that queues, a proxy, a connection limit), or another client",
			mean2(client), mean2(server))
		return
	}
	j.row(benchConcurrencyAgree, "")
}

// Concurrency is the mean of the generator's requests in flight and of the
// server's running and waiting requests over the samples that read both,
// and how many did (none: the means are 0).
func Concurrency(samples []BenchSample) (client, server float64, n int) {
	for _, s := range samples {
		if math.IsNaN(s.Running) || math.IsNaN(s.InFlight) {
			continue
		}
		w := s.Waiting
		if math.IsNaN(w) {
			w = 0
		}
		client += s.InFlight
		server += s.Running + w
		n++
	}
	if n == 0 {
		return 0, 0, 0
	}
	return client / float64(n), server / float64(n), n
}

func (j *benchJudge) validity() {
	in := j.in
	if in.PrefixHit != nil && in.PrefixMeant != nil && *in.PrefixHit > *in.PrefixMeant+prefixExcess {
		j.note(benchPrefixUnintended, "the prefix cache served %s of the prompt tokens where the workload shares %s on purpose: prompts of an earlier run (or a dataset that repeats) are cached, and prefill looks faster than these prompts are. Run again with another --seed, or once the server's cache is cleared",
			units.Percent(*in.PrefixHit), units.Percent(*in.PrefixMeant))
	}
	if in.FixedOutput > 0 && in.EarlyStops > 0 {
		j.note(benchEarlyStops, "%s of %s requests stopped before the %s output tokens asked, at the model's own end: the server does not hold them to the length (ignore_eos or min_tokens is not honoured), so the output figures are not of a fixed length",
			units.Integer(float64(in.EarlyStops)), units.Integer(float64(in.Measured)), units.Integer(float64(in.FixedOutput)))
	}
	if in.Unsettled {
		j.note(benchWarmupUnsettled, "the warm-up ended at its limit (%s) before the server's running requests and KV usage settled: the measured window starts while the load still ramps; give the warm-up longer",
			in.WarmupLimit)
	}
	if in.ContextCut > 0 {
		j.note(benchContextCut, "%s requests were cut short by the server's context (finished at its length before the output asked): their figures are of shorter answers. Ask for less, or a server with a longer context",
			units.Integer(float64(in.ContextCut)))
	}
	if n := sumErrors(in.Errors); n > 0 {
		j.note(benchErrors, "%s of %s measured requests failed (%s): the client figures are of the others, and goodput counts them as not good",
			units.Integer(float64(n)), units.Integer(float64(in.Measured)), errorKinds(in.Errors))
	}
	if in.Partial {
		j.note(benchPartial, "the run was interrupted: it stopped sending at %s and reports the %s requests that completed",
			in.StoppedAt, units.Integer(float64(in.Completed)))
	}
	if in.TokensFromEvents {
		j.note(benchTokensFromEvents, "the server sent no usage: output tokens are counted from the streamed events, exact only where each event carries one token")
	}
}

// Settled reports whether a server's running requests and KV usage, read
// at each scrape (oldest first, NaN where not published), have settled:
// the last SettleSamples readings lie near their mean. A gauge the server
// does not publish does not hold it back; with neither, nothing settles.
func Settled(running, kv []float64) bool {
	near := func(xs []float64, within func(mean float64) float64) (settled, known bool) {
		if len(xs) < SettleSamples {
			return false, len(xs) > 0 && !math.IsNaN(xs[len(xs)-1])
		}
		last := xs[len(xs)-SettleSamples:]
		if slices.ContainsFunc(last, math.IsNaN) {
			return false, !math.IsNaN(last[len(last)-1])
		}
		m := 0.0
		for _, x := range last {
			m += x
		}
		m /= float64(len(last))
		for _, x := range last {
			if math.Abs(x-m) > within(m) {
				return false, true
			}
		}
		return true, true
	}
	rs, rKnown := near(running, func(m float64) float64 { return math.Max(settleRunning*m, 1) })
	ks, kKnown := near(kv, func(float64) float64 { return settleKV })
	switch {
	case rKnown && kKnown:
		return rs && ks
	case rKnown:
		return rs
	case kKnown:
		return ks
	}
	return false
}

func meanOf(samples []BenchSample, f func(BenchSample) float64) float64 {
	sum, n := 0.0, 0
	for _, s := range samples {
		if v := f(s); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// rateOver is the tokens generated per second between two samples.
func rateOver(a, b BenchSample) float64 {
	if !(b.Seconds > a.Seconds) {
		return math.NaN()
	}
	return (b.Generated - a.Generated) / (b.Seconds - a.Seconds)
}

// mean2 writes a mean number of requests.
func mean2(v float64) string {
	if v < 9.995 && v >= 0 {
		return fmt.Sprintf("%.2f", v)
	}
	return units.Count(v)
}

// difference says how far the generator's count is from the server's.
func difference(client, server float64) string {
	if client > server {
		return units.Integer(client-server) + " more by the generator"
	}
	return units.Integer(server-client) + " more by the server"
}

func sumErrors(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func errorKinds(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", units.Integer(float64(m[k])), k))
		}
	}
	return strings.Join(parts, ", ")
}
