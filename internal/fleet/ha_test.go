package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/storetest"
)

// An HA pair of Prometheus servers federated into one store: every series
// of the one pod twice, told apart by a replica label. Read as is, every
// count would be doubled: the fleet says so; with --replica-label the
// copies are read once.
func TestReplicaCopies(t *testing.T) {
	t.Parallel()
	w := newOM()
	for at := fixFirst; !at.After(fixLast); at = at.Add(time.Minute) {
		el := at.Sub(fixVirtual).Seconds()
		for _, replica := range []string{"a", "b"} {
			target := []string{"job", "vllm", "instance", "10.0.0.1:8000", "namespace", "llm", "pod", "vllm-a", "prometheus_replica", replica}
			writeVLLM(w, target, fixPod{model: "llama"}, 0, fixEngineA0, el, at)
		}
	}
	path := filepath.Join(t.TempDir(), "ha.om")
	if err := os.WriteFile(path, w.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := storetest.Prometheus(t, storetest.Config{Backfill: path})
	c := client(t, s)
	o := Options{From: fixFrom, To: fixTo, Range: true, By: k8s}
	for _, now := range []bool{false, true} {
		if now {
			o.From, o.Range = fixTo.Add(-DefaultWindow), false
		}
		o.ReplicaLabels = nil
		push, whole := both(t, c, o)
		// The copies are read whole, where they can be told apart.
		if p := pushed(push); len(p) != 0 {
			t.Errorf("pushed down: %v, want none", p)
		}
		for _, f := range []*Fleet{push, whole} {
			checkNotes(t, f, NoteReplicas)
			// Both copies added: 2 × 2 requests/s.
			if v := f.Instances[0].Figures.value("requests"); v == nil || !approx(*v, 4) {
				t.Errorf("read twice: %v requests/s, want 4", deref(v))
			}
		}
		o.ReplicaLabels = []string{"prometheus_replica"}
		push, whole = both(t, c, o)
		for _, f := range []*Fleet{push, whole} {
			for _, n := range f.Notes {
				if n.ID == NoteReplicas {
					t.Errorf("with --replica-label: %s", n.Text)
				}
			}
			if v := f.Instances[0].Figures.value("requests"); v == nil || !approx(*v, 2) {
				t.Errorf("read once: %v requests/s, want 2", deref(v))
			}
		}
	}
}
