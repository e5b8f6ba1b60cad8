package scrape

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// epoch2000 is 2000-01-01T00:00:00Z: no inference server started earlier.
const epoch2000 = 946684800

// ParseStartHeader reads a Process-Start-Time-Unix header value as Unix
// seconds, or returns 0 when it is not a plausible start time.
//
// tabbyAPI and client_golang send Unix seconds; llama.cpp sends
// ggml_time_us(), a monotonic microsecond clock counted from boot, which is
// no epoch. A value is taken as seconds, then milliseconds, microseconds and
// nanoseconds, and the first reading between 2000-01-01 and now + 1 day wins.
//
// Magnitude alone cannot always tell them apart: a monotonic microsecond
// value reads as a 2000s epoch in seconds when the server started 16 to 30
// minutes after boot, and in milliseconds when it started 11 to 21 days
// after boot. Callers that know the server is llama.cpp should ignore
// HeaderStart and compare Result.StartToken instead. This is only what
// could be a time at all: whether it can be this process's start (after
// 2015, not after the scrape, not younger than a request it served) is
// snapshot.Snapshot.Start's to say, for the header and the start gauge
// alike.
func ParseStartHeader(raw string, now time.Time) float64 {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 32 || strings.Count(raw, ".") > 1 || raw == "." {
		return 0
	}
	for i := 0; i < len(raw); i++ {
		if (raw[i] < '0' || raw[i] > '9') && raw[i] != '.' {
			return 0
		}
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsInf(v, 0) || v <= 0 {
		return 0
	}
	hi := float64(now.Add(24*time.Hour).UnixNano()) / 1e9
	for _, div := range []float64{1, 1e3, 1e6, 1e9} {
		if s := v / div; s >= epoch2000 && s <= hi {
			return s
		}
	}
	return 0
}
