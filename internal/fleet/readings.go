package fleet

import (
	"math"
	"sort"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Readings: what either read gives of an instance, in one shape, so that
// one code makes its figures whichever read it was (as Thanos' answers
// look the same whether or not the store did the work). An instance is
// canonical snapshots at times: its reading at the window's end, the
// readings its window is counted over (its two ends, or, around a
// restart, more), and in a past range each gauge's largest value. What
// a reading's counters say across two readings (fell: a restart) is read
// the same way for both.

// read is one instance as a read gave it.
type read struct {
	// end is its reading at the window's end, whole: the report's.
	end *reading
	// w are the readings its window is counted over.
	w    readings
	peak *snapshot.Snapshot
	// native counts histograms read from native values.
	native int
	// bornAt is when it began inside the window (its process start, or
	// its first sample), zero where it ran through it.
	bornAt time.Time
	err    error
}

// reading is an instance read at one time.
type reading struct {
	at     time.Time
	snap   *snapshot.Snapshot
	native int
	err    error
}

// readings are the readings an instance's window is counted over, and
// whether it counts from zero at start (born inside the window).
type readings struct {
	bs       []boundary
	fromZero bool
	start    time.Time
}

// boundary is an instance's canonical snapshot at one time: the ends of a
// window, and where counters restarted inside it the last reading before
// and the first after.
type boundary struct {
	at   time.Time
	snap *snapshot.Snapshot
	// reset says the server's counters restarted from zero at this
	// reading (raw samples fell, or its start time changed).
	reset bool
}

// countersOf lists the counters of s a window holds an increase of
// (analysis.IsWindowCounter: Scalars and Extra), present, finite and not
// negative.
func countersOf(s *snapshot.Snapshot) []string {
	var out []string
	for _, m := range []map[string]float64{s.Scalars, s.Extra} {
		for name := range m {
			if _, ok := counterOf(s, name); ok {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// counterOf is a window counter's value in s, from Scalars or Extra.
func counterOf(s *snapshot.Snapshot, name string) (float64, bool) {
	if !analysis.IsWindowCounter(name) {
		return 0, false
	}
	v, ok := s.Scalar(name)
	if !ok {
		v, ok = s.Extra[name]
	}
	return v, ok && finite(v) && v >= 0
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fell reports a restart between two readings: a counter or a histogram's
// count fell, or the process start time changed.
func fell(a, b *snapshot.Snapshot) bool {
	if sa, sb := a.StartTime(), b.StartTime(); sa > 0 && sb > 0 && math.Abs(sa-sb) >= 1 {
		return true
	}
	for _, name := range countersOf(b) {
		v, _ := counterOf(b, name)
		if p, ok := counterOf(a, name); ok && v < p {
			return true
		}
	}
	for name, h := range b.Histograms {
		if p := a.Hist(name); p != nil && h != nil && h.Count < p.Count {
			return true
		}
	}
	return false
}
