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

// The querier's slots: a freed slot goes to the urgent waiter first (the
// window's few requests, sent beside the sums' many), then to the others
// in their order; a waiter whose context ends leaves the line, and a slot
// handed to it as it ended goes on to the next.
func TestSlotsUrgentFirst(t *testing.T) {
	s := newSlots(1)
	if err := s.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 3)
	wait := func(name string, urgent bool) {
		go func() {
			if err := s.acquire(context.Background(), urgent); err == nil {
				order <- name
			}
		}()
	}
	wait("first other", false)
	for !queued(s, 0, 1) {
	}
	gone, cancel := context.WithCancel(context.Background())
	go s.acquire(gone, false)
	for !queued(s, 0, 2) {
	}
	wait("urgent", true)
	for !queued(s, 1, 2) {
	}
	cancel()
	for !queued(s, 1, 1) {
	}
	s.release()
	if got := <-order; got != "urgent" {
		t.Fatalf("the freed slot went to %s, want the urgent waiter", got)
	}
	s.release()
	if got := <-order; got != "first other" {
		t.Fatalf("then %s", got)
	}
	s.release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 1 {
		t.Errorf("%d slots free at the end, want 1", s.free)
	}
}

// queued says whether as many wait as said.
func queued(s *slots, urgent, other int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.urgent) == urgent && len(s.other) == other
}
