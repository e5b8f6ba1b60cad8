package spark_test

import (
	"fmt"
	"math"

	"github.com/inferscope/inferscope/internal/spark"
)

// A rate over ten intervals, one of them a failed scrape: scaled from 0,
// the gap blank, the scale said beside it.
func ExampleDraw() {
	reqs := []float64{2, 2.5, 3, 4, math.NaN(), 6, 7.5, 8, 6, 3}
	l := spark.Draw(reqs, spark.Options{Axis: spark.FromZero})
	fmt.Printf("%s  %s req/s\n", l, l.Range(func(v float64) string { return fmt.Sprint(v) }))

	ttft := []float64{0.21, 0.20, 0.22, 0.35, 0.80, 0.41, 0.22}
	l = spark.Draw(ttft, spark.Options{Axis: spark.FromFloor, Glyphs: spark.ASCII})
	fmt.Printf("%s  %s s\n", l, l.Range(func(v float64) string { return fmt.Sprint(v) }))
	// Output:
	// ▃▃▄▅ ▆██▆▄  0–8 req/s
	// ._.-#-.  0.2–0.8 s
}
