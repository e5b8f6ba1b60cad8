package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/scrape"
)

// pipeline is what one-shot does after the bytes arrive.
func pipeline(b *testing.B, body []byte) {
	res := &scrape.Result{Source: "bench", Body: body, ScrapedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	snap, err := parse(context.Background(), res, dialect.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rep := analysis.Analyze(snap, analysis.Options{Now: res.ScrapedAt})
	if err := render.Text(io.Discard, rep, render.Options{Width: 160}); err != nil {
		b.Fatal(err)
	}
}

// A real-size tabbyAPI scrape (~19 KB, every series).
func BenchmarkPipeline20KB(b *testing.B) {
	body, err := os.ReadFile(fixtures + "offload-healthy.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		pipeline(b, body)
	}
}

// The same scrape buried in 1 MB of other families (a server that also
// exports HTTP and runtime series with many label sets).
func BenchmarkPipeline1MB(b *testing.B) {
	base, err := os.ReadFile(fixtures + "offload-healthy.prom")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(base)
	buf.WriteString("# HELP http_requests_total Requests by path and code.\n# TYPE http_requests_total counter\n")
	for i := 0; buf.Len() < 1<<20; i++ {
		fmt.Fprintf(&buf, "http_requests_total{handler=\"/v1/route/%d\",method=\"POST\",code=\"%d\"} %d\n", i, 200+i%5, i*7)
	}
	body := buf.Bytes()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		pipeline(b, body)
	}
}
