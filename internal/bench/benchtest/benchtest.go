// Package benchtest is what the bench's tests share: a scrape of a server's
// /metrics read as the command line reads it.
package benchtest

import (
	"context"
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Scrape reads the /metrics URL target as the command line does: fetched,
// parsed as text and mapped to the canonical quantities, with the scrape's
// source, time and start token.
func Scrape(target string) func(context.Context) (*snapshot.Snapshot, error) {
	return func(ctx context.Context) (*snapshot.Snapshot, error) {
		res, err := scrape.Fetch(ctx, target, scrape.Options{Timeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		fams, err := exposition.Parse(res.Body, exposition.Text)
		if err != nil {
			return nil, err
		}
		s, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			return nil, err
		}
		s.Source, s.ScrapedAt, s.TimeSource, s.StartToken = res.Source, res.ScrapedAt, res.TimeSource, res.StartToken
		return s, nil
	}
}
