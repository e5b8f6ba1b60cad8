//go:build race

package doctest

// raceEnabled: the tests are built with the race detector.
const raceEnabled = true
