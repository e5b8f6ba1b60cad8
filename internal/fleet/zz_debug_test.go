package fleet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/storetest"
)

func BenchmarkZZQueries(b *testing.B) {
	pods, _ := strconv.Atoi(os.Getenv("PODS"))
	s := storetest.Prometheus(b, storetest.Config{DataDir: scaleData(b, pods)})
	c := client(b, s)
	for range b.N {
		for _, rng := range []bool{false, true} {
			t0 := time.Now()
			f, err := Run(context.Background(), c, Options{From: scaleEnd.Add(-DefaultWindow), To: scaleEnd, Read: Pushdown, MaxInstances: 3000, Range: rng})
			if err != nil {
				b.Fatal(err)
			}
			fmt.Printf("total %v\n", time.Since(t0))
			for _, q := range f.Queries {
				t := q.Text
				if len(t) > 100 {
					t = t[:100]
				}
				fmt.Printf("%8v %s | %s\n", q.Took.Round(time.Millisecond), q.Purpose, t)
			}
		}
	}
}
