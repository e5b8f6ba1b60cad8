package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/units"
)

// dialectRows adds what only some servers publish (the Extra figures of
// internal/dialect): vLLM preemptions, finish reasons, KV block size,
// per-position draft acceptance; llama.cpp batch occupancy and per-slot
// speeds; the per-batch gauges that cannot stand for a lifetime figure.
func (a *analyzer) dialectRows() {
	x := a.s.Extra
	if len(x) == 0 {
		return
	}
	a.requestOutcomes(x)
	a.addRows("prefix_cache", "Prefix cache", a.prefixCacheExtras(x)...)
	a.drafts(x)
	a.addRows("throughput", "Throughput (cumulative)", throughputExtras(x)...)
	a.addRows("throughput", "Throughput (cumulative)", stepExtras(x)...)
}

// stepExtras are what engine steps carried: vLLM's tokens per step, and
// TGI's speculated tokens per request-step.
func stepExtras(x map[string]float64) []report.Row {
	var rows []report.Row
	if steps, ok := x[snapshot.ExtraEngineSteps]; ok && steps > 0 {
		if tok, ok := x[snapshot.ExtraStepTokens]; ok && !math.IsNaN(tok) {
			rows = append(rows, report.Row{ID: "step_tokens", Label: "tokens per step", Value: strconv.FormatFloat(tok/steps, 'f', 1, 64),
				Note: "mean over " + units.Count(steps) + " steps that emitted a token; a prefill's tokens count when it ends, so not a share of the step budget"})
		}
	}
	// None accepted is what every server without speculation says: no row.
	if spec, steps := x[snapshot.ExtraSpeculatedTokens], x[snapshot.ExtraSpeculationSteps]; spec > 0 && steps > 0 {
		rows = append(rows, report.Row{ID: "speculated", Label: "speculated tokens", Value: units.Count(spec) + " accepted",
			Note: strconv.FormatFloat(1+spec/steps, 'f', 2, 64) + " tokens per request-step (" + units.Count(steps) + " steps)"})
	}
	return rows
}

// prefixCacheExtras are the KV block size, judged against the prefix-cache
// hit rate, and the server's last-batch hit rate.
func (a *analyzer) prefixCacheExtras(x map[string]float64) []report.Row {
	var rows []report.Row
	// With prefix caching off nothing is reused whatever the block size.
	if bs, ok := x[snapshot.ExtraKVBlockSize]; ok && bs > 0 && a.s.PrefixCaching != "off" {
		row := report.Row{ID: "block_size", Label: "KV block size", Value: units.Plural(bs, "token")}
		if bs > 1 {
			row.Note = "prefixes shorter than a block are never reused"
		}
		if r := a.r.Figures.PrefixCacheHitRatio; r != nil && *r < blockHitRate && bs >= blockSizeLarge {
			a.judge(&row, prefixBlockSize, "prefix-cache hit rate is %s with %s-token KV blocks: only whole blocks are reused, so shared prefixes shorter than a block never hit (hybrid models can have blocks of thousands of tokens)", units.Percent(float64(*r)), units.Count(bs))
		}
		rows = append(rows, row)
	}
	if g, ok := x[snapshot.ExtraCacheHitRateGauge]; ok && !math.IsNaN(g) {
		rows = append(rows, report.Row{ID: "hit_rate_gauge", Label: "last batch hit rate", Value: units.Percent(g), Severity: report.Dim,
			Note: "the server's per-batch gauge, not a lifetime figure"})
	}
	return rows
}

// throughputExtras are llama.cpp's batch occupancy, decode calls and
// per-slot speeds, and SGLang's last-interval throughput gauge.
func throughputExtras(x map[string]float64) []report.Row {
	var rows []report.Row
	// The server divides by at least one decode call: with none, its 0 is 0/0.
	if occ, ok := x[snapshot.ExtraBusySlotsPerDecode]; ok && !math.IsNaN(occ) && x[snapshot.ExtraDecodeCalls] != 0 {
		rows = append(rows, report.Row{ID: "batch_occupancy", Label: "batch occupancy", Value: strconv.FormatFloat(occ, 'f', 2, 64) + " slots per decode",
			Note: "busy slots each llama_decode call served, lifetime average"})
	}
	if n, ok := x[snapshot.ExtraDecodeCalls]; ok && n > 0 {
		rows = append(rows, report.Row{ID: "decode_calls", Label: "decode calls", Value: units.Count(n)})
	}
	for _, sp := range []struct{ key, id, label string }{
		{snapshot.ExtraSlotPrefillSpeed, "slot_prefill_speed", "per-slot prefill speed"},
		{snapshot.ExtraSlotDecodeSpeed, "slot_decode_speed", "per-slot decode speed"},
	} {
		if v, ok := x[sp.key]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			rows = append(rows, report.Row{ID: sp.id, Label: sp.label, Value: units.Count(v) + " tok/s",
				Note: "per request while it ran, not throughput"})
		}
	}
	if g, ok := x[snapshot.ExtraGenThroughputGauge]; ok && !math.IsNaN(g) {
		rows = append(rows, report.Row{ID: snapshot.ExtraGenThroughputGauge, Label: "last log interval", Value: units.Count(g) + " tok/s", Severity: report.Dim,
			Note: "the server's own gauge over its last log interval"})
	}
	return rows
}

// requestOutcomes covers a router's requests in flight and how requests
// ended: preemptions, finish reasons, failures and aborts.
func (a *analyzer) requestOutcomes(x map[string]float64) {
	var rows []report.Row
	if n, ok := x[snapshot.ExtraRequestsInFlight]; ok {
		// A router's own count (Dynamo's frontend): neither an engine's
		// batch nor its queue, so no band judges it.
		row := report.Row{ID: "in_flight", Label: "in flight", Value: units.Integer(n), Note: "accepted, not yet answered in full"}
		if w, ok := x[snapshot.ExtraRequestsAwaitingFirstToken]; ok && n > 0 {
			row.Note = units.Integer(w) + " of them with no token yet (queued at a worker or prefilling)"
		}
		rows = append(rows, row)
	}
	if n, ok := x[snapshot.ExtraPreemptions]; ok {
		rows = append(rows, a.preemptionsRow(n))
	}
	if row, ok := a.retractedWorkRow(x); ok {
		rows = append(rows, row)
	}
	rows = append(rows, a.finishedRows(x)...)
	var fails []string
	for k, v := range x {
		if r, ok := strings.CutPrefix(k, snapshot.ExtraFailedReason); ok && v > 0 {
			fails = append(fails, r)
		}
	}
	sort.Strings(fails)
	failed := 0.0
	for _, r := range fails {
		failed += x[snapshot.ExtraFailedReason+r]
	}
	if failed > 0 {
		row := report.Row{ID: "failed", Label: "failed", Value: units.Integer(failed), Note: strings.Join(fails, ", ")}
		a.judge(&row, requestsFailed, "")
		rows = append(rows, row)
	}
	if n, ok := x[snapshot.ExtraAbortedRequests]; ok && n > 0 {
		rows = append(rows, report.Row{ID: "aborted", Label: "aborted", Value: units.Integer(n)})
	}
	if n, ok := x[snapshot.ExtraRequestCount]; ok && !math.IsNaN(n) {
		rows = append(rows, report.Row{ID: "entry_calls", Label: "entry calls", Value: units.Integer(n), Severity: report.Dim,
			Note: "calls into the generation routes, failures included: not requests received (an OpenAI-API request counts at its route and again in the generation it starts)"})
	}
	a.addRows("requests", "Requests", rows...)
}

// preemptionsRow is the n requests preempted (or, as each server names the
// event, retracted), with the server's own knobs to avoid it.
func (a *analyzer) preemptionsRow(n float64) report.Row {
	verb, label, fix := a.s.Advice.Preempted, a.s.Advice.Preemptions, a.s.Advice.PreemptFix
	if verb == "" {
		verb = "preempted"
	}
	if label == "" {
		label = "preemptions"
	}
	row := report.Row{ID: "preemptions", Label: label, Value: units.Integer(n), Note: "none: the KV cache never ran out mid-request"}
	if !(n > 0) {
		a.judge(&row, preemptionsNone, "")
		return row
	}
	row.Note = "KV cache ran out mid-request; that work is recomputed"
	text := fmt.Sprintf("%s %s: the KV cache ran out while they ran, and their work is recomputed", units.Plural(n, "request was", "requests were"), verb)
	if fix != "" {
		text += "; " + fix
	}
	a.judge(&row, preemptions, "%s", text)
	return row
}

// retractedWorkRow is the work retractions threw away (SGLang): the prompt
// and generated tokens of requests retracted while they ran, whose KV was
// dropped and is computed again as prompt when they resume; judged as a
// share of the prompt tokens computed.
func (a *analyzer) retractedWorkRow(x map[string]float64) (report.Row, bool) {
	in, okIn := x[snapshot.ExtraRetractedPromptTokens]
	out, okOut := x[snapshot.ExtraRetractedGeneratedTokens]
	if !okIn && !okOut {
		return report.Row{}, false
	}
	wasted := in + out
	row := report.Row{ID: "retracted_work", Label: "retracted work", Value: units.Count(wasted) + " tokens",
		Note: units.Count(in) + " prompt + " + units.Count(out) + " generated, computed again on resuming"}
	if !okIn || !okOut {
		// Half the waste is no waste figure.
		which := "generated"
		if okIn {
			which = "prompt"
		}
		row.Value, row.Note = units.Missing, "the server counts only the "+which+" tokens of retracted requests"
		row.Severity = report.Dim
		return row, true
	}
	computed, ok := a.s.Scalar(snapshot.PromptTokensTotal)
	if !ok || !(computed > 0) || !(wasted > 0) {
		return row, true
	}
	share := wasted / computed
	row.Note += ": " + units.Percent(share) + " of the prompt tokens computed"
	if share >= retractedWorkShare {
		fix := ""
		if a.s.Advice.PreemptFix != "" {
			fix = "; " + a.s.Advice.PreemptFix
		}
		a.judge(&row, retractedWork, "retracted requests threw away %s tokens (%s prompt, %s generated), %s of the prompt tokens computed: that work is done again when they resume%s",
			units.Count(wasted), units.Count(in), units.Count(out), units.Percent(share), fix)
	}
	return row, true
}

// finishedRows are the shares of finished requests by finish reason, most
// common first; errors are judged, aborts above abortShare said.
func (a *analyzer) finishedRows(x map[string]float64) []report.Row {
	reasons := map[string]float64{}
	for k, v := range x {
		if r, ok := strings.CutPrefix(k, snapshot.ExtraFinishedReason); ok && !math.IsNaN(v) {
			reasons[r] = v
		}
	}
	names := make([]string, 0, len(reasons))
	for r := range reasons {
		names = append(names, r)
	}
	sort.Slice(names, func(i, j int) bool {
		if reasons[names[i]] != reasons[names[j]] {
			return reasons[names[i]] > reasons[names[j]]
		}
		return names[i] < names[j]
	})
	// Summed in that order, not the map's, so that a share's last digit
	// does not change from run to run.
	total := 0.0
	for _, r := range names {
		total += reasons[r]
	}
	if !(total > 0) {
		return nil
	}
	rows := make([]report.Row, 0, len(names))
	for _, r := range names {
		share := reasons[r] / total
		row := report.Row{ID: "finished_" + r, Label: "finished: " + r, Value: units.Percent(share), Bar: bar(share), Note: units.Plural(reasons[r], "request")}
		switch r {
		case "error":
			if reasons[r] > 0 {
				a.judge(&row, requestsErrored, "%s of finished requests (%s) ended in an error: see the server's log", units.Percent(share), units.Integer(reasons[r]))
			}
		case "abort":
			if share > abortShare {
				// Clients give up for reasons of their own: said, not
				// judged.
				row.Note += ": clients gave up or disconnected"
				a.judge(&row, requestsAborted, "")
			}
		case "length":
			row.Note += ": hit max_tokens"
		}
		rows = append(rows, row)
	}
	return rows
}

// drafts adds vLLM-style draft figures: mean acceptance length and the
// acceptance at each draft position.
func (a *analyzer) drafts(x map[string]float64) {
	drafts, ok := x[snapshot.ExtraSpecDecodeDrafts]
	if !ok || drafts <= 0 {
		return
	}
	accepted := a.get(snapshot.SpecDecodeNumAcceptedTokensTotal)
	mal := 1 + accepted/drafts
	rows := []report.Row{{ID: "mean_acceptance_length", Label: "mean acceptance length", Value: strconv.FormatFloat(mal, 'f', 2, 64),
		Note: "1 + accepted / drafts (" + units.Count(drafts) + " " + units.Noun(drafts, "draft") + ")"}}
	var pos []int
	for k := range x {
		if p, ok := strings.CutPrefix(k, snapshot.ExtraAcceptedPerPosition); ok {
			if n, err := strconv.Atoi(p); err == nil {
				pos = append(pos, n)
			}
		}
	}
	sort.Ints(pos)
	for _, p := range pos {
		v := x[snapshot.ExtraAcceptedPerPosition+strconv.Itoa(p)]
		share := v / drafts
		rows = append(rows, report.Row{ID: "position_" + strconv.Itoa(p), Label: "position " + strconv.Itoa(p), Value: units.Percent(share), Bar: bar(share),
			Note: units.Count(v) + " accepted"})
	}
	a.addRows("spec_decode", "Speculative decode", rows...)
}

// addRows appends rows to a section, creating it (before the latency
// sections) when the report does not have it yet.
func (a *analyzer) addRows(id, title string, rows ...report.Row) {
	if len(rows) == 0 {
		return
	}
	for i := range a.r.Sections {
		if a.r.Sections[i].ID == id {
			a.r.Sections[i].Rows = append(a.r.Sections[i].Rows, rows...)
			return
		}
	}
	sec := report.Section{ID: id, Title: title, Rows: rows}
	at := len(a.r.Sections)
	for i, s := range a.r.Sections {
		if s.ID == "latency" || s.ID == "size" {
			at = i
			break
		}
	}
	a.r.Sections = append(a.r.Sections[:at], append([]report.Section{sec}, a.r.Sections[at:]...)...)
}
