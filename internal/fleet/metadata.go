package fleet

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/promapi"
)

// The store's metadata: each family's TYPE and HELP, asked once a report,
// first, beside discovery's first request (a library reads HELP: vLLM
// 0.8's prefix counters count blocks, later ones tokens, under one name).
// Both reads take each instance's declarations from here.

// metadata is what the store declared of each family.
type metadata struct {
	global map[string][]promapi.Metadata
	// byTarget holds the per-target declarations of families whose
	// targets disagree (vLLM 0.8's block-counting prefix counters beside
	// a later version's token-counting ones).
	byTarget map[string]map[Target]promapi.Metadata
	missing  bool
}

// loadMetadata reads the store's metadata, and each target's own for the
// dialects' families whose targets declared different things.
func loadMetadata(ctx context.Context, q *querier) (*metadata, error) {
	md := &metadata{byTarget: map[string]map[Target]promapi.Metadata{}}
	t := time.Now()
	all, err := q.api.Metadata(ctx)
	q.record("metadata: each family's type and help", "", time.Time{}, t)
	switch {
	case errors.Is(err, promapi.ErrNoMetadata):
		md.missing = true
		return md, nil
	case err != nil:
		var e *promapi.Error
		if errors.As(err, &e) && (e.Status == 404 || e.Kind == promapi.Query) {
			md.missing = true
			return md, nil
		}
		return nil, err
	}
	md.global = all
	for _, name := range slices.Sorted(maps.Keys(all)) {
		if dialect.Owner(name) == "" || !disagree(all[name]) {
			continue
		}
		t := time.Now()
		tms, err := q.api.TargetsMetadata(ctx, name)
		q.record("metadata: each target's own declaration of "+name+", where targets disagree", name, time.Time{}, t)
		if err != nil {
			continue // the global declaration stands
		}
		per := map[Target]promapi.Metadata{}
		for _, tm := range tms {
			per[Target{Job: string(tm.Target[model.JobLabel]), Instance: string(tm.Target[model.InstanceLabel])}] = tm.Metadata
		}
		md.byTarget[name] = per
	}
	return md, nil
}

func disagree(ms []promapi.Metadata) bool {
	for _, m := range ms[1:] {
		if m.Type != ms[0].Type || m.Help != ms[0].Help {
			return true
		}
	}
	return false
}

// forGroup is the metadata lookup of one instance.
func (md *metadata) forGroup(g *group) metaFunc {
	return func(name string) (string, string) {
		if md == nil {
			return "", ""
		}
		if per, ok := md.byTarget[name]; ok {
			for t := range g.targets {
				if m, ok := per[t]; ok {
					return m.Type, m.Help
				}
			}
		}
		if ms := md.global[name]; len(ms) > 0 {
			return ms[0].Type, ms[0].Help
		}
		return "", ""
	}
}

// ownHelp lists the HELP an instance's targets declared for families
// whose targets disagree: what sets it apart from an instance of the same
// names (shapes.go).
func (md *metadata) ownHelp(g *group) []string {
	var out []string
	for name, per := range md.byTarget {
		for t := range g.targets {
			if m, ok := per[t]; ok {
				out = append(out, name+"\x00"+m.Type+"\x00"+m.Help)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// noMeta is the lookup of a store that said nothing.
func noMeta(string) (string, string) { return "", "" }
