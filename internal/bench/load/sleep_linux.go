package load

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerslack is prctl's PR_SET_TIMERSLACK (linux/prctl.h).
const prSetTimerslack = 29

// napper returns the pacer's fine sleep. It locks the calling goroutine
// to a thread of its own, whose timer slack (how late the kernel may wake
// a sleeper, to batch wake-ups: 50 µs by default) it sets to 1 µs, and
// naps there with nanosleep, where a Go timer on an idle process waits in
// epoll_wait, whose grain is a millisecond (the runtime rounds a shorter
// wait up to 1 ms): at 2,000 arrivals a second that would put most sends
// up to a millisecond late. The goroutine must end locked, so that the
// thread ends with it rather than serve others with its slack changed.
func napper() func(time.Duration) {
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1000, 0)
	return func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
}
