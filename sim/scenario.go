package sim

import (
	"fmt"
	"strings"
	"time"
)

// DefaultScenario is the scenario a demo runs unless told otherwise.
const DefaultScenario = "chat"

// scenario is a named configuration and what it demonstrates.
type scenario struct {
	name, summary string
	config        func() Config
}

// Engine figures shared by the scenarios: an 8B-class model on one GPU.
func engine() Config {
	return Config{
		MaxSeqLen:     32768,
		MaxBatch:      16,
		PageSize:      256,
		KVPages:       1024, // 262,144 tokens
		ChunkSize:     2048,
		PrefillRate:   8000,
		ChunkOverhead: 6 * time.Millisecond,
		DecodeBase:    18 * time.Millisecond,
		DecodePerJob:  1200 * time.Microsecond,
	}
}

// offload is a RAM cache of n slots of one 256-token page of an 8B model's
// K/V (128 KiB per token).
func offload(n int) *OffloadConfig {
	return &OffloadConfig{
		MaxSlots:     n,
		SlotBytes:    256 * 128 << 10,
		PinRate:      5,
		PinBandwidth: 2.5e9,
		Bandwidth:    25e9,
	}
}

// rag is an open-loop workload of questions over a corpus of documents,
// served by an engine with a small VRAM cache and a RAM cache of slots pages.
func rag(documents, slots int) Config {
	c := engine()
	c.MaxSeqLen = 16384
	c.MaxBatch = 8
	c.KVPages = 384
	c.Offload = offload(slots)
	c.Workload = Workload{
		Rate:           0.4,
		Documents:      documents,
		DocumentTokens: 8000,
		UserTokens:     Span{50, 400},
		OutputTokens:   Span{50, 400},
	}
	return c
}

var scenarios = []scenario{
	{"chat", "multi-turn conversations of 32 users with moderate prefix reuse", func() Config {
		c := engine()
		c.Workload = Workload{
			Users: 32, ThinkTime: 20 * time.Second, Turns: 4,
			SystemTokens: 1200,
			UserTokens:   Span{20, 1500},
			OutputTokens: Span{20, 1200},
		}
		return c
	}},
	{"agent", "a 30,000-token system prefix with 2,000 fresh tokens per request", func() Config {
		c := engine()
		c.MaxSeqLen = 65536
		c.Workload = Workload{
			Rate:         0.5,
			SystemTokens: 30000,
			UserTokens:   Span{2000, 2000},
			OutputTokens: Span{300, 300},
		}
		return c
	}},
	{"spec", "chat with a speculative drafter (k = 4, α = 0.75)", func() Config {
		c := engine()
		c.Draft = &DraftConfig{K: 4, Alpha: 0.75, TokenTime: 1500 * time.Microsecond}
		c.Workload = Workload{
			Users: 16, ThinkTime: 10 * time.Second, Turns: 3,
			SystemTokens: 800,
			UserTokens:   Span{20, 800},
			OutputTokens: Span{100, 1000},
		}
		return c
	}},
	{"offload-thrash", "KV offload to a RAM cache smaller than the working set, random access", func() Config {
		return rag(400, 1024)
	}},
	{"offload-healthy", "KV offload to a RAM cache larger than the working set", func() Config {
		return rag(24, 2048)
	}},
	{"hybrid", "a hybrid model whose recurrent-checkpoint budget is below its live conversations' needs", func() Config {
		c := engine()
		c.KVPages = 512
		c.Recurrent = &RecurrentConfig{
			CheckpointBytes: 150 << 20,
			MaxBytes:        8 * 150 << 20,
		}
		c.Workload = Workload{
			Users: 24, ThinkTime: 8 * time.Second, Turns: 6,
			SystemTokens: 1000,
			UserTokens:   Span{30, 800},
			OutputTokens: Span{30, 600},
		}
		return c
	}},
}

// Scenarios lists the scenario names, the default first.
func Scenarios() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.name
	}
	return out
}

// Describe returns a scenario's one-line summary, "" for an unknown name.
func Describe(name string) string {
	for _, s := range scenarios {
		if s.name == name {
			return s.summary
		}
	}
	return ""
}

// UnknownScenarioError is a scenario name that does not exist.
type UnknownScenarioError struct{ Name string }

func (e *UnknownScenarioError) Error() string {
	return fmt.Sprintf("unknown scenario %q (valid: %s)", e.Name, strings.Join(Scenarios(), ", "))
}

// Scenario returns the named scenario's configuration with seed set; the
// caller may adjust it before [New].
func Scenario(name string, seed uint64) (Config, error) {
	for _, s := range scenarios {
		if s.name == name {
			c := s.config()
			c.Seed = seed
			return c, nil
		}
	}
	return Config{}, &UnknownScenarioError{Name: name}
}
