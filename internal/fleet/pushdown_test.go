package fleet

import (
	"context"
	"testing"

	"github.com/inferscope/inferscope/internal/promapi"
)

// k8s groups instances as a Kubernetes fleet reads best: --by
// namespace,pod.
var k8s = []string{"namespace", "pod"}

// both reads a fleet twice, by the pushdown and by the rebuild, and fails
// t where their tables differ (Differences): the proof that the store's
// sums give the figures the dialect reads, run on every fleet test. It
// returns both readings, for the test's own checks on each.
func both(t *testing.T, api promapi.API, o Options) (push, whole *Fleet) {
	t.Helper()
	o.Read = Pushdown
	push, err := Run(context.Background(), api, o)
	if err != nil {
		t.Fatalf("pushdown: %v", err)
	}
	o.Read = Rebuild
	whole, err = Run(context.Background(), api, o)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	for _, d := range Differences(push, whole) {
		t.Errorf("the pushdown and the rebuild differ: %s", d)
	}
	for _, in := range whole.Instances {
		if in.Read != Rebuild || in.Why != "" {
			t.Errorf("%s: read %s (%s) in a rebuild", in.ID, in.Read, in.Why)
		}
	}
	return push, whole
}

// pushed lists the instances the pushdown read from the store's sums.
func pushed(f *Fleet) map[string]bool {
	out := map[string]bool{}
	for _, in := range f.Instances {
		if in.Read == Pushdown {
			out[in.ID] = true
		}
	}
	return out
}
