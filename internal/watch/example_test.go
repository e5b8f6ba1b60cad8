package watch_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/watch"
)

func ExampleParseWindows() {
	ws, err := watch.ParseWindows("5m,90,1h30m,300s")
	fmt.Println(ws, err)
	var labels []string
	for _, w := range ws {
		labels = append(labels, watch.Label(w))
	}
	fmt.Println(strings.Join(labels, ","))
	_, err = watch.ParseWindows("30s,5x")
	fmt.Println(err)
	// Output:
	// [1m30s 5m0s 1h30m0s] <nil>
	// 1m30s,5m,1h30m
	// --windows: "5x" is not a duration (use 30s, 5m, 1h or seconds)
}

// A session scraped every 10 s for 40 s, whose generator restarted (its
// counters fell from 800 to 100) at the fourth scrape.
func ExampleHistory_Rates() {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h := watch.NewHistory(time.Minute)
	for i, tokens := range []float64{0, 400, 800, 100, 500} {
		s := &snapshot.Snapshot{Scalars: map[string]float64{"tokens_predicted_total": tokens}}
		h.Add(s, t0.Add(time.Duration(i)*10*time.Second))
	}
	sec, rates := h.Rates([]time.Duration{30 * time.Second, time.Minute})
	fmt.Println(sec.Title)
	for _, c := range sec.Table.Header[1:] {
		fmt.Printf("%8s", strings.TrimSpace(c))
	}
	fmt.Println()
	for _, c := range sec.Table.Rows[0].Cells {
		fmt.Printf("%8s", c)
	}
	fmt.Println()
	// 30s: 400 + 100 + 400 tokens from 10 s to 40 s; ~40s: 1300 in 40 s.
	fmt.Println(*rates["30s"]["generation"], *rates["session"]["generation"], rates["1m"]["generation"])
	// Output:
	// Rates over staggered windows
	//  now 10s     30s    ~40s
	//     40.0    30.0    32.5
	// 30 32.5 <nil>
}
