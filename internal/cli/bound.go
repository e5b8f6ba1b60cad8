package cli

import (
	"context"
	"errors"
	"time"

	"github.com/inferscope/inferscope/internal/scrape"
)

// grace is how long bounded waits, once the deadline has passed, for the
// work to say in its own words why it ran late (a scrape's timeout names
// the phase it was in).
const grace = 100 * time.Millisecond

// bounded runs work with a context that ends with ctx or after timeout
// (none when timeout ≤ 0) and returns its result, or, as soon as ctx ends
// or the deadline passes, ctx's error or a [*timeoutError]. Parsing and
// analysis do not look at the context, so the work may still be running:
// it is left to finish on its own (its result is dropped), which costs
// nothing when the process is about to exit and keeps a watch's view and
// Ctrl-C responsive.
func bounded[T any](ctx context.Context, timeout time.Duration, work func(context.Context) (T, error)) (T, error) {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := work(ctx)
		done <- result{v, err}
	}()
	var zero T
	select {
	case r := <-done:
		if parent.Err() != nil {
			return zero, parent.Err()
		}
		return r.v, r.err
	case <-ctx.Done():
	}
	if err := parent.Err(); err != nil {
		return zero, err
	}
	select {
	case r := <-done:
		var se *scrape.Error
		switch {
		case r.err == nil:
			return r.v, nil // finished as time ran out: the answer stands
		case errors.As(r.err, &se) && se.Kind == scrape.Timeout:
			return zero, r.err
		}
	case <-time.After(grace):
	}
	return zero, &timeoutError{limit: timeout}
}
