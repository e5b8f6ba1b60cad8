package rates

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/slots"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// TestSlotSpeedsReal: between the two /slots answers a real llama-server
// gave 0.572413 s apart (README.md there), slot 1 ran the same request
// (task 2718) from 194 to 576 tokens: 382 / 0.572413 = 667.35 tokens/s;
// slot 0 finished one request and ran another between them: no speed.
func TestSlotSpeedsReal(t *testing.T) {
	read := func(name, at string) *snapshot.Snapshot {
		body, err := os.ReadFile("../../testdata/real/llama-server-slots/" + name)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := slots.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		when, _ := time.Parse(time.RFC3339Nano, at)
		return &snapshot.Snapshot{Slots: &snapshot.Slots{Status: snapshot.SlotsRead, At: when, Slots: ss}}
	}
	a := read("busy.json", "2026-12-03T14:13:13.740502Z")
	b := read("busy-later.json", "2026-12-03T14:13:14.312915Z")
	Breakdown(a, b, 0.57)
	if s := b.Slots.Slots[1].Speed; s == nil || math.Abs(*s-382/0.572413) > 1e-9 {
		t.Errorf("slot 1 speed %v, want %v", s, 382/0.572413)
	}
	if s := b.Slots.Slots[0].Speed; s != nil {
		t.Errorf("slot 0 ran two requests, speed %v", *s)
	}
	// Slots not read at one end: nothing set.
	c := read("busy-later.json", "2026-12-03T14:13:15Z")
	c.Slots.Status = snapshot.SlotsFailed
	Breakdown(b, c, 1)
	if c.Slots.Slots[1].Speed != nil {
		t.Error("a speed from a failed reading")
	}
}

// TestPartRates: each engine's requests and generation over the interval,
// from its own counters (hand-worked: engine 0 +10 requests and +800
// tokens, engine 1 +4 and +300, in 2 s); one whose counters fell counts
// from zero, as rate() does; a part new at the second scrape has none.
func TestPartRates(t *testing.T) {
	part := func(v string, req, tok float64) snapshot.Part {
		return snapshot.Part{Label: "engine", Value: v, Snapshot: snap(0, snapshot.RequestsTotal, req, snapshot.TokensPredictedTotal, tok)}
	}
	a := &snapshot.Snapshot{Parts: []snapshot.Part{part("0", 100, 9000), part("1", 50, 4000), part("2", 70, 100)}}
	b := &snapshot.Snapshot{Parts: []snapshot.Part{part("0", 110, 9800), part("1", 54, 4300), part("2", 1, 10), part("3", 5, 5)}}
	Breakdown(a, b, 2)
	want := []map[string]float64{{"requests": 5, "generation": 400}, {"requests": 2, "generation": 150}, {"requests": 0.5, "generation": 5}, nil}
	for i, w := range want {
		got := b.Parts[i].Rates
		if len(got) != len(w) {
			t.Errorf("engine %s: %v, want %v", b.Parts[i].Value, got, w)
			continue
		}
		for k, v := range w {
			if !approx(got[k], v) {
				t.Errorf("engine %s %s = %v, want %v", b.Parts[i].Value, k, got[k], v)
			}
		}
	}
}
