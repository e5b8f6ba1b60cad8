//go:build race

package exporter

// raceEnabled: under the race detector sync.Pool drops some of what is put
// back, so a pooled buffer or writer is sometimes allocated again.
const raceEnabled = true
