//go:build !linux

package load

import "time"

// napper returns the pacer's fine sleep: elsewhere than Linux, a Go
// timer's.
func napper() func(time.Duration) { return time.Sleep }
