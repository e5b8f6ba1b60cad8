package bench

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

// SLO is the latency target goodput counts requests against: a request is
// good only if it meets every limit set (0: not set).
type SLO struct {
	TTFT, TPOT, E2E time.Duration
}

// Set reports whether any limit is set.
func (s SLO) Set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2E > 0 }

// ParseSLO reads --slo: comma-separated limits, each ttft, tpot or e2e =
// a duration ("ttft=500ms,tpot=50ms,e2e=10s").
func ParseSLO(s string) (SLO, error) {
	var out SLO
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return SLO{}, fmt.Errorf("%q is not name=duration", part)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		d, err := units.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return SLO{}, fmt.Errorf("%s: %w", key, err)
		}
		if d <= 0 {
			return SLO{}, fmt.Errorf("%s=%s: a limit must be positive", key, val)
		}
		if seen[key] {
			return SLO{}, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		switch key {
		case "ttft":
			out.TTFT = d
		case "tpot":
			out.TPOT = d
		case "e2e":
			out.E2E = d
		default:
			return SLO{}, fmt.Errorf("unknown limit %q (ttft, tpot, e2e)", key)
		}
	}
	return out, nil
}

// String writes the SLO as --slo takes it.
func (s SLO) String() string {
	var parts []string
	for _, l := range []struct {
		name string
		d    time.Duration
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2e", s.E2E}} {
		if l.d > 0 {
			parts = append(parts, l.name+"="+units.Duration(l.d))
		}
	}
	return strings.Join(parts, ",")
}

// good reports whether a completed request meets every limit; tpot is its
// TPOT in seconds, NaN where it has none (a single token), which meets a
// TPOT limit vacuously, as vLLM counts it.
func (s SLO) good(r load.Record, tpot float64) bool {
	if s.TTFT > 0 && (r.TTFT < 0 || r.TTFT > s.TTFT) {
		return false
	}
	if s.E2E > 0 && (r.E2E < 0 || r.E2E > s.E2E) {
		return false
	}
	if s.TPOT > 0 && !math.IsNaN(tpot) && tpot > s.TPOT.Seconds() {
		return false
	}
	return true
}

// Goodput is the requests that met the SLO.
type Goodput struct {
	SLO string `json:"slo"`
	// Good counts the requests that met every limit; Of is the
	// denominator: every measured request that ended, failed ones
	// included (a failure is never good), as Denominator says.
	Good        int    `json:"good"`
	Of          int    `json:"of"`
	Denominator string `json:"denominator"`
	// Share is Good/Of; Rate is Good over the client's window, per
	// second.
	Share report.Number `json:"share"`
	Rate  report.Number `json:"rate"`
}

// Denominator is what goodput's share divides by.
const Denominator = "completed and failed requests"

func (s SLO) goodput(good, completed, failed int, window float64) *Goodput {
	g := &Goodput{SLO: s.String(), Good: good, Of: completed + failed, Denominator: Denominator,
		Share: report.Number(math.NaN()), Rate: report.Number(math.NaN())}
	if g.Of > 0 {
		g.Share = report.Number(float64(good) / float64(g.Of))
	}
	if window > 0 {
		g.Rate = report.Number(float64(good) / window)
	}
	return g
}
