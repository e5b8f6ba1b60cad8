package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// The MarshalJSON methods below give every report type a JSON form that
// encoding/json can always produce: NaN and ±Inf (a "-nan" gauge before the
// first request, a mean of no observations) become null instead of failing
// the whole encoding, and nil slices and maps become [] and {} so that a
// program reading the report finds what the schema promises. docs/json.md
// describes the result field by field.
//
// Report implements json.Marshaler, so a struct that embeds a Report
// inherits the method and loses its own fields in JSON: hold it in a named
// field, or use render.JSONWith to add top-level fields.
//
// Each method converts to a wire struct of plain fields and encodes that
// once; Report builds the whole tree of wire structs so that nested values
// are not encoded and re-scanned level by level.

// number is a float64 that encodes NaN and ±Inf as null.
type number float64

// MarshalJSON implements json.Marshaler, formatting finite values as
// encoding/json does.
func (f number) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), v, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
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

// convert maps a slice through f; nil becomes an empty slice.
func convert[T, W any](s []T, f func(T) W) []W {
	out := make([]W, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
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

type wireReport struct {
	Schema        int                      `json:"schema"`
	Source        string                   `json:"source"`
	Dialect       string                   `json:"dialect"`
	ScrapedAt     *string                  `json:"scraped_at"`
	TimeSource    string                   `json:"time_source,omitempty"`
	ScrapeSeconds number                   `json:"scrape_seconds"`
	Header        []string                 `json:"header"`
	Scalars       map[string]number        `json:"scalars"`
	Histograms    map[string]wireHistogram `json:"histograms"`
	Figures       wireFigures              `json:"figures"`
	Extra         map[string]number        `json:"extra"`
	Sections      []wireSection            `json:"sections"`
	Notes         []Note                   `json:"notes"`
	Raw           []wireRawFamily          `json:"raw"`
	// Rates appears only when set (watch mode, --since).
	Rates map[string]map[string]*number `json:"rates,omitempty"`
}

func (r Report) wire() wireReport {
	var scraped *string
	if !r.ScrapedAt.IsZero() {
		s := r.ScrapedAt.Format(time.RFC3339Nano)
		scraped = &s
	}
	hists := make(map[string]wireHistogram, len(r.Histograms))
	for k, h := range r.Histograms {
		hists[k] = h.wire()
	}
	return wireReport{
		Schema:        r.Schema,
		Source:        r.Source,
		Dialect:       r.Dialect,
		ScrapedAt:     scraped,
		TimeSource:    r.TimeSource,
		ScrapeSeconds: number(r.ScrapeSeconds),
		Header:        orEmpty(r.Header),
		Scalars:       numberMap(r.Scalars),
		Histograms:    hists,
		Figures:       r.Figures.wire(),
		Extra:         numberMap(r.Extra),
		Sections:      convert(r.Sections, Section.wire),
		Notes:         orEmpty(r.Notes),
		Raw:           convert(r.Raw, RawFamily.wire),
		Rates:         rates(r.Rates),
	}
}

// rates converts Report.Rates; nil stays nil (the field is left out).
func rates(m map[string]map[string]*float64) map[string]map[string]*number {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]*number, len(m))
	for window, rows := range m {
		w := make(map[string]*number, len(rows))
		for id, v := range rows {
			w[id] = numberPtr(v)
		}
		out[window] = w
	}
	return out
}

// MarshalJSON implements json.Marshaler.
func (r Report) MarshalJSON() ([]byte, error) { return marshal(r.wire()) }

type wireSection struct {
	ID    string     `json:"id"`
	Title string     `json:"title"`
	Wide  bool       `json:"wide,omitempty"`
	Rows  []wireRow  `json:"rows"`
	Table *wireTable `json:"table,omitempty"`
}

func (s Section) wire() wireSection {
	w := wireSection{ID: s.ID, Title: s.Title, Wide: s.Wide, Rows: convert(s.Rows, Row.wire)}
	if s.Table != nil {
		t := s.Table.wire()
		w.Table = &t
	}
	return w
}

// MarshalJSON implements json.Marshaler.
func (s Section) MarshalJSON() ([]byte, error) { return marshal(s.wire()) }

type wireRow struct {
	ID       string   `json:"id,omitempty"`
	Label    string   `json:"label"`
	Value    string   `json:"value"`
	Bar      *number  `json:"bar,omitempty"`
	Note     string   `json:"note"`
	Severity Severity `json:"severity"`
}

func (r Row) wire() wireRow {
	return wireRow{r.ID, r.Label, r.Value, numberPtr(r.Bar), r.Note, r.Severity}
}

// MarshalJSON implements json.Marshaler.
func (r Row) MarshalJSON() ([]byte, error) { return marshal(r.wire()) }

type wireTable struct {
	Header []string       `json:"header"`
	Rows   []wireTableRow `json:"rows"`
}

type wireTableRow struct {
	ID    string   `json:"id,omitempty"`
	Label string   `json:"label"`
	Cells []string `json:"cells"`
}

func (t Table) wire() wireTable {
	return wireTable{orEmpty(t.Header), convert(t.Rows, TableRow.wire)}
}

func (t TableRow) wire() wireTableRow { return wireTableRow{t.ID, t.Label, orEmpty(t.Cells)} }

// MarshalJSON implements json.Marshaler.
func (t Table) MarshalJSON() ([]byte, error) { return marshal(t.wire()) }

// MarshalJSON implements json.Marshaler.
func (t TableRow) MarshalJSON() ([]byte, error) { return marshal(t.wire()) }

type wireBreakEven struct {
	Factor number `json:"factor"`
	Floor  number `json:"floor"`
}

func (b BreakEven) wire() wireBreakEven { return wireBreakEven{number(b.Factor), number(b.Floor)} }

// MarshalJSON implements json.Marshaler.
func (b BreakEven) MarshalJSON() ([]byte, error) { return marshal(b.wire()) }

type wireFigures struct {
	PrefixCacheHitRatio     *number         `json:"prefix_cache_hit_ratio"`
	EngineSeconds           *number         `json:"engine_seconds"`
	PrefillShare            *number         `json:"prefill_share"`
	DecodeShare             *number         `json:"decode_share"`
	Utilization             *number         `json:"utilization"`
	Overlapped              *bool           `json:"overlapped"`
	DominantPhase           *string         `json:"dominant_phase"`
	ExchangeRate            *number         `json:"exchange_rate"`
	BreakEven               []wireBreakEven `json:"break_even"`
	SpecDecodeAcceptance    *number         `json:"spec_decode_acceptance"`
	SpecDecodeTokensPerStep *number         `json:"spec_decode_tokens_per_step"`
	KVOffloadHitShare       *number         `json:"kv_offload_hit_share"`
	KVOffloadPayback        *number         `json:"kv_offload_payback"`
	RecurrentCappedShare    *number         `json:"recurrent_capped_share"`
}

func (f Figures) wire() wireFigures {
	return wireFigures{
		PrefixCacheHitRatio:     numberPtr(f.PrefixCacheHitRatio),
		EngineSeconds:           numberPtr(f.EngineSeconds),
		PrefillShare:            numberPtr(f.PrefillShare),
		DecodeShare:             numberPtr(f.DecodeShare),
		Utilization:             numberPtr(f.Utilization),
		Overlapped:              f.Overlapped,
		DominantPhase:           f.DominantPhase,
		ExchangeRate:            numberPtr(f.ExchangeRate),
		BreakEven:               convert(f.BreakEven, BreakEven.wire),
		SpecDecodeAcceptance:    numberPtr(f.SpecDecodeAcceptance),
		SpecDecodeTokensPerStep: numberPtr(f.SpecDecodeTokensPerStep),
		KVOffloadHitShare:       numberPtr(f.KVOffloadHitShare),
		KVOffloadPayback:        numberPtr(f.KVOffloadPayback),
		RecurrentCappedShare:    numberPtr(f.RecurrentCappedShare),
	}
}

// MarshalJSON implements json.Marshaler.
func (f Figures) MarshalJSON() ([]byte, error) { return marshal(f.wire()) }

type wireQuantiles struct {
	P50 number `json:"p50"`
	P90 number `json:"p90"`
	P99 number `json:"p99"`
}

func (q Quantiles) wire() wireQuantiles {
	return wireQuantiles{number(q.P50), number(q.P90), number(q.P99)}
}

// MarshalJSON implements json.Marshaler.
func (q Quantiles) MarshalJSON() ([]byte, error) { return marshal(q.wire()) }

type wireBucket struct {
	LE    string `json:"le"`
	Count number `json:"count"`
}

func (b Bucket) wire() wireBucket { return wireBucket{b.LE, number(b.Count)} }

// MarshalJSON implements json.Marshaler.
func (b Bucket) MarshalJSON() ([]byte, error) { return marshal(b.wire()) }

type wireHistogram struct {
	Count      number                `json:"count"`
	Sum        number                `json:"sum"`
	Mean       number                `json:"mean"`
	P50        number                `json:"p50"`
	P90        number                `json:"p90"`
	P99        number                `json:"p99"`
	Capped     *wireQuantiles        `json:"capped"`
	Stated     map[string]wireStated `json:"stated"`
	Incomplete []string              `json:"incomplete,omitempty"`
	Peak       *number               `json:"peak"`
	Buckets    []wireBucket          `json:"buckets"`
}

type wireStated struct {
	Value number `json:"value"`
	Kind  string `json:"kind"`
	Lo    number `json:"lo"`
	Hi    number `json:"hi"`
}

func (h HistogramSummary) wire() wireHistogram {
	w := wireHistogram{
		Count: number(h.Count), Sum: number(h.Sum), Mean: number(h.Mean),
		P50: number(h.P50), P90: number(h.P90), P99: number(h.P99),
		Peak: numberPtr(h.Peak), Buckets: convert(h.Buckets, Bucket.wire),
	}
	if h.Capped != nil {
		q := h.Capped.wire()
		w.Capped = &q
	}
	if h.Stated != nil {
		w.Stated = make(map[string]wireStated, len(h.Stated))
		for k, st := range h.Stated {
			w.Stated[k] = wireStated{Value: number(st.Value), Kind: st.Kind, Lo: number(st.Lo), Hi: number(st.Hi)}
		}
	}
	w.Incomplete = h.Incomplete
	return w
}

// MarshalJSON implements json.Marshaler.
func (h HistogramSummary) MarshalJSON() ([]byte, error) { return marshal(h.wire()) }

type wireRawFamily struct {
	Name   string          `json:"name"`
	Type   string          `json:"type"`
	Help   string          `json:"help,omitempty"`
	Series []wireRawSeries `json:"series"`
}

type wireRawSeries struct {
	Labels    map[string]string `json:"labels"`
	Value     *number           `json:"value,omitempty"`
	Count     *number           `json:"count,omitempty"`
	Sum       *number           `json:"sum,omitempty"`
	Buckets   []wireBucket      `json:"buckets,omitempty"`
	Quantiles []wireQuantile    `json:"quantiles,omitempty"`
}

type wireQuantile struct {
	Quantile string `json:"quantile"`
	Value    number `json:"value"`
}

func (f RawFamily) wire() wireRawFamily {
	return wireRawFamily{f.Name, f.Type, f.Help, convert(f.Series, RawSeries.wire)}
}

func (s RawSeries) wire() wireRawSeries {
	labels := s.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	w := wireRawSeries{Labels: labels, Value: rawNumber(s.Value), Count: rawNumber(s.Count), Sum: rawNumber(s.Sum)}
	if len(s.Buckets) > 0 {
		w.Buckets = convert(s.Buckets, Bucket.wire)
	}
	for _, q := range s.Quantiles {
		w.Quantiles = append(w.Quantiles, wireQuantile{q.LE, number(q.Count)})
	}
	return w
}

// rawNumber keeps a present NaN sample as null rather than dropping the
// field (omitempty leaves out only an absent one).
func rawNumber(p *float64) *number {
	if p == nil {
		return nil
	}
	n := number(*p)
	return &n
}

// MarshalJSON implements json.Marshaler.
func (f RawFamily) MarshalJSON() ([]byte, error) { return marshal(f.wire()) }
