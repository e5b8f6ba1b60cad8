package fleet

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
)

// Replica copies: an HA pair of Prometheus servers federated into one
// store (or a Thanos querier not asked to deduplicate) keeps every series
// twice, told apart by a label of the replica's; added up, every count
// would be twice. They are handled here alone:
//
//   - a label tells replicas apart where --replica-label names it, or its
//     name says replica (replicaLabel);
//   - discovery keeps, on each instance, such labels its series carry
//     (group.replicas): the store's sums cannot tell the copies apart, so
//     such an instance is read whole (paths.go), and the census does not
//     leave it in part;
//   - every answer of series the fleet reads whole passes through
//     replicas.points or replicas.matrix: the labels named are dropped and
//     one copy of each series kept; where none was named, a label whose
//     name says replica that tells two series of an instance apart is
//     noted (the fleet note fleet_replica_copies).

// replicaLabel says whether label l may tell HA replicas' copies apart: one
// the user named, or one whose name says replica.
func replicaLabel(l model.LabelName, named []string) bool {
	return strings.Contains(strings.ToLower(string(l)), "replica") || slices.Contains(named, string(l))
}

// replicated says why an instance's series cannot be summed by the store:
// they carry a label that tells replicas apart; "" where none does.
func (g *group) replicated() string {
	if len(g.replicas) == 0 {
		return ""
	}
	return "series under a replica label (" + strings.Join(slices.Sorted(maps.Keys(g.replicas)), ", ") + ")"
}

// replicas removes replica copies from the answers of a report, and keeps
// what it found where no label was named.
type replicas struct {
	named []string
	mu    sync.Mutex
	// copies holds, by label, the instances whose series repeat under it
	// (answers are read at once).
	copies map[string]map[string]bool
}

func newReplicas(named []string) *replicas {
	return &replicas{named: named, copies: map[string]map[string]bool{}}
}

// once keeps one copy of each series, its labels but the named ones: xs,
// their labels (metric) without the named labels, each once.
func once[T any](named []string, xs []T, metric func(T) model.Metric) []T {
	if len(named) == 0 {
		return xs
	}
	seen := map[model.Fingerprint]bool{}
	out := xs[:0]
	for _, x := range xs {
		m := metric(x)
		for _, l := range named {
			delete(m, model.LabelName(l))
		}
		if fp := m.Fingerprint(); !seen[fp] {
			seen[fp] = true
			out = append(out, x)
		}
	}
	return out
}

// points are an instance's points (id) each once; where no label was
// named, a label whose name says replica that does tell two apart is
// noted (an HA pair, read twice).
func (rp *replicas) points(id string, pts []point) []point {
	if len(rp.named) > 0 {
		return once(rp.named, pts, func(p point) model.Metric { return p.metric })
	}
	labels := map[model.LabelName]bool{}
	for _, p := range pts {
		for l := range p.metric {
			if !labels[l] && replicaLabel(l, nil) {
				labels[l] = true
			}
		}
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for l := range labels {
		if rp.copies[string(l)] == nil {
			rp.copies[string(l)] = map[string]bool{}
		}
		if rp.copies[string(l)][id] {
			continue
		}
		// Two points equal but for l, with different values of it: a
		// copy. One pass: each signature without l and the value it came
		// with first.
		without := map[model.LabelName]struct{}{l: {}}
		first := map[uint64]model.LabelValue{}
		for _, p := range pts {
			sig := model.SignatureWithoutLabels(p.metric, without)
			if v, ok := first[sig]; !ok {
				first[sig] = p.metric[l]
			} else if v != p.metric[l] {
				rp.copies[string(l)][id] = true
				break
			}
		}
	}
	return pts
}

// matrix is a raw answer's series each once.
func (rp *replicas) matrix(m model.Matrix) model.Matrix {
	return once(rp.named, m, func(ss *model.SampleStream) model.Metric { return ss.Metric })
}

// found lists, by label, how many instances' series repeat under it.
func (rp *replicas) found() map[string]int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	out := map[string]int{}
	for l, ids := range rp.copies {
		if len(ids) > 0 {
			out[l] = len(ids)
		}
	}
	return out
}
