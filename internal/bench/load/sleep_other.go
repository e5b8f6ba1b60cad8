//go:build !linux

package load

import "time"

// nap sleeps for d (a Go timer: elsewhere than Linux, no finer sleep is
// used).
func nap(d time.Duration) { time.Sleep(d) }
