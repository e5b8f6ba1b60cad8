package load

import (
	"context"
	"net/http"
	"time"

	"github.com/inferscope/inferscope/internal/bench/workload"
)

// Probe sends one request to t and returns its Record (times from the
// probe's own start): the check before a run that the model exists, the
// answer streams and carries usage, and a workload's calibration
// (workload.UsageFunc). Its error is only a target that cannot be asked;
// how the request went is the Record's.
func Probe(ctx context.Context, t Target, w workload.Request) (Record, error) {
	p := Plan{Target: t, Concurrency: 1, Requests: 1, Source: one{w}}
	if err := p.check(); err != nil {
		return Record{}, err
	}
	r := newRunner(p)
	defer r.tr.CloseIdleConnections()
	stop := context.AfterFunc(ctx, r.cancelReqs)
	defer stop()
	r.t0 = time.Now()
	rec, _ := r.send(ticket{scheduled: -1}, w)
	return rec, nil
}

type one struct{ w workload.Request }

func (o one) Next(int) workload.Request { return o.w }

// Client is a client for t under the generator's policy (credentials to
// t's origin only, answers capped, no compression), for the requests a
// bench makes beside the load: /v1/models, /tokenize.
func Client(t Target) *http.Client {
	c, _ := newClient(t, 2)
	return c
}
