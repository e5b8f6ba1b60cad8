package fleet

import (
	"time"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// Readings: what either read gives of an instance, in one shape, so that
// one code makes its figures whichever read it was (as Thanos' answers
// look the same whether or not the store did the work). An instance is
// canonical snapshots at times: its reading at the window's end, the
// readings its window is counted over (its two ends, or, around a
// restart, more), and in a past range each gauge's largest value.

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
