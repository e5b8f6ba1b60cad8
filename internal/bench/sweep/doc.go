// Package sweep runs a series of bench runs at growing load and says how
// the server's behaviour changes with it: `inferscope bench --sweep`.
//
// # Steps
//
// A [Result] is a list of [Step]s, each one load run by [bench.Run]
// [Config].Repeat times, its runs' reports kept whole and stated together
// in a [Summary] (each figure's mean and spread over the runs). The steps
// are a list of concurrencies (closed loops), a list of rates (open
// loops), or the automatic profile: a synchronous step (one request at a
// time), a throughput step (many at once: the ceiling), then rates spread
// evenly between the two, as GuideLLM's sweep profile runs them.
//
// Before every run the server is read until its running and waiting
// gauges are both zero (a [Drain], bounded), so that one step's backlog
// never lands in the next; a run that starts before the server is idle
// is said so in a note. Every step takes its requests from the same
// source at indices no other step used, so no prompt of one step is
// cached for another.
//
// # The knee
//
// With an SLO the automatic profile becomes a search: after the
// synchronous and throughput steps, open loops bracket the highest rate
// whose requests meet the target (a step meets it where the share of its
// requests within every limit reaches [Config.Share]; failures and
// arrivals never sent count as missing it), and halve the bracket until
// it is within [Config.Precision] of the ceiling or the steps run out.
// The [Knee] is the bracket: the highest rate that met the target, the
// lowest that did not, and at that step the server's reason, read from
// its own figures against the step below: the KV cache (the run's
// verdict), the queue or prefill (whichever of the server's mean queue
// and prefill time grew more, where the time to first token broke), decode
// (where the time per output token broke), errors, or a generator that
// could not keep up.
package sweep
