package report

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// The MarshalJSON methods below give every report type a JSON form that
// encoding/json can always produce: NaN and ±Inf (a "-nan" gauge before the
// first request, a mean of no observations) become null instead of failing
// the whole encoding, and nil slices become [] so that a program reading
// the report finds an array where the schema says one is. docs/json.md
// describes the result field by field.
//
// Report implements json.Marshaler, so a struct that embeds a Report
// inherits the method and loses its own fields in JSON: hold it in a named
// field, or use render.JSONWith to add top-level fields.

// number is a float64 that encodes NaN and ±Inf as null.
type number float64

// MarshalJSON implements json.Marshaler.
func (f number) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// numberPtr is p as a nullable number: nil stays nil (null).
func numberPtr(p *float64) *number {
	if p == nil {
		return nil
	}
	n := number(*p)
	return &n
}

// numberMap converts a map of floats; nil becomes an empty map.
func numberMap(m map[string]float64) map[string]number {
	out := make(map[string]number, len(m))
	for k, v := range m {
		out[k] = number(v)
	}
	return out
}

// orEmpty returns s, or an empty slice in place of nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// marshal encodes v without HTML escaping: the report's text holds "<0.01"
// and "≤" for people to read, not markup to guard.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// MarshalJSON implements json.Marshaler.
func (r Report) MarshalJSON() ([]byte, error) {
	var scraped *string
	if !r.ScrapedAt.IsZero() {
		s := r.ScrapedAt.Format(time.RFC3339Nano)
		scraped = &s
	}
	hists := r.Histograms
	if hists == nil {
		hists = map[string]HistogramSummary{}
	}
	return marshal(struct {
		Schema        int                         `json:"schema"`
		Source        string                      `json:"source"`
		Dialect       string                      `json:"dialect"`
		ScrapedAt     *string                     `json:"scraped_at"`
		ScrapeSeconds number                      `json:"scrape_seconds"`
		Header        []string                    `json:"header"`
		Scalars       map[string]number           `json:"scalars"`
		Histograms    map[string]HistogramSummary `json:"histograms"`
		Figures       Figures                     `json:"figures"`
		Extra         map[string]number           `json:"extra"`
		Sections      []Section                   `json:"sections"`
		Notes         []Note                      `json:"notes"`
	}{
		Schema:        r.Schema,
		Source:        r.Source,
		Dialect:       r.Dialect,
		ScrapedAt:     scraped,
		ScrapeSeconds: number(r.ScrapeSeconds),
		Header:        orEmpty(r.Header),
		Scalars:       numberMap(r.Scalars),
		Histograms:    hists,
		Figures:       r.Figures,
		Extra:         numberMap(r.Extra),
		Sections:      orEmpty(r.Sections),
		Notes:         orEmpty(r.Notes),
	})
}

// MarshalJSON implements json.Marshaler.
func (s Section) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		Wide  bool   `json:"wide,omitempty"`
		Rows  []Row  `json:"rows"`
		Table *Table `json:"table,omitempty"`
	}{s.ID, s.Title, s.Wide, orEmpty(s.Rows), s.Table})
}

// MarshalJSON implements json.Marshaler.
func (r Row) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		ID       string   `json:"id,omitempty"`
		Label    string   `json:"label"`
		Value    string   `json:"value"`
		Bar      *number  `json:"bar,omitempty"`
		Note     string   `json:"note"`
		Severity Severity `json:"severity"`
	}{r.ID, r.Label, r.Value, numberPtr(r.Bar), r.Note, r.Severity})
}

// MarshalJSON implements json.Marshaler.
func (t Table) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Header []string   `json:"header"`
		Rows   []TableRow `json:"rows"`
	}{orEmpty(t.Header), orEmpty(t.Rows)})
}

// MarshalJSON implements json.Marshaler.
func (t TableRow) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		ID    string   `json:"id,omitempty"`
		Label string   `json:"label"`
		Cells []string `json:"cells"`
	}{t.ID, t.Label, orEmpty(t.Cells)})
}

// MarshalJSON implements json.Marshaler.
func (b BreakEven) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Factor number `json:"factor"`
		Floor  number `json:"floor"`
	}{number(b.Factor), number(b.Floor)})
}

// MarshalJSON implements json.Marshaler.
func (f Figures) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		PrefixCacheHitRatio     *number     `json:"prefix_cache_hit_ratio"`
		EngineSeconds           *number     `json:"engine_seconds"`
		PrefillShare            *number     `json:"prefill_share"`
		DecodeShare             *number     `json:"decode_share"`
		Utilization             *number     `json:"utilization"`
		Overlapped              *bool       `json:"overlapped"`
		DominantPhase           *string     `json:"dominant_phase"`
		ExchangeRate            *number     `json:"exchange_rate"`
		BreakEven               []BreakEven `json:"break_even"`
		SpecDecodeAcceptance    *number     `json:"spec_decode_acceptance"`
		SpecDecodeTokensPerStep *number     `json:"spec_decode_tokens_per_step"`
		KVOffloadHitShare       *number     `json:"kv_offload_hit_share"`
		KVOffloadPayback        *number     `json:"kv_offload_payback"`
		RecurrentCappedShare    *number     `json:"recurrent_capped_share"`
	}{
		PrefixCacheHitRatio:     numberPtr(f.PrefixCacheHitRatio),
		EngineSeconds:           numberPtr(f.EngineSeconds),
		PrefillShare:            numberPtr(f.PrefillShare),
		DecodeShare:             numberPtr(f.DecodeShare),
		Utilization:             numberPtr(f.Utilization),
		Overlapped:              f.Overlapped,
		DominantPhase:           f.DominantPhase,
		ExchangeRate:            numberPtr(f.ExchangeRate),
		BreakEven:               orEmpty(f.BreakEven),
		SpecDecodeAcceptance:    numberPtr(f.SpecDecodeAcceptance),
		SpecDecodeTokensPerStep: numberPtr(f.SpecDecodeTokensPerStep),
		KVOffloadHitShare:       numberPtr(f.KVOffloadHitShare),
		KVOffloadPayback:        numberPtr(f.KVOffloadPayback),
		RecurrentCappedShare:    numberPtr(f.RecurrentCappedShare),
	})
}

// MarshalJSON implements json.Marshaler.
func (h HistogramSummary) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Count   number     `json:"count"`
		Sum     number     `json:"sum"`
		Mean    number     `json:"mean"`
		P50     number     `json:"p50"`
		P90     number     `json:"p90"`
		P99     number     `json:"p99"`
		Capped  *Quantiles `json:"capped"`
		Peak    *number    `json:"peak"`
		Buckets []Bucket   `json:"buckets"`
	}{
		number(h.Count), number(h.Sum), number(h.Mean),
		number(h.P50), number(h.P90), number(h.P99),
		h.Capped, numberPtr(h.Peak), orEmpty(h.Buckets),
	})
}

// MarshalJSON implements json.Marshaler.
func (q Quantiles) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		P50 number `json:"p50"`
		P90 number `json:"p90"`
		P99 number `json:"p99"`
	}{number(q.P50), number(q.P90), number(q.P99)})
}

// MarshalJSON implements json.Marshaler.
func (b Bucket) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		LE    string `json:"le"`
		Count number `json:"count"`
	}{b.LE, number(b.Count)})
}
