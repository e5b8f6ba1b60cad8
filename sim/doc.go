// Package sim is a simulated LLM inference engine whose every figure arises
// from a mechanism, so a test (or a person without a GPU) can see what the
// metrics of a real server would say and check them against the truth.
//
// # The model
//
// Requests arrive by a [Workload]: an open loop (Poisson arrivals) or a
// closed loop of users who wait for each answer and think before the next
// turn of their conversation. Up to [Config.MaxBatch] requests run at once;
// the rest wait in a FIFO queue.
//
// Time advances in engine steps on a clock the simulator owns: a prefill
// chunk of one request ([Config.ChunkSize] tokens at [Config.PrefillRate]
// plus [Config.ChunkOverhead]) or a decode step for every decoding request
// (DecodeBase + DecodePerJob × batch). A request's queue, prefill and decode
// times come from when those steps happened, so under concurrency they add
// up to more than the wall clock, as on a real server. The clock is virtual:
// [Sim.RunUntil] runs as fast as the CPU allows, and a caller that advances
// it with the wall clock (the demo) gets scaled real time. How a span is
// split into calls does not change the run.
//
// The KV cache is paged ([Config.PageSize] tokens per page,
// [Config.KVPages] pages). Prompts are built from segments (a system
// prompt, a document, the conversation so far, fresh text), and each full
// page is identified by a hash chained over every token before it, so a
// page is reused only behind an identical prefix. Pages no running request
// references stay cached until evicted least-recently-used, and count as
// headroom, not load. Optional features:
//
//   - KV offload ([OffloadConfig]): pages evicted from VRAM are stored in a
//     RAM cache (deduplicated, evicted LRU) and restored from it, counting as
//     cached; stores that outrun a background pinning rate pin synchronously
//     (cold allocations) and stall the engine.
//   - Hybrid recurrent state ([RecurrentConfig]): checkpoints are taken at
//     page boundaries (after prefill and after the answer) within a byte
//     budget; reuse stops at the longest prefix with both its pages and a
//     checkpoint, the pages past it are re-prefilled (KV-only pages), and
//     evictions are stranded, live-KV or pruned.
//   - A drafter ([DraftConfig]): each decode step proposes K tokens, each
//     accepted with probability Alpha until the first rejection.
//
// # With the exporter
//
// A [Sim] is an [exporter.Engine] (its [Sim.Live] is the live state a
// scrape reads) and records every finished generation into a [Recorder]
// such as [exporter.Metrics]. [Sim.Totals] is the simulator's own exact
// account of the run, the ground truth a report read from the metrics is
// checked against.
//
// Named scenarios ([Scenario], [Scenarios]) reproduce situations the
// inspector must recognize: chat, agent (a long shared prefix), spec
// (speculative decoding), offload-thrash, offload-healthy and hybrid.
// A seed fixes everything: the same configuration gives the same run.
package sim
