package units_test

import (
	"fmt"
	"time"

	"github.com/inferscope/inferscope/internal/units"
)

// A measured time and a setting are spelled apart: the first for reading,
// the second so that it can be typed back into a flag.
func Example() {
	fmt.Println(units.Seconds(0.0684), units.Seconds(1.3), units.Seconds(246))
	fmt.Println(units.Duration(90*time.Second), units.Duration(1500*time.Millisecond), units.Duration(24*time.Hour))
	d, err := units.ParseDuration("1d12h")
	fmt.Println(d, err)
	_, err = units.ParseDuration("1m30")
	fmt.Println(err)
	// Output:
	// 68 ms 1.30 s 4.1 min
	// 1m30s 1.5s 24h
	// 36h0m0s <nil>
	// "1m30" is not a duration
}
