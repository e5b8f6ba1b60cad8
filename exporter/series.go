package exporter

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// series is one label set of the series a generation records: the
// unlabelled set, or one model's with [Options.PerModel].
type series struct {
	model string                 // the label value; "" for the unlabelled set
	label []byte                 // `model="<escaped>"` for the text format; nil when unlabelled
	pairs []*dto.LabelPair       // the same label for dto metrics; nil when unlabelled
	since *timestamppb.Timestamp // when the series started: OpenMetrics _created
	// createdText is since as OpenMetrics writes it.
	createdText []byte

	shards []shard
	mask   uint32
	// acceptSum is Σ a/(a+r) as float64 bits, the one float the exporter
	// accumulates. It is shared rather than sharded: float addition does not
	// commute in the last digits, and one recorder (a simulator) must get the
	// same sum every run. Only drafted requests touch it.
	acceptSum atomic.Uint64
	// tokens holds the token histograms on their current ladder. A ladder
	// change swaps in a fresh set, which is how both histograms restart.
	tokens atomic.Pointer[tokenHists]
	// unknown is every Quantity some generation of this series did not
	// report (with Options.Unknown's from the start): it only grows.
	unknown atomic.Uint32
}

func newSeries(model string, shards int, l *ladder, now time.Time, since *timestamppb.Timestamp, unknown Quantity) *series {
	s := &series{model: model, since: since, createdText: createdText(since), shards: make([]shard, shards), mask: uint32(shards - 1)}
	s.tokens.Store(newTokenHists(l, shards, now))
	s.unknown.Store(uint32(unknown & generationQuantities))
	return s
}

// modelTable is the model series, replaced whole when a model is added so
// that recorders look models up without a lock.
type modelTable struct {
	byName map[string]*series // by the caller's name, as given
	sorted []*series          // by label value: the order series are served in
}

// maxLabelBytes bounds a model label value: a model name is short, and a
// caller's garbage must not make every scrape large.
const maxLabelBytes = 200

// modelShards is the shard count of a model's series: recorders of one
// model rarely collide (a proxy records once per request), and a model's
// memory is shards × about 2 KB.
const modelShards = 4

// modelSeries returns the series of a model, creating it on its first
// generation. Names are kept as given until the bound, so a lookup does not
// allocate; beyond MaxModels names, generations go to OtherModel.
func (m *Metrics) modelSeries(name string) *series {
	if s, ok := m.models.Load().byName[name]; ok {
		return s
	}
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	t := m.models.Load()
	if s, ok := t.byName[name]; ok {
		return s
	}
	value := labelValue(name)
	full := len(t.byName) >= m.maxModels
	if full {
		value = OtherModel
	}
	// Two names that read the same once made valid share one series.
	var s *series
	for _, x := range t.sorted {
		if x.model == value {
			s = x
		}
	}
	if s != nil && full {
		return s // names past the bound are looked up under the lock
	}
	nt := &modelTable{byName: make(map[string]*series, len(t.byName)+1), sorted: t.sorted}
	for k, v := range t.byName {
		nt.byName[k] = v
	}
	if s == nil {
		now := m.now()
		s = newSeries(value, modelShards, m.ladder, now, timestamppb.New(now), m.unknown)
		s.label = append([]byte(ModelLabel+`="`), escapeLabel(value)...)
		s.label = append(s.label, '"')
		s.pairs = []*dto.LabelPair{{Name: proto.String(ModelLabel), Value: proto.String(value)}}
		nt.sorted = append(slices.Clip(t.sorted), s)
		slices.SortFunc(nt.sorted, func(a, b *series) int { return strings.Compare(a.model, b.model) })
	}
	if !full {
		nt.byName[name] = s
	}
	m.models.Store(nt)
	return s
}

// labelValue makes a model name a label value: valid UTF-8, at most
// maxLabelBytes (cut at a character boundary).
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelBytes {
		cut := maxLabelBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// escapeLabel escapes a label value as the text format requires.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

// record accounts one generation in the series. opt is Options.Unknown's
// generation figures.
func (s *series) record(g *Generation, opt Quantity) {
	unk := g.Unknown&generationQuantities | opt
	q, pf, d := nanos(g.Queue), nanos(g.Prefill), nanos(g.Decode)
	ttft, e2e, unk := measured(g, unk, q, pf, d)
	if unk != 0 {
		s.unknown.Or(uint32(unk))
	}
	i := rand.Uint32() & s.mask
	sh := &s.shards[i]
	sh.requests.Add(1)
	gen := tokens(g.GeneratedTokens)
	s.recordTokens(i, sh, tokens(g.PromptTokens), tokens(g.CachedTokens), gen, unk)
	timed(&sh.queueNs, sh.queue[:], latencyNs, q, unk&UnknownQueue == 0)
	timed(&sh.prefillNs, sh.prefill[:], latencyNs, pf, unk&UnknownPrefill == 0)
	timed(&sh.decodeNs, sh.decode[:], latencyNs, d, unk&UnknownDecode == 0)
	timed(&sh.ttftNs, sh.ttft[:], ttftNs, ttft, unk&UnknownTTFT == 0)
	timed(&sh.e2eNs, sh.e2e[:], latencyNs, e2e, unk&UnknownE2E == 0)
	if unk&(UnknownDecode|UnknownGenerated) == 0 {
		sh.decodedN.Add(1)
		sh.decodedGen.Add(gen)
		sh.decodedNs.add(d)
	}
	if unk&UnknownDraft == 0 {
		sh.draftN.Add(1)
		if g.Draft != nil {
			s.recordDraft(sh, g.Draft, gen)
		}
	}
}

// measured is a generation's time to first token and whole time: as
// measured, else derived from the phases when those are known, else
// unknown (added to unk).
func measured(g *Generation, unk Quantity, q, pf, d uint64) (ttft, e2e uint64, _ Quantity) {
	switch {
	case unk&UnknownTTFT != 0:
	case g.TTFT > 0:
		ttft = nanos(g.TTFT)
	case unk&(UnknownQueue|UnknownPrefill) == 0:
		ttft = q + pf
	default:
		unk |= UnknownTTFT
	}
	switch {
	case unk&UnknownE2E != 0:
	case g.E2E > 0:
		e2e = nanos(g.E2E)
	case unk&(UnknownQueue|UnknownPrefill|UnknownDecode) == 0:
		e2e = q + pf + d
	default:
		unk |= UnknownE2E
	}
	return ttft, e2e, unk
}

// timed adds one duration to a sum and its histogram, when known.
func timed(sum *wideCounter, hist []atomic.Uint64, bounds []uint64, v uint64, known bool) {
	if known {
		sum.add(v)
		hist[bucketOf(bounds, v)].Add(1)
	}
}

// recordTokens adds the prompt, its cached part and the generated tokens
// that the generation reported.
func (s *series) recordTokens(i uint32, sh *shard, p, c, gen uint64, unk Quantity) {
	th := s.tokens.Load()
	ts := &th.shards[i]
	if unk&UnknownPrompt == 0 {
		c = min(c, p)
		sh.promptAll.Add(p)
		sh.promptN.Add(1)
		raise(&sh.peakPrompt, p)
		ts.prompt[bucketOf(th.ladder.ints, p)].Add(1)
		ts.promptSum.Add(p)
		if unk&UnknownCached == 0 {
			sh.prefilled.Add(p - c)
			sh.cached.Add(c)
			sh.splitN.Add(1)
		}
	}
	if unk&UnknownGenerated == 0 {
		sh.generated.Add(gen)
		sh.genN.Add(1)
		raise(&sh.peakGen, gen)
		ts.gen[bucketOf(th.ladder.ints, gen)].Add(1)
		ts.genSum.Add(gen)
	}
}

// recordDraft adds a drafted generation's tally.
func (s *series) recordDraft(sh *shard, t *DraftTally, gen uint64) {
	accepted, rejected := tokens(t.Accepted), tokens(t.Rejected)
	var steps uint64
	if gen > accepted {
		steps = gen - accepted
	}
	sh.specRequests.Add(1)
	sh.specAccepted.Add(accepted)
	sh.specRejected.Add(rejected)
	sh.specSteps.Add(steps)
	if drafted := accepted + rejected; drafted > 0 {
		rate := float64(accepted) / float64(drafted)
		sh.accept[bucketOf(acceptanceBuckets[:], rate)].Add(1)
		addFloat(&s.acceptSum, rate)
	}
}
