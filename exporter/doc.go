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
// # Live state
//
// Gauges about the engine (jobs running and waiting, KV-cache pages, the
// KV offload and recurrent checkpoint caches) are read at scrape time from
// the [Engine] given in [Options]. [Engine.Live] runs on its own goroutine
// and the scrape waits for it at most [Options.LiveTimeout]. Past that
// deadline, or if Live panics, the scrape serves the last good [Live]
// reading and says how old it is in <ns>:live_state_age_seconds (0 when
// fresh), so a scrape never waits behind a long prefill. Values that cannot
// be true (negative counts, more pages referenced than exist) are held to
// their valid range before they are published.
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
// [Metrics.Handler] serves GET /metrics through promhttp (no Go runtime or
// process collectors), in the text format 0.0.4 or, when the scraper's
// Accept header asks for it, OpenMetrics 1.0. Every response carries the
// Process-Start-Time-Unix header. [Metrics.WriteText] writes the same text
// exposition to any writer. Collectors the caller adds to [Metrics.Registry]
// are served alongside.
//
// The metric set is gathered in the scraping goroutine, not through a
// registry: a registry hands each metric from goroutine to goroutine, and on
// a machine whose cores are busy every handoff waits for a time slice (a
// scrape's p50 went from 40 ms to 0.33 ms with eight recording goroutines
// on two cores).
//
// Every series, its type, update rule and help text are listed in
// docs/metrics.md of the repository.
package exporter
