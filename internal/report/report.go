// Package report defines what the inspector says about a scrape: sections of
// rows for a person, the figures behind them for a program, and the action
// notes. Text and JSON are two renderings of one Report, so they cannot
// disagree.
package report

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
	Bar      *Number  `json:"bar,omitempty"` // fraction 0..1 drawn as a bar before Value; nil: no bar
	Note     string   `json:"note"`
	Severity Severity `json:"severity"`
	// Trend is the row's figure over a watch session, drawn beside it (the
	// KV cache and the queue); JSON has it in Report.Trends.
	Trend *Trend `json:"-"`
}

// Section is a titled group of rows. Wide sections span the full width
// instead of taking one column.
type Section struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	Wide  bool      `json:"wide,omitempty"`
	Rows  List[Row] `json:"rows"`
	// Table, when set, is drawn after the rows as a grid (the watch view's
	// rates over windows).
	Table *Table `json:"table,omitempty"`
	// Heat, when set, is drawn after the rows (and table) as strips of
	// shaded cells, one per histogram (the watch view's latency); JSON has
	// them in Report.Heat.
	Heat []*Heat `json:"-"`
	// Fold says the table is a breakdown, unit by unit, which a view
	// shows only when asked ([Report.Folded]); the rows sum it up.
	Fold bool `json:"-"`
}

// Table is a grid with a header: the first column holds row labels, the rest
// fixed-width cells, right-aligned.
type Table struct {
	Header List[string]   `json:"header"` // Header[0] heads the label column
	Rows   List[TableRow] `json:"rows"`
}

// TableRow is one labelled line of a Table; len(Cells) == len(Header)-1.
type TableRow struct {
	ID    string       `json:"id,omitempty"`
	Label string       `json:"label"`
	Cells List[string] `json:"cells"`
	// Trend is the row's figure over a watch session, drawn beside its
	// cells; JSON has it in Report.Trends.
	Trend *Trend `json:"-"`
}

// Trend is one figure over the refresh intervals of a watch session,
// oldest first: what a sparkline draws, and the series behind it.
type Trend struct {
	// StepSeconds is the refresh interval, each value's interval.
	StepSeconds Number `json:"step_seconds"`
	// Values are the figure over each interval in its row's base unit (a
	// gauge: as its scrape read it); NaN (null) where the interval has
	// none: a failed scrape, a restart, a ratio or percentile with
	// nothing to divide.
	Values List[Number] `json:"values"`
	// FromFloor says the picture's scale starts at the lowest value (a
	// latency), not at 0.
	FromFloor bool `json:"-"`
	// Say writes a value as the row writes it (the picture's range); Of
	// says what the values are of where the row's label does not
	// ("queued" beside the state row).
	Say func(float64) string `json:"-"`
	Of  string               `json:"-"`
	// Colours are each value's colour, by the judgement table's band for
	// the figure; nil where no band judges it.
	Colours []Severity `json:"-"`
}

// Heat is one histogram over the refresh intervals of a watch session:
// each interval's observations per bucket, drawn as shaded cells.
type Heat struct {
	// Title names the histogram in the picture.
	Title string `json:"-"`
	// StepSeconds is the refresh interval, each column's interval.
	StepSeconds Number `json:"step_seconds"`
	// LE are the buckets' upper bounds as the exposition's le label writes
	// them ("+Inf" last).
	LE List[string] `json:"le"`
	// Bounds are LE as numbers (+Inf last).
	Bounds []float64 `json:"-"`
	// Counts holds each interval's observations per bucket, not
	// cumulative, oldest interval first; nil (null) for an interval with
	// no increase known (a failed scrape, a restart, another layout).
	Counts List[[]Number] `json:"counts"`
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
	Factor Number `json:"factor"`
	Floor  Number `json:"floor"`
}

// ProbeTrade is the phase trade weighed with a saved probe's speeds
// (--probe-file): the engine time the server's prefill and decode work
// takes at the speeds the probe measured under control.
type ProbeTrade struct {
	// Source names the probe ("the probe of 2026-12-06 08:07 UTC").
	Source string `json:"source"`
	// PromptTokens is the prompt tokens the server computed, at
	// PrefillTokensPerSecond: the probe's prefill speed at PromptLength,
	// the server's mean prompt tokens computed a request (NaN where
	// unknown: then over all the probe's lengths).
	PromptTokens           Number `json:"prompt_tokens"`
	PromptLength           Number `json:"prompt_length"`
	PrefillTokensPerSecond Number `json:"prefill_tokens_per_second"`
	// GeneratedTokens is the tokens the server generated, at
	// DecodeTokensPerSecond: the probe's total at DecodeBatch, the batch
	// at which the probe's requests decoded one by one as fast as the
	// server's did (ServerPerRequest, its generated tokens over its
	// decode time).
	GeneratedTokens       Number `json:"generated_tokens"`
	ServerPerRequest      Number `json:"server_per_request_tokens_per_second"`
	DecodeBatch           Number `json:"decode_batch"`
	DecodeTokensPerSecond Number `json:"decode_tokens_per_second"`
	// PrefillSeconds and DecodeSeconds are the engine time each phase
	// takes at those speeds; the shares are of their sum.
	PrefillSeconds Number `json:"prefill_seconds"`
	DecodeSeconds  Number `json:"decode_seconds"`
	PrefillShare   Number `json:"prefill_share"`
	DecodeShare    Number `json:"decode_share"`
}

// Figures are the numbers behind the rows; nil where undefined, never a
// made-up 0.
type Figures struct {
	PrefixCacheHitRatio *Number `json:"prefix_cache_hit_ratio"`
	// RequestSeconds is every request's prefill and decode time summed;
	// MeanInFlight is it over the uptime: the mean number of requests in
	// prefill or decode (Little's law), not a busy share; BusyAtMost is
	// that mean where it is at most 1, the most the engine's busy share can
	// be. Behind the proxy the uptime is the proxy's, and BusyAtMost nil.
	RequestSeconds *Number `json:"request_seconds"`
	MeanInFlight   *Number `json:"mean_in_flight"`
	BusyAtMost     *Number `json:"busy_at_most"`
	// EngineBusySeconds is the engine's own busy time, where the server
	// publishes one (SGLang's GPU execution time); Utilization is it over
	// the uptime: the only figure called utilization.
	EngineBusySeconds       *Number         `json:"engine_busy_seconds"`
	Utilization             *Number         `json:"utilization"`
	PrefillShare            *Number         `json:"prefill_share"`
	DecodeShare             *Number         `json:"decode_share"`
	DominantPhase           *string         `json:"dominant_phase"`
	ExchangeRate            *Number         `json:"exchange_rate"`
	BreakEven               List[BreakEven] `json:"break_even"`
	SpecDecodeAcceptance    *Number         `json:"spec_decode_acceptance"`
	SpecDecodeTokensPerStep *Number         `json:"spec_decode_tokens_per_step"`
	KVOffloadHitShare       *Number         `json:"kv_offload_hit_share"`
	KVOffloadPayback        *Number         `json:"kv_offload_payback"`
	RecurrentCappedShare    *Number         `json:"recurrent_capped_share"`

	// TradeBasis says what the exchange rate and break-even weigh:
	// "request_time" (the server's own phase times, summed per request)
	// or "probe" (the engine time the server's work takes at a saved
	// probe's speeds, ProbeTrade); nil where there is no trade.
	TradeBasis *string     `json:"trade_basis"`
	ProbeTrade *ProbeTrade `json:"probe_trade"`
}

// HistogramSummary is one histogram as the report states it.
type HistogramSummary struct {
	Count Number `json:"count"`
	Sum   Number `json:"sum"`
	Mean  Number `json:"mean"` // NaN when count is 0 (rendered null)
	P50   Number `json:"p50"`  // uncapped, histogram_quantile semantics
	P90   Number `json:"p90"`
	P99   Number `json:"p99"`
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
	Incomplete []string     `json:"incomplete,omitempty"`
	Peak       *Number      `json:"peak"`
	Buckets    List[Bucket] `json:"buckets"`
}

// Stated is one quantile as the report states it.
type Stated struct {
	Value Number `json:"value"` // what the text shows; NaN (null) when nothing can be said
	// Kind is "exact", "interpolated", "at_most" (Value is the largest the
	// data allow, shown "≤"), "at_least" (the smallest, shown "≥") or
	// "unknown".
	Kind string `json:"kind"`
	Lo   Number `json:"lo"`
	Hi   Number `json:"hi"`
}

// Quantiles is a p50/p90/p99 triple.
type Quantiles struct {
	P50 Number `json:"p50"`
	P90 Number `json:"p90"`
	P99 Number `json:"p99"`
}

// Bucket is a cumulative bucket; LE is "+Inf" for the last.
type Bucket struct {
	LE    string `json:"le"`
	Count Number `json:"count"`
}

// Report is everything the inspector says about one scrape.
type Report struct {
	Schema int `json:"schema"`
	// Version is the inferscope build that wrote the report (the string
	// `inferscope version` prints first and the User-Agent carries); empty,
	// and left out of JSON, where no command line wrote it.
	Version string `json:"inferscope_version,omitempty"`
	Source  string `json:"source"`
	Dialect string `json:"dialect"`
	// SourceKind says what published the figures: "server" (its own
	// /metrics) or "proxy" (inferscope proxy in front of it, publishing
	// the tabbyAPI metric set that Dialect reads). Upstream names the
	// server behind the proxy (a dialect name) when its answers said.
	SourceKind string `json:"source_kind"`
	Upstream   string `json:"upstream,omitempty"`
	ScrapedAt  Time   `json:"scraped_at"` // zero (null) when unknown
	// TimeSource says how ScrapedAt is known: "scrape", "saved", "mtime"
	// (a file's modification time, taken as the scrape time), "now" (stdin,
	// read now) or "given" (--at).
	TimeSource    string `json:"time_source,omitempty"`
	ScrapeSeconds Number `json:"scrape_seconds"`
	// Header lines said under the title (models served, restarts, slow scrape).
	Header     List[string]          `json:"header"`
	Scalars    Map[Number]           `json:"scalars"`
	Histograms Map[HistogramSummary] `json:"histograms"`
	Figures    Figures               `json:"figures"`
	// Extra holds dialect-only figures under their own names.
	Extra    Map[Number]   `json:"extra"`
	Sections List[Section] `json:"sections"`
	Notes    List[Note]    `json:"notes"`
	// Raw keeps the server's own families, names and labels as it sent
	// them, for whatever the canonical figures leave out.
	Raw List[RawFamily] `json:"raw"`
	// Trends are the watch view's series behind its sparklines, by row id
	// (the rates rows, kv_cache, queue); Heat its latency histograms per
	// interval, by histogram name. Only the watch view sets them.
	Trends Map[*Trend] `json:"trends,omitzero"`
	Heat   Map[*Heat]  `json:"heat,omitzero"`
	// Breakdowns are the server's figures unit by unit, where it has
	// units that its totals add up from (llama.cpp's slots, vLLM's
	// data-parallel engines, SGLang's DP ranks): by kind ("slots",
	// "engines", "dp_ranks"). Folding a section leaves them whole.
	Breakdowns Map[*Breakdown] `json:"breakdowns,omitzero"`
	// GPU is what the GPUs beside the engine did, where they were read
	// (--gpu, or a dcgm-exporter beside the target); nil otherwise.
	GPU *GPU `json:"gpu,omitempty"`
	// Rates is set only by the watch view and --since; JSON leaves it out
	// when nil. It stays the last field, as the watch stream promises.
	Rates Rates `json:"rates,omitzero"`
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
	Name   string          `json:"name"`
	Type   string          `json:"type"` // counter, gauge, histogram, summary, untyped
	Help   string          `json:"help,omitempty"`
	Series List[RawSeries] `json:"series"`
}

// RawSeries is one labelled series: Value for counters, gauges and untyped
// series; Count, Sum and Buckets (cumulative) for histograms; Count, Sum and
// Quantiles for summaries.
type RawSeries struct {
	Labels    Map[string] `json:"labels"`
	Value     *Number     `json:"value,omitempty"`
	Count     *Number     `json:"count,omitempty"`
	Sum       *Number     `json:"sum,omitempty"`
	Buckets   []Bucket    `json:"buckets,omitempty"`
	Quantiles []Quantile  `json:"quantiles,omitempty"`
}

// Quantile is one quantile of a summary as the server sent it.
type Quantile struct {
	Quantile string `json:"quantile"` // as the exposition wrote it ("0.99")
	Value    Number `json:"value"`
}

// Breakdown is one server's figures unit by unit.
type Breakdown struct {
	// Unit names what a unit is: "slot", or the label that tells the units
	// apart ("engine", "dp_rank").
	Unit string `json:"unit"`
	// Status says whether the units could be read: "read", or for slots
	// "off" (--no-slots), "disabled" (the server answered 501), "absent"
	// (404) or "failed"; Why says what happened.
	Status string     `json:"status"`
	Why    string     `json:"why,omitempty"`
	Units  List[Unit] `json:"units"`
}

// Unit is one slot, engine or rank.
type Unit struct {
	ID string `json:"id"`
	// Model is the unit's model where the report covers several.
	Model string `json:"model,omitempty"`
	// State is a slot's: "idle", "prompt" (processing its prompt) or
	// "generating".
	State string `json:"state,omitempty"`
	// Figures are the unit's figures by name; a figure the unit does not
	// have is absent.
	Figures Map[Number] `json:"figures"`
}

// Folded returns r with the tables of its breakdown sections left out and
// a line saying how to see them (hint: "--breakdown", "b"); r is not
// changed. Breakdowns keeps every unit.
func (r *Report) Folded(hint string) *Report {
	cp := *r
	cp.Sections = make([]Section, len(r.Sections))
	for i, sec := range r.Sections {
		if sec.Fold && sec.Table != nil {
			sec.Table = nil
			sec.Rows = append(sec.Rows[:len(sec.Rows):len(sec.Rows)], Row{ID: sec.ID + "_folded", Note: "a row for each: " + hint, Severity: Dim})
		}
		cp.Sections[i] = sec
	}
	return &cp
}

// GPU is the GPUs beside the engine (issue 32): the instance's figures
// over a window (one reading: now) and each device's as read.
type GPU struct {
	// Source is where they were read; Kind what published them ("dcgm",
	// "amd", "nvidia-smi"); Status "read" or "failed", Why what failed.
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// Window names the window the figures are over ("" for one reading);
	// Seconds its length and Readings how many readings its means are over.
	Window   string `json:"window"`
	Seconds  Number `json:"seconds"`
	Readings int    `json:"readings"`
	// Figures are the instance's figures by name (docs/json.md lists
	// them); a figure not known is absent.
	Figures Map[Number] `json:"figures"`
	// DecodeBound is "bandwidth" or "compute" where the window says which
	// bounds decode, "" otherwise; Throttle the reasons the clocks were
	// held down for (DCGM's words), none: empty.
	DecodeBound string          `json:"decode_bound"`
	Throttle    List[string]    `json:"throttle"`
	Devices     List[GPUDevice] `json:"devices"`
}

// GPUDevice is one GPU (or MIG instance) as read.
type GPUDevice struct {
	ID    string `json:"id"`
	UUID  string `json:"uuid"`
	Model string `json:"model"`
	// MIG is a MIG instance's profile, "" for a whole GPU.
	MIG string `json:"mig"`
	// Host, Namespace, Pod and Container are as the exporter labels the
	// device ("" where it does not).
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Figures are the device's figures by their GPU names.
	Figures Map[Number] `json:"figures"`
}
