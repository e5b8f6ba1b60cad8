// Package report defines what the inspector says about a scrape: sections of
// rows for a person, the figures behind them for a program, and the action
// notes. Text and JSON are two renderings of one Report, so they cannot
// disagree.
package report

import "time"

// Severity colours a row or note. Colour never carries meaning alone: the
// words of the row say the same thing.
type Severity string

const (
	None Severity = ""
	Good Severity = "good"
	Warn Severity = "warn"
	Bad  Severity = "bad"
	Dim  Severity = "dim"
	// Info marks a note that states a caveat rather than asks for action.
	Info Severity = "info"
)

// Rank orders severities for --fail-on: bad > warn > everything else.
func (s Severity) Rank() int {
	switch s {
	case Bad:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// Row is one line of a section.
type Row struct {
	ID       string   `json:"id,omitempty"`
	Label    string   `json:"label"`
	Value    string   `json:"value"`
	Bar      *float64 `json:"bar,omitempty"` // fraction 0..1 drawn as a bar before Value; nil: no bar
	Note     string   `json:"note"`
	Severity Severity `json:"severity"`
}

// Section is a titled group of rows. Wide sections span the full width
// instead of taking one column.
type Section struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Wide  bool   `json:"wide,omitempty"`
	Rows  []Row  `json:"rows"`
	// Table, when set, is drawn after the rows as a grid (the watch view's
	// rates over windows).
	Table *Table `json:"table,omitempty"`
}

// Table is a grid with a header: the first column holds row labels, the rest
// fixed-width cells, right-aligned.
type Table struct {
	Header []string   `json:"header"` // Header[0] heads the label column
	Rows   []TableRow `json:"rows"`
}

// TableRow is one labelled line of a Table; len(Cells) == len(Header)-1.
type TableRow struct {
	ID    string   `json:"id,omitempty"`
	Label string   `json:"label"`
	Cells []string `json:"cells"`
}

// Note is an action or caveat with a stable ID (listed in docs/notes.md).
type Note struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Text     string   `json:"text"`
}

// BreakEven is one exact break-even point of the phase trade: speeding the
// dominant phase up by Factor pays while the other keeps at least Floor of
// its current speed.
type BreakEven struct {
	Factor float64 `json:"factor"`
	Floor  float64 `json:"floor"`
}

// Figures are the numbers behind the rows; nil where undefined, never a
// made-up 0.
type Figures struct {
	PrefixCacheHitRatio     *float64    `json:"prefix_cache_hit_ratio"`
	EngineSeconds           *float64    `json:"engine_seconds"`
	PrefillShare            *float64    `json:"prefill_share"`
	DecodeShare             *float64    `json:"decode_share"`
	Utilization             *float64    `json:"utilization"`
	Overlapped              *bool       `json:"overlapped"`
	DominantPhase           *string     `json:"dominant_phase"`
	ExchangeRate            *float64    `json:"exchange_rate"`
	BreakEven               []BreakEven `json:"break_even"`
	SpecDecodeAcceptance    *float64    `json:"spec_decode_acceptance"`
	SpecDecodeTokensPerStep *float64    `json:"spec_decode_tokens_per_step"`
	KVOffloadHitShare       *float64    `json:"kv_offload_hit_share"`
	KVOffloadPayback        *float64    `json:"kv_offload_payback"`
	RecurrentCappedShare    *float64    `json:"recurrent_capped_share"`
}

// HistogramSummary is one histogram as the report states it.
type HistogramSummary struct {
	Count float64 `json:"count"`
	Sum   float64 `json:"sum"`
	Mean  float64 `json:"mean"` // NaN when count is 0 (rendered null)
	P50   float64 `json:"p50"`  // uncapped, histogram_quantile semantics
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	// Capped holds the quantiles as the text shows them (Stated's values);
	// nil when count is 0.
	Capped *Quantiles `json:"capped"`
	// Stated says what each shown quantile is ("p50", "p90", "p99"): exact,
	// interpolated, or a bound, and the range [Lo, Hi] every dataset
	// consistent with the buckets, sum, count and peak keeps it in; nil when
	// count is 0.
	Stated map[string]Stated `json:"stated"`
	// Incomplete lists what the exposition left out of this histogram
	// ("+Inf bucket and _count", "_sum"): those figures are unknown, and the
	// count is then only a least value.
	Incomplete []string `json:"incomplete,omitempty"`
	Peak       *float64 `json:"peak"`
	Buckets    []Bucket `json:"buckets"`
}

// Stated is one quantile as the report states it.
type Stated struct {
	Value float64 `json:"value"` // what the text shows; NaN (null) when nothing can be said
	// Kind is "exact", "interpolated", "at_most" (Value is the largest the
	// data allow, shown "≤"), "at_least" (the smallest, shown "≥") or
	// "unknown".
	Kind string  `json:"kind"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// Quantiles is a p50/p90/p99 triple.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Bucket is a cumulative bucket; LE is "+Inf" for the last.
type Bucket struct {
	LE    string  `json:"le"`
	Count float64 `json:"count"`
}

// Report is everything the inspector says about one scrape.
type Report struct {
	Schema    int       `json:"schema"`
	Source    string    `json:"source"`
	Dialect   string    `json:"dialect"`
	ScrapedAt time.Time `json:"scraped_at"`
	// TimeSource says how ScrapedAt is known: "scrape", "saved", "mtime"
	// (a file's modification time, taken as the scrape time), "now" (stdin,
	// read now) or "given" (--at).
	TimeSource    string  `json:"time_source,omitempty"`
	ScrapeSeconds float64 `json:"scrape_seconds"`
	// Header lines said under the title (models served, restarts, slow scrape).
	Header     []string                    `json:"header,omitempty"`
	Scalars    map[string]float64          `json:"scalars"`
	Histograms map[string]HistogramSummary `json:"histograms"`
	Figures    Figures                     `json:"figures"`
	// Extra holds dialect-only figures under their own names.
	Extra    map[string]float64 `json:"extra,omitempty"`
	Sections []Section          `json:"sections"`
	Notes    []Note             `json:"notes"`
	// Raw keeps the server's own families, names and labels as it sent
	// them, for whatever the canonical figures leave out.
	Raw []RawFamily `json:"raw"`
	// Rates is set only by the watch view and --since: {window label: {row
	// id: value per second or ratio, nil where the window has no figure}}.
	Rates map[string]map[string]*float64 `json:"rates,omitempty"`
}

// Worst is the highest severity among the notes.
func (r *Report) Worst() Severity {
	w := None
	for _, n := range r.Notes {
		if n.Severity.Rank() > w.Rank() {
			w = n.Severity
		}
	}
	return w
}

// RawFamily is one metric family as the server sent it.
type RawFamily struct {
	Name   string      `json:"name"`
	Type   string      `json:"type"` // counter, gauge, histogram, summary, untyped
	Help   string      `json:"help,omitempty"`
	Series []RawSeries `json:"series"`
}

// RawSeries is one labelled series: Value for counters, gauges and untyped
// series; Count, Sum and Buckets (cumulative) for histograms; Count, Sum and
// Quantiles for summaries.
type RawSeries struct {
	Labels    map[string]string `json:"labels"`
	Value     *float64          `json:"value,omitempty"`
	Count     *float64          `json:"count,omitempty"`
	Sum       *float64          `json:"sum,omitempty"`
	Buckets   []Bucket          `json:"buckets,omitempty"`
	Quantiles []Bucket          `json:"quantiles,omitempty"` // LE holds the quantile
}
