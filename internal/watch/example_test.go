package watch_test

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

func ExampleParseWindows() {
	ws, err := watch.ParseWindows("5m,90,1h30m,300s")
	fmt.Println(ws, err)
	var labels []string
	for _, w := range ws {
		labels = append(labels, units.Duration(w))
	}
	fmt.Println(strings.Join(labels, ","))
	_, err = watch.ParseWindows("30s,5x")
	fmt.Println(err)
	// Output:
	// [1m30s 5m0s 1h30m0s] <nil>
	// 1m30s,5m,1h30m
	// --watch-windows: "5x" is not a duration (use 30s, 5m, 1h or seconds)
}
