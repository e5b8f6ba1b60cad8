package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultEpoch is where the virtual clock starts when [Config.Epoch] is zero:
// a fixed instant, so that a run's output does not depend on when it ran.
var DefaultEpoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Config describes one simulated engine and the workload it serves. The
// named scenarios ([Scenario]) are ready-made configurations; a zero field
// of a nested feature config leaves that feature off.
type Config struct {
	// Seed makes a run reproducible: the same Config gives the same run.
	Seed uint64
	// Epoch is the wall-clock instant virtual time 0 stands for (process
	// start). Zero means [DefaultEpoch].
	Epoch time.Time

	// MaxSeqLen is the model's context length: no request's prompt plus
	// generation exceeds it.
	MaxSeqLen int
	// MaxBatch is how many requests run at once; the rest wait in a FIFO
	// queue.
	MaxBatch int
	// PageSize is the number of tokens in one KV page (256 on the reference
	// engine).
	PageSize int
	// KVPages is the KV cache's capacity in pages.
	KVPages int

	// ChunkSize is the most prompt tokens one prefill step computes.
	ChunkSize int
	// PrefillRate is the prefill speed in tokens per second of engine time.
	PrefillRate float64
	// ChunkOverhead is the fixed cost of every prefill step (kernel launches,
	// cache lookup), paid even when almost the whole prompt was cached.
	ChunkOverhead time.Duration
	// DecodeBase and DecodePerJob give a decode step's time:
	// DecodeBase + DecodePerJob × (jobs decoding).
	DecodeBase, DecodePerJob time.Duration

	// Offload keeps KV pages evicted from VRAM in system RAM; nil is off.
	Offload *OffloadConfig
	// Recurrent makes the model a hybrid with checkpointed recurrent state;
	// nil is a pure transformer.
	Recurrent *RecurrentConfig
	// Draft adds a speculative drafter; nil is none.
	Draft *DraftConfig

	// Workload says which requests arrive when.
	Workload Workload
}

// OffloadConfig sizes the system-RAM KV cache.
type OffloadConfig struct {
	// MaxSlots is the RAM cache's capacity in pages.
	MaxSlots int
	// SlotBytes is the size of one page image (one slot, one transfer).
	SlotBytes int64
	// PinRate is how many slots per second a background thread pins ahead
	// of use; a store into a slot not yet pinned pins it synchronously (a
	// cold allocation) at PinBandwidth.
	PinRate float64
	// PinBandwidth is the synchronous pinning speed in bytes per second
	// (~2.5 GB/s on the reference engine), a stall on the generator.
	PinBandwidth float64
	// Bandwidth is the PCIe copy speed in bytes per second for stores and
	// restores.
	Bandwidth float64
}

// RecurrentConfig sizes the recurrent-checkpoint cache of a hybrid model.
type RecurrentConfig struct {
	// CheckpointBytes is the size of one checkpoint of the recurrent state.
	CheckpointBytes int64
	// MaxBytes is the budget checkpoints must fit in.
	MaxBytes int64
}

// DraftConfig describes a speculative drafter.
type DraftConfig struct {
	// K is how many tokens the drafter proposes per decode step.
	K int
	// Alpha is the probability that each proposed token is accepted, given
	// that every earlier one in the step was.
	Alpha float64
	// TokenTime is the drafter's cost per proposed token per step.
	TokenTime time.Duration
}

// Workload is the stream of requests. Exactly one of Users (closed loop) and
// Rate (open loop) is set.
type Workload struct {
	// Users > 0 is a closed loop: each user sends a request, waits for the
	// answer, thinks for an exponential time of mean ThinkTime, and sends
	// the next. A user's requests form conversations: each turn's prompt is
	// the whole conversation so far plus a new message.
	Users     int
	ThinkTime time.Duration
	// Turns is the mean number of turns in a conversation (geometric), at
	// least 1. Used by closed loops only.
	Turns float64

	// Rate > 0 is an open loop: single-turn requests arrive as a Poisson
	// process of Rate per second, whatever the engine is doing.
	Rate float64

	// SystemTokens is a prefix every prompt starts with.
	SystemTokens int
	// Documents > 0 puts one of that many shared documents of
	// DocumentTokens each, picked uniformly at random, after the system
	// prefix of every open-loop prompt (retrieval over a fixed corpus).
	Documents, DocumentTokens int
	// UserTokens is the length of each request's fresh message.
	UserTokens Span
	// OutputTokens is the length of each answer.
	OutputTokens Span

	// Off stops the workload's own arrivals: only requests given to
	// [Sim.Submit] arrive. The rest still describes the scenario (the
	// demo's API draws answer lengths from OutputTokens).
	Off bool
}

// Span is a range of lengths drawn log-uniformly: short ones are common, long
// ones rare, as with real messages. Min == Max is a fixed length.
type Span struct{ Min, Max int }

func (s Span) valid() bool { return s.Min >= 1 && s.Max >= s.Min }

// clone copies c and the feature configs it points to.
func (c Config) clone() Config {
	if c.Offload != nil {
		o := *c.Offload
		c.Offload = &o
	}
	if c.Recurrent != nil {
		r := *c.Recurrent
		c.Recurrent = &r
	}
	if c.Draft != nil {
		d := *c.Draft
		c.Draft = &d
	}
	return c
}

// pages is how many pages hold n tokens.
func (c *Config) pages(n int) int { return (n + c.PageSize - 1) / c.PageSize }

// Validate reports the first problem that would make the configuration
// unrunnable, such as a request that could never fit in the KV cache.
func (c *Config) Validate() error {
	// In the order the problems are reported: the engine's sizes first, so
	// that the checks after them can use those sizes.
	for _, check := range []func() error{
		c.checkSizes,
		c.checkLimits,
		c.checkStepTimes,
		c.Workload.checkLoop,
		c.checkRequests,
		c.Offload.check,
		c.Recurrent.check,
		c.Draft.check,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkSizes requires the engine's sizes and prefill rate to be positive.
func (c *Config) checkSizes() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"MaxSeqLen", float64(c.MaxSeqLen)},
		{"MaxBatch", float64(c.MaxBatch)},
		{"PageSize", float64(c.PageSize)},
		{"KVPages", float64(c.KVPages)},
		{"ChunkSize", float64(c.ChunkSize)},
		{"PrefillRate", c.PrefillRate},
	} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("sim: %s must be a positive number, got %v", f.name, f.v)
		}
	}
	return nil
}

// checkLimits keeps memory (every cache is preallocated) and integer
// arithmetic in range; real engines are far inside these bounds.
func (c *Config) checkLimits() error {
	w := &c.Workload
	for _, l := range []struct {
		name  string
		v, mx int64
	}{
		{"MaxSeqLen", int64(c.MaxSeqLen), 1 << 30},
		{"MaxBatch", int64(c.MaxBatch), 1 << 16},
		{"PageSize", int64(c.PageSize), 1 << 20},
		{"KVPages", int64(c.KVPages), 1 << 22},
		{"ChunkSize", int64(c.ChunkSize), 1 << 30},
		{"Users", int64(w.Users), 1 << 20},
		{"Documents", int64(w.Documents), 1 << 30},
		{"DocumentTokens", int64(w.DocumentTokens), 1 << 30},
		{"SystemTokens", int64(w.SystemTokens), 1 << 30},
		{"UserTokens.Max", int64(w.UserTokens.Max), 1 << 30},
		{"OutputTokens.Max", int64(w.OutputTokens.Max), 1 << 30},
	} {
		if l.v > l.mx {
			return fmt.Errorf("sim: %s %d is above the simulator's limit %d", l.name, l.v, l.mx)
		}
	}
	if w.Rate > 1e4 {
		return fmt.Errorf("sim: Rate %v is above the simulator's limit of 10000 requests per second", w.Rate)
	}
	return nil
}

// checkStepTimes requires step times that are not negative, a decode step
// that takes time, and a KV cache that holds the longest request.
func (c *Config) checkStepTimes() error {
	if c.ChunkOverhead < 0 || c.DecodeBase < 0 || c.DecodePerJob < 0 {
		return errors.New("sim: step times must not be negative")
	}
	if c.DecodeBase+c.DecodePerJob <= 0 {
		return errors.New("sim: a decode step must take time (DecodeBase or DecodePerJob > 0)")
	}
	if c.pages(c.MaxSeqLen) > c.KVPages {
		return fmt.Errorf("sim: KVPages %d cannot hold one request of MaxSeqLen %d (%d pages)", c.KVPages, c.MaxSeqLen, c.pages(c.MaxSeqLen))
	}
	return nil
}

// checkLoop requires exactly one of a closed loop (Users) and an open one
// (Rate), each with the settings it takes.
func (w *Workload) checkLoop() error {
	switch {
	case w.Users > 0 && w.Rate > 0:
		return errors.New("sim: workload sets both Users (closed loop) and Rate (open loop)")
	case w.Users > 0:
		if w.ThinkTime < 0 {
			return errors.New("sim: ThinkTime must not be negative")
		}
		if !(w.Turns >= 1) || math.IsInf(w.Turns, 0) {
			return fmt.Errorf("sim: Turns must be at least 1, got %v", w.Turns)
		}
		if w.Documents > 0 {
			return errors.New("sim: Documents are for open-loop workloads")
		}
	case w.Rate > 0:
		if math.IsInf(w.Rate, 0) {
			return errors.New("sim: Rate must be finite")
		}
	default:
		return errors.New("sim: workload needs Users (closed loop) or Rate (open loop)")
	}
	return nil
}

// checkRequests requires token counts that make a request, the longest of
// which fits in MaxSeqLen.
func (c *Config) checkRequests() error {
	w := &c.Workload
	if w.SystemTokens < 0 || w.Documents < 0 || w.DocumentTokens < 0 {
		return errors.New("sim: token counts must not be negative")
	}
	if w.Documents > 0 && w.DocumentTokens < 1 {
		return errors.New("sim: Documents need DocumentTokens ≥ 1")
	}
	if !w.UserTokens.valid() || !w.OutputTokens.valid() {
		return errors.New("sim: UserTokens and OutputTokens need 1 ≤ Min ≤ Max")
	}
	doc := 0
	if w.Documents > 0 {
		doc = w.DocumentTokens
	}
	if n := w.SystemTokens + doc + w.UserTokens.Max + w.OutputTokens.Max; n > c.MaxSeqLen {
		return fmt.Errorf("sim: the longest request (%d tokens) exceeds MaxSeqLen %d", n, c.MaxSeqLen)
	}
	return nil
}

// check validates the offload cache; nil (off) is valid.
func (o *OffloadConfig) check() error {
	switch {
	case o == nil:
		return nil
	case o.MaxSlots < 1 || o.SlotBytes < 1:
		return errors.New("sim: Offload needs MaxSlots ≥ 1 and SlotBytes ≥ 1")
	case o.MaxSlots > 1<<22 || o.SlotBytes > 1<<40:
		return errors.New("sim: Offload MaxSlots or SlotBytes is above the simulator's limit (4 Mi slots, 1 TiB per slot)")
	case o.PinRate < 0 || !(o.PinBandwidth > 0) || !(o.Bandwidth > 0) || math.IsInf(o.PinRate, 0):
		return errors.New("sim: Offload needs PinRate ≥ 0 and positive PinBandwidth and Bandwidth")
	}
	return nil
}

// check validates the recurrent-checkpoint cache; nil (none) is valid.
func (r *RecurrentConfig) check() error {
	switch {
	case r == nil:
		return nil
	case r.CheckpointBytes < 1 || r.MaxBytes < r.CheckpointBytes:
		return errors.New("sim: Recurrent needs CheckpointBytes ≥ 1 and MaxBytes ≥ CheckpointBytes")
	case r.MaxBytes/r.CheckpointBytes > 1<<20:
		return errors.New("sim: Recurrent budget holds more than the simulator's limit of 1 Mi checkpoints")
	}
	return nil
}

// check validates the drafter; nil (none) is valid.
func (d *DraftConfig) check() error {
	if d != nil && (d.K < 1 || d.K > 1<<10 || !(d.Alpha >= 0 && d.Alpha <= 1) || d.TokenTime < 0) {
		return errors.New("sim: Draft needs 1 ≤ K ≤ 1024, 0 ≤ Alpha ≤ 1 and TokenTime ≥ 0")
	}
	return nil
}
