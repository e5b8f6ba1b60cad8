package watch

import (
	"io"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/rates/ratestest"
	"github.com/inferscope/inferscope/internal/render"
)

// BenchmarkRefresh is one refresh of a 24 h session at a 1 s interval:
// fold a scrape into a full history, compute every window and draw the
// frame. At one refresh a second, ns/op × 60 is the CPU a minute costs
// (Fetch and Build, the scrape and the one-shot analysis, come on top).
func BenchmarkRefresh(b *testing.B) {
	ws, _ := ParseWindows(DefaultWindows)
	c := Config{Interval: time.Second, Windows: ws, Build: fakeBuild}
	s := newSession(c)
	const day = 86400
	for sec := range day {
		s.h.Add(ratestest.Full(start0, sec), at(float64(sec)))
	}
	o := render.Options{Width: 160}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		sec := day + i
		b.StopTimer()
		sn := ratestest.Full(start0, sec) // the scrape itself is not the watch's cost
		b.StartTimer()
		s.observe(sn, at(float64(sec)), 5*time.Millisecond)
		if err := render.Text(io.Discard, s.report(at(float64(sec))), o); err != nil {
			b.Fatal(err)
		}
	}
}
