package rates

import (
	"math"
	"slices"
	"time"

	"github.com/inferscope/inferscope/internal/rates/ratestest"
)

// t0 is the fake clock's origin; processes in tests started an hour before.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var start0 = float64(t0.Unix() - 3600)

// at is the fake clock: sec seconds after t0.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

var (
	snap   = ratestest.Snap
	mkHist = ratestest.Hist
)

// hist is a histogram's index in a Sample.
func hist(name string) int { return slices.Index(histNames, name) }

// approx compares figures computed in two ways.
func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
