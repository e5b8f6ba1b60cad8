package exporter

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var _ prometheus.Collector = (*Metrics)(nil)

// DefaultNamespace is the series prefix used when [Options.Namespace] is empty.
const DefaultNamespace = "tabbyapi"

// DefaultLiveTimeout is how long a scrape may wait for [Engine.Live] when
// [Options.LiveTimeout] is zero.
const DefaultLiveTimeout = 100 * time.Millisecond

// Options configure [New].
//
// Namespace characters outside [a-zA-Z0-9_:] become underscores.
type Options struct {
	Namespace   string        // series prefix before the colon; "" means "tabbyapi"
	MaxSeqLen   int           // token-ladder limit; 0 means 1,000,000 until ConfigureTokenBuckets
	Engine      Engine        // live state; nil reads as an idle engine with no model
	LiveTimeout time.Duration // the most a scrape waits for Engine.Live (see Engine); 0 means 100ms

	// StartTime is published as <ns>:process_start_time_seconds and in the
	// Process-Start-Time-Unix header; zero means the time New is called.
	StartTime time.Time

	// PerModel labels every series a generation records with
	// model="<Generation.Model>", one series per model, created by the
	// model's first generation: before any generation those families are
	// absent. The engine's series stay unlabelled.
	PerModel bool
	// MaxModels bounds the model label's values with PerModel: the
	// generations of further models are recorded under [OtherModel]. 0
	// means [DefaultMaxModels].
	MaxModels int
	// Unknown lists what the source never knows (see [Quantity]): engine
	// groups it cannot read, and generation figures it never reports. Their
	// series are left out of the exposition from the start.
	Unknown Quantity
}

// DefaultMaxModels is the bound on model label values when
// [Options.MaxModels] is 0.
const DefaultMaxModels = 64

// Metrics accumulates finished generations and serves them, with the
// engine's live state, as the reference metric set. Its methods are safe for
// concurrent use.
type Metrics struct {
	ns      string
	start   time.Time // published process start
	created time.Time // when New ran: the start of the exporter's own counters
	engine  Engine
	timeout time.Duration
	now     func() time.Time // replaced in tests
	unknown Quantity         // Options.Unknown

	// def holds the generation series without PerModel; with it, models
	// holds one series per model and def is unused.
	def       *series
	perModel  bool
	maxModels int
	models    atomic.Pointer[modelTable]

	// cfgMu serializes ladder changes and the creation of model series,
	// so a new series always starts on the current ladder.
	cfgMu  sync.Mutex
	ladder *ladder // the current token ladder; guarded by cfgMu

	live liveState

	createdPB   *timestamppb.Timestamp // created, for OpenMetrics _created; read-only
	createdText []byte                 // created as OpenMetrics writes it
	coll        *collector             // the set as a prometheus.Collector
	text        *textLayout            // the set's fixed text 0.0.4, for WriteText and the handler
	om          *textLayout            // the same in OpenMetrics 1.0, for the handler
	sets        famPool                // prepared families, for the general path

	reg         *prometheus.Registry // the caller's collectors, served with the set
	err         error                // a registration failure, reported by every scrape
	startHeader string               // the Process-Start-Time-Unix header's value
	general     http.Handler         // promhttp over the prepared families: what the handler does not serve itself
	handler     http.Handler
}

// New returns a Metrics with every series at zero, on a registry of its own
// with no Go runtime or process collectors (see [Metrics.Registry]).
func New(opts Options) *Metrics {
	now := time.Now()
	m := &Metrics{
		ns:      namespace(opts.Namespace),
		start:   opts.StartTime,
		created: now,
		engine:  opts.Engine,
		timeout: opts.LiveTimeout,
		now:     time.Now,
	}
	if m.start.IsZero() {
		m.start = now
	}
	if m.timeout <= 0 {
		m.timeout = DefaultLiveTimeout
	}
	maxSeqLen := opts.MaxSeqLen
	if maxSeqLen < 1 {
		maxSeqLen = DefaultMaxSeqLen
	}
	m.unknown = opts.Unknown
	m.perModel = opts.PerModel
	m.maxModels = opts.MaxModels
	if m.maxModels <= 0 {
		m.maxModels = DefaultMaxModels
	}
	m.ladder = newLadder(maxSeqLen)
	m.createdPB = timestamppb.New(now)
	m.models.Store(&modelTable{})
	if !m.perModel {
		m.def = newSeries("", shardCount(runtime.GOMAXPROCS(0)), m.ladder, now, m.createdPB, m.unknown)
	}
	m.live.at = now

	m.coll = newCollector(m)
	// Registering once checks the descriptors (names, duplicates). The names
	// come from a sanitized namespace and fixed suffixes, so this cannot
	// fail; if it ever did, scrapes report it instead of a panic here.
	if err := prometheus.NewRegistry().Register(m.coll); err != nil {
		m.err = fmt.Errorf("exporter: registering the metric set: %w", err)
	}
	m.createdText = createdText(m.createdPB)
	m.text = newTextLayout(m.ns, false)
	m.om = newTextLayout(m.ns, true)
	if m.unknown&UnknownStart == 0 {
		m.startHeader = strconv.FormatInt(m.start.Unix(), 10)
	}
	// Neither path goes through a registry holding the set, whose Gather
	// hands metrics from goroutine to goroutine: on a saturated machine
	// every handoff waits for a time slice. m.reg holds only what the
	// caller adds, and an empty registry gathers without starting
	// goroutines. The general path serves prepared families refreshed in
	// the scraping goroutine.
	m.reg = prometheus.NewRegistry()
	headerStart := m.start // promhttp sends no header for a zero time
	if m.unknown&UnknownStart != 0 {
		headerStart = time.Time{}
	}
	m.general = promhttp.HandlerForTransactional(gatherer{m}, promhttp.HandlerOpts{
		EnableOpenMetrics:                   true,
		EnableOpenMetricsTextCreatedSamples: true,
		ProcessStartTime:                    headerStart,
		ErrorHandling:                       promhttp.ContinueOnError,
	})
	m.handler = http.HandlerFunc(m.serveHTTP)
	return m
}

// namespace returns a prefix that makes valid metric names: "" becomes
// DefaultNamespace and any other character outside [a-zA-Z0-9_:] becomes an
// underscore, so a careless option cannot break registration.
func namespace(s string) string {
	if s == "" {
		return DefaultNamespace
	}
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// shardCount is a power of two a few times the processor count, so that
// concurrent recorders rarely pick the same shard.
func shardCount(procs int) int {
	n := 8
	for n < 4*procs && n < 256 {
		n *= 2
	}
	return n
}

// Handler returns the HTTP handler for GET /metrics. It answers as
// promhttp's handler with OpenMetrics enabled would: the text format 0.0.4
// by default and OpenMetrics 1.0 (with _created lines) when the Accept
// header asks for it, negotiated by expfmt, gzip-compressed when the
// Accept-Encoding header asks for it, with the Process-Start-Time-Unix
// header. Text and OpenMetrics are written by the code behind
// [Metrics.WriteText]; the rest (protobuf, a name[] filter, zstd) goes
// through promhttp. Other methods get 405.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry returns a registry whose collectors the handler and WriteText
// serve alongside the metric set. It starts empty (the metric set is served
// apart from it); register collectors on it (Go runtime, process) to publish
// them too. A server with a registry of its own can instead register m on
// it (see [Metrics.Collect]).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WriteText writes the exposition in the Prometheus text format 0.0.4, byte
// for byte as the handler serves it to a client that does not ask for
// OpenMetrics, in one Write. It is the cheapest way to take a scrape: the
// text is appended between pieces prepared in New, into a buffer reused
// between calls.
func (m *Metrics) WriteText(w io.Writer) error {
	if m.err != nil {
		return m.err
	}
	return m.writeText(w)
}

// Describe implements [prometheus.Collector], so the metric set can be
// registered on the caller's own registry beside other metrics. Handler
// and WriteText do not need this: they serve the set without a registry.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { m.coll.Describe(ch) }

// Collect implements [prometheus.Collector]. It takes one reading, like a
// scrape through Handler, and with the same bound on waiting for the
// engine (see [Engine]); the registry gathering it serves the same series,
// values and created times as Handler.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) { m.coll.Collect(ch) }

// Limits on one generation's figures. Larger values are garbage from the
// caller; clamping them keeps the counters monotonic (no uint64 wrap).
const (
	maxTokens   = 1 << 40         // tokens in one request
	maxDuration = uint64(1) << 60 // nanoseconds in one phase (36 years)
)

func tokens(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n > maxTokens:
		return maxTokens
	}
	return uint64(n)
}

func nanos(d time.Duration) uint64 {
	switch {
	case d <= 0:
		return 0
	case uint64(d) > maxDuration:
		return maxDuration
	}
	return uint64(d)
}

// RecordGeneration accounts one finished generation. It is safe to call from
// many goroutines, does not allocate and takes no lock: every figure is an
// atomic addition to one of several shards, so neither other recorders nor
// a scrape can hold it up. Negative figures count as 0 and CachedTokens is
// held to PromptTokens, so the counters never fall. With
// [Options.PerModel], the first generation of a model creates its series
// (under a lock, and allocating, once per model).
func (m *Metrics) RecordGeneration(g Generation) {
	s := m.def
	if m.perModel {
		s = m.modelSeries(g.Model)
	}
	s.record(&g, m.unknown&generationQuantities)
}

// ConfigureTokenBuckets rebuilds the token ladder of request_prompt_tokens
// and request_generation_tokens for a model's context length, as the
// reference does when a model loads: a length < 1 is ignored; an unchanged
// ladder keeps its samples; a changed one restarts both histograms empty
// (for every model with [Options.PerModel]), since counts against one
// ladder cannot be carried to another. No other series is touched (the
// peaks and counters keep counting). A generation recorded at the very
// moment of the change lands on one side of it.
func (m *Metrics) ConfigureTokenBuckets(maxSeqLen int) {
	if maxSeqLen < 1 {
		return
	}
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	if m.ladder.maxSeqLen == maxSeqLen {
		return // the ladder is determined by its limit: unchanged
	}
	m.ladder = newLadder(maxSeqLen)
	now := m.now()
	if m.def != nil {
		m.def.tokens.Store(newTokenHists(m.ladder, len(m.def.shards), now))
	}
	for _, s := range m.models.Load().sorted {
		s.tokens.Store(newTokenHists(m.ladder, len(s.shards), now))
	}
}
