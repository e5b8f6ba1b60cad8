package load

import (
	"syscall"
	"time"
)

// nap sleeps for d on the calling thread with nanosleep, whose grain is
// the kernel's timer slack (50 µs by default), where a Go timer on an idle
// process waits in epoll_wait, whose grain is a millisecond (the runtime
// rounds a shorter wait up to 1 ms): at 2,000 arrivals a second that
// would put most sends up to a millisecond late.
func nap(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
