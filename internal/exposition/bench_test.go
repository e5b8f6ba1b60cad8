package exposition

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkPrescan is the pre-scan alone on a real ~19 KB tabbyAPI scrape:
// its cost against BenchmarkParse's whole.
func BenchmarkPrescan(b *testing.B) {
	body, err := os.ReadFile("../../testdata/tabbyapi/offload-healthy.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if r, err := prescan(context.Background(), body); err != nil || r.limit != nil || r.first != nil {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkParseBombs: bodies over the limits are refused in time linear in
// their size (before the limits, 30,000 labels took 37 s).
func BenchmarkParseBombs(b *testing.B) {
	for _, tc := range []struct {
		name string
		body string
	}{
		{"labels-8000", labelBomb(8000)},
		{"labels-30000", labelBomb(30000)},
		{"labels-100000", labelBomb(100000)},
		{"value-1MiB", `a{v="` + strings.Repeat("x", 1<<20) + `"} 1` + "\n"},
		{"quirky-name-labels-30000", strings.Replace(labelBomb(30000), "bomb{", `bo"mb"{`, 1)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(body, Text); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// BenchmarkParseShapes: 1 MiB bodies within the limits, each stressing one
// dimension (labels per series, families, series per family, line length,
// escapes). Time per byte should stay of one order across them.
func BenchmarkParseShapes(b *testing.B) {
	const size = 1 << 20
	fill := func(line func(i int) string) []byte {
		var sb strings.Builder
		for i := 0; sb.Len() < size; i++ {
			sb.WriteString(line(i))
		}
		return []byte(sb.String())
	}
	labels64 := func(i int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "s{i=\"%d\"", i)
		for j := 1; j < MaxLabelsPerSeries; j++ {
			fmt.Fprintf(&sb, ",l%d=\"v\"", j)
		}
		sb.WriteString("} 1\n")
		return sb.String()
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"64-labels-per-series", fill(labels64)},
		{"many-families", fill(func(i int) string { return fmt.Sprintf("# HELP f%d F.\n# TYPE f%d gauge\nf%d 1\n", i, i, i) })},
		{"one-family-many-series", fill(func(i int) string { return fmt.Sprintf("s{i=\"%d\"} 1\n", i) })},
		{"histogram-many-buckets", append([]byte("# TYPE h histogram\n"), fill(func(i int) string { return fmt.Sprintf("h_bucket{le=\"%d\"} %d\n", i, i) })...)},
		{"one-long-help-line", []byte("# HELP a " + strings.Repeat("long help ", size/10) + "\na 1\n")},
		{"escapes", fill(func(i int) string { return fmt.Sprintf("s{i=\"%d\",v=\"%s\"} 1\n", i, strings.Repeat(`\\\"\n`, 600)) })},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				if _, err := Parse(tc.body, Text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
