//go:build race

package fleet

// raceEnabled: the race detector changes what allocates and how much.
const raceEnabled = true
