package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/model"
)

// An asker of a query in flight waits for its answer instead of asking
// (here it gives up: its context is done, and nothing was asked again);
// once answered, the next asks again: no answer is kept past its flight.
func TestSharedInFlight(t *testing.T) {
	q := newQuerier(nil, Options{})
	var asked atomic.Int32
	release := make(chan struct{})
	ask := func() (any, error) {
		asked.Add(1)
		<-release
		return model.Vector{{Value: 7}}, nil
	}
	first := make(chan any)
	go func() {
		v, _ := q.shared(context.Background(), "k", ask)
		first <- v
	}()
	for asked.Load() == 0 {
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.shared(done, "k", ask); !errors.Is(err, context.Canceled) || asked.Load() != 1 {
		t.Errorf("an asker while in flight: %v, asked %d times; want it to wait, not ask", err, asked.Load())
	}
	close(release)
	if vec, ok := (<-first).(model.Vector); !ok || len(vec) != 1 || vec[0].Value != 7 {
		t.Errorf("the first asker got %v", vec)
	}
	if _, err := q.shared(context.Background(), "k", ask); err != nil || asked.Load() != 2 {
		t.Errorf("after the answer: asked %d times (%v), want a second ask", asked.Load(), err)
	}
}
