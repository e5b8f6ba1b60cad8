package analysis

import (
	"slices"
	"testing"

	"github.com/inferscope/inferscope/internal/report"
)

// Bands is the table as it is, and a copy: a caller cannot change it.
func TestBandsExported(t *testing.T) {
	bs := Bands()
	if len(bs) != int(bands) {
		t.Fatalf("%d bands exported, the table has %d", len(bs), bands)
	}
	for i, b := range bs {
		j := judgements[i]
		if !slices.Equal(b.Rows, j.rows) || !slices.Equal(b.Limits, j.limits) || b.Colour != j.colour || b.Note != j.note {
			t.Errorf("band %d exported as %+v, the table has %+v", i, b, j)
		}
	}
	bs[kvCachePressure].Limits[0] = 0.1
	if judgements[kvCachePressure].limits[0] != 0.9 {
		t.Fatal("changing an exported band changed the table")
	}
	tests := []struct {
		note   string
		limits []float64
		sev    report.Severity
	}{
		{"kv_cache_pressure", []float64{0.9}, report.Warn},
		{"kv_offload_thrashing", []float64{0, 0.25}, report.Warn},
		{"recurrent_raise_budget", []float64{0.05, 0, 0.9}, report.Bad},
		{"queue_stalled", nil, report.Info},
	}
	for _, tt := range tests {
		b, ok := NoteBand(tt.note)
		if !ok || !slices.Equal(b.Limits, tt.limits) || b.Severity != tt.sev {
			t.Errorf("NoteBand(%s) = %+v, %v; want limits %v severity %s", tt.note, b, ok, tt.limits, tt.sev)
		}
	}
	if _, ok := NoteBand(""); ok {
		t.Error("NoteBand(\"\") found a band")
	}
	if _, ok := NoteBand("no_such_note"); ok {
		t.Error("NoteBand found a band for an unknown note")
	}
}
