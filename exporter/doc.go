// Package exporter publishes an inference server's metrics as tabbyAPI's
// Prometheus metric set, so that a Go server (or a simulator) can be read by
// the same dashboards, alerts and inspectors as tabbyAPI, and, for the names
// the set shares with them, as llama.cpp and vLLM.
//
// # Recording
//
// Create one [Metrics] with [New] and call [Metrics.RecordGeneration] once
// per finished generation, with its prompt length, the part of the prompt
// served from the prefix cache, the tokens generated, the time spent queued,
// prefilling and decoding, and, only when a drafter served the request, a
// [DraftTally] of accepted and rejected draft tokens. A nil tally means no
// drafter; a non-nil tally of zeros is a drafted request that proposed
// nothing, and still counts ("absent is not zero").
//
// RecordGeneration is safe from any number of goroutines, does not allocate,
// takes no lock and about a hundred nanoseconds: the running totals are
// split into shards of atomic counters, a recorder adds to one of them, and
// a scrape adds them up without stopping anyone.
//
// # Per model, and sources that see part of a generation
//
// With [Options.PerModel] every series a generation records carries
// model="<Generation.Model>", one series per model (bounded by
// [Options.MaxModels]); the engine's series stay unlabelled. A source that
// sees only part of each generation (a proxy in front of a server that
// publishes nothing) says what it did not see in [Generation.Unknown] and
// gives the times it measured in [Generation.TTFT] and [Generation.E2E];
// what it never knows, engine groups included, goes in [Options.Unknown].
// An unknown figure is left out, never published or summed as 0 (see
// [Quantity]). A caller that sets none of these gets the set as before,
// byte for byte.
//
// # Live state
//
// Gauges about the engine (jobs running and waiting, KV-cache pages, the
// KV offload and recurrent checkpoint caches) are read at scrape time from
// the [Engine] given in [Options]. [Engine.Live] runs on its own goroutine,
// one call at a time, and a stuck engine costs one wait, not one per
// scrape: the scrape that starts a call waits for it at most
// [Options.LiveTimeout], scrapes arriving meanwhile share that deadline,
// and once it has passed they answer at once. A scrape without a fresh
// reading (past the deadline, or Live panicked) serves the last good [Live]
// reading and says how old it is in <ns>:live_state_age_seconds (0 when
// fresh), so a scrape never waits behind a long prefill. The rules are
// spelled out on [Engine], and what each field of [Live], [OffloadStats]
// and [RecurrentStats] is (gauge or running total, and its unit) on the
// fields.
//
// Readings are published as the engine reports them: a cache holding more
// than its budget reads above its capacity, with a usage ratio above 1, as
// the reference publishes it. Only a negative count or size, which cannot
// be true, reads 0.
//
// # Token buckets
//
// The request_prompt_tokens and request_generation_tokens histograms use a
// ladder built from the model's context length: 1, 2, 5, 10, 20, 50, … up to
// it, plus the length itself (see [TokenBuckets]). Call
// [Metrics.ConfigureTokenBuckets] when a model loads. A changed ladder
// restarts both histograms empty; counts against one ladder cannot be moved
// to another. The peaks n_tokens_max and tokens_predicted_max survive the
// restart, and they report the one extreme that percentiles of a histogram
// cannot.
//
// # Serving
//
// [Metrics.Handler] serves GET /metrics (no Go runtime or process
// collectors) and answers every scraper as promhttp's handler with
// OpenMetrics enabled would, byte for byte once decompressed: the format
// is negotiated from the Accept header by expfmt, with the same
// Content-Type and escaping parameter (the text format 0.0.4 by default,
// OpenMetrics 1.0 with _created lines when the scraper prefers it, as
// Prometheus does); the body is gzip-compressed when the Accept-Encoding
// header asks for it; and every response carries the
// Process-Start-Time-Unix header. Collectors the caller adds to
// [Metrics.Registry] are served alongside, in the negotiated format and
// escaping scheme; one that fails is left out and the rest served, as
// promhttp serves with ContinueOnError.
//
// The handler writes text and OpenMetrics with the code behind
// [Metrics.WriteText], which writes the same text, byte for byte, to any
// writer: it appends the numbers of one reading between pieces of text
// prepared in [New] for each format, into a reused buffer, so a scrape
// costs a few allocations however many series and buckets there are.
// Compressors are pooled too.
//
// The general path, promhttp over the set's families (prepared once and
// refreshed in place by each scrape, from a small pool, so concurrent
// scrapes never share one), serves what the handler does not write
// itself: a protobuf Accept (Prometheus asks for it first when it scrapes
// native histograms), a name[] filter in the query, and a zstd
// Accept-Encoding when the program links promhttp/zstd.
//
// No path gathers the set through a registry, whose Gather hands each
// metric from goroutine to goroutine: on a machine whose cores are busy every
// handoff waits for a time slice (a scrape's p50 went from 40 ms to
// 0.33 ms with eight recording goroutines on two cores).
//
// # On the caller's registry
//
// A server that already has a [prometheus.Registry] registers the
// [Metrics] on it, since *Metrics is a [prometheus.Collector]: the
// registry then serves the same series, values and created times as
// [Metrics.Handler], with the same bound on waiting for the engine.
//
//	reg.MustRegister(m) // beside the server's own metrics
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// See the Metrics.Collect example. Handler and WriteText remain the
// cheaper paths.
//
// Every series, its type, update rule and help text are listed in
// docs/metrics.md of the repository.
package exporter
