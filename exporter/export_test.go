package exporter

import "testing"

// CheckServed is checkServed for the tests of package exporter_test, which
// can import the simulator (package exporter cannot: sim imports it).
func CheckServed(t *testing.T, m *Metrics) { checkServed(t, m, false) }
