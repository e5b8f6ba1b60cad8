//go:build !race

package proxy

// raceEnabled: the race detector changes what allocates and when.
const raceEnabled = false
