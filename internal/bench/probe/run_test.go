package probe

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/histogram"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// fakeServer stands in for the generator and the server's /metrics: each
// request takes a prefill of its prompt at 1,000 tok/s and a decode of 100
// tok/s, by the client's clock and the server's counters alike; other
// adds tokens another client generated to the next reading.
type fakeServer struct {
	generated, promptSecs, decodeSecs float64
	other                             float64
}

func (f *fakeServer) one(_ context.Context, _ load.Target, w workload.Request) (load.Record, error) {
	p := w.PromptTokens
	prefill := time.Duration(float64(p) / 1000 * float64(time.Second))
	decode := time.Duration(float64(w.OutputTokens-1) / 100 * float64(time.Second))
	f.generated += float64(w.OutputTokens)
	f.promptSecs += prefill.Seconds()
	f.decodeSecs += decode.Seconds()
	return load.Record{Sent: 0, TTFT: prefill, E2E: prefill + decode, PromptTokens: p, CachedTokens: 0, OutputTokens: w.OutputTokens,
		RequestedPrompt: p, TokenSource: "usage"}, nil
}

func (f *fakeServer) scrape(context.Context) (*snapshot.Snapshot, error) {
	f.generated += f.other
	f.other = 0
	return &snapshot.Snapshot{Dialect: "tabbyapi", Scalars: map[string]float64{
		snapshot.TokensPredictedTotal: f.generated, snapshot.PromptSecondsTotal: f.promptSecs, snapshot.TokensPredictedSecondsTotal: f.decodeSecs,
	}, Histograms: map[string]*histogram.Histogram{}, Extra: map[string]float64{}}, nil
}

func fakeConfig(f *fakeServer) Config {
	u, _ := url.Parse("http://h:1")
	return Config{Target: load.Target{Base: u}, Probes: []string{Prefill}, Lengths: []int{500}, Repeat: 3,
		Calibration: workload.Calibration{Method: "tokenize"}, Scrape: f.scrape, Metrics: "http://h:1/metrics", one: f.one}
}

// Each request's server figure is its own: the counters' increase over it.
func TestServerFigurePerRequest(t *testing.T) {
	f := &fakeServer{}
	res, err := Run(context.Background(), fakeConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Prefill.Points[0]
	if p.Requests != 3 || p.Server == nil || p.ServerFrom != FromMetrics || p.Server.N != 3 || float64(p.Server.Median) != 1000 || float64(p.Client.Median) != 1000 {
		t.Errorf("%+v %+v", p, p.Server)
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes %+v", res.Notes)
	}
}

// Another client's tokens over a request leave that request without a
// server figure, and a note says so.
func TestServerBusy(t *testing.T) {
	f := &fakeServer{}
	c := fakeConfig(f)
	calls := 0
	c.one = func(ctx context.Context, tg load.Target, w workload.Request) (load.Record, error) {
		calls++
		if calls == 3 {
			f.other = 7 // over the second measured request
		}
		return f.one(ctx, tg, w)
	}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Prefill.Points[0]; p.Server == nil || p.Server.N != 2 || p.Client.N != 3 {
		t.Errorf("%+v", p)
	}
	if len(res.Notes) != 1 || res.Notes[0].ID != "probe_server_busy" {
		t.Errorf("notes %+v", res.Notes)
	}
}

// Ctrl-C after the first measured request: the point has it, the probe
// is partial, and says so.
func TestInterrupted(t *testing.T) {
	f := &fakeServer{}
	c := fakeConfig(f)
	c.Lengths = []int{500, 1000}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	c.one = func(ctx context.Context, tg load.Target, w workload.Request) (load.Record, error) {
		calls++
		if calls == 3 {
			cancel()
			return load.Record{Sent: 0, TTFT: -1, E2E: -1, Error: load.ErrCanceled}, nil
		}
		return f.one(ctx, tg, w)
	}
	res, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || len(res.Prefill.Points) != 1 || res.Prefill.Points[0].Requests != 1 || res.Prefill.Points[0].Failed != 0 {
		t.Errorf("partial %v, points %+v", res.Partial, res.Prefill.Points)
	}
	if n := res.Notes; len(n) != 1 || n[0].ID != "probe_partial" {
		t.Errorf("notes %+v", n)
	}
}
